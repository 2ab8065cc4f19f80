//! The shape of a flow's (or an inline plan's) graph: node ids unique, edges and step inputs
//! between existing nodes, no self-loops, no repeated edges, no cycles; and a topological order
//! for controllers. A step's `inputs` are dependencies like edges; one that repeats an edge
//! counts once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use keelson_api_crds::workflows::{FlowEdge, FlowNode};

use crate::Problem;

/// A cycle of a graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The node ids along the cycle, in edge order, the first repeated at the end:
    /// `["a", "b", "c", "a"]`; `["a", "a"]` for a self-loop.
    pub nodes: Vec<String>,
    /// Where the dependency that closes the cycle (the last hop) is declared, relative to the
    /// graph: `edges[2]` or `nodes[1].agent.inputs[0]`.
    pub at: String,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cycle {}", self.nodes.join(" → "))
    }
}

impl std::error::Error for Cycle {}

/// Every problem with the graph made of `nodes` and `edges`, which sit at `{path}.nodes` and
/// `{path}.edges` (so `path` is `spec` for a Flow, `spec.plan` for a Run).
///
/// Problems come in a fixed order: repeated node ids (at `{path}.nodes[i].id`), then each edge
/// in list order — an endpoint naming no node (`{path}.edges[i].from` / `.to`), a self-loop or
/// a repeat of an earlier edge (`{path}.edges[i]`) — then cycles, one problem per cycle found
/// by a depth-first search in declaration order, at the edge that closes it.
pub fn check_graph(nodes: &[FlowNode], edges: &[FlowEdge], path: &str) -> Vec<Problem> {
    let mut problems = Vec::new();

    let mut first_index: HashMap<&str, usize> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        if let Some(first) = first_index.get(node.id.as_str()) {
            problems.push(Problem::new(
                format!("{path}.nodes[{i}].id"),
                format!("node id \"{}\" is already used by nodes[{first}]", node.id),
            ));
        } else {
            first_index.insert(&node.id, i);
        }
    }

    let mut seen_edges: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, edge) in edges.iter().enumerate() {
        let mut dangling = false;
        for (end, id) in [("from", &edge.from), ("to", &edge.to)] {
            if !first_index.contains_key(id.as_str()) {
                dangling = true;
                problems.push(Problem::new(
                    format!("{path}.edges[{i}].{end}"),
                    format!("edge refers to node \"{id}\", which does not exist"),
                ));
            }
        }
        if dangling {
            continue;
        }
        if edge.from == edge.to {
            problems.push(Problem::new(
                format!("{path}.edges[{i}]"),
                format!("edge goes from node \"{}\" to itself", edge.from),
            ));
        } else if let Some(first) = seen_edges.get(&(edge.from.as_str(), edge.to.as_str())) {
            problems.push(Problem::new(
                format!("{path}.edges[{i}]"),
                format!("edge from \"{}\" to \"{}\" repeats edges[{first}]", edge.from, edge.to),
            ));
        } else {
            seen_edges.insert((&edge.from, &edge.to), i);
        }
    }

    for (i, node) in nodes.iter().enumerate() {
        let inputs = node.agent.iter().flat_map(|step| step.inputs.iter());
        for (j, input) in inputs.enumerate() {
            let field = format!("{path}.nodes[{i}].agent.inputs[{j}]");
            if !first_index.contains_key(input.as_str()) {
                problems.push(Problem::new(
                    field,
                    format!("input refers to node \"{input}\", which does not exist"),
                ));
            } else if *input == node.id {
                problems.push(Problem::new(
                    field,
                    format!("node \"{input}\" cannot read its own outputs"),
                ));
            }
        }
    }

    for cycle in Graph::new(nodes, edges).cycles() {
        problems.push(Problem::new(
            format!("{path}.{}", cycle.at),
            format!("edges form a {cycle}, so none of these nodes could ever start"),
        ));
    }
    problems
}

