//! Service account tokens and who a request is from.
//!
//! `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` takes a `TokenRequest` (what
//! `kubectl create token` sends) and answers with a JWT signed with the server's service account
//! key (`<data-dir>/pki/sa.key`, ES256), carrying upstream's claims. The server then accepts that
//! token as a bearer token, as a cluster does, while it has not expired, names the API server
//! among its audiences, and its ServiceAccount (and the Pod, Secret or Node it is bound to, if
//! any) still exists with the same uid. What the account may then do is up to RBAC (`rbac`).

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::catalog::builtin_resource;
use crate::storage::{Entry, Store};

use super::ResourceRequest;
use super::errors::{ApiError, ApiResult, Cause};
use super::objects::{meta_str, new_uid, rfc3339};
use super::paths::object_key;
use super::read::json_response;
use super::users::User;
use super::write::body;

/// The issuer of the tokens, and the audience the API server accepts: upstream's defaults.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The lifetime of a token whose request names none, and the shortest one a request may ask for.
const DEFAULT_SECONDS: i64 = 3600;
const MIN_SECONDS: i64 = 600;
const MAX_SECONDS: i64 = 1 << 32;

/// A service account token's claims, as upstream writes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Claims {
    aud: Vec<String>,
    exp: i64,
    iat: i64,
    nbf: i64,
    iss: String,
    jti: String,
    sub: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubernetesClaims,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct KubernetesClaims {
    namespace: String,
    serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<ObjectRef>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ObjectRef {
    name: String,
    uid: String,
}

impl Claims {
    /// The user these claims name: the service account, with the credential and what the token
    /// is bound to as `extra`, as upstream's authenticator reports them.
    fn user(&self) -> User {
        let k = &self.kubernetes;
        let mut user = User::service_account(&k.namespace, &k.serviceaccount.name);
        user.uid = k.serviceaccount.uid.clone();
        let mut extra = |key: &str, value: String| {
            user.extra.insert(format!("authentication.kubernetes.io/{key}"), vec![value]);
        };
        extra("credential-id", format!("JTI={}", self.jti));
        if let Some(pod) = &k.pod {
            extra("pod-name", pod.name.clone());
            extra("pod-uid", pod.uid.clone());
        }
        if let Some(node) = &k.node {
            extra("node-name", node.name.clone());
            extra("node-uid", node.uid.clone());
        }
        user
    }
}

/// Signs and checks service account tokens.
#[derive(Clone)]
pub(crate) struct TokenKeys(Arc<Keys>);

struct Keys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    key_id: String,
}

impl TokenKeys {
    /// The keys of a PKCS#8 P-256 private key in PEM.
    pub(crate) fn from_pem(private_pem: &str) -> Result<Self, String> {
        let key_pair = rcgen::KeyPair::from_pem(private_pem).map_err(|e| e.to_string())?;
        let encoding =
            EncodingKey::from_ec_pem(private_pem.as_bytes()).map_err(|e| e.to_string())?;
        let decoding = DecodingKey::from_ec_pem(key_pair.public_key_pem().as_bytes())
            .map_err(|e| e.to_string())?;
        // Upstream's key id: the unpadded base64url SHA-256 of the public key's DER.
        let key_id = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(rcgen::PublicKeyData::subject_public_key_info(&key_pair)));
        Ok(TokenKeys(Arc::new(Keys { encoding, decoding, key_id })))
    }

    fn sign(&self, claims: &Claims) -> ApiResult<String> {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.0.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.0.encoding)
            .map_err(|e| ApiError::internal(format!("signing the token: {e}")))
    }

    /// The claims of `token` if its signature, issuer, lifetime and one of `audiences` hold.
    fn verify(&self, token: &str, audiences: &[&str]) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(audiences);
        validation.validate_nbf = true;
        validation.leeway = 0;
        jsonwebtoken::decode::<Claims>(token, &self.0.decoding, &validation)
            .ok()
            .map(|data| data.claims)
    }
}

/// The identity of a service account `token`, if the server accepts it (see the module
/// documentation) for one of `audiences`, with those of `audiences` it names.
pub(crate) fn authenticate(
    keys: &TokenKeys,
    store: &Store,
    token: &str,
    audiences: &[&str],
) -> Option<(User, Vec<String>)> {
    let claims = keys.verify(token, audiences)?;
    let k = &claims.kubernetes;
    let live = |resource: &str, namespace: &str, object: &ObjectRef| {
        let entry = stored(store, resource, namespace, &object.name)?;
        let same = meta_str(&entry.object, "uid") == Some(object.uid.as_str())
            && entry.object.pointer("/metadata/deletionTimestamp").is_none();
        same.then_some(())
    };
    live("serviceaccounts", &k.namespace, &k.serviceaccount)?;
    if let Some(pod) = &k.pod {
        live("pods", &k.namespace, pod)?;
    }
    if let Some(secret) = &k.secret {
        live("secrets", &k.namespace, secret)?;
    }
    if let Some(node) = &k.node {
        live("nodes", "", node)?;
    }
    let named = audiences.iter().filter(|a| claims.aud.iter().any(|c| c == *a));
    Some((claims.user(), named.map(|a| a.to_string()).collect()))
}

