//! Flows and runs: the graph of a Flow or of a Run's inline plan, parameter names, and gate
//! decisions.

use std::collections::HashMap;

use keelson_api_crds::workflows::{FlowNode, FlowSpec, RunSpec};

use crate::graph::check_graph;
use crate::{Problem, check_parameter_keys};

/// Problems with a Flow's spec: its graph (at `spec.nodes` / `spec.edges`, see
/// [`check_graph`]) and parameter names declared twice (case-sensitively, at
/// `spec.parameters[i].name`).
pub fn check_flow(spec: &FlowSpec) -> Vec<Problem> {
    let mut problems = check_graph(&spec.plan.nodes, &spec.plan.edges, "spec");
    let mut first_index: HashMap<&str, usize> = HashMap::new();
    for (i, parameter) in spec.parameters.iter().enumerate() {
        if let Some(first) = first_index.get(parameter.name.as_str()) {
            problems.push(Problem::new(
                format!("spec.parameters[{i}].name"),
                format!(
                    "parameter \"{}\" is already declared by parameters[{first}]",
                    parameter.name
                ),
            ));
        } else {
            first_index.insert(&parameter.name, i);
        }
    }
    problems
}

/// Problems with a Run's spec: the graph of its inline plan (at `spec.plan.nodes` /
/// `spec.plan.edges`), decisions that do not name a gate of the inline plan
/// (`spec.decisions[i].node`), and parameter keys that are not C identifiers
/// (`spec.parameters.KEY`). With an inline plan, parameters are free-form: there are no
/// declarations to hold them to. Decisions on a run of a `flowRef` cannot be checked without
/// reading the Flow, so they are not.
///
/// `old` is the stored spec on an update: checks of what the update does not change (the plan,
/// parameters, decisions already recorded) are skipped.
pub fn check_run(spec: &RunSpec, old: Option<&RunSpec>) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(plan) = &spec.plan {
        let plan_unchanged = old.is_some_and(|old| old.plan.as_ref() == Some(plan));
        if !plan_unchanged {
            problems.extend(check_graph(&plan.nodes, &plan.edges, "spec.plan"));
        }
        let mut by_id: HashMap<&str, &FlowNode> = HashMap::new();
        for node in &plan.nodes {
            by_id.entry(node.id.as_str()).or_insert(node);
        }
        for (i, decision) in spec.decisions.iter().enumerate() {
            let recorded =
                old.is_some_and(|old| old.decisions.iter().any(|d| d.node == decision.node));
            if recorded && plan_unchanged {
                continue;
            }
            let field = format!("spec.decisions[{i}].node");
            match by_id.get(decision.node.as_str()) {
                None => problems.push(Problem::new(
                    field,
                    format!(
                        "decision refers to node \"{}\", which is not in the plan",
                        decision.node
                    ),
                )),
                Some(node) if node.gate.is_none() => problems.push(Problem::new(
                    field,
                    format!(
                        "node \"{}\" is an agent step, not a gate: only gates take decisions",
                        decision.node
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    problems.extend(check_parameter_keys("spec.parameters", spec.parameters.keys(), |key| {
        old.is_some_and(|old| old.parameters.contains_key(key))
    }));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{agent, edge, gate};
    use keelson_api_crds::workflows::{FlowParameter, GateDecision, GateDecisionRecord, Plan};

    fn parameter(name: &str) -> FlowParameter {
        FlowParameter { name: name.to_owned(), ..Default::default() }
    }

    fn flow() -> FlowSpec {
        FlowSpec {
            parameters: vec![parameter("region"), parameter("Region")],
            plan: Plan {
                nodes: vec![agent("build"), gate("approve"), agent("deploy")],
                edges: vec![edge("build", "approve"), edge("approve", "deploy")],
                timeout_seconds: None,
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_valid_flow_has_no_problem() {
        assert_eq!(check_flow(&flow()), vec![]);
    }

    #[test]
    fn flow_graph_problems_are_under_spec() {
        let mut spec = flow();
        spec.plan.edges.push(edge("deploy", "nowhere"));
        spec.plan.edges.push(edge("deploy", "build"));
        assert_eq!(
            check_flow(&spec),
            vec![
                Problem::new(
                    "spec.edges[2].to",
                    "edge refers to node \"nowhere\", which does not exist"
                ),
                Problem::new(
                    "spec.edges[3]",
                    "edges form a cycle build → approve → deploy → build, so none of these \
                     nodes could ever start"
                ),
            ]
        );
    }

    #[test]
    fn flow_parameter_names_are_unique_case_sensitively() {
        let mut spec = flow();
        spec.parameters.push(parameter("region"));
        assert_eq!(
            check_flow(&spec),
            vec![Problem::new(
                "spec.parameters[2].name",
                "parameter \"region\" is already declared by parameters[0]"
            )]
        );
    }

    fn decision(node: &str) -> GateDecisionRecord {
        GateDecisionRecord {
            node: node.to_owned(),
            decision: GateDecision::Approve,
            ..Default::default()
        }
    }

    fn run() -> RunSpec {
        RunSpec {
            plan: Some(Plan {
                nodes: vec![agent("build"), gate("approve")],
                edges: vec![edge("build", "approve")],
                timeout_seconds: None,
            }),
            parameters: [("free_form".to_owned(), "x".to_owned())].into(),
            decisions: vec![decision("approve")],
            ..Default::default()
        }
    }

    #[test]
    fn a_valid_run_has_no_problem() {
        assert_eq!(check_run(&run(), None), vec![]);
        let by_ref = RunSpec {
            flow_ref: Some("release".to_owned()),
            decisions: vec![decision("anything")],
            ..Default::default()
        };
        assert_eq!(check_run(&by_ref, None), vec![]);
    }

    #[test]
    fn run_plan_graph_problems_are_under_spec_plan() {
        let mut spec = run();
        if let Some(plan) = &mut spec.plan {
            plan.edges.push(edge("approve", "approve"));
        }
        assert_eq!(
            check_run(&spec, None),
            vec![Problem::new("spec.plan.edges[1]", "edge goes from node \"approve\" to itself")]
        );
    }

    #[test]
    fn run_decisions_must_name_gates_of_the_plan() {
        let mut spec = run();
        spec.decisions = vec![decision("approve"), decision("build"), decision("ghost")];
        assert_eq!(
            check_run(&spec, None),
            vec![
                Problem::new(
                    "spec.decisions[1].node",
                    "node \"build\" is an agent step, not a gate: only gates take decisions"
                ),
                Problem::new(
                    "spec.decisions[2].node",
                    "decision refers to node \"ghost\", which is not in the plan"
                ),
            ]
        );
    }

    #[test]
    fn run_parameter_keys_are_c_identifiers() {
        let mut spec = run();
        spec.parameters.insert("9lives".to_owned(), String::new());
        spec.parameters.insert("_ok9".to_owned(), String::new());
        assert_eq!(
            check_run(&spec, None),
            vec![Problem::new(
                "spec.parameters.9lives",
                "parameter name \"9lives\" is not a C identifier: use letters, digits and \
                 underscores, not starting with a digit"
            )]
        );
    }

    #[test]
    fn run_updates_skip_what_they_do_not_change() {
        let mut old = run();
        if let Some(plan) = &mut old.plan {
            plan.edges.push(edge("approve", "approve"));
        }
        old.parameters.insert("bad-key".to_owned(), String::new());
        old.decisions = vec![decision("build")];
        // Admitted under older rules; appending a decision still goes through.
        let mut new = old.clone();
        new.decisions.push(decision("approve"));
        assert_eq!(check_run(&new, Some(&old)), vec![]);
        // A new decision is still checked.
        new.decisions.push(decision("ghost"));
        assert_eq!(
            check_run(&new, Some(&old)),
            vec![Problem::new(
                "spec.decisions[2].node",
                "decision refers to node \"ghost\", which is not in the plan"
            )]
        );
    }
}
