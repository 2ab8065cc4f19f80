//! API tokens: generated once, shown once, kept only as SHA-256 hashes in labelled Secrets.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use sha2::{Digest, Sha256};

/// Label on the Secrets that hold API tokens.
pub const API_TOKEN_LABEL: &str = "keelson.dev/api-token";
/// Prefix of API tokens, so secret scanners and people can tell what one is.
pub const API_TOKEN_PREFIX: &str = "kat_";
/// Prefix of webhook tokens.
pub const WEBHOOK_TOKEN_PREFIX: &str = "kwh_";
/// Secret key of a token's hash.
pub const HASH_KEY: &str = "tokenHash";
const SCOPE_KEY: &str = "scope";
const NAME_KEY: &str = "name";

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// Read: `GET` requests only.
    Read,
    /// Read and write.
    Write,
}

impl Scope {
    /// The scope's name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            _ => None,
        }
    }
}

/// Who a request comes from: a token's name and scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The token's name; recorded on what it creates and decides.
    pub name: String,
    /// What it may do.
    pub scope: Scope,
}

/// A new random token with `prefix` (32 random bytes, base64url).
pub fn generate(prefix: &str) -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// The hex SHA-256 of a token: all that is stored.
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The Secret name of the API token `name`.
pub fn secret_name(name: &str) -> String {
    format!("keelson-api-token-{name}")
}

/// The Secret that stores the API token `name` (its hash, never the token).
pub fn api_token_secret(name: &str, scope: Scope, token_hash: &str) -> Secret {
    let data = [(NAME_KEY, name), (SCOPE_KEY, scope.as_str()), (HASH_KEY, token_hash)]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), ByteString(value.as_bytes().to_vec())))
        .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(name)),
            labels: Some(BTreeMap::from([(API_TOKEN_LABEL.to_owned(), "true".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

/// The stored hash and identity of an API token Secret; `None` for a malformed one.
pub fn identity_of(secret: &Secret) -> Option<(String, Identity)> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    let scope = Scope::parse(&text(SCOPE_KEY)?)?;
    Some((text(HASH_KEY)?, Identity { name: text(NAME_KEY)?, scope }))
}

/// Whether `name` can name a token: it becomes part of a Secret name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_prefixed_and_stored_only_as_hashes() {
        let a = generate(API_TOKEN_PREFIX).unwrap();
        let b = generate(API_TOKEN_PREFIX).unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("kat_") && a.len() == 4 + 43, "{a}");
        let secret = api_token_secret("ci", Scope::Read, &hash(&a));
        let stored = serde_json::to_string(&secret).unwrap();
        assert!(!stored.contains(&a[4..]), "the token itself must not be stored");
        let (stored_hash, identity) = identity_of(&secret).unwrap();
        assert_eq!(stored_hash, hash(&a));
        assert_eq!(identity, Identity { name: "ci".into(), scope: Scope::Read });
        assert_eq!(secret.metadata.labels.unwrap()[API_TOKEN_LABEL], "true");
    }

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn malformed_secrets_and_names_are_refused() {
        let mut secret = api_token_secret("ci", Scope::Write, "00");
        secret.data.as_mut().unwrap().insert(SCOPE_KEY.into(), ByteString(b"admin".to_vec()));
        assert!(identity_of(&secret).is_none());
        assert!(valid_name("ci-bot"));
        assert!(!valid_name("CI"));
        assert!(!valid_name(""));
        assert!(!valid_name(&"a".repeat(41)));
    }
}
