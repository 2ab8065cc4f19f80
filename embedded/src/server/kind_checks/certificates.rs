//! CertificateSigningRequests, as upstream validates them: a PEM certificate request, a signer
//! name of the form `example.com/name`, known key usages, a duration of at least ten minutes;
//! conditions that are not contradictory and, once `Approved`, `Denied` or `Failed`, stay; a
//! certificate only for an approved request, never replaced.

use base64::Engine;
use serde_json::Value;
use x509_parser::prelude::FromDer;

use super::{Cause, invalid, is_dns_label, required};
use crate::validation::{self, Bad};

/// The key usages a request may ask for (upstream's `KeyUsage` values).
pub(crate) const KEY_USAGES: [&str; 23] = [
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];

/// The shortest certificate a request may ask for, in seconds.
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// What a condition's `status` may be.
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// The conditions that, once added, stay.
const LASTING_CONDITIONS: [&str; 3] = ["Approved", "Denied", "Failed"];

/// The causes of a CertificateSigningRequest `object`, written over `old`.
pub(super) fn certificate_signing_request(object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = spec(object.get("spec").unwrap_or(&Value::Null));
    causes.extend(conditions(object));
    causes.extend(certificate(object, old));
    if let Some(old) = old {
        for kind in LASTING_CONDITIONS {
            if has_condition(old, kind) && !has_condition(object, kind) {
                let detail = format!("updates may not remove a condition of type {kind:?}");
                causes.push(Cause::from(&validation::forbidden("status.conditions", &detail)));
            }
        }
    }
    causes
}

/// The decoded PEM of a base64 field (`spec.request`, `status.certificate`).
pub(crate) fn pem_bytes(field: Option<&Value>) -> Option<Vec<u8>> {
    let text = field?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// The DER of the `CERTIFICATE REQUEST` in a request's `spec.request`, or why it holds none.
pub(crate) fn request_der(request: Option<&Value>) -> Result<Vec<u8>, &'static str> {
    let bytes = pem_bytes(request).ok_or("PEM block type must be CERTIFICATE REQUEST")?;
    let block = pem_block(&bytes, "CERTIFICATE REQUEST")?;
    x509_parser::certification_request::X509CertificationRequest::from_der(&block)
        .map_err(|_| "the certificate request cannot be parsed")?;
    Ok(block)
}

/// The first PEM block of `bytes`, which must be of type `label`.
fn pem_block(bytes: &[u8], label: &str) -> Result<Vec<u8>, &'static str> {
    match x509_parser::pem::parse_x509_pem(bytes) {
        Ok((_, pem)) if pem.label == label => Ok(pem.contents),
        Ok(_) if label == "CERTIFICATE" => Err("PEM block type must be CERTIFICATE"),
        Ok(_) => Err("PEM block type must be CERTIFICATE REQUEST"),
        Err(_) => Err("must contain at least one PEM block"),
    }
}

fn spec(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    match spec.get("request").and_then(Value::as_str) {
        None | Some("") => causes.push(required("spec.request")),
        Some(_) => {
            if let Err(detail) = request_der(spec.get("request")) {
                causes.push(invalid("spec.request", "[]byte{...}", detail));
            }
        }
    }
    match spec.get("signerName").and_then(Value::as_str) {
        None | Some("") => causes.push(required("spec.signerName")),
        Some(name) if !is_signer_name(name) => causes.push(Cause::from(&validation::invalid(
            "spec.signerName",
            Bad::Str(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ))),
        Some(_) => {}
    }
    match spec.get("usages").and_then(Value::as_array).filter(|u| !u.is_empty()) {
        None => causes.push(required("spec.usages")),
        Some(usages) => {
            for (i, usage) in usages.iter().enumerate() {
                let field = format!("spec.usages[{i}]");
                if !usage.as_str().is_some_and(|u| KEY_USAGES.contains(&u)) {
                    let supported = KEY_USAGES.map(str::to_owned);
                    let bad = Bad::Json(usage);
                    causes.push(Cause::from(&validation::not_supported(&field, bad, &supported)));
                } else if usages[..i].contains(usage) {
                    causes.push(Cause::from(&validation::duplicate(&field, Bad::Json(usage))));
                }
            }
        }
    }
    if let Some(seconds) = spec.get("expirationSeconds").and_then(Value::as_i64)
        && seconds < MIN_EXPIRATION_SECONDS
    {
        let detail =
            format!("may not specify a duration less than {MIN_EXPIRATION_SECONDS} seconds");
        causes.push(invalid("spec.expirationSeconds", &seconds.to_string(), &detail));
    }
    causes
}

/// `domain/path`, the domain a DNS subdomain with at least one dot.
fn is_signer_name(name: &str) -> bool {
    let Some((domain, path)) = name.split_once('/') else { return false };
    domain.contains('.')
        && domain.len() <= 253
        && domain.split('.').all(is_dns_label)
        && !path.is_empty()
        && !path.contains('/')
}

fn conditions(object: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let listed = object.pointer("/status/conditions").and_then(Value::as_array);
    let mut seen: Vec<&str> = Vec::new();
    for (i, condition) in listed.into_iter().flatten().enumerate() {
        let field = format!("status.conditions[{i}]");
        match condition.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()) {
            None => causes.push(required(&format!("{field}.type"))),
            Some(kind) if LASTING_CONDITIONS.contains(&kind) && seen.contains(&kind) => {
                let bad = Bad::Str(kind);
                causes.push(Cause::from(&validation::duplicate(&format!("{field}.type"), bad)));
            }
            Some(kind) => seen.push(kind),
        }
        match condition.get("status") {
            None => causes.push(required(&format!("{field}.status"))),
            Some(status) if !status.as_str().is_some_and(|s| CONDITION_STATUSES.contains(&s)) => {
                let field = format!("{field}.status");
                let (bad, supported) = (Bad::Json(status), CONDITION_STATUSES.map(str::to_owned));
                causes.push(Cause::from(&validation::not_supported(&field, bad, &supported)));
            }
            Some(_) => {}
        }
    }
    if seen.contains(&"Approved") && seen.contains(&"Denied") {
        causes.push(Cause::from(&validation::invalid(
            "status.conditions",
            Bad::Str("Denied"),
            "Approved and Denied conditions are mutually exclusive",
        )));
    }
    causes
}

