//! What a Run executes, decided once when the controller first sees it: the plan (the flow's,
//! the cloned run's, or its own) and the parameter values, checked against what the flow
//! declares.

use std::collections::BTreeMap;

use keelson_api_crds::workflows::{FlowParameter, FlowSpec, Plan};

/// Problems that keep a flow from running, one sentence each: its graph and parameters (the
/// admission checks, for flows admitted before a rule existed) and agent steps naming an
/// Agent that does not exist.
pub fn flow_problems(spec: &FlowSpec, has_agent: impl Fn(&str) -> bool) -> Vec<String> {
    let mut problems: Vec<String> =
        keelson_webhooks::flow::check_flow(spec).iter().map(ToString::to_string).collect();
    problems.extend(missing_agents(&spec.plan, has_agent));
    problems
}

/// One sentence per agent step of `plan` whose Agent does not exist.
pub fn missing_agents(plan: &Plan, has_agent: impl Fn(&str) -> bool) -> Vec<String> {
    plan.nodes
        .iter()
        .filter_map(|node| Some((&node.id, &node.agent.as_ref()?.agent_ref)))
        .filter(|(_, agent)| !has_agent(agent))
        .map(|(id, agent)| format!("step {id:?} runs agent {agent:?}, which does not exist"))
        .collect()
}

/// The values a run of a flow uses: the run's own, then the defaults of the parameters it
/// does not give. Errors name every required parameter missing and every value the flow does
/// not declare.
pub fn parameters(
    declared: &[FlowParameter],
    given: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Vec<String>> {
    let mut problems = Vec::new();
    for name in given.keys() {
        if !declared.iter().any(|p| &p.name == name) {
            problems.push(format!("parameter {name:?} is not declared by the flow"));
        }
    }
    let mut values = given.clone();
    for parameter in declared {
        if values.contains_key(&parameter.name) {
            continue;
        }
        match &parameter.default {
            Some(default) => {
                values.insert(parameter.name.clone(), default.clone());
            }
            None if parameter.required => {
                problems.push(format!("parameter {:?} is required", parameter.name));
            }
            None => {}
        }
    }
    if problems.is_empty() { Ok(values) } else { Err(problems) }
}

/// The nodes `node` depends on: the `from` of edges to it, then the step's `inputs`, each once,
/// in that order.
pub fn predecessors<'a>(plan: &'a Plan, node: &str) -> Vec<&'a str> {
    let inputs = plan
        .nodes
        .iter()
        .filter(|n| n.id == node)
        .flat_map(|n| n.agent.iter().flat_map(|step| step.inputs.iter()));
    let edges = plan.edges.iter().filter(|e| e.to == node).map(|e| &e.from);
    let mut found: Vec<&str> = Vec::new();
    for id in edges.chain(inputs) {
        if !found.contains(&id.as_str()) {
            found.push(id);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use keelson_api_crds::workflows::{AgentStep, FlowEdge, FlowNode};

    fn parameter(name: &str, required: bool, default: Option<&str>) -> FlowParameter {
        FlowParameter {
            name: name.into(),
            required,
            default: default.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_fill_what_the_run_leaves_out() {
        let declared = [parameter("WEEK", false, Some("latest")), parameter("TEAM", false, None)];
        let given = BTreeMap::from([("TEAM".to_owned(), "ops".to_owned())]);
        let values = parameters(&declared, &given).unwrap();
        assert_eq!(values["WEEK"], "latest");
        assert_eq!(values["TEAM"], "ops");
        let given = BTreeMap::from([("WEEK".to_owned(), "2026-W47".to_owned())]);
        assert_eq!(parameters(&declared, &given).unwrap().len(), 1);
    }

    #[test]
    fn missing_required_and_undeclared_parameters_are_each_named() {
        let declared = [parameter("WEEK", true, None)];
        let given = BTreeMap::from([("WEKE".to_owned(), "x".to_owned())]);
        assert_eq!(
            parameters(&declared, &given).unwrap_err(),
            ["parameter \"WEKE\" is not declared by the flow", "parameter \"WEEK\" is required"]
        );
    }

    #[test]
    fn an_input_repeating_an_edge_is_one_dependency() {
        let mut plan = Plan {
            nodes: ["a", "b", "c"]
                .map(|id| FlowNode { id: id.into(), agent: Some(AgentStep::default()), gate: None })
                .into(),
            edges: vec![FlowEdge { from: "a".into(), to: "c".into() }],
            timeout_seconds: None,
        };
        plan.nodes[2].agent.as_mut().unwrap().inputs = vec!["a".into(), "b".into()];
        assert_eq!(predecessors(&plan, "c"), ["a", "b"]);
        assert!(predecessors(&plan, "a").is_empty());
    }

    #[test]
    fn a_flow_with_an_unknown_agent_or_a_cycle_cannot_run() {
        let step = |id: &str, agent: &str| FlowNode {
            id: id.into(),
            agent: Some(AgentStep { agent_ref: agent.into(), ..Default::default() }),
            gate: None,
        };
        let mut spec = FlowSpec::default();
        spec.plan.nodes = vec![step("a", "known"), step("b", "ghost")];
        assert_eq!(
            flow_problems(&spec, |agent| agent == "known"),
            ["step \"b\" runs agent \"ghost\", which does not exist"]
        );
        spec.plan.edges = vec![
            FlowEdge { from: "a".into(), to: "b".into() },
            FlowEdge { from: "b".into(), to: "a".into() },
        ];
        let problems = flow_problems(&spec, |_| true);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("spec.edges[1]: edges form a cycle"), "{problems:?}");
    }
}
