//! Conversion of the `CertificateSigningRequest`s `kubectl certificate approve|deny` sends: the
//! whole object as read, with the condition it adds, PUT to the `approval` subresource. Its
//! status is what the request is about, so it is mapped in full, unlike a review's.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use k8s_pb::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestSpec,
    CertificateSigningRequestStatus, ExtraValue,
};
use serde_json::{Map, Value};

use super::fields::{Ctx, Object, item, join};
use super::meta::{object_meta, time};

/// A `CertificateSigningRequest`, all of it.
pub(crate) fn certificate_signing_request(
    csr: CertificateSigningRequest,
    ctx: &mut Ctx,
) -> Map<String, Value> {
    let CertificateSigningRequest { metadata, spec, status } = csr;
    let mut out = Object::default();
    out.put("metadata", object_meta(metadata, ctx, "metadata"));
    // Both structs in Go, so always written (`status` is `omitempty`, which spares no struct).
    out.put("spec", csr_spec(spec.unwrap_or_default()));
    out.put("status", csr_status(status.unwrap_or_default(), ctx, "status"));
    out.into()
}

fn csr_spec(spec: CertificateSigningRequestSpec) -> Object {
    let CertificateSigningRequestSpec {
        request,
        signer_name,
        expiration_seconds,
        usages,
        username,
        uid,
        groups,
        extra,
    } = spec;
    let mut out = Object::default();
    // A `[]byte` without `omitempty`: `null` when nil, which is when Go's encoder left it out
    // (its decoder makes a present one non-nil, so an empty one is `""`).
    out.put("request", request.map(|bytes| BASE64.encode(bytes)));
    out.always("signerName", signer_name);
    out.pointer("expirationSeconds", expiration_seconds);
    out.items("usages", usages);
    out.omitempty("username", username);
    out.omitempty("uid", uid);
    out.items("groups", groups);
    // An `ExtraValue` is a `[]string` in Go, decoded non-nil: a list, `[]` when empty. (Go
    // writes an empty one as an empty message, which prost leaves out when re-encoding, so
    // `convert`'s length check refuses a body with one unless the JSON has an empty string.)
    out.entries(
        "extra",
        extra.into_iter().map(|(key, ExtraValue { items })| (key, items)).collect(),
    );
    out
}

fn csr_status(status: CertificateSigningRequestStatus, ctx: &mut Ctx, path: &str) -> Object {
    let CertificateSigningRequestStatus { conditions, certificate } = status;
    let mut out = Object::default();
    let conditions = conditions.into_iter().enumerate();
    out.items(
        "conditions",
        conditions.map(|(i, c)| condition(c, ctx, &item(path, "conditions", i))).collect(),
    );
    // A `[]byte` with `omitempty`: left out when empty.
    if let Some(certificate) = certificate.filter(|bytes| !bytes.is_empty()) {
        out.put("certificate", BASE64.encode(certificate));
    }
    out
}

/// An item of `status.conditions`. Its times are `metav1.Time` held by value, structs that
/// `omitempty` does not leave out: always written, `null` when zero (as `creationTimestamp`).
fn condition(condition: CertificateSigningRequestCondition, ctx: &mut Ctx, path: &str) -> Value {
    let CertificateSigningRequestCondition {
        r#type,
        status,
        reason,
        message,
        last_update_time,
        last_transition_time,
    } = condition;
    let mut out = Object::default();
    out.always("type", r#type);
    out.always("status", status);
    out.omitempty("reason", reason);
    out.omitempty("message", message);
    out.put(
        "lastUpdateTime",
        time(last_update_time.unwrap_or_default(), ctx, &join(path, "lastUpdateTime")),
    );
    out.put(
        "lastTransitionTime",
        time(last_transition_time.unwrap_or_default(), ctx, &join(path, "lastTransitionTime")),
    );
    out.into()
}
