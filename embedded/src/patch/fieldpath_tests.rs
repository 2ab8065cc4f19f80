//! Tests of field paths, field sets and their `FieldsV1` encoding.

use serde_json::json;

use super::fieldpath::{FieldSet, Pe, display_path};

fn f(name: &str) -> Pe {
    Pe::Field(name.to_owned())
}

#[test]
fn fields_v1_round_trip_of_upstream_example() {
    let v = json!({
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}}}}
    });
    let set = FieldSet::from_fields_v1(&v).unwrap();
    let item = Pe::key(vec![("name".to_owned(), json!("nginx"))]);
    assert!(set.contains(&[f("metadata"), f("labels"), f("app")]));
    assert!(!set.contains(&[f("metadata"), f("labels")]));
    assert!(set.contains(&[f("spec"), f("containers"), item.clone()]));
    assert!(set.contains(&[f("spec"), f("containers"), item, f("image")]));
    assert_eq!(set.paths().len(), 3);
    assert_eq!(set.to_fields_v1(), v);
}

#[test]
fn key_elements_are_sorted_and_displayed_like_upstream() {
    let pe = Pe::key(vec![
        ("protocol".to_owned(), json!("TCP")),
        ("containerPort".to_owned(), json!(80)),
    ]);
    assert_eq!(pe.encode(), r#"k:{"containerPort":80,"protocol":"TCP"}"#);
    assert_eq!(Pe::decode(r#"k:{"protocol":"TCP","containerPort":80}"#), Some(pe.clone()));
    let path = vec![f("spec"), f("ports"), pe, f("name")];
    assert_eq!(display_path(&path), r#".spec.ports[containerPort=80,protocol="TCP"].name"#);
    assert_eq!(
        display_path(&[f("metadata"), f("finalizers"), Pe::Value("\"a\"".into())]),
        r#".metadata.finalizers[="a"]"#
    );
    assert_eq!(Pe::decode("v:\"a\""), Some(Pe::Value("\"a\"".into())));
    assert_eq!(Pe::decode("i:3"), Some(Pe::Index(3)));
    assert_eq!(Pe::decode("x:3"), None);
}

#[test]
fn set_algebra_is_exact_path_based() {
    let mut a = FieldSet::new();
    a.insert(&[f("spec")]);
    a.insert(&[f("spec"), f("replicas")]);
    a.insert(&[f("spec"), f("paused")]);
    let mut b = FieldSet::new();
    b.insert(&[f("spec")]);
    b.insert(&[f("spec"), f("replicas")]);
    let d = a.clone().difference(&b);
    assert_eq!(d.to_fields_v1(), json!({"f:spec": {"f:paused": {}}}));
    assert_eq!(a.intersection(&b).to_fields_v1(), json!({"f:spec": {".": {}, "f:replicas": {}}}));
    assert_eq!(d.union(&b).to_fields_v1(), a.to_fields_v1());
    assert!(a.clone().difference(&a).is_empty());
    let mut leaf = FieldSet::new();
    leaf.insert(&[f("spec"), f("template"), f("x")]);
    assert_eq!(leaf.with_field_ancestors().paths().len(), 3);
}

#[test]
fn invalid_fields_v1_is_rejected() {
    assert!(FieldSet::from_fields_v1(&json!({"q:x": {}})).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"f:x": 1})).is_err());
    assert!(FieldSet::from_fields_v1(&json!([])).is_err());
}
