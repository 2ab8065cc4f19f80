//! Settings of the weaver preflight controller, from the environment.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::catalog::LocalCatalog;
use super::config;

/// How often the override files are looked at for changes.
const FILE_POLL: Duration = Duration::from_secs(2);

/// Settings of the weaver preflight controller.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The role override file (`KEELSON_WEAVER_ROLES_FILE`); no layer when unset or absent.
    pub roles_file: Option<PathBuf>,
    /// The domain override file (`KEELSON_WEAVER_DOMAINS_FILE`); no layer when unset or absent.
    pub domains_file: Option<PathBuf>,
    /// The catalog's base URL (`SERVING_URL`), above every resource's `spec.catalogUrl`.
    pub serving_url: Option<String>,
    /// Bearer token of catalog requests (`MASTER_KEY`); never logged nor shown.
    master_key: Option<MasterKey>,
    /// The `WEAVER_*_MODEL` variables, the highest layer of role models.
    pub model_env: BTreeMap<String, String>,
    /// Keelson's own catalog, used when neither `SERVING_URL` nor `spec.catalogUrl` is set.
    pub local_catalog: Option<LocalCatalog>,
    /// How often the override files are checked for changes.
    pub file_poll: Duration,
}

/// A secret whose `Debug` says nothing.
#[derive(Clone)]
struct MasterKey(String);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Settings {
    /// Reads `KEELSON_WEAVER_ROLES_FILE`, `KEELSON_WEAVER_DOMAINS_FILE`, `SERVING_URL` (an
    /// `http(s)://` URL) and `MASTER_KEY`, naming every bad value; `WEAVER_*_MODEL` variables
    /// cannot be listed through a lookup: see [`Settings::with_model_env`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Vec<String>> {
        let get = |key: &str| lookup(key).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        let mut problems = Vec::new();
        let serving_url = get("SERVING_URL");
        if let Some(url) = &serving_url
            && !valid_url(url)
        {
            problems.push(format!("SERVING_URL={url:?} is not an http:// or https:// URL"));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Self {
            roles_file: get("KEELSON_WEAVER_ROLES_FILE").map(PathBuf::from),
            domains_file: get("KEELSON_WEAVER_DOMAINS_FILE").map(PathBuf::from),
            serving_url,
            master_key: lookup("MASTER_KEY").filter(|k| !k.trim().is_empty()).map(MasterKey),
            model_env: BTreeMap::new(),
            local_catalog: None,
            file_poll: FILE_POLL,
        })
    }

    /// [`Settings::from_lookup`] of the process environment, with its `WEAVER_*_MODEL`
    /// variables.
    pub fn from_env() -> Result<Self, Vec<String>> {
        Ok(Self::from_lookup(|key| std::env::var(key).ok())?.with_model_env(std::env::vars()))
    }

    /// These settings with the `WEAVER_*_MODEL` variables among `vars`.
    pub fn with_model_env(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.model_env = config::model_env(vars);
        self
    }

    /// The bearer token of catalog requests.
    pub fn master_key(&self) -> Option<&str> {
        self.master_key.as_ref().map(|k| k.0.as_str())
    }
}

/// Whether `url` is an absolute http(s) URL.
pub fn valid_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| (*v).to_owned())
    }

    #[test]
    fn reads_every_setting_and_hides_the_key() {
        let s = Settings::from_lookup(lookup(&[
            ("KEELSON_WEAVER_ROLES_FILE", "/etc/roles.yaml"),
            ("KEELSON_WEAVER_DOMAINS_FILE", "/etc/domains.yaml"),
            ("SERVING_URL", "http://litellm:4000"),
            ("MASTER_KEY", "sk-secret"),
        ]))
        .unwrap()
        .with_model_env([("WEAVER_ROUTER_MODEL".to_owned(), "r".to_owned())]);
        assert_eq!(s.roles_file, Some(PathBuf::from("/etc/roles.yaml")));
        assert_eq!(s.domains_file, Some(PathBuf::from("/etc/domains.yaml")));
        assert_eq!(s.serving_url.as_deref(), Some("http://litellm:4000"));
        assert_eq!(s.master_key(), Some("sk-secret"));
        assert_eq!(s.model_env["WEAVER_ROUTER_MODEL"], "r");
        assert!(!format!("{s:?}").contains("sk-secret"));
    }

    #[test]
    fn a_bad_url_is_named() {
        let problems =
            Settings::from_lookup(lookup(&[("SERVING_URL", "litellm:4000")])).unwrap_err();
        assert_eq!(problems, ["SERVING_URL=\"litellm:4000\" is not an http:// or https:// URL"]);
        let s = Settings::from_lookup(lookup(&[("SERVING_URL", " "), ("MASTER_KEY", "")])).unwrap();
        assert_eq!((s.serving_url.as_deref(), s.master_key()), (None, None));
    }
}
