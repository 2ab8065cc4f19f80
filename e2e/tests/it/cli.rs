//! The model-serving command line (`keelson list`, `status`, `logs`, `delete`, `scale`, `cache
//! status`, `node check|drain`, `completions`) against `keelson up` with a simulated GPU node.

use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{GPU_NODE, Keelson, eventually, output_with_input, qwen};

/// Runs `keelson <args> --kubeconfig <k's kubeconfig>` with `stdin` as its input.
fn keelson_with(k: &Keelson, args: &[&str], stdin: &str) -> Output {
    let mut command = Command::new(keelson_e2e::keelson_binary());
    command.args(args).arg("--kubeconfig").arg(k.data_dir().join("kubeconfig"));
    command.current_dir(k.dir.path());
    output_with_input(command, stdin)
}

fn keelson(k: &Keelson, args: &[&str]) -> Output {
    keelson_with(k, args, "")
}

/// stdout of a command that must succeed.
fn ok(k: &Keelson, args: &[&str]) -> String {
    let output = keelson(k, args);
    assert!(
        output.status.success(),
        "keelson {} failed ({:?}):\n{}{}",
        args.join(" "),
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// stderr of a command that must exit with `code`.
fn fails(k: &Keelson, args: &[&str], code: i32) -> String {
    let output = keelson(k, args);
    assert_eq!(output.status.code(), Some(code), "keelson {}: {output:?}", args.join(" "));
    String::from_utf8(output.stderr).unwrap()
}

/// The cells of the listing's line for `name`.
fn row(table: &str, name: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().any(|cell| cell == name))
        .unwrap_or_else(|| panic!("{name} in\n{table}"));
    line.split("   ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
}

/// A pod run as a local process by the node, labelled as a serving pod of `model`.
fn log_pod(name: &str, model: &str, script: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{serving.keelson.dev/model-deployment: {model}}}\n  annotations: {{keelson.dev/run-as-process: \"true\"}}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: server\n    image: busybox\n    command: [sh, -c, \"{script}\"]\n"
    )
}

#[test]
fn list_status_scale_logs_and_delete_a_model_deployment() {
    let k = Keelson::up_with(&GPU_NODE);
    let ns = ["-n", "default"];

    // Nothing yet: empty listings, and every command naming a model says it is not there.
    let empty = ok(&k, &["list", "-n", "default"]);
    assert_eq!(empty, "No ModelDeployments found in namespace default\n");
    let caches = ok(&k, &["cache", "status", "-n", "default"]);
    assert!(caches.contains("No ModelCaches found in namespace default"), "{caches}");
    assert!(caches.contains("RAM-cached models:\n  none"), "{caches}");
    let not_found = "ModelDeployment \"nope\" not found in namespace \"default\"";
    for command in [
        vec!["status", "nope"],
        vec!["delete", "nope", "--yes"],
        vec!["scale", "nope", "2"],
        vec!["logs", "nope"],
    ] {
        let stderr = fails(&k, &[command.as_slice(), &ns].concat(), 1);
        assert!(stderr.contains(not_found), "{command:?}: {stderr}");
    }

    k.apply("qwen.yaml", &qwen(""));
    k.ok(&["create", "namespace", "ml"]);
    k.apply(
        "idle.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: idle\n  namespace: ml\nspec:\n  backend: tei\n  model: BAAI/bge-small-en-v1.5\n  replicas: 0\n",
    );
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/qwen", "--timeout=60s"]);
    k.ok(&[
        "create",
        "configmap",
        "qwen-benchmark-results",
        "--from-literal=tokensPerSecond=12.34",
    ]);
    eventually(30, "the figure in the listing", || {
        ok(&k, &["list", "-n", "default"]).contains("12.3/s")
    });
    let table = ok(&k, &["list", "-n", "default"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "BACKEND", "STATUS", "REPLICAS", "THROUGHPUT", "GPU", "AGE"]);
    let qwen = row(&table, "qwen");
    assert_eq!(qwen[..6], ["qwen", "vllm", "Running", "1/1", "12.3/s", "1× on gpu-0"], "{table}");
    assert!(!table.contains("idle"), "{table}");

    // -A: every namespace, with a NAMESPACE column; the idle model shows Scaled(0).
    let all = ok(&k, &["list", "-A"]);
    assert!(all.starts_with("NAMESPACE"), "{all}");
    assert_eq!(row(&all, "qwen")[0], "default");
    assert_eq!(row(&all, "idle")[..4], ["ml", "idle", "tei", "Scaled(0)"], "{all}");

    // -o json and yaml print the resources.
    let json: Value = serde_json::from_str(&ok(&k, &["list", "-A", "-o", "json"])).unwrap();
    assert_eq!(json["kind"], "List");
    let mut names: Vec<&str> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["idle", "qwen"]);
    assert!(json["items"][0]["metadata"].get("managedFields").is_none());
    let yaml = ok(&k, &["list", "-n", "default", "-o", "yaml"]);
    assert!(yaml.contains("kind: ModelDeployment") && yaml.contains("name: qwen"), "{yaml}");

    // status: the whole picture, and the object with -o json.
    let status = ok(&k, &["status", "qwen", "-n", "default"]);
    for expected in [
        "Status:        Running",
        "Throughput:    12.3/s",
        "GPU Allocation:\n  Node:        gpu-0",
        "Conditions:\n",
        "Message: ",
        "Recent Events:\n",
        "DeploymentReady",
    ] {
        assert!(status.contains(expected), "{expected:?} in\n{status}");
    }
    let object: Value =
        serde_json::from_str(&ok(&k, &["status", "qwen", "-n", "default", "-o", "json"])).unwrap();
    assert_eq!(object["kind"], "ModelDeployment");
    assert_eq!(object["status"]["phase"], "Running");

    // scale: refuses what is not a count of replicas (usage, exit 2), sets spec.replicas, 0
    // scales to zero.
    for bad in ["-1", "nope", "65"] {
        let stderr = fails(&k, &["scale", "qwen", bad, "-n", "default"], 2);
        assert!(stderr.contains(&format!("invalid value '{bad}'")), "{stderr}");
    }
    let scaled = ok(&k, &["scale", "qwen", "0", "-n", "default"]);
    assert!(scaled.contains("scaled from 1 to 0"), "{scaled}");
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.spec.replicas}"), "0");
    eventually(30, "Scaled(0) in the listing", || {
        row(&ok(&k, &["list", "-n", "default"]), "qwen")[2] == "Scaled(0)"
    });
    eventually(30, "the Deployment at zero", || {
        k.jsonpath("deployment", "qwen", "{.spec.replicas}") == "0"
    });

    // logs: none once the pods are gone; then the lines of the model's pods, prefixed when
    // there are several.
    eventually(30, "no pods for logs", || {
        let output = keelson(&k, &["logs", "qwen", "-n", "default"]);
        output.status.code() == Some(1)
            && String::from_utf8_lossy(&output.stderr)
                .contains("no pods found for ModelDeployment \"qwen\"")
    });
    k.apply("a.yaml", &log_pod("qwen-log-a", "qwen", "echo one; echo two; echo three"));
    let done = |pod: &str| k.jsonpath("pod", pod, "{.status.phase}") == "Succeeded";
    eventually(30, "the log pod to finish", || done("qwen-log-a"));
    assert_eq!(ok(&k, &["logs", "qwen", "-n", "default"]), "one\ntwo\nthree\n");
    assert_eq!(
        ok(&k, &["logs", "qwen", "-n", "default", "--tail", "1", "-c", "server"]),
        "three\n"
    );
    assert_eq!(ok(&k, &["logs", "qwen", "-n", "default", "-f"]), "one\ntwo\nthree\n");
    k.apply("b.yaml", &log_pod("qwen-log-b", "qwen", "echo hello"));
    eventually(30, "the second log pod to finish", || done("qwen-log-b"));
    let both = ok(&k, &["logs", "qwen", "-n", "default", "--tail", "1"]);
    let mut lines: Vec<&str> = both.lines().collect();
    lines.sort();
    assert_eq!(lines, ["[qwen-log-a] three", "[qwen-log-b] hello"]);

    // delete: "n" at the prompt cancels; --yes deletes.
    let output = keelson_with(&k, &["delete", "qwen", "-n", "default"], "n\n");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Deletion cancelled\n");
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("Delete ModelDeployment default/qwen? [y/N]")
    );
    assert!(k.kubectl(&["get", "modeldeployment", "qwen"]).status.success());
    let deleted = ok(&k, &["delete", "qwen", "-n", "default", "--yes"]);
    assert_eq!(deleted, "modeldeployment default/qwen deleted\n");
    let output = keelson_with(&k, &["delete", "idle", "-n", "ml"], "y\n");
    assert!(output.status.success(), "{output:?}");
    eventually(30, "the models to go", || ok(&k, &["list", "-A"]) == "No ModelDeployments found\n");
}