/// The node ids in an order where each node comes after every node it has an edge from, or a
/// cycle when there is none (a self-loop counts). Among nodes that are ready at the same time,
/// the one declared first comes first, so the order is stable.
///
/// Meant for graphs [`check_graph`] admitted: edges naming no node are ignored, a repeated edge
/// counts once, and a repeated node id is listed once.
pub fn topological_order(nodes: &[FlowNode], edges: &[FlowEdge]) -> Result<Vec<String>, Cycle> {
    let graph = Graph::new(nodes, edges);
    if let Some(cycle) = graph.self_loop.clone().or_else(|| graph.cycles().into_iter().next()) {
        return Err(cycle);
    }
    let mut in_degree = vec![0usize; graph.ids.len()];
    for successors in &graph.successors {
        for &(to, _) in successors {
            in_degree[to] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..graph.ids.len()).filter(|&n| in_degree[n] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(graph.ids.len());
    while let Some(Reverse(node)) = ready.pop() {
        order.push(graph.ids[node].to_owned());
        for &(to, _) in &graph.successors[node] {
            in_degree[to] -= 1;
            if in_degree[to] == 0 {
                ready.push(Reverse(to));
            }
        }
    }
    Ok(order)
}

/// Nodes by index (first occurrence of each id, in declaration order) and the dependencies
/// (edges, then step inputs) between existing, distinct nodes, each pair once.
struct Graph<'a> {
    ids: Vec<&'a str>,
    /// Per node: `(successor, where the dependency is declared)`, edges first, in list order.
    successors: Vec<Vec<(usize, String)>>,
    /// The first self-loop between existing nodes, if any.
    self_loop: Option<Cycle>,
}

impl<'a> Graph<'a> {
    fn new(nodes: &'a [FlowNode], edges: &'a [FlowEdge]) -> Self {
        let mut ids = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for node in nodes {
            if !index.contains_key(node.id.as_str()) {
                index.insert(&node.id, ids.len());
                ids.push(node.id.as_str());
            }
        }
        let mut successors = vec![Vec::new(); ids.len()];
        let mut self_loop = None;
        let mut seen = HashSet::new();
        let declared =
            edges.iter().enumerate().map(|(i, edge)| (&edge.from, &edge.to, format!("edges[{i}]")));
        let inputs =
            nodes.iter().enumerate().flat_map(|(i, node)| {
                node.agent.iter().flat_map(|step| step.inputs.iter()).enumerate().map(
                    move |(j, input)| (input, &node.id, format!("nodes[{i}].agent.inputs[{j}]")),
                )
            });
        for (from_id, to_id, at) in declared.chain(inputs) {
            let (Some(&from), Some(&to)) = (index.get(from_id.as_str()), index.get(to_id.as_str()))
            else {
                continue;
            };
            if from == to {
                self_loop.get_or_insert_with(|| Cycle {
                    nodes: vec![from_id.clone(), to_id.clone()],
                    at,
                });
            } else if seen.insert((from, to)) {
                successors[from].push((to, at));
            }
        }
        Self { ids, successors, self_loop }
    }

    /// One cycle per back edge of an iterative depth-first search that starts from each
    /// unvisited node in declaration order and follows edges in list order. Self-loops are
    /// not included.
    fn cycles(&self) -> Vec<Cycle> {
        #[derive(Clone, Copy, PartialEq)]
        enum State {
            Unvisited,
            OnPath,
            Done,
        }
        let mut state = vec![State::Unvisited; self.ids.len()];
        let mut cycles = Vec::new();
        // The current path, each node with the position of the next successor to follow.
        let mut path: Vec<(usize, usize)> = Vec::new();
        let mut on_path_at: Vec<usize> = vec![0; self.ids.len()];
        for start in 0..self.ids.len() {
            if state[start] != State::Unvisited {
                continue;
            }
            state[start] = State::OnPath;
            on_path_at[start] = 0;
            path.push((start, 0));
            while let Some(top) = path.last_mut() {
                let node = top.0;
                let Some((to, at)) = self.successors[node].get(top.1) else {
                    state[node] = State::Done;
                    path.pop();
                    continue;
                };
                top.1 += 1;
                let to = *to;
                match state[to] {
                    State::Unvisited => {
                        state[to] = State::OnPath;
                        on_path_at[to] = path.len();
                        path.push((to, 0));
                    }
                    State::OnPath => {
                        let mut nodes: Vec<String> = path[on_path_at[to]..]
                            .iter()
                            .map(|&(n, _)| self.ids[n].to_owned())
                            .collect();
                        nodes.push(self.ids[to].to_owned());
                        cycles.push(Cycle { nodes, at: at.clone() });
                    }
                    State::Done => {}
                }
            }
        }
        cycles
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use keelson_api_crds::workflows::{AgentStep, GateStep};

    pub(crate) fn agent(id: &str) -> FlowNode {
        FlowNode {
            id: id.to_owned(),
            agent: Some(AgentStep { agent_ref: "worker".to_owned(), ..Default::default() }),
            gate: None,
        }
    }

    pub(crate) fn gate(id: &str) -> FlowNode {
        FlowNode { id: id.to_owned(), agent: None, gate: Some(GateStep::default()) }
    }

    pub(crate) fn edge(from: &str, to: &str) -> FlowEdge {
        FlowEdge { from: from.to_owned(), to: to.to_owned() }
    }

    fn nodes(ids: &[&str]) -> Vec<FlowNode> {
        ids.iter().map(|id| agent(id)).collect()
    }

    #[test]
    fn a_valid_graph_has_no_problem() {
        let nodes = nodes(&["a", "b", "c", "d"]);
        let edges = [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d")];
        assert_eq!(check_graph(&nodes, &edges, "spec"), vec![]);
        assert_eq!(check_graph(&nodes, &[], "spec"), vec![]);
    }

    #[test]
    fn dangling_edges_name_the_end_at_fault() {
        let nodes = nodes(&["a", "b"]);
        let edges = [edge("a", "b"), edge("x", "b"), edge("a", "c"), edge("y", "z")];
        assert_eq!(
            check_graph(&nodes, &edges, "spec.plan"),
            vec![
                Problem::new(
                    "spec.plan.edges[1].from",
                    "edge refers to node \"x\", which does not exist"
                ),
                Problem::new(
                    "spec.plan.edges[2].to",
                    "edge refers to node \"c\", which does not exist"
                ),
                Problem::new(
                    "spec.plan.edges[3].from",
                    "edge refers to node \"y\", which does not exist"
                ),
                Problem::new(
                    "spec.plan.edges[3].to",
                    "edge refers to node \"z\", which does not exist"
                ),
            ]
        );
    }

    #[test]
    fn self_loops_and_repeated_edges() {
        let nodes = nodes(&["a", "b"]);
        let edges = [edge("a", "b"), edge("b", "b"), edge("a", "b")];
        assert_eq!(
            check_graph(&nodes, &edges, "spec"),
            vec![
                Problem::new("spec.edges[1]", "edge goes from node \"b\" to itself"),
                Problem::new("spec.edges[2]", "edge from \"a\" to \"b\" repeats edges[0]"),
            ]
        );
    }

    #[test]
    fn repeated_node_ids() {
        let nodes = nodes(&["a", "b", "a", "a"]);
        assert_eq!(
            check_graph(&nodes, &[], "spec"),
            vec![
                Problem::new("spec.nodes[2].id", "node id \"a\" is already used by nodes[0]"),
                Problem::new("spec.nodes[3].id", "node id \"a\" is already used by nodes[0]"),
            ]
        );
    }

    #[test]
    fn a_three_node_cycle_is_reported_once() {
        let nodes = nodes(&["a", "b", "c", "d"]);
        let edges = [edge("a", "b"), edge("b", "c"), edge("c", "a"), edge("c", "d")];
        assert_eq!(
            check_graph(&nodes, &edges, "spec"),
            vec![Problem::new(
                "spec.edges[2]",
                "edges form a cycle a → b → c → a, so none of these nodes could ever start"
            )]
        );
    }

    #[test]
    fn a_cycle_found_from_a_later_start_names_nodes_from_where_it_closes() {
        // d is declared first; the search enters the loop at b.
        let nodes = nodes(&["d", "a", "b", "c"]);
        let edges = [edge("c", "b"), edge("d", "b"), edge("b", "c")];
        let problems = check_graph(&nodes, &edges, "spec");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].field, "spec.edges[0]");
        assert!(problems[0].message.starts_with("edges form a cycle b → c → b,"), "{problems:?}");
    }

    #[test]
    fn two_separate_cycles_are_two_problems() {
        let nodes = nodes(&["a", "b", "c", "d"]);
        let edges = [edge("a", "b"), edge("b", "a"), edge("c", "d"), edge("d", "c")];
        let problems = check_graph(&nodes, &edges, "spec");
        let found: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.field.as_str(), p.message.split(',').next().unwrap_or_default()))
            .collect();
        assert_eq!(
            found,
            [
                ("spec.edges[1]", "edges form a cycle a → b → a"),
                ("spec.edges[3]", "edges form a cycle c → d → c"),
            ]
        );
    }

    #[test]
    fn repeated_edges_do_not_report_a_cycle_twice() {
        let nodes = nodes(&["a", "b"]);
        let edges = [edge("a", "b"), edge("b", "a"), edge("b", "a")];
        let problems = check_graph(&nodes, &edges, "spec");
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["spec.edges[2]", "spec.edges[1]"], "{problems:?}");
    }

    #[test]
    fn topological_order_respects_edges_and_declaration_order() {
        let nodes = nodes(&["deploy", "build", "test", "lint", "approve"]);
        let edges = [
            edge("build", "test"),
            edge("build", "lint"),
            edge("test", "approve"),
            edge("lint", "approve"),
            edge("approve", "deploy"),
        ];
        let order = topological_order(&nodes, &edges).unwrap();
        assert_eq!(order, ["build", "test", "lint", "approve", "deploy"]);
        let position = |id: &str| order.iter().position(|n| n == id).unwrap();
        for e in &edges {
            assert!(position(&e.from) < position(&e.to), "{e:?}");
        }
        // Without edges, declaration order.
        assert_eq!(
            topological_order(&nodes, &[]).unwrap(),
            ["deploy", "build", "test", "lint", "approve"]
        );
    }

    #[test]
    fn topological_order_refuses_cycles() {
        let nodes = nodes(&["a", "b", "c"]);
        let cycle = topological_order(&nodes, &[edge("a", "b"), edge("b", "c"), edge("c", "a")])
            .unwrap_err();
        assert_eq!(
            cycle,
            Cycle {
                nodes: vec!["a".into(), "b".into(), "c".into(), "a".into()],
                at: "edges[2]".into()
            }
        );
        assert_eq!(cycle.to_string(), "cycle a → b → c → a");

        let self_loop = topological_order(&nodes, &[edge("a", "b"), edge("c", "c")]).unwrap_err();
        assert_eq!(self_loop, Cycle { nodes: vec!["c".into(), "c".into()], at: "edges[1]".into() });
    }

    #[test]
    fn topological_order_tolerates_what_check_graph_reports() {
        let nodes = nodes(&["a", "b", "a"]);
        let edges = [edge("b", "a"), edge("b", "a"), edge("b", "ghost")];
        assert_eq!(topological_order(&nodes, &edges).unwrap(), ["b", "a"]);
    }

    #[test]
    fn a_long_chain_does_not_overflow_the_stack() {
        let ids: Vec<String> = (0..5000).map(|i| format!("n{i}")).collect();
        let nodes: Vec<FlowNode> = ids.iter().map(|id| agent(id)).collect();
        let mut edges: Vec<FlowEdge> = ids.windows(2).map(|w| edge(&w[0], &w[1])).collect();
        assert_eq!(topological_order(&nodes, &edges).unwrap(), ids);
        edges.push(edge("n4999", "n0"));
        let problems = check_graph(&nodes, &edges, "spec");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].field, "spec.edges[4999]");
    }

    #[test]
    fn gates_are_nodes_too() {
        let nodes = [agent("a"), gate("g")];
        assert_eq!(check_graph(&nodes, &[edge("a", "g")], "spec"), vec![]);
    }

    fn reads(id: &str, inputs: &[&str]) -> FlowNode {
        let mut node = agent(id);
        node.agent.as_mut().unwrap().inputs = inputs.iter().map(|&i| i.to_owned()).collect();
        node
    }

    #[test]
    fn inputs_are_dependencies_and_an_input_repeating_an_edge_counts_once() {
        let graph = vec![agent("a"), reads("b", &["a"]), reads("c", &["b", "a"])];
        let edges = vec![edge("a", "b")];
        assert!(check_graph(&graph, &edges, "spec").is_empty());
        assert_eq!(topological_order(&graph, &edges).unwrap(), ["a", "b", "c"]);
        // `c` is declared first but reads `a` and `b`.
        let reordered = vec![reads("c", &["a", "b"]), agent("a"), reads("b", &["a"])];
        assert_eq!(topological_order(&reordered, &[]).unwrap(), ["a", "b", "c"]);
    }

    #[test]
    fn dangling_own_and_cyclic_inputs_are_refused_where_they_are_declared() {
        let nodes = [reads("a", &["ghost", "a", "c"]), agent("b"), reads("c", &["b"])];
        let problems = check_graph(&nodes, &[edge("a", "b")], "spec");
        let at: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            at,
            [
                "spec.nodes[0].agent.inputs[0]",
                "spec.nodes[0].agent.inputs[1]",
                "spec.nodes[0].agent.inputs[2]"
            ],
            "{problems:?}"
        );
        assert!(problems[2].message.contains("cycle a → b → c → a"), "{problems:?}");
    }
}
