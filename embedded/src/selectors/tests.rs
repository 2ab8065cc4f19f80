use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn sel(s: &str) -> LabelSelector {
    LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn label_operators() {
    let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
    let cases: &[(&str, bool)] = &[
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=db", true),
        ("app!=web", false),
        ("missing!=x", true),
        ("app in (web,db)", true),
        ("app in (db)", false),
        ("app notin (db)", true),
        ("app notin (web, db)", false),
        ("missing notin (x)", true),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("n>4", true),
        ("n>5", false),
        ("n<6", true),
        ("missing<6", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
        ("  app = web ,  tier in ( front , back ) , !x  ", true),
        ("missing=", false),
    ];
    for (input, want) in cases {
        assert_eq!(sel(input).matches(&l), *want, "{input:?}");
    }
    // `key=` matches the empty value, not absence.
    assert!(sel("empty=").matches(&labels(&[("empty", "")])));
}

#[test]
fn label_syntax_errors() {
    for bad in [
        "=web",
        "app in web",
        "app in (web",
        "app web",
        "app=web,",
        ",app",
        "app=a=b",
        "!",
        "n>abc",
        "app in (a b)",
        "app ~ web",
    ] {
        let err = LabelSelector::parse(bad).expect_err(bad);
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn label_key_and_value_validation() {
    assert!(matches!(LabelSelector::parse("-bad=x"), Err(SelectorError::InvalidKey { .. })));
    assert!(matches!(
        LabelSelector::parse("Example.com/x=y"),
        Err(SelectorError::InvalidKey { .. })
    ));
    assert!(matches!(LabelSelector::parse("/x=y"), Err(SelectorError::InvalidKey { .. })));
    assert!(matches!(
        LabelSelector::parse(&format!("{}=y", "k".repeat(64))),
        Err(SelectorError::InvalidKey { .. })
    ));
    assert!(matches!(LabelSelector::parse("app=-web"), Err(SelectorError::InvalidValue { .. })));
    assert!(matches!(
        LabelSelector::parse(&format!("app={}", "v".repeat(64))),
        Err(SelectorError::InvalidValue { .. })
    ));
    let err = LabelSelector::parse("app=we$b").unwrap_err().to_string();
    assert!(err.contains("we$b") && err.contains("alphanumeric"), "{err}");
    assert!(LabelSelector::parse("app.kubernetes.io/name=web_1.x").is_ok());
}

#[test]
fn display_is_sorted_canonical_form() {
    let s = sel("z in (b, a),a!=x,!m,k,n>3");
    assert_eq!(s.to_string(), "a!=x,k,!m,n>3,z in (a,b)");
    assert_eq!(sel(&s.to_string()), s);
    assert_eq!("app=web".parse::<LabelSelector>().unwrap().to_string(), "app=web");
}

#[test]
fn match_expressions_conversion() {
    let json = json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "edge"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "zone", "operator": "Exists"}
        ]
    });
    let s = LabelSelector::from_label_selector(&json).unwrap();
    assert_eq!(s.to_string(), "app=web,!canary,env notin (dev),tier in (edge,front),zone");
    assert!(s.matches(&labels(&[("app", "web"), ("tier", "edge"), ("zone", "a")])));
    assert!(!s.matches(&labels(&[
        ("app", "web"),
        ("tier", "edge"),
        ("zone", "a"),
        ("canary", "1")
    ])));
    assert!(!s.matches(&labels(&[("app", "web"), ("tier", "edge")])));
    assert!(LabelSelector::from_label_selector(&json!({})).unwrap().is_empty());
    assert_eq!(LabelSelector::from_label_selector(&json!("a=b")).unwrap(), sel("a=b"));
    for bad in [
        json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
        json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
        json!({"matchLabels": {"a": "bad value"}}),
        json!(42),
    ] {
        assert!(LabelSelector::from_label_selector(&bad).is_err(), "{bad}");
    }
}

#[test]
fn matches_object_labels() {
    let object = json!({"metadata": {"name": "x", "labels": {"app": "web"}}});
    assert!(sel("app=web").matches_object(&object));
    assert!(!sel("app=db").matches_object(&object));
    assert!(sel("!app").matches_object(&json!({"metadata": {"name": "y"}})));
    assert!(sel("app!=db,tier notin (back)").matches_object(&object));
    let numbered = json!({"metadata": {"labels": {"replicas": "3", "bad": 3}}});
    assert!(sel("replicas>2,replicas<4").matches_object(&numbered));
    assert!(sel("!bad").matches_object(&numbered), "a label that is not a string is absent");
}

#[test]
fn the_required_label_is_one_every_selected_object_carries() {
    let required = |s: &str| sel(s).required_label().map(|(k, v)| format!("{k}={v}"));
    assert_eq!(required("tier!=db,app=web").as_deref(), Some("app=web"));
    assert_eq!(required("app==web").as_deref(), Some("app=web"));
    assert_eq!(required("app in (web)").as_deref(), Some("app=web"));
    assert_eq!(required("app in (web,db)"), None, "either of two values");
    assert_eq!(required("app,!tier,env notin (prod)"), None);
    assert_eq!(required(""), None);
}

