//! The stored-only built-in kinds install manifests carry (webhook configurations and admission
//! policies, APIServices, CertificateSigningRequests, RuntimeClasses, CSI objects, PodTemplates):
//! applied under kubectl's default strict validation, printed as kubectl prints them, listed by
//! `kubectl api-resources`.

use crate::support::Keelson;

/// One object of each kind, as cert-manager's, ingress-nginx's or metrics-server's manifests
/// write them.
const MANIFEST: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: policy.example.com}
webhooks:
- name: validate.policy.example.com
  clientConfig:
    service: {namespace: default, name: policy-webhook, path: /validate, port: 443}
    caBundle: Y2EtYnVuZGxl
  rules:
  - apiGroups: [apps]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [deployments]
    scope: Namespaced
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: defaults.example.com}
webhooks:
- name: pods.defaults.example.com
  clientConfig:
    service: {namespace: default, name: policy-webhook, path: /mutate}
  rules:
  - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}
  sideEffects: None
  admissionReviewVersions: [v1, v1beta1]
  reinvocationPolicy: IfNeeded
- name: services.defaults.example.com
  clientConfig: {url: 'https://hooks.example.com/mutate'}
  rules:
  - {apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [services]}
  sideEffects: NoneOnDryRun
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= int(params.data.maxReplicas)
    message: too many replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit}
spec:
  policyName: replica-limit
  paramRef: {name: replica-limit, namespace: default, parameterNotFoundAction: Deny}
  validationActions: [Deny]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.example.com}
spec:
  group: metrics.example.com
  version: v1beta1
  service: {namespace: default, name: metrics-adapter, port: 443}
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: ann}
spec:
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIWE1IOENBUUF3SFRFTU1Bb0dBMVVFQXd3RFlXNXVNUTB3Q3dZRFZRUUtEQVJrWlhaek1Ga3dFd1lIS29aSQp6ajBDQVFZSUtvWkl6ajBEQVFjRFFnQUU2RTdQVUlCeGdEcHBON3hGaDhSclRycjd5ZDRQQmJzT1JNNTdxckUvCnpKYlFwNVNlZG1yQ3VzK1NaNzBlZ0s2d2hhWGJaVEZrdHhyQnV4VTdBSS9aVDZBQU1Bb0dDQ3FHU000OUJBTUMKQTBnQU1FVUNJQWFiS0JmMXV3ekYyQ2IrM1Y1YlJvbmZIWUdrSjNTUVgwQ1Z5UTVaNWVRN0FpRUFteHB2eXRVMgo2L1ZJVU0rdHdpeU5WWUN4bEtEWGVkY3RZaTVyV1dTb3pVTT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages: [client auth]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead:
  podFixed: {cpu: 250m, memory: 120Mi}
scheduling:
  nodeSelector: {runtime: gvisor}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: ebs.csi.aws.com}
spec:
  attachRequired: true
  podInfoOnMount: false
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent]
---
apiVersion: v1
kind: PodTemplate
metadata: {name: worker, namespace: default}
template:
  metadata:
    labels: {app: worker}
  spec:
    containers:
    - name: worker
      image: busybox:1.36
      command: [sleep, '3600']
";

/// The objects of [`MANIFEST`], as `kubectl apply` names them.
const OBJECTS: [&str; 9] = [
    "validatingwebhookconfiguration.admissionregistration.k8s.io/policy.example.com",
    "mutatingwebhookconfiguration.admissionregistration.k8s.io/defaults.example.com",
    "validatingadmissionpolicy.admissionregistration.k8s.io/replica-limit",
    "validatingadmissionpolicybinding.admissionregistration.k8s.io/replica-limit",
    "apiservice.apiregistration.k8s.io/v1beta1.metrics.example.com",
    "certificatesigningrequest.certificates.k8s.io/ann",
    "runtimeclass.node.k8s.io/gvisor",
    "csidriver.storage.k8s.io/ebs.csi.aws.com",
    "podtemplate/worker",
];

/// The header and first row of `kubectl get <kind>`, split into cells (runs of two or more
/// spaces separate them, so a blank cell is dropped).
fn header_and_row(k: &Keelson, kind: &str) -> (Vec<String>, Vec<String>) {
    let table = k.ok(&["get", kind]);
    let cells = |line: Option<&str>| -> Vec<String> {
        let line = line.unwrap_or_default();
        line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
    };
    let mut lines = table.lines();
    let header = cells(lines.next());
    (header, cells(lines.next()))
}