/// The stored core/v1 object `resource` `namespace/name`.
fn stored(store: &Store, resource: &str, namespace: &str, name: &str) -> Option<Entry> {
    let info = builtin_resource("", resource)?;
    store.get(&object_key(info, namespace, name))
}

/// `POST …/serviceaccounts/<name>/token`: a token for the account, in the request's
/// `TokenRequest` with its `status` filled in.
pub(crate) fn create(
    keys: &TokenKeys,
    store: &Store,
    request: &ResourceRequest,
) -> ApiResult<Response> {
    let target = &request.target;
    let namespace = target.namespace.clone().unwrap_or_default();
    let name = target.name.clone().unwrap_or_default();
    let mut token_request = body(request)?;
    let account = store
        .get(&object_key(&target.info, &namespace, &name))
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", &name))?;
    let spec = token_request.get("spec").cloned().unwrap_or_else(|| json!({}));
    let seconds = check_spec(&spec, &name)?;
    let mut audiences: Vec<String> = spec["audiences"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences.push(ISSUER.to_owned());
    }
    let mut kubernetes = KubernetesClaims {
        namespace: namespace.clone(),
        serviceaccount: ObjectRef {
            name: name.clone(),
            uid: meta_str(&account.object, "uid").unwrap_or_default().to_owned(),
        },
        pod: None,
        secret: None,
        node: None,
    };
    if let Some(bound) = spec.get("boundObjectRef").filter(|b| b.is_object()) {
        bind(store, &namespace, &name, bound, &mut kubernetes)?;
    }
    let (claims, token) = issue(keys, kubernetes, audiences.clone(), seconds)?;
    let expires = jiff::Timestamp::from_second(claims.exp).map(rfc3339).unwrap_or_default();
    token_request["metadata"]["name"] = json!(name);
    token_request["metadata"]["namespace"] = json!(namespace);
    token_request["metadata"]["creationTimestamp"] = Value::Null;
    token_request["spec"] = spec;
    token_request["spec"]["audiences"] = json!(audiences);
    token_request["spec"]["expirationSeconds"] = json!(seconds);
    token_request["status"] = json!({ "token": token, "expirationTimestamp": expires });
    Ok(json_response(StatusCode::CREATED, &token_request, &[]))
}

/// Claims for the account and bindings `kubernetes` names, for `audiences`, valid for
/// `seconds` from now, and the token that carries them.
fn issue(
    keys: &TokenKeys,
    kubernetes: KubernetesClaims,
    audiences: Vec<String>,
    seconds: i64,
) -> ApiResult<(Claims, String)> {
    let now = jiff::Timestamp::now().as_second();
    let claims = Claims {
        aud: audiences,
        exp: now + seconds,
        iat: now,
        nbf: now,
        iss: ISSUER.to_owned(),
        jti: new_uid(),
        sub: format!(
            "system:serviceaccount:{}:{}",
            kubernetes.namespace, kubernetes.serviceaccount.name
        ),
        kubernetes,
    };
    let token = keys.sign(&claims)?;
    Ok((claims, token))
}

/// The long-lived token of a `kubernetes.io/service-account-token` Secret: for the API server,
/// bound to the Secret, so that it is accepted while the Secret and the account (`account`,
/// uid `account_uid`) exist. Upstream's tokens of such Secrets never expire; this one does in
/// a hundred years, as the token format wants an expiry.
pub(crate) fn secret_token(
    keys: &TokenKeys,
    namespace: &str,
    (account, account_uid): (&str, &str),
    (secret, secret_uid): (&str, &str),
) -> ApiResult<String> {
    const CENTURY: i64 = 100 * 366 * 24 * 3600;
    let kubernetes = KubernetesClaims {
        namespace: namespace.to_owned(),
        serviceaccount: ObjectRef { name: account.to_owned(), uid: account_uid.to_owned() },
        pod: None,
        secret: Some(ObjectRef { name: secret.to_owned(), uid: secret_uid.to_owned() }),
        node: None,
    };
    Ok(issue(keys, kubernetes, vec![ISSUER.to_owned()], CENTURY)?.1)
}

