//! Who a request is from: the user its credentials (or its impersonation headers) name, as
//! RBAC and `kubectl auth whoami` see it.

use std::collections::BTreeMap;

use serde::Serialize;

/// The group whose members may do everything, whatever RBAC says (upstream's privileged group).
pub(crate) const MASTERS: &str = "system:masters";
/// The group every authenticated user is in.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The user name of a service account is this prefix, then `<namespace>:<name>`.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The user the admin bearer token (the kubeconfig's) authenticates as.
const ADMIN: &str = "keelson-admin";

/// An authenticated user, serialized as the `userInfo` of a SelfSubjectReview.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct User {
    /// The user name, e.g. `system:serviceaccount:default:bot`.
    pub(crate) username: String,
    /// The user's uid, where the credentials carry one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) uid: String,
    /// The groups the user is in.
    pub(crate) groups: Vec<String>,
    /// What else the credentials say about the user.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The holder of the admin bearer token: a member of `system:masters`.
    pub(crate) fn admin() -> Self {
        User {
            username: ADMIN.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            ..User::default()
        }
    }

    /// The service account `namespace/name`, with the groups upstream gives its tokens.
    pub(crate) fn service_account(namespace: &str, name: &str) -> Self {
        User {
            username: format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"),
            groups: service_account_groups(namespace),
            ..User::default()
        }
    }

    /// Whether RBAC is bypassed for this user.
    pub(crate) fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// The groups of every service account in `namespace`, `system:authenticated` included.
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".into(),
        format!("system:serviceaccounts:{namespace}"),
        AUTHENTICATED.into(),
    ]
}

/// The namespace and name of a service account's user name.
pub(crate) fn service_account_of(username: &str) -> Option<(&str, &str)> {
    let (namespace, name) = username.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_user_names_split_into_namespace_and_name() {
        let bot = User::service_account("team", "bot");
        assert_eq!(service_account_of(&bot.username), Some(("team", "bot")));
        assert_eq!(service_account_of("system:serviceaccount:team"), None);
        assert_eq!(service_account_of("alice"), None);
        assert!(!bot.is_master());
        assert!(User::admin().is_master());
    }

    #[test]
    fn user_info_leaves_out_what_is_empty() {
        let info = serde_json::to_value(User::admin()).unwrap();
        assert_eq!(
            info,
            serde_json::json!({
                "username": "keelson-admin",
                "groups": ["system:masters", "system:authenticated"]
            })
        );
    }
}
