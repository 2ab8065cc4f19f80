//! CertificateSigningRequests as kube-apiserver and kube-controller-manager's signer handle them:
//!
//! - a new request records who asked (`spec.username`, `uid`, `groups`, `extra`), whatever it
//!   says;
//! - its spec never changes afterwards; `Approved` and `Denied` conditions change only through
//!   `/approval` (which needs RBAC's `approve` on the signer too), everything else of the status
//!   only through `/status`; conditions get their times;
//! - an approved request for `kubernetes.io/kube-apiserver-client` is signed by the server's CA:
//!   the certificate names the request's subject, is for client authentication, and is valid for
//!   the duration asked (`spec.expirationSeconds`, at most a year). The server accepts it from
//!   clients (`client_certs`). A request it cannot sign gets a `Failed` condition saying why.

use base64::Engine;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber, SubjectPublicKeyInfo,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use crate::catalog::{ResourceInfo, builtin_resource};
use crate::storage::{Entry, EventType, Store, StoreError, WriteOp};

use super::errors::{ApiError, ApiResult};
use super::kind_checks::certificates::{has_condition, request_der};
use super::objects::now_rfc3339;
use super::paths::resource_prefix;
use super::rbac::{self, Attributes, ResourceAttributes};
use super::users::User;

/// The subresource through which requests are approved or denied.
pub(crate) const APPROVAL: &str = "approval";

/// The signer this server runs: client certificates for the API server.
const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// The longest certificate it issues (kube-controller-manager's default
/// `--cluster-signing-duration`), in seconds.
const MAX_DURATION_SECONDS: i64 = 365 * 24 * 3600;

/// How far back a certificate's validity starts, for clocks a little behind the server's.
const BACKDATE_SECONDS: i64 = 5 * 60;

/// The conditions only `/approval` changes.
const APPROVALS: [&str; 2] = ["Approved", "Denied"];

/// The built-in `certificatesigningrequests` resource.
fn requests() -> &'static ResourceInfo {
    builtin_resource("certificates.k8s.io", "certificatesigningrequests")
        .expect("certificatesigningrequests are built in")
}

/// Whether `info` is the CertificateSigningRequests resource.
pub(crate) fn is_request(info: &ResourceInfo) -> bool {
    info.builtin
        && info.group == "certificates.k8s.io"
        && info.resource == "certificatesigningrequests"
}