#[test]
fn node_check_and_drain_clear_a_gpu_node_in_the_documented_order() {
    let k = Keelson::up_with(&GPU_NODE);
    let clear = ok(&k, &["node", "check", "gpu-0"]);
    assert!(clear.contains("Node gpu-0 is clear"), "{clear}");
    let stderr = fails(&k, &["node", "check", "gpu-9"], 1);
    assert!(stderr.contains("node \"gpu-9\" not found"), "{stderr}");

    k.apply(
        "caches.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelCache\nmetadata:\n  name: llama\nspec:\n  source: mlc://mlc-ai/Llama-3.1-8B-Instruct-q4f16_1-MLC\n  storageStrategy: Memory\n  nodeSelector: {kubernetes.io/hostname: gpu-0}\n---\napiVersion: serving.keelson.dev/v1alpha1\nkind: ModelCache\nmetadata:\n  name: elsewhere\nspec:\n  source: org/other\n  storageStrategy: Memory\n  nodeSelector: {kubernetes.io/hostname: gpu-9}\n---\napiVersion: serving.keelson.dev/v1alpha1\nkind: ModelCache\nmetadata:\n  name: shared\nspec:\n  source: org/shared\n",
    );
    k.apply("qwen.yaml", &qwen(""));
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/qwen", "--timeout=60s"]);
    eventually(30, "the Memory cache to be ready", || {
        k.jsonpath("modelcache", "llama", "{.status.phase}") == "Ready"
    });
    // A pod that never becomes ready on the node: stuck.
    k.apply(
        "stuck.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: stuck\nspec:\n  nodeName: gpu-0\n  readinessGates: [{conditionType: example.com/never}]\n  containers:\n  - {name: c, image: busybox}\n",
    );
    eventually(30, "the stuck pod to run", || {
        k.jsonpath("pod", "stuck", "{.status.phase}") == "Running"
    });

    // cache status shows the RAM-cached model.
    let caches = ok(&k, &["cache", "status", "-n", "default"]);
    assert_eq!(row(&caches, "llama")[..2], ["llama", "Memory"], "{caches}");
    assert!(caches.contains("RAM-cached models:\n  elsewhere:"), "{caches}");
    assert!(caches.contains("\n  llama: llama on "), "{caches}");
    let json: Value =
        serde_json::from_str(&ok(&k, &["cache", "status", "-A", "-o", "json"])).unwrap();
    assert_eq!(json["items"].as_array().unwrap().len(), 3);

    let stuck = ["--stuck-after", "0s"];
    let check = ok(&k, &[&["node", "check", "gpu-0"][..], &stuck].concat());
    for expected in [
        "Memory caches targeting the node (deleted by drain):\n  default/llama\n",
        "  default/qwen: replicas 1, ",
        "  default/stuck: not Ready for",
    ] {
        assert!(check.contains(expected), "{expected:?} in\n{check}");
    }
    assert!(!check.contains("elsewhere") && !check.contains("shared"), "{check}");

    // --dry-run says what it would do and changes nothing; "n" cancels.
    let dry = ok(&k, &[&["node", "drain", "gpu-0", "--dry-run"][..], &stuck].concat());
    let expected = [
        "delete modelcache default/llama",
        "scale modeldeployment default/qwen to 0 (from 1)",
        "force-delete pod default/stuck (grace period 0)",
    ];
    let positions: Vec<usize> = expected
        .iter()
        .map(|line| dry.find(line).unwrap_or_else(|| panic!("{line:?} in\n{dry}")))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "in order:\n{dry}");
    assert!(dry.contains("Nothing was changed."), "{dry}");
    let output = keelson_with(&k, &[&["node", "drain", "gpu-0"][..], &stuck].concat(), "n\n");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Drain cancelled\n");
    assert!(k.kubectl(&["get", "modelcache", "llama"]).status.success());
    assert!(k.kubectl(&["get", "pod", "stuck"]).status.success());
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.spec.replicas}"), "1");

    // The drain: the Memory cache deleted (its syncer with it), the model at zero through its
    // ModelDeployment, the stuck pod gone; the other caches stay.
    let drained = ok(&k, &[&["node", "drain", "gpu-0", "--yes"][..], &stuck].concat());
    assert!(drained.contains("Node gpu-0 drained. Next: reboot it"), "{drained}");
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.spec.replicas}"), "0");
    eventually(30, "the Memory cache and its syncer to go", || {
        !k.kubectl(&["get", "modelcache", "llama"]).status.success()
            && !k.kubectl(&["get", "daemonset", "llama-ram-syncer"]).status.success()
    });
    eventually(30, "the stuck pod to go", || !k.kubectl(&["get", "pod", "stuck"]).status.success());
    assert!(k.kubectl(&["get", "modelcache", "elsewhere"]).status.success());
    assert!(k.kubectl(&["get", "modelcache", "shared"]).status.success());
    eventually(30, "the model to be idle", || {
        k.jsonpath("modeldeployment", "qwen", "{.status.phase}") == "Idle"
    });
    eventually(30, "the node to be clear", || {
        ok(&k, &[&["node", "check", "gpu-0"][..], &stuck].concat()).contains("is clear")
    });
    let nothing = ok(&k, &["node", "drain", "gpu-0", "--yes"]);
    assert_eq!(nothing, "Node gpu-0 is clear: nothing to do.\n");
}

#[test]
fn completions_for_each_shell_and_usage_errors_without_a_cluster() {
    for shell in ["bash", "zsh", "fish"] {
        let output = Command::new(keelson_e2e::keelson_binary())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(script.contains("keelson") && script.contains("drain"), "{shell}: {script}");
    }
    let usage = |args: &[&str]| {
        let output = Command::new(keelson_e2e::keelson_binary()).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        String::from_utf8(output.stderr).unwrap()
    };
    assert!(usage(&["completions", "tcsh"]).contains("invalid value 'tcsh'"));
    assert!(usage(&["scale", "qwen", "-1"]).contains("-1 is not in 0..=64"));
    assert!(usage(&["scale", "qwen"]).contains("<REPLICAS>"));
    assert!(usage(&["list", "-o", "xml"]).contains("invalid value 'xml'"));
    assert!(usage(&["node", "drain"]).contains("<NODE>"));
}
