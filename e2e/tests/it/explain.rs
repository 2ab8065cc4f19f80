//! `kubectl explain` reads the OpenAPI v3 documents: built-in kinds show upstream's type names.

use crate::support::Keelson;

/// The line of `field` in an explanation's field list.
fn field_line<'a>(explained: &'a str, field: &str) -> &'a str {
    let prefix = format!("  {field}\t");
    explained.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{explained}"))
}

#[test]
fn explain_names_the_types_of_builtin_fields_and_still_explains_crds() {
    let k = Keelson::up_with(&["--no-controllers"]);

    let pods = k.ok(&["explain", "pods"]);
    assert_eq!(field_line(&pods, "metadata"), "  metadata\t<ObjectMeta>", "not -required-");
    assert_eq!(field_line(&pods, "spec"), "  spec\t<PodSpec>");
    assert_eq!(field_line(&pods, "status"), "  status\t<PodStatus>");

    let max_surge = k.ok(&["explain", "deploy.spec.strategy.rollingUpdate.maxSurge"]);
    assert!(max_surge.contains("FIELD: maxSurge <IntOrString>"), "{max_surge}");
    // The field's description is followed by its type's.
    assert!(max_surge.contains("IntOrString is a type that can hold"), "{max_surge}");

    let resources = k.ok(&["explain", "pod.spec.containers.resources"]);
    assert!(resources.contains("FIELD: resources <ResourceRequirements>"), "{resources}");
    assert!(resources.contains("ResourceRequirements describes"), "{resources}");
    assert_eq!(field_line(&resources, "limits"), "  limits\t<map[string]Quantity>");
    assert_eq!(field_line(&resources, "claims"), "  claims\t<[]ResourceClaim>");

    let recursive = k.ok(&["explain", "pods", "--recursive"]);
    for line in
        ["  spec\t<PodSpec>", "    containers\t<[]Container> -required-", "      image\t<string>"]
    {
        assert!(recursive.lines().any(|l| l == line), "{line:?} in:\n{recursive}");
    }

    let crd = k.ok(&["explain", "modeldeployments"]);
    assert!(crd.contains("KIND:       ModelDeployment"), "{crd}");
    assert_eq!(field_line(&crd, "metadata"), "  metadata\t<ObjectMeta>");
    assert!(field_line(&crd, "spec").starts_with("  spec\t<Object>"), "{crd}");
    let replicas = k.ok(&["explain", "modeldeployments.spec.replicas"]);
    assert!(replicas.contains("FIELD: replicas <integer>"), "{replicas}");
}