/// Records in a new request who asked for it, replacing what it says.
pub(crate) fn record_requestor(user: &User, object: &mut Value) {
    let spec = &mut object["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    spec["username"] = json!(user.username);
    for (field, value) in [
        ("uid", (!user.uid.is_empty()).then(|| json!(user.uid))),
        ("groups", (!user.groups.is_empty()).then(|| json!(user.groups))),
        ("extra", (!user.extra.is_empty()).then(|| json!(user.extra))),
    ] {
        match (value, spec.as_object_mut()) {
            (Some(value), _) => spec[field] = value,
            (None, Some(spec)) => {
                spec.remove(field);
            }
            (None, None) => {}
        }
    }
}

/// Whether a condition is `Approved` or `Denied`.
fn is_approval(condition: &Value) -> bool {
    condition.get("type").and_then(Value::as_str).is_some_and(|t| APPROVALS.contains(&t))
}

/// An update of `old` to `new` as the subresource written allows it. `new` has been merged as an
/// update of the main resource (status as stored) or of `/status` (all of the status sent).
pub(crate) fn merge_update(
    subresource: Option<&str>,
    old: &Value,
    mut new: Value,
    now: &str,
) -> Value {
    if let Some(spec) = old.get("spec") {
        new["spec"] = spec.clone();
    }
    let conditions = |object: &Value| -> Vec<Value> {
        object.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default()
    };
    let (approvals_from, others_from) = match subresource {
        Some(APPROVAL) => (&new, old),
        Some("status") => (old, &new),
        _ => return new,
    };
    let stored = conditions(old);
    let merged: Vec<Value> = conditions(approvals_from)
        .into_iter()
        .filter(is_approval)
        .chain(conditions(others_from).into_iter().filter(|c| !is_approval(c)))
        .map(|condition| with_times(condition, &stored, now))
        .collect();
    if subresource == Some(APPROVAL) {
        new["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
    }
    if !merged.is_empty() {
        new["status"]["conditions"] = Value::Array(merged);
    } else if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
        status.remove("conditions");
    }
    new
}

/// A condition with its times: `lastUpdateTime` now when it has none, `lastTransitionTime` as
/// the stored condition of the same type and status had it, else now.
fn with_times(mut condition: Value, stored: &[Value], now: &str) -> Value {
    if condition.get("lastUpdateTime").is_none_or(Value::is_null) {
        condition["lastUpdateTime"] = json!(now);
    }
    if condition.get("lastTransitionTime").is_none_or(Value::is_null) {
        let same = stored.iter().find(|s| {
            s.get("type") == condition.get("type") && s.get("status") == condition.get("status")
        });
        let since = same.and_then(|s| s.get("lastTransitionTime")).filter(|t| !t.is_null());
        condition["lastTransitionTime"] = since.cloned().unwrap_or_else(|| json!(now));
    }
    condition
}

/// Refuses an approval or denial by a user RBAC does not let `approve` the request's signer
/// (by its name, or its domain's `domain/*`), as upstream's admission does.
pub(crate) fn check_approver(
    store: &Store,
    user: &User,
    old: &Value,
    new: &Value,
) -> ApiResult<()> {
    let changed = |kind: &str| has_condition(old, kind) != has_condition(new, kind);
    if user.is_master() || !APPROVALS.iter().any(|kind| changed(kind)) {
        return Ok(());
    }
    let signer = new.pointer("/spec/signerName").and_then(Value::as_str).unwrap_or_default();
    let domain_wide = signer.split_once('/').map(|(domain, _)| format!("{domain}/*"));
    let allowed = [Some(signer.to_owned()), domain_wide].into_iter().flatten().any(|name| {
        let attributes = Attributes::Resource(ResourceAttributes {
            verb: "approve".into(),
            group: "certificates.k8s.io".into(),
            resource: "signers".into(),
            name,
            ..ResourceAttributes::default()
        });
        rbac::check(store, user, &attributes).is_ok()
    });
    match allowed {
        true => Ok(()),
        false => Err(ApiError::forbidden(format!(
            "certificatesigningrequests.certificates.k8s.io \"{}\" is forbidden: user not permitted to approve requests with signerName \"{signer}\"",
            new.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
        ))),
    }
}

/// What the signer does with a request.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Not for it, not approved, or done.
    Nothing,
    /// The certificate, PEM.
    Issued(String),
    /// Why it cannot be signed.
    Failed(String),
}

/// Signs `request` with `issuer` if it is an approved, unsigned request for the client signer.
fn sign(request: &Value, issuer: &Issuer<'_, KeyPair>, now: i64) -> Outcome {
    let signer = request.pointer("/spec/signerName").and_then(Value::as_str);
    let done = request.pointer("/status/certificate").is_some_and(|c| c.as_str() != Some(""));
    if signer != Some(CLIENT_SIGNER)
        || done
        || !has_condition(request, "Approved")
        || has_condition(request, "Denied")
        || has_condition(request, "Failed")
    {
        return Outcome::Nothing;
    }
    match client_certificate(request, issuer, now) {
        Ok(pem) => Outcome::Issued(pem),
        Err(why) => Outcome::Failed(why),
    }
}