#[test]
fn field_selector_parse_and_match() {
    let pod = json!({
        "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "default"},
        "spec": {"nodeName": "n1", "hostNetwork": true},
        "status": {"phase": "Running"}
    });
    let s = FieldSelector::parse("metadata.name=p1,status.phase!=Failed").unwrap();
    assert_eq!(s.fields().collect::<Vec<_>>(), ["metadata.name", "status.phase"]);
    assert_eq!(s.exact("metadata.name"), Some("p1"));
    assert!(s.matches(&pod, field_value));
    assert!(FieldSelector::parse("metadata.name==p1").unwrap().matches(&pod, field_value));
    assert!(!FieldSelector::parse("metadata.name=p2").unwrap().matches(&pod, field_value));
    assert!(FieldSelector::parse("spec.hostNetwork=true").unwrap().matches(&pod, field_value));
    // Missing fields compare as "": `spec.nodeName=` selects unscheduled pods.
    let unscheduled = json!({"metadata": {"name": "p2"}});
    assert!(FieldSelector::parse("spec.nodeName=").unwrap().matches(&unscheduled, field_value));
    assert!(!FieldSelector::parse("spec.nodeName=").unwrap().matches(&pod, field_value));
    assert!(FieldSelector::parse("").unwrap().is_empty());
    // Escapes.
    let s = FieldSelector::parse(r"metadata.name=a\,b\=c").unwrap();
    assert_eq!(s.requirements()[0].value, "a,b=c");
    for bad in ["metadata.name", "=x", "a=b=c", r"a=b\x"] {
        assert!(matches!(FieldSelector::parse(bad), Err(SelectorError::Field { .. })), "{bad}");
    }
}

#[test]
fn field_getter_on_events() {
    let core = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "w1.17", "namespace": "default"},
        "involvedObject": {"kind": "Widget", "name": "w1", "namespace": "default", "uid": "u-1"},
        "reason": "Scaled",
        "type": "Normal",
        "source": {"component": "keelson"},
        "reportingComponent": "keelson-operator"
    });
    assert_eq!(field_value(&core, "involvedObject.uid").as_deref(), Some("u-1"));
    assert_eq!(field_value(&core, "regarding.name").as_deref(), Some("w1"));
    assert_eq!(field_value(&core, "reason").as_deref(), Some("Scaled"));
    assert_eq!(field_value(&core, "type").as_deref(), Some("Normal"));
    assert_eq!(field_value(&core, "source").as_deref(), Some("keelson"));
    assert_eq!(field_value(&core, "reportingController").as_deref(), Some("keelson-operator"));
    assert_eq!(field_value(&core, "metadata.namespace").as_deref(), Some("default"));
    assert_eq!(field_value(&core, "involvedObject.fieldPath"), None);
    // kubectl describe's selector.
    let describe = FieldSelector::parse(
        "involvedObject.uid=u-1,involvedObject.name=w1,involvedObject.namespace=default,involvedObject.kind=Widget",
    )
    .unwrap();
    assert!(describe.matches(&core, field_value));

    let v1 = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "w1.18"},
        "regarding": {"kind": "Widget", "name": "w1", "uid": "u-1"},
        "reportingController": "keelson",
        "deprecatedSource": {"component": "old"}
    });
    // No namespace on this one, so the describe selector does not match.
    assert!(!describe.matches(&v1, field_value));
    assert!(
        FieldSelector::parse("involvedObject.kind=Widget,involvedObject.uid=u-1")
            .unwrap()
            .matches(&v1, field_value)
    );
    assert_eq!(field_value(&v1, "reportingComponent").as_deref(), Some("keelson"));
    assert_eq!(field_value(&v1, "source").as_deref(), Some("old"));
    // Aliases only apply to Events.
    assert_eq!(
        field_value(&json!({"kind": "Pod", "involvedObject": {"name": "x"}}), "regarding.name"),
        None
    );
}

#[test]
fn field_getter_gives_jobs_and_nodes_their_upstream_fields() {
    let job = json!({"kind": "Job", "status": {"succeeded": 1}});
    assert_eq!(field_value(&job, "status.successful").as_deref(), Some("1"));
    assert_eq!(field_value(&json!({"kind": "Job"}), "status.successful").as_deref(), Some("0"));
    let node = json!({"kind": "Node", "spec": {}});
    assert_eq!(field_value(&node, "spec.unschedulable").as_deref(), Some("false"));
    let cordoned = json!({"kind": "Node", "spec": {"unschedulable": true}});
    assert_eq!(field_value(&cordoned, "spec.unschedulable").as_deref(), Some("true"));
}