/// The lifetime the spec asks for, or upstream's refusal of it.
fn check_spec(spec: &Value, name: &str) -> ApiResult<i64> {
    let seconds = spec["expirationSeconds"].as_i64().unwrap_or(DEFAULT_SECONDS);
    let problem = if seconds < MIN_SECONDS {
        "may not specify a duration less than 10 minutes"
    } else if seconds > MAX_SECONDS {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        return Ok(seconds);
    };
    let cause = Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {seconds}: {problem}"),
        field: "spec.expirationSeconds".into(),
    };
    Err(ApiError::invalid("authentication.k8s.io", "TokenRequest", name, vec![cause]))
}

/// Binds the token to the Pod, Secret or Node `bound` names, which must exist (with the uid it
/// gives, if any).
fn bind(
    store: &Store,
    namespace: &str,
    account: &str,
    bound: &Value,
    claims: &mut KubernetesClaims,
) -> ApiResult<()> {
    let kind = bound["kind"].as_str().unwrap_or_default();
    let (resource, object_namespace) = match (kind, bound["apiVersion"].as_str()) {
        ("Pod", Some("v1")) => ("pods", namespace),
        ("Secret", Some("v1")) => ("secrets", namespace),
        ("Node", Some("v1")) => ("nodes", ""),
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for serviceaccount {account:?} to object of type {}, {kind}",
                bound["apiVersion"].as_str().unwrap_or_default()
            )));
        }
    };
    let name = bound["name"].as_str().unwrap_or_default();
    let object = stored(store, resource, object_namespace, name)
        .ok_or_else(|| ApiError::not_found("", resource, name))?;
    let uid = meta_str(&object.object, "uid").unwrap_or_default().to_owned();
    if let Some(asked) = bound["uid"].as_str().filter(|u| !u.is_empty() && *u != uid) {
        return Err(ApiError::conflict(
            "",
            resource,
            name,
            &format!(
                "the UID in the bound object reference ({asked}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    let reference = Some(ObjectRef { name: name.to_owned(), uid });
    match kind {
        "Pod" => claims.pod = reference,
        "Secret" => claims.secret = reference,
        _ => claims.node = reference,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> TokenKeys {
        let pem = rcgen::KeyPair::generate().unwrap().serialize_pem();
        TokenKeys::from_pem(&pem).unwrap()
    }

    fn claims(aud: &str, from: i64, to: i64) -> Claims {
        Claims {
            aud: vec![aud.to_owned()],
            exp: to,
            iat: from,
            nbf: from,
            iss: ISSUER.to_owned(),
            jti: "j".into(),
            sub: "system:serviceaccount:default:bot".into(),
            kubernetes: KubernetesClaims {
                namespace: "default".into(),
                serviceaccount: ObjectRef { name: "bot".into(), uid: "u".into() },
                pod: None,
                secret: None,
                node: None,
            },
        }
    }

    #[test]
    fn a_signed_token_verifies_only_with_its_key_audience_and_lifetime() {
        let (keys, other) = (keys(), keys());
        let now = jiff::Timestamp::now().as_second();
        let good = claims(ISSUER, now, now + 600);
        let token = keys.sign(&good).unwrap();
        assert_eq!(keys.verify(&token, &[ISSUER]), Some(good));
        assert_eq!(other.verify(&token, &[ISSUER]), None, "another key's signature");
        let for_vault = keys.sign(&claims("vault", now, now + 600)).unwrap();
        assert_eq!(keys.verify(&for_vault, &[ISSUER]), None, "an audience the API server is not");
        assert!(keys.verify(&for_vault, &["vault", ISSUER]).is_some());
        let expired = keys.sign(&claims(ISSUER, now - 1200, now - 600)).unwrap();
        assert_eq!(keys.verify(&expired, &[ISSUER]), None);
        let mut tampered = token.clone();
        tampered.insert(token.find('.').unwrap() + 2, 'x');
        assert_eq!(keys.verify(&tampered, &[ISSUER]), None);
    }

    #[test]
    fn lifetimes_outside_upstreams_bounds_are_refused() {
        assert_eq!(check_spec(&json!({}), "bot").unwrap(), 3600);
        assert_eq!(check_spec(&json!({"expirationSeconds": 600}), "bot").unwrap(), 600);
        for seconds in [599, (1i64 << 32) + 1] {
            let refused = check_spec(&json!({ "expirationSeconds": seconds }), "bot").unwrap_err();
            let status = refused.status();
            assert_eq!(status["code"], 422);
            assert_eq!(status["details"]["causes"][0]["field"], "spec.expirationSeconds");
        }
    }

    #[test]
    fn a_service_account_is_named_as_upstream_names_it() {
        let info = serde_json::to_value(claims(ISSUER, 0, 1).user()).unwrap();
        assert_eq!(info["username"], "system:serviceaccount:default:bot");
        assert_eq!(info["uid"], "u");
        assert_eq!(
            info["groups"],
            json!([
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ])
        );
        assert_eq!(info["extra"]["authentication.kubernetes.io/credential-id"], json!(["JTI=j"]));
    }
}