/// The client certificate for `request`, PEM.
fn client_certificate(
    request: &Value,
    issuer: &Issuer<'_, KeyPair>,
    now: i64,
) -> Result<String, String> {
    let usages: Vec<&str> = request
        .pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|u| u.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let allowed = ["digital signature", "key encipherment", "client auth"];
    if let Some(usage) = usages.iter().find(|u| !allowed.contains(u)) {
        return Err(format!("invalid usage for client certificate: {usage}"));
    }
    if !usages.contains(&"client auth") {
        return Err("missing required usage for client certificate: client auth".into());
    }
    let der = request_der(request.pointer("/spec/request")).map_err(str::to_owned)?;
    let (_, csr) = X509CertificationRequest::from_der(&der).map_err(|e| e.to_string())?;
    csr.verify_signature()
        .map_err(|_| "the certificate request's signature is invalid".to_owned())?;
    let info = &csr.certification_request_info;
    let key = SubjectPublicKeyInfo::from_der(info.subject_pki.raw)
        .map_err(|e| format!("the request's public key: {e}"))?;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(&info.subject)?;
    params.subject_alt_names = alt_names(&csr)?;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = usages
        .iter()
        .filter_map(|u| match *u {
            "digital signature" => Some(KeyUsagePurpose::DigitalSignature),
            "key encipherment" => Some(KeyUsagePurpose::KeyEncipherment),
            _ => None,
        })
        .collect();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let asked = request.pointer("/spec/expirationSeconds").and_then(Value::as_i64);
    let lasts = asked.unwrap_or(MAX_DURATION_SECONDS).min(MAX_DURATION_SECONDS);
    let at = |seconds: i64| {
        time::OffsetDateTime::from_unix_timestamp(seconds).map_err(|e| e.to_string())
    };
    params.not_before = at(now - BACKDATE_SECONDS)?;
    params.not_after = at(now + lasts)?;
    let mut serial = [0u8; 16];
    getrandom::fill(&mut serial).map_err(|e| e.to_string())?;
    serial[0] &= 0x7f;
    params.serial_number = Some(SerialNumber::from_slice(&serial));
    params.signed_by(&key, issuer).map(|c| c.pem()).map_err(|e| e.to_string())
}

/// The request's subject, each attribute once (the certificate library holds one value per
/// attribute type, so a subject with two organizations cannot be issued).
fn subject(name: &x509_parser::x509::X509Name<'_>) -> Result<DistinguishedName, String> {
    let mut subject = DistinguishedName::new();
    for attribute in name.iter_attributes() {
        let oid = attribute.attr_type();
        let value = attribute.as_str().map_err(|_| format!("the subject's {oid} is not text"))?;
        let kind = match oid.to_id_string().as_str() {
            "2.5.4.3" => DnType::CommonName,
            "2.5.4.10" => DnType::OrganizationName,
            "2.5.4.11" => DnType::OrganizationalUnitName,
            "2.5.4.6" => DnType::CountryName,
            "2.5.4.7" => DnType::LocalityName,
            "2.5.4.8" => DnType::StateOrProvinceName,
            other => return Err(format!("the subject attribute {other} is not supported")),
        };
        if subject.get(&kind).is_some() {
            return Err(format!(
                "the subject names {kind:?} more than once, which this signer cannot issue"
            ));
        }
        subject.push(kind, value);
    }
    Ok(subject)
}

/// The DNS names, IP addresses, email addresses and URIs the request asks for.
fn alt_names(csr: &X509CertificationRequest<'_>) -> Result<Vec<SanType>, String> {
    let mut names = Vec::new();
    for extension in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(alternatives) = extension else { continue };
        for name in &alternatives.general_names {
            let text = |s: &str| s.to_owned().try_into().map_err(|e: rcgen::Error| e.to_string());
            names.push(match name {
                GeneralName::DNSName(dns) => SanType::DnsName(text(dns)?),
                GeneralName::RFC822Name(email) => SanType::Rfc822Name(text(email)?),
                GeneralName::URI(uri) => SanType::URI(text(uri)?),
                GeneralName::IPAddress(bytes) => match bytes.len() {
                    4 => SanType::IpAddress(
                        <[u8; 4]>::try_from(*bytes).map_err(|e| e.to_string())?.into(),
                    ),
                    16 => SanType::IpAddress(
                        <[u8; 16]>::try_from(*bytes).map_err(|e| e.to_string())?.into(),
                    ),
                    _ => return Err("a subject alternative IP address is malformed".into()),
                },
                other => {
                    return Err(format!("the subject alternative name {other} is not supported"));
                }
            });
        }
    }
    Ok(names)
}