fn certificate(object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let issued = object.pointer("/status/certificate").filter(|c| c.as_str() != Some(""));
    let before = old.and_then(|o| o.pointer("/status/certificate"));
    let Some(issued) = issued else { return Vec::new() };
    if before.is_some_and(|b| b != issued) {
        let detail = "updates may not modify existing certificate content";
        return vec![Cause::from(&validation::forbidden("status.certificate", detail))];
    }
    let shown = "\"<certificate data>\"";
    if !has_condition(object, "Approved") || has_condition(object, "Denied") {
        let detail = "certificate can only be set if an Approved condition is present and a Denied condition is not";
        return vec![invalid("status.certificate", shown, detail)];
    }
    let parsed =
        pem_bytes(Some(issued)).ok_or("must contain at least one PEM block").and_then(|bytes| {
            let der = pem_block(&bytes, "CERTIFICATE")?;
            x509_parser::parse_x509_certificate(&der)
                .map_err(|_| "the certificate cannot be parsed")?;
            Ok(())
        });
    match parsed {
        Ok(()) => Vec::new(),
        Err(detail) => vec![invalid("status.certificate", shown, detail)],
    }
}

/// Whether the request has a condition of `kind` (with status `True`).
pub(crate) fn has_condition(object: &Value, kind: &str) -> bool {
    object.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|conditions| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    })
}

#[cfg(test)]
mod tests {
    use rcgen::{CertificateParams, KeyPair};
    use serde_json::json;

    use super::super::tests::found;
    use super::*;

    fn base64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    fn csr() -> Value {
        let key = KeyPair::generate().unwrap();
        let pem = CertificateParams::default().serialize_request(&key).unwrap().pem().unwrap();
        json!({"metadata": {"name": "jane"}, "spec": {"request": base64(&pem),
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}})
    }

    fn problems(object: &Value, old: Option<&Value>) -> Vec<String> {
        found("certificatesigningrequests", object, old).into_iter().map(|(text, _)| text).collect()
    }

    #[test]
    fn a_request_needs_a_pem_request_a_signer_and_known_usages() {
        assert_eq!(problems(&csr(), None), Vec::<String>::new());
        assert_eq!(
            problems(&json!({"spec": {}}), None),
            [
                "spec.request: Required value",
                "spec.signerName: Required value",
                "spec.usages: Required value"
            ]
        );
        let mut bad = csr();
        let key = KeyPair::generate().unwrap();
        let certificate = CertificateParams::default().self_signed(&key).unwrap().pem();
        bad["spec"]["request"] = json!(base64(&certificate));
        bad["spec"]["signerName"] = json!("my-signer");
        bad["spec"]["usages"] = json!(["client auth", "teleport", "client auth"]);
        bad["spec"]["expirationSeconds"] = json!(599);
        let problems = problems(&bad, None);
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert_eq!(
            problems[0],
            "spec.request: Invalid value: []byte{...}: PEM block type must be CERTIFICATE REQUEST"
        );
        assert_eq!(
            problems[1],
            "spec.signerName: Invalid value: \"my-signer\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
        );
        assert!(
            problems[2].starts_with(
                "spec.usages[1]: Unsupported value: \"teleport\": supported values: \"signing\""
            ),
            "{}",
            problems[2]
        );
        assert_eq!(problems[3], "spec.usages[2]: Duplicate value: \"client auth\"");
        assert_eq!(
            problems[4],
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds"
        );
    }

    #[test]
    fn conditions_may_not_contradict_or_go_and_certificates_need_an_approval() {
        let approved = {
            let mut csr = csr();
            csr["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
            csr
        };
        let mut both = approved.clone();
        let denied = json!({"type": "Denied", "status": "True"});
        both["status"]["conditions"].as_array_mut().unwrap().push(denied);
        assert_eq!(
            problems(&both, None),
            [
                "status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
            ]
        );
        assert_eq!(
            problems(&csr(), Some(&approved)),
            [
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        let key = KeyPair::generate().unwrap();
        let certificate = base64(&CertificateParams::default().self_signed(&key).unwrap().pem());
        let mut unapproved = csr();
        unapproved["status"] = json!({"certificate": certificate});
        assert_eq!(
            problems(&unapproved, None),
            [
                "status.certificate: Invalid value: \"<certificate data>\": certificate can only be set if an Approved condition is present and a Denied condition is not"
            ]
        );
        let mut issued = approved.clone();
        issued["status"]["certificate"] = json!(certificate);
        assert_eq!(problems(&issued, Some(&approved)), Vec::<String>::new());
        let mut replaced = issued.clone();
        replaced["status"]["certificate"] =
            json!(base64("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"));
        assert_eq!(
            problems(&replaced, Some(&issued)),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
    }
}
