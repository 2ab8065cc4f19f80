//! Impersonation: a request carrying `Impersonate-User` (and optionally `Impersonate-Group`,
//! `Impersonate-Uid`, `Impersonate-Extra-<key>`) acts as that user, as `kubectl --as` and
//! `--as-group` send it, once RBAC allows the requester to `impersonate` each of them. So
//! `kubectl auth can-i list pods --as=system:serviceaccount:team:bot` answers for the account.

use axum::http::HeaderMap;

use crate::storage::Store;

use super::errors::{ApiError, ApiResult};
use super::rbac::{self, Attributes, ResourceAttributes};
use super::users::{AUTHENTICATED, User, service_account_groups, service_account_of};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

/// The user `requester` acts as: the one the headers name, if `requester` may impersonate it
/// (and each group, uid and extra value), else `requester` itself when the headers name none.
pub(crate) fn apply(store: &Store, requester: User, headers: &HeaderMap) -> ApiResult<User> {
    if !headers.keys().any(|name| name.as_str().starts_with("impersonate-")) {
        return Ok(requester);
    }
    let values = |name: &str| -> Vec<String> {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
    };
    let groups = values(GROUP);
    let uid = values(UID).into_iter().next();
    let mut extra = std::collections::BTreeMap::new();
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix(EXTRA) else { continue };
        let key = percent_encoding::percent_decode_str(key).decode_utf8_lossy().into_owned();
        let value = value.to_str().unwrap_or_default().to_owned();
        extra.entry(key).or_insert_with(Vec::new).push(value);
    }
    let Some(username) = values(USER).into_iter().next() else {
        return Err(ApiError::bad_request(
            "Impersonate-Group, Impersonate-Uid and Impersonate-Extra need Impersonate-User",
        ));
    };

    let mut asked = vec![match service_account_of(&username) {
        Some((namespace, name)) => impersonate("", "serviceaccounts", "", name, namespace),
        None => impersonate("authentication.k8s.io", "users", "", &username, ""),
    }];
    asked.extend(groups.iter().map(|g| impersonate("authentication.k8s.io", "groups", "", g, "")));
    asked.extend(uid.iter().map(|u| impersonate("authentication.k8s.io", "uids", "", u, "")));
    for (key, values) in &extra {
        asked.extend(
            values.iter().map(|v| impersonate("authentication.k8s.io", "userextras", key, v, "")),
        );
    }
    for attributes in &asked {
        rbac::check(store, &requester, attributes)?;
    }

    let mut user = User { uid: uid.unwrap_or_default(), groups, extra, ..User::default() };
    // Upstream's rules: a service account named without groups is in its usual ones; every
    // impersonated user is authenticated.
    if user.groups.is_empty()
        && let Some((namespace, _)) = service_account_of(&username)
    {
        user.groups = service_account_groups(namespace);
    }
    if !user.groups.iter().any(|g| g == AUTHENTICATED) {
        user.groups.push(AUTHENTICATED.into());
    }
    user.username = username;
    Ok(user)
}

fn impersonate(group: &str, resource: &str, sub: &str, name: &str, namespace: &str) -> Attributes {
    Attributes::Resource(ResourceAttributes {
        verb: "impersonate".into(),
        group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        name: name.into(),
        namespace: namespace.into(),
    })
}