/// The request with the signer's outcome in its status.
fn signed(request: &Value, outcome: Outcome, now: &str) -> Option<Value> {
    let mut request = request.clone();
    match outcome {
        Outcome::Nothing => return None,
        Outcome::Issued(pem) => {
            request["status"]["certificate"] =
                json!(base64::engine::general_purpose::STANDARD.encode(pem));
        }
        Outcome::Failed(message) => {
            let failed = json!({"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                "message": message, "lastUpdateTime": now, "lastTransitionTime": now});
            match request.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
                Some(conditions) => conditions.push(failed),
                None => request["status"]["conditions"] = json!([failed]),
            }
        }
    }
    Some(request)
}

/// Signs `entry`'s request if it is due.
async fn handle(
    store: &Store,
    issuer: &Issuer<'_, KeyPair>,
    entry: &Entry,
) -> Result<(), StoreError> {
    let now = jiff::Timestamp::now();
    let outcome = sign(&entry.object, issuer, now.as_second());
    let Some(object) = signed(&entry.object, outcome, &now_rfc3339()) else { return Ok(()) };
    let op = WriteOp::Update { key: entry.key.clone(), expected_revision: entry.revision, object };
    store.write_if_unchanged(op).await
}

/// Signs approved requests for the client signer as they come, until the store shuts down.
pub(crate) fn spawn(
    store: Store,
    ca_pem: &str,
    ca_key_pem: &str,
) -> Result<JoinHandle<()>, String> {
    let key = KeyPair::from_pem(ca_key_pem).map_err(|e| format!("the CA key: {e}"))?;
    let issuer =
        Issuer::from_ca_cert_pem(ca_pem, key).map_err(|e| format!("the CA certificate: {e}"))?;
    let prefix = resource_prefix(requests());
    Ok(tokio::spawn(async move {
        loop {
            let Ok(mut events) = store.watch(&prefix, store.revision()) else { return };
            for entry in store.list(&prefix).entries() {
                if let Err(error) = handle(&store, &issuer, entry).await {
                    tracing::warn!(%error, "signing a certificate signing request failed");
                }
            }
            loop {
                let event = match events.next().await {
                    Some(Ok(event)) => event,
                    // Fell behind the history: watch from now, and sign what was missed.
                    Some(Err(StoreError::Compacted { .. })) => break,
                    None | Some(Err(_)) => return,
                };
                if event.event_type == EventType::Deleted {
                    continue;
                }
                if let Some(entry) = store.get(&event.key)
                    && let Err(error) = handle(&store, &issuer, &entry).await
                {
                    tracing::warn!(%error, "signing a certificate signing request failed");
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use x509_parser::prelude::X509Certificate;

    use super::*;

    fn issuer() -> Issuer<'static, KeyPair> {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, "test-ca");
        params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        Issuer::new(params, KeyPair::generate().unwrap())
    }

    /// A request for `subject` (PEM in base64, as the API carries it).
    fn csr_of(subject: &[(DnType, &str)]) -> String {
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        for (kind, value) in subject {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let pem = params.serialize_request(&KeyPair::generate().unwrap()).unwrap().pem().unwrap();
        base64::engine::general_purpose::STANDARD.encode(pem)
    }

    fn request(usages: &[&str], conditions: Value) -> Value {
        json!({
            "metadata": {"name": "jane"},
            "spec": {"request": csr_of(&[(DnType::CommonName, "jane"), (DnType::OrganizationName, "dev")]),
                "signerName": CLIENT_SIGNER, "usages": usages, "expirationSeconds": 3600},
            "status": {"conditions": conditions},
        })
    }

    fn approved() -> Value {
        json!([{"type": "Approved", "status": "True"}])
    }

    #[test]
    fn an_approved_client_request_gets_a_certificate_for_its_subject() {
        let now = jiff::Timestamp::now().as_second();
        let Outcome::Issued(pem) =
            sign(&request(&["client auth", "digital signature"], approved()), &issuer(), now)
        else {
            panic!("not issued");
        };
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let (_, certificate) = X509Certificate::from_der(&block.contents).unwrap();
        let user = super::super::client_certs::user_of(&block.contents).unwrap();
        assert_eq!((user.username.as_str(), user.groups[0].as_str()), ("jane", "dev"));
        let validity = certificate.validity();
        assert_eq!(validity.not_after.timestamp() - now, 3600);
        assert_eq!(now - validity.not_before.timestamp(), BACKDATE_SECONDS);
        let usage = certificate.extended_key_usage().unwrap().unwrap().value;
        assert!(usage.client_auth && !usage.server_auth);
        assert!(!certificate.is_ca());
    }

    #[test]
    fn requests_not_approved_or_for_other_signers_are_left_alone() {
        let now = jiff::Timestamp::now().as_second();
        let pending = request(&["client auth"], json!([]));
        assert_eq!(sign(&pending, &issuer(), now), Outcome::Nothing);
        let denied = request(&["client auth"], json!([{"type": "Denied", "status": "True"}]));
        assert_eq!(sign(&denied, &issuer(), now), Outcome::Nothing);
        let mut other = request(&["client auth"], approved());
        other["spec"]["signerName"] = json!("example.com/mine");
        assert_eq!(sign(&other, &issuer(), now), Outcome::Nothing);
        let mut done = request(&["client auth"], approved());
        done["status"]["certificate"] = json!("eA==");
        assert_eq!(sign(&done, &issuer(), now), Outcome::Nothing);
    }

    #[test]
    fn a_request_the_client_signer_cannot_sign_fails_saying_why() {
        let now = jiff::Timestamp::now().as_second();
        let serving = request(&["server auth", "client auth"], approved());
        assert_eq!(
            sign(&serving, &issuer(), now),
            Outcome::Failed("invalid usage for client certificate: server auth".into())
        );
        let failed =
            signed(&serving, sign(&serving, &issuer(), now), "2026-11-28T00:00:00Z").unwrap();
        assert_eq!(failed["status"]["conditions"][1]["type"], "Failed");
        assert_eq!(failed["status"]["conditions"][1]["reason"], "SignerValidationFailure");
        assert_eq!(sign(&failed, &issuer(), now), Outcome::Nothing, "failed once, left alone");
    }

    #[test]
    fn the_requestor_is_who_asked_whatever_the_request_says() {
        let mut object =
            json!({"spec": {"username": "admin", "groups": ["system:masters"], "uid": "x"}});
        let user = User { username: "jane".into(), groups: vec!["dev".into()], ..User::default() };
        record_requestor(&user, &mut object);
        assert_eq!(object["spec"], json!({"username": "jane", "groups": ["dev"]}));
    }

    #[test]
    fn approval_changes_only_approvals_and_status_everything_else() {
        let now = "2026-11-28T00:00:00Z";
        let old = json!({"spec": {"signerName": CLIENT_SIGNER}, "status": {"conditions": [
            {"type": "Other", "status": "True", "lastUpdateTime": "t0", "lastTransitionTime": "t0"}]}});
        let approved = json!({"spec": {"signerName": "changed"}, "status": {"certificate": "eA==", "conditions": [
            {"type": "Approved", "status": "True", "reason": "KubectlApprove"},
            {"type": "Other", "status": "False"}]}});
        let merged = merge_update(Some(APPROVAL), &old, approved.clone(), now);
        assert_eq!(merged["spec"]["signerName"], CLIENT_SIGNER, "the spec never changes");
        assert_eq!(merged["status"].get("certificate"), None, "only the signer writes it");
        assert_eq!(
            merged["status"]["conditions"],
            json!([
            {"type": "Approved", "status": "True", "reason": "KubectlApprove", "lastUpdateTime": now, "lastTransitionTime": now},
            {"type": "Other", "status": "True", "lastUpdateTime": "t0", "lastTransitionTime": "t0"}])
        );
        let through_status = merge_update(Some("status"), &merged, approved, now);
        assert_eq!(through_status["status"]["certificate"], "eA==");
        let types: Vec<_> = through_status["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["type"].clone(), c["status"].clone()))
            .collect();
        assert_eq!(types, [(json!("Approved"), json!("True")), (json!("Other"), json!("False"))]);
    }
}
