//! Service account tokens: issued through `serviceaccounts/<name>/token` or into
//! `kubernetes.io/service-account-token` Secrets, accepted as bearer tokens while their account
//! (and Secret) lives.

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use keelson_embedded::server::RunningServer;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::support::{api_error, eventually, start};

pub(crate) fn account(name: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..Default::default() },
        ..Default::default()
    }
}

pub(crate) async fn token(
    accounts: &Api<ServiceAccount>,
    name: &str,
    audiences: &[&str],
) -> TokenRequest {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: audiences.iter().map(|a| (*a).to_owned()).collect(),
            expiration_seconds: Some(900),
            bound_object_ref: None,
        },
        ..Default::default()
    };
    accounts.create_token_request(name, &PostParams::default(), &request).await.unwrap()
}

/// A client of `server` that presents `token` instead of the admin token.
pub(crate) async fn client_with(server: &RunningServer, token: &str) -> kube::Client {
    let kubeconfig = server.kubeconfig().replace(&server.credentials.token, token);
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn a_service_account_token_authenticates_while_its_account_lives() {
    let test = start().await;
    let server = test.server.as_ref().unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(test.client.clone(), "default");
    accounts.create(&PostParams::default(), &account("ci")).await.unwrap();

    let issued = token(&accounts, "ci", &[]).await;
    let status = issued.status.unwrap();
    let lifetime = status.expiration_timestamp.0.as_second() - jiff::Timestamp::now().as_second();
    assert!((890..=900).contains(&lifetime), "{lifetime}");
    assert_eq!(
        issued.spec.audiences,
        ["https://kubernetes.default.svc.cluster.local"],
        "the API server is the default audience"
    );

    let as_ci = client_with(server, &status.token).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(as_ci.clone(), "default");
    let refused = config_maps.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_error(refused).0, 403, "authenticated, but no binding grants anything");
    let reviews: Api<SelfSubjectReview> = Api::all(as_ci.clone());
    let review = reviews.create(&PostParams::default(), &SelfSubjectReview::default()).await;
    let user = review.unwrap().status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("system:serviceaccount:default:ci"));
    assert!(user.groups.unwrap().contains(&"system:serviceaccounts:default".to_owned()));

    let for_vault = token(&accounts, "ci", &["vault"]).await.status.unwrap().token;
    let refused = Api::<ConfigMap>::namespaced(client_with(server, &for_vault).await, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).0, 401, "a token for another audience");

    // The token names the account's uid: deleting the account, even making it again, ends it.
    accounts.delete("ci", &DeleteParams::default()).await.unwrap();
    accounts.create(&PostParams::default(), &account("ci")).await.unwrap();
    let refused = config_maps.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_error(refused).0, 401);

    let missing = accounts
        .create_token_request("nobody", &PostParams::default(), &TokenRequest::default())
        .await
        .unwrap_err();
    assert_eq!(api_error(missing).0, 404);
}

#[tokio::test]
async fn a_token_secret_gets_a_long_lived_token_that_lasts_as_long_as_the_secret() {
    let test = start().await;
    let server = test.server.as_ref().unwrap();
    let post = PostParams::default();
    let secrets: Api<Secret> = Api::namespaced(test.client.clone(), "default");
    let token_secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "bot-token",
            "annotations": {"kubernetes.io/service-account.name": "bot"}},
        "type": "kubernetes.io/service-account-token",
    }))
    .unwrap();
    // Made before its account: filled once the account exists.
    secrets.create(&post, &token_secret).await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(test.client.clone(), "default");
    let bot = accounts.create(&post, &account("bot")).await.unwrap();
    let filled = eventually("the token Secret to be filled", || async {
        let secret = secrets.get("bot-token").await.ok()?;
        secret.data.as_ref()?.contains_key("token").then_some(secret)
    })
    .await;
    let data = filled.data.unwrap();
    assert_eq!(data["namespace"].0, b"default");
    assert_eq!(data["ca.crt"].0, server.credentials.ca_pem.as_bytes());
    let annotations = filled.metadata.annotations.unwrap();
    assert_eq!(annotations.get("kubernetes.io/service-account.uid"), bot.metadata.uid.as_ref());

    let token = String::from_utf8(data["token"].0.clone()).unwrap();
    let as_bot = client_with(server, &token).await;
    let reviews: Api<SelfSubjectReview> = Api::all(as_bot.clone());
    let review = reviews.create(&post, &SelfSubjectReview::default()).await.unwrap();
    let user = review.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("system:serviceaccount:default:bot"));

    // Deleting the Secret revokes it.
    secrets.delete("bot-token", &DeleteParams::default()).await.unwrap();
    let refused = reviews.create(&post, &SelfSubjectReview::default()).await.unwrap_err();
    assert_eq!(api_error(refused).0, 401);
}
