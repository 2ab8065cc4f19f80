//! A process container's environment and command line: `env` and `envFrom` resolved against
//! the pod, ConfigMaps and Secrets, and `$(VAR)` references expanded as a kubelet expands them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Container, ObjectFieldSelector, Pod, Secret};
use kube::{Api, Client};

/// Why a container's configuration could not be resolved (`CreateContainerConfigError`).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A referenced ConfigMap or Secret, or one of its keys, is missing.
    #[error("{0}")]
    Missing(String),
    /// The API could not be read.
    #[error("reading the container's configuration: {0}")]
    Api(#[from] kube::Error),
}

/// Where a value comes from.
enum Source {
    ConfigMap,
    Secret,
}

/// Reads ConfigMaps and Secrets of the pod's namespace, each once.
struct Sources {
    configmaps: Api<ConfigMap>,
    secrets: Api<Secret>,
    read: BTreeMap<(bool, String), Option<BTreeMap<String, String>>>,
}

impl Sources {
    async fn data(
        &mut self,
        source: Source,
        name: &str,
    ) -> Result<Option<&BTreeMap<String, String>>, ConfigError> {
        let secret = matches!(source, Source::Secret);
        let key = (secret, name.to_owned());
        if !self.read.contains_key(&key) {
            let data = if secret {
                self.secrets.get_opt(name).await?.map(|s| {
                    let mut data: BTreeMap<String, String> = s
                        .data
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                        .collect();
                    data.extend(s.string_data.unwrap_or_default());
                    data
                })
            } else {
                self.configmaps.get_opt(name).await?.map(|c| c.data.unwrap_or_default())
            };
            self.read.insert(key.clone(), data);
        }
        Ok(self.read.get(&key).and_then(Option::as_ref))
    }
}

/// The environment of `container`: `base` (PATH, HOME, HOSTNAME…), then `envFrom`, then `env`,
/// later entries winning, with `$(VAR)` references expanded.
pub async fn resolve(
    client: &Client,
    pod: &Pod,
    container: &Container,
    base: Vec<(String, String)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let mut sources = Sources {
        configmaps: Api::namespaced(client.clone(), &namespace),
        secrets: Api::namespaced(client.clone(), &namespace),
        read: BTreeMap::new(),
    };
    let mut env: Vec<(String, String)> = base;
    let set = |env: &mut Vec<(String, String)>, name: String, value: String| {
        env.retain(|(n, _)| *n != name);
        env.push((name, value));
    };
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let (source, name, optional) = match (&from.config_map_ref, &from.secret_ref) {
            (Some(c), _) => (Source::ConfigMap, c.name.clone(), c.optional == Some(true)),
            (None, Some(s)) => (Source::Secret, s.name.clone(), s.optional == Some(true)),
            (None, None) => continue,
        };
        let kind = kind_name(&source);
        match sources.data(source, &name).await? {
            Some(data) => {
                for (key, value) in data.clone() {
                    set(&mut env, format!("{prefix}{key}"), value);
                }
            }
            None if optional => {}
            None => return Err(ConfigError::Missing(format!("{kind} \"{name}\" not found"))),
        }
    }
    for var in container.env.iter().flatten() {
        let value = if let Some(value) = &var.value {
            expand(value, &env)
        } else if let Some(from) = &var.value_from {
            let (source, name, key, optional) = if let Some(r) = &from.config_map_key_ref {
                (Source::ConfigMap, r.name.clone(), r.key.clone(), r.optional == Some(true))
            } else if let Some(r) = &from.secret_key_ref {
                (Source::Secret, r.name.clone(), r.key.clone(), r.optional == Some(true))
            } else if let Some(field) = &from.field_ref {
                set(&mut env, var.name.clone(), field_value(pod, field));
                continue;
            } else {
                continue;
            };
            let kind = kind_name(&source);
            match sources.data(source, &name).await?.map(|d| d.get(&key).cloned()) {
                Some(Some(value)) => value,
                _ if optional => continue,
                None => return Err(ConfigError::Missing(format!("{kind} \"{name}\" not found"))),
                Some(None) => {
                    return Err(ConfigError::Missing(format!(
                        "couldn't find key {key} in {kind} {namespace}/{name}"
                    )));
                }
            }
        } else {
            String::new()
        };
        set(&mut env, var.name.clone(), value);
    }
    Ok(env)
}

fn kind_name(source: &Source) -> &'static str {
    match source {
        Source::ConfigMap => "configmap",
        Source::Secret => "secret",
    }
}

/// The value of a `fieldRef` (the fields the downward API offers).
fn field_value(pod: &Pod, field: &ObjectFieldSelector) -> String {
    let meta = &pod.metadata;
    let from_map = |map: &Option<BTreeMap<String, String>>, path: &str, prefix: &str| {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        map.as_ref()?.get(key).cloned()
    };
    let path = field.field_path.as_str();
    let value = match path {
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "spec.nodeName" => pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => pod.spec.as_ref().and_then(|s| s.service_account_name.clone()),
        "status.hostIP" | "status.podIP" => Some("127.0.0.1".to_owned()),
        _ => from_map(&meta.labels, path, "metadata.labels['")
            .or_else(|| from_map(&meta.annotations, path, "metadata.annotations['")),
    };
    value.unwrap_or_default()
}

/// Expands `$(NAME)` with `env` as a kubelet does: unknown references stay as written, `$$` is
/// an escaped `$`.
pub fn expand(input: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(n, _)| n == name) {
                Some((_, value)) => out.push_str(value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_expand_and_escapes_and_unknowns_stay() {
        let env = vec![("A".to_owned(), "1".to_owned()), ("B".to_owned(), "two".to_owned())];
        assert_eq!(expand("$(A)-$(B)", &env), "1-two");
        assert_eq!(expand("$$(A) $(C) $ (A) $(", &env), "$(A) $(C) $ (A) $(");
        assert_eq!(
            expand("echo $HOME", &env),
            "echo $HOME",
            "shell variables are left to the shell"
        );
    }
}
