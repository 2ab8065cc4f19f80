//! Client certificates through CertificateSigningRequests, as Kubernetes' documentation walks
//! a new user through them: openssl makes a key and a request, `kubectl certificate approve`
//! approves it, the server's CA signs it, and kubectl authenticates with the certificate.

use std::path::Path;
use std::process::Command;

use base64::Engine;

use crate::support::{Keelson, eventually};

/// Makes `<name>.key` and a request `<name>.csr` for `subject` in `dir` with openssl.
fn openssl_request(dir: &Path, name: &str, subject: &str) -> String {
    let key = dir.join(format!("{name}.key"));
    let csr = dir.join(format!("{name}.csr"));
    for args in [
        vec!["genrsa", "-out", key.to_str().unwrap(), "2048"],
        vec![
            "req",
            "-new",
            "-key",
            key.to_str().unwrap(),
            "-out",
            csr.to_str().unwrap(),
            "-subj",
            subject,
        ],
    ] {
        let output = Command::new("openssl").args(&args).output().expect("openssl is installed");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(csr).unwrap())
}

/// A CertificateSigningRequest manifest.
fn request(name: &str, request: &str, usages: &str) -> String {
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n  usages: [{usages}]\n"
    )
}

#[test]
fn an_approved_request_gives_a_client_certificate_kubectl_authenticates_with() {
    let k = Keelson::up_with(&["--no-controllers"]);
    let dir = k.data_dir().parent().unwrap().to_owned();
    let jane = openssl_request(&dir, "jane", "/CN=jane/O=dev");
    k.apply("jane.yaml", &request("jane", &jane, "client auth"));
    let pending = k.ok(&["get", "csr", "jane"]);
    assert!(pending.contains("kubernetes.io/kube-apiserver-client"), "{pending}");
    assert!(
        pending.contains("keelson-admin") && pending.contains("24h") && pending.contains("Pending"),
        "{pending}"
    );

    // kubectl's typed client sends the approval in protobuf.
    let approved = k.ok(&["certificate", "approve", "jane"]);
    assert!(
        approved.contains("certificatesigningrequest.certificates.k8s.io/jane approved"),
        "{approved}"
    );
    k.ok_showing(&["get", "csr", "jane"], &["Approved,Issued"]);
    let reason = k.jsonpath("csr", "jane", "{.status.conditions[0].reason}");
    assert_eq!(reason, "KubectlApprove");
    let issued = k.jsonpath("csr", "jane", "{.status.certificate}");
    let certificate = dir.join("jane.crt");
    std::fs::write(&certificate, base64::engine::general_purpose::STANDARD.decode(issued).unwrap())
        .unwrap();
    let text = Command::new("openssl")
        .args([
            "x509",
            "-noout",
            "-subject",
            "-ext",
            "extendedKeyUsage",
            "-in",
            certificate.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("CN = jane") && text.contains("TLS Web Client Authentication"), "{text}");

    // A kubeconfig with the certificate instead of the admin token.
    let config = dir.join("jane.kubeconfig");
    std::fs::copy(k.data_dir().join("kubeconfig"), &config).unwrap();
    let config = config.to_str().unwrap();
    let cluster =
        k.ok(&["--kubeconfig", config, "config", "view", "-o", "jsonpath={.clusters[0].name}"]);
    let key = dir.join("jane.key");
    k.ok(&[
        "--kubeconfig",
        config,
        "config",
        "set-credentials",
        "jane",
        &format!("--client-certificate={}", certificate.display()),
        &format!("--client-key={}", key.display()),
        "--embed-certs",
    ]);
    k.ok(&[
        "--kubeconfig",
        config,
        "config",
        "set-context",
        "jane",
        &format!("--cluster={cluster}"),
        "--user=jane",
    ]);
    k.ok(&["--kubeconfig", config, "config", "use-context", "jane"]);
    let whoami = k.ok(&["--kubeconfig", config, "auth", "whoami"]);
    assert!(
        whoami.contains("jane")
            && whoami.contains("dev")
            && whoami.contains("system:authenticated"),
        "{whoami}"
    );
    let refused = k.fails(&["--kubeconfig", config, "get", "pods"]);
    assert!(refused.contains(r#"User "jane" cannot list resource "pods""#), "{refused}");
    k.ok(&["create", "rolebinding", "dev-view", "--clusterrole=view", "--group=dev"]);
    eventually(10, "jane may list pods through her group", || {
        k.kubectl(&["--kubeconfig", config, "get", "pods"]).status.success()
    });

    // Approving is RBAC's `approve` on the signer besides the approval subresource.
    k.ok(&[
        "create",
        "clusterrole",
        "csr-approver",
        "--verb=get,list,update",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    ]);
    k.ok(&[
        "create",
        "clusterrolebinding",
        "jane-approves",
        "--clusterrole=csr-approver",
        "--user=jane",
    ]);
    let bob = openssl_request(&dir, "bob", "/CN=bob");
    k.apply("bob.yaml", &request("bob", &bob, "client auth"));
    let not_signer = k.fails(&["--kubeconfig", config, "certificate", "approve", "bob"]);
    assert!(not_signer.contains(r#"user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client""#), "{not_signer}");
    // kubectl cannot create a role for `signers`, which are no served resource: a manifest can.
    k.apply(
        "signer.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: client-signer\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  resourceNames: [kubernetes.io/kube-apiserver-client]\n  verbs: [approve]\n",
    );
    k.ok(&[
        "create",
        "clusterrolebinding",
        "jane-signs",
        "--clusterrole=client-signer",
        "--user=jane",
    ]);
    eventually(10, "jane may approve for the client signer", || {
        k.kubectl(&["--kubeconfig", config, "certificate", "deny", "bob"]).status.success()
    });
    k.ok_showing(&["get", "csr", "bob"], &["Denied"]);
    assert_eq!(
        k.jsonpath("csr", "bob", "{.status.certificate}"),
        "",
        "a denied request is not signed"
    );
}

#[test]
fn requests_the_client_signer_cannot_sign_fail_and_bad_requests_are_refused() {
    let k = Keelson::up_with(&["--no-controllers"]);
    let dir = k.data_dir().parent().unwrap().to_owned();
    let web = openssl_request(&dir, "web", "/CN=web");
    k.apply("web.yaml", &request("web", &web, "server auth, client auth"));
    k.ok(&["certificate", "approve", "web"]);
    k.ok_showing(&["get", "csr", "web"], &["Approved,Failed"]);
    let message = k.jsonpath("csr", "web", "{.status.conditions[1].message}");
    assert_eq!(message, "invalid usage for client certificate: server auth");

    // The spec never changes once created, whoever the request claims to be from.
    k.ok(&[
        "patch",
        "csr",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"username":"admin","usages":["client auth"]}}"#,
    ]);
    assert_eq!(k.jsonpath("csr", "web", "{.spec.username}"), "keelson-admin");

    let path = k.manifest("bad.yaml", &request("bad", "bm90IGEgcmVxdWVzdA==", "client auth"));
    let refused = k.fails(&["apply", "-f", &path]);
    assert!(
        refused.contains(r#"The CertificateSigningRequest "bad" is invalid: spec.request: Invalid value: []byte{...}: must contain at least one PEM block"#),
        "{refused}"
    );
}