#[test]
fn install_manifest_kinds_apply_print_and_are_discovered() {
    let k = Keelson::up_with(&["--no-controllers"]);
    let applied = k.apply("kinds.yaml", MANIFEST);
    for object in OBJECTS {
        assert!(applied.contains(&format!("{object} created")), "{object}:\n{applied}");
    }
    let again = k.apply("kinds.yaml", MANIFEST);
    assert_eq!(again.matches(" unchanged").count(), OBJECTS.len(), "{again}");

    let cases: [(&str, &[&str], &[&str]); 9] = [
        (
            "validatingwebhookconfigurations",
            &["NAME", "WEBHOOKS", "AGE"],
            &["policy.example.com", "1"],
        ),
        (
            "mutatingwebhookconfigurations",
            &["NAME", "WEBHOOKS", "AGE"],
            &["defaults.example.com", "2"],
        ),
        (
            "validatingadmissionpolicies",
            &["NAME", "VALIDATIONS", "PARAMKIND", "AGE"],
            &["replica-limit", "1", "v1/ConfigMap"],
        ),
        (
            "validatingadmissionpolicybindings",
            &["NAME", "POLICYNAME", "PARAMREF", "AGE"],
            &["replica-limit", "replica-limit", "default/replica-limit"],
        ),
        (
            // The one the manifest adds, not the served groups' Local ones.
            "apiservice/v1beta1.metrics.example.com",
            &["NAME", "SERVICE", "AVAILABLE", "AGE"],
            &["v1beta1.metrics.example.com", "default/metrics-adapter", "Unknown"],
        ),
        (
            "csr",
            &["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"],
            &["ann"],
        ),
        ("runtimeclasses", &["NAME", "HANDLER", "AGE"], &["gvisor", "runsc"]),
        (
            "csidrivers",
            &[
                "NAME",
                "ATTACHREQUIRED",
                "PODINFOONMOUNT",
                "STORAGECAPACITY",
                "TOKENREQUESTS",
                "REQUIRESREPUBLISH",
                "MODES",
                "AGE",
            ],
            &["ebs.csi.aws.com", "true", "false", "false", "<unset>", "false", "Persistent"],
        ),
        (
            "podtemplates",
            &["NAME", "CONTAINERS", "IMAGES", "POD LABELS"],
            &["worker", "worker", "busybox:1.36", "app=worker"],
        ),
    ];
    for (kind, header, first) in cases {
        let (got_header, row) = header_and_row(&k, kind);
        assert_eq!(got_header, header, "{kind}");
        let first: Vec<String> = first.iter().map(|cell| cell.to_string()).collect();
        assert!(row.starts_with(&first), "{kind}: {row:?}");
    }
    // The CSR's signer, then (after its requestor) its requested duration and condition.
    let (_, csr) = header_and_row(&k, "csr");
    assert_eq!(csr[2], "kubernetes.io/kube-apiserver-client", "{csr:?}");
    assert_eq!(csr[csr.len() - 2..], ["24h", "Pending"], "{csr:?}");

    // Webhook configurations, admission policies and APIServices are API extensions, as CRDs.
    let extensions = k.ok(&["get", "api-extensions", "-o", "name"]);
    for object in &OBJECTS[..5] {
        assert!(extensions.contains(object), "{object}:\n{extensions}");
    }

    let resources = k.ok(&["api-resources"]);
    let rows: Vec<Vec<&str>> =
        resources.lines().map(|line| line.split_whitespace().collect()).collect();
    let expected: [&[&str]; 12] = [
        &[
            "mutatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1",
            "false",
            "MutatingWebhookConfiguration",
        ],
        &[
            "validatingadmissionpolicies",
            "admissionregistration.k8s.io/v1",
            "false",
            "ValidatingAdmissionPolicy",
        ],
        &[
            "validatingadmissionpolicybindings",
            "admissionregistration.k8s.io/v1",
            "false",
            "ValidatingAdmissionPolicyBinding",
        ],
        &[
            "validatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1",
            "false",
            "ValidatingWebhookConfiguration",
        ],
        &["apiservices", "apiregistration.k8s.io/v1", "false", "APIService"],
        &[
            "certificatesigningrequests",
            "csr",
            "certificates.k8s.io/v1",
            "false",
            "CertificateSigningRequest",
        ],
        &["runtimeclasses", "node.k8s.io/v1", "false", "RuntimeClass"],
        &["csidrivers", "storage.k8s.io/v1", "false", "CSIDriver"],
        &["csinodes", "storage.k8s.io/v1", "false", "CSINode"],
        &["volumeattachments", "storage.k8s.io/v1", "false", "VolumeAttachment"],
        &["podtemplates", "v1", "true", "PodTemplate"],
        &["storageclasses", "sc", "storage.k8s.io/v1", "false", "StorageClass"],
    ];
    for row in expected {
        assert!(rows.iter().any(|r| r == row), "{row:?} in:\n{resources}");
    }

    // Their schemas are published: kubectl explains them and refuses a misspelt field.
    let explained = k.ok(&["explain", "csr.spec.signerName"]);
    assert!(explained.contains("FIELD: signerName <string>"), "{explained}");
    let typo = k.manifest(
        "typo.yaml",
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandlr: kata\n",
    );
    let refused = k.fails(&["apply", "-f", &typo]);
    assert!(refused.contains("handlr"), "strict validation names the unknown field: {refused}");
}
