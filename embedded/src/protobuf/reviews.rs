//! Conversions of the reviews kubectl sends over protobuf (`kubectl auth can-i`, `can-i --list`,
//! `whoami`), and of the token requests of `kubectl create token`. Their `status` is the server's
//! answer, so what a request carries there is left out rather than refused (Go writes the empty
//! struct).

use k8s_pb::api::authentication::v1::{
    BoundObjectReference, SelfSubjectReview, TokenRequest, TokenRequestSpec,
};
use k8s_pb::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
};
use serde_json::{Map, Value};

use super::fields::{Ctx, Object};
use super::meta::object_meta;

/// A `SelfSubjectAccessReview`: the resource or non-resource URL it asks about.
pub(crate) fn access_review(review: SelfSubjectAccessReview, ctx: &mut Ctx) -> Map<String, Value> {
    let SelfSubjectAccessReview { metadata, spec, status: _ } = review;
    let SelfSubjectAccessReviewSpec { resource_attributes, non_resource_attributes } =
        spec.unwrap_or_default();
    let mut spec = Object::default();
    if let Some(attributes) = resource_attributes {
        spec.put("resourceAttributes", resource(attributes, ctx));
    }
    if let Some(NonResourceAttributes { path, verb }) = non_resource_attributes {
        let mut attributes = Object::default();
        attributes.omitempty("path", path);
        attributes.omitempty("verb", verb);
        spec.put("nonResourceAttributes", attributes);
    }
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.into()
}

fn resource(attributes: ResourceAttributes, ctx: &mut Ctx) -> Object {
    let ResourceAttributes {
        namespace,
        verb,
        group,
        version,
        resource,
        subresource,
        name,
        field_selector,
        label_selector,
    } = attributes;
    let path = "spec.resourceAttributes";
    ctx.unmapped_pointer(path, "fieldSelector", &field_selector);
    ctx.unmapped_pointer(path, "labelSelector", &label_selector);
    let mut out = Object::default();
    out.omitempty("namespace", namespace);
    out.omitempty("verb", verb);
    out.omitempty("group", group);
    out.omitempty("version", version);
    out.omitempty("resource", resource);
    out.omitempty("subresource", subresource);
    out.omitempty("name", name);
    out
}

/// A `SelfSubjectRulesReview`: the namespace it asks about.
pub(crate) fn rules_review(review: SelfSubjectRulesReview, ctx: &mut Ctx) -> Map<String, Value> {
    let SelfSubjectRulesReview { metadata, spec, status: _ } = review;
    let SelfSubjectRulesReviewSpec { namespace } = spec.unwrap_or_default();
    let mut spec = Object::default();
    spec.omitempty("namespace", namespace);
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.into()
}

/// A `SelfSubjectReview`: nothing but metadata.
pub(crate) fn self_review(review: SelfSubjectReview, ctx: &mut Ctx) -> Map<String, Value> {
    let SelfSubjectReview { metadata, status: _ } = review;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.into()
}

/// A `TokenRequest`: the audiences, lifetime and bound object it asks for.
pub(crate) fn token_request(request: TokenRequest, ctx: &mut Ctx) -> Map<String, Value> {
    let TokenRequest { metadata, spec, status: _ } = request;
    let TokenRequestSpec { audiences, expiration_seconds, bound_object_ref } =
        spec.unwrap_or_default();
    let mut spec = Object::default();
    spec.put("audiences", audiences);
    spec.put("expirationSeconds", expiration_seconds);
    spec.put(
        "boundObjectRef",
        bound_object_ref.map(|BoundObjectReference { kind, api_version, name, u_id }| {
            let mut bound = Object::default();
            bound.omitempty("kind", kind);
            bound.omitempty("apiVersion", api_version);
            bound.omitempty("name", name);
            bound.omitempty("uid", u_id);
            Value::from(bound)
        }),
    );
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    out.put("spec", spec);
    out.into()
}
