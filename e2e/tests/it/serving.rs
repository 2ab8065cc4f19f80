//! The model-serving controllers against `keelson up` with a simulated GPU node, driven with
//! kubectl: a ModelDeployment becomes a ready Deployment and an annotated Service, scales to
//! zero, puts back children changed or deleted by hand, keeps its benchmark figure, and takes
//! its children with it; a Memory cache's syncer follows the cache.

use crate::support::{Keelson, eventually, qwen};

const GPU_NODE: [&str; 4] = ["--node", "gpu-0,nvidia.com/gpu=2", "--pod-ready-delay", "200ms"];

/// The model of these tests, published under an alias.
fn model() -> String {
    qwen("  litellm:\n    aliases: [qwen-chat]\n")
}

fn ready(k: &Keelson) -> String {
    k.jsonpath("modeldeployment", "qwen", "{.status.conditions[?(@.type==\"Ready\")].status}")
}

#[test]
fn a_model_deployment_serves_scales_to_zero_and_puts_its_children_back() {
    let k = Keelson::up_with(&GPU_NODE);
    k.apply("qwen.yaml", &model());
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/qwen", "--timeout=60s"]);
    let table = k.ok(&["get", "modeldeployments"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "BACKEND", "MODEL", "REPLICAS", "READY", "PHASE", "TPS", "AGE"]);
    assert!(table.contains("Running"), "{table}");
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.status.allocatedGpu.node}"), "gpu-0");
    assert_eq!(
        k.jsonpath(
            "service",
            "qwen",
            "{.metadata.annotations.litellm\\.keelson\\.dev/served-model}"
        ),
        "qwen"
    );
    assert_eq!(
        k.jsonpath("service", "qwen", "{.metadata.annotations.litellm\\.keelson\\.dev/aliases}"),
        "qwen-chat"
    );

    // A direct scale of the child is put back; a deleted child comes back.
    k.ok(&["scale", "deployment/qwen", "--replicas=3"]);
    eventually(30, "the child's replicas to be reset", || {
        k.jsonpath("deployment", "qwen", "{.spec.replicas}") == "1"
    });
    k.ok(&["delete", "service", "qwen"]);
    eventually(30, "the Service to come back", || {
        k.kubectl(&["get", "service", "qwen"]).status.success()
    });

    // Zero replicas: Idle, not Ready, the Deployment at zero.
    k.ok(&["scale", "modeldeployment/qwen", "--replicas=0"]);
    eventually(30, "the model to be idle", || {
        k.jsonpath("modeldeployment", "qwen", "{.status.phase}") == "Idle"
    });
    assert_eq!(
        k.jsonpath("modeldeployment", "qwen", "{.status.conditions[?(@.type==\"Ready\")].reason}"),
        "ScaledToZero"
    );
    assert_eq!(ready(&k), "False");
    assert_eq!(k.jsonpath("deployment", "qwen", "{.spec.replicas}"), "0");
    // Every transition is an event: the phases and the conditions' reasons.
    let events = k.ok(&["get", "events", "--field-selector=involvedObject.name=qwen"]);
    for reason in ["Running", "DeploymentReady", "Idle", "ScaledToZero"] {
        assert!(events.contains(reason), "{reason} in {events}");
    }

    // Deleting the model takes every child with it.
    k.ok(&["delete", "modeldeployment", "qwen"]);
    eventually(30, "the children to go", || {
        !k.kubectl(&["get", "deployment", "qwen"]).status.success()
            && !k.kubectl(&["get", "service", "qwen"]).status.success()
    });
}

#[test]
fn a_benchmark_figure_reaches_the_status_and_survives_a_restart() {
    let mut k = Keelson::up_with(&GPU_NODE);
    k.apply("qwen.yaml", &model());
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/qwen", "--timeout=60s"]);
    eventually(30, "the benchmark Job", || {
        k.kubectl(&["get", "job", "qwen-benchmark"]).status.success()
    });
    k.ok(&[
        "create",
        "configmap",
        "qwen-benchmark-results",
        "--from-literal=tokensPerSecond=123.4",
    ]);
    eventually(30, "the figure in the status", || {
        k.jsonpath("modeldeployment", "qwen", "{.status.tokensPerSecond}") == "123.4"
    });
    assert!(k.ok(&["get", "modeldeployment", "qwen"]).contains("123.4"));
    let events = k.ok(&["get", "events", "--field-selector=involvedObject.name=qwen"]);
    assert!(events.contains("BenchmarkComplete"), "{events}");
    k.kill();
    k.start();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(k.jsonpath("modeldeployment", "qwen", "{.status.tokensPerSecond}"), "123.4");
    k.ok(&["delete", "modeldeployment", "qwen"]);
    eventually(30, "the results ConfigMap to go with its model", || {
        !k.kubectl(&["get", "configmap", "qwen-benchmark-results"]).status.success()
    });
}

#[test]
fn a_memory_cache_syncer_follows_its_cache_and_a_model_waits_for_it() {
    let k = Keelson::up_with(&GPU_NODE);
    k.apply(
        "cache.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelCache\nmetadata:\n  name: llama\nspec:\n  source: mlc://mlc-ai/Llama-3.1-8B-Instruct-q4f16_1-MLC\n  storageStrategy: Memory\n",
    );
    eventually(30, "the syncer", || {
        k.kubectl(&["get", "daemonset", "llama-ram-syncer"]).status.success()
    });
    k.ok(&["delete", "daemonset", "llama-ram-syncer"]);
    eventually(30, "the syncer to come back", || {
        k.kubectl(&["get", "daemonset", "llama-ram-syncer"]).status.success()
    });
    eventually(30, "the cache to be ready", || {
        k.jsonpath("modelcache", "llama", "{.status.phase}") == "Ready"
    });
    k.apply(
        "llama.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: llama\nspec:\n  backend: mlc-llm\n  model: Llama-3.1-8B-Instruct-q4f16_1-MLC\n  modelCacheRef: llama\n  mlcllm: {mode: local}\n",
    );
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/llama", "--timeout=60s"]);
    assert_eq!(
        k.jsonpath(
            "modeldeployment",
            "llama",
            "{.status.conditions[?(@.type==\"CacheReady\")].status}"
        ),
        "True"
    );
    // A GPU model pinned to the node is told what stands in its way there.
    k.apply(
        "pinned.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: pinned\nspec:\n  backend: vllm\n  model: org/pinned\n  nodeSelector: {kubernetes.io/hostname: gpu-0}\n  resources:\n    limits: {nvidia.com/gpu: \"1\"}\n",
    );
    let node_clear = || {
        k.jsonpath(
            "modeldeployment",
            "pinned",
            "{.status.conditions[?(@.type==\"NodeClear\")].message}",
        )
    };
    eventually(30, "the preflight to report the Memory cache", || {
        node_clear().contains("Memory cache default/llama targets the node")
    });
    let events = k.ok(&["get", "events", "--field-selector=involvedObject.name=pinned"]);
    assert!(events.contains("NodeNotClear"), "{events}");
    k.ok(&["delete", "modelcache", "llama"]);
    eventually(30, "the syncer to go with its cache", || {
        !k.kubectl(&["get", "daemonset", "llama-ram-syncer"]).status.success()
    });
}

fn member(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: {name}\nspec:\n  backend: vllm\n  model: org/{name}\n  replicas: {replicas}\n  resources:\n    limits: {{nvidia.com/gpu: \"1\"}}\n"
    )
}

#[test]
fn a_gpu_group_swaps_to_the_model_with_demand_and_not_back_inside_the_cooldown() {
    let k = Keelson::up_with(&["--node", "gpu-0,nvidia.com/gpu=1", "--pod-ready-delay", "200ms"]);
    k.apply("first.yaml", &member("first", 1));
    k.apply("second.yaml", &member("second", 0));
    k.apply(
        "group.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: GPUGroup\nmetadata:\n  name: gpu-0\nspec:\n  node: gpu-0\n  models:\n  - name: first\n  - name: second\n  antiThrashing:\n    minimumRunDurationSeconds: 0\n    cooldownAfterPreemptionSeconds: 300\n",
    );
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/first", "--timeout=60s"]);
    let replicas = |name: &str| k.jsonpath("modeldeployment", name, "{.spec.replicas}");

    k.ok(&["annotate", "modeldeployment", "second", "serving.keelson.dev/queued-requests=5"]);
    eventually(30, "the swap to the second model", || {
        replicas("first") == "0" && replicas("second") == "1"
    });
    eventually(30, "the group to name it", || {
        k.jsonpath("gpugroup", "gpu-0", "{.status.activeModel}") == "second"
    });
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/second", "--timeout=60s"]);
    assert_eq!(k.jsonpath("gpugroup", "gpu-0", "{.status.swapCount}"), "1");

    // Demand moves back at once: inside the cooldown nothing swaps.
    k.ok(&["annotate", "modeldeployment", "second", "serving.keelson.dev/queued-requests-"]);
    k.ok(&["annotate", "modeldeployment", "first", "serving.keelson.dev/queued-requests=3"]);
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!((replicas("first"), replicas("second")), ("0".to_owned(), "1".to_owned()));
    assert_eq!(k.jsonpath("gpugroup", "gpu-0", "{.status.swapCount}"), "1");
}

#[test]
fn deleting_the_benchmark_job_removes_its_pods_and_a_deleted_serving_pod_comes_back() {
    let k = Keelson::up_with(&GPU_NODE);
    k.apply("qwen.yaml", &model());
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/qwen", "--timeout=60s"]);
    let serving_pods = || {
        k.ok(&[
            "get",
            "pods",
            "-l",
            "serving.keelson.dev/model-deployment=qwen,app.kubernetes.io/name=model-server",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
    };
    let pod = serving_pods();
    k.ok(&["delete", "pod", &pod]);
    eventually(30, "a new serving pod", || {
        let now = serving_pods();
        !now.is_empty() && !now.split_whitespace().any(|p| p == pod)
    });
    let bench_pods = || k.ok(&["get", "pods", "-l", "job-name=qwen-benchmark", "-o", "name"]);
    eventually(30, "the benchmark Job's pod", || !bench_pods().is_empty());
    let before = bench_pods();
    k.ok(&["delete", "job", "qwen-benchmark"]);
    // The model recreates its benchmark Job (it has no figure yet); the old pods are gone.
    eventually(30, "the benchmark pods to go", || {
        let now = bench_pods();
        before.split_whitespace().all(|p| !now.split_whitespace().any(|q| q == p))
    });
}

#[test]
fn the_serving_examples_apply_and_the_group_s_active_model_becomes_ready() {
    let k =
        Keelson::up_with(&["--node", "gpu-node-1,nvidia.com/gpu=1", "--pod-ready-delay", "200ms"]);
    k.ok(&["apply", "-f", "examples/serving/"]);
    // The SharedPVC cache's download is simulated on the local node; the Memory one syncs.
    for cache in ["qwen2-5-7b", "llama-3-1-8b-mlc"] {
        eventually(60, "the caches to be ready", || {
            k.jsonpath("modelcache", cache, "{.status.phase}") == "Ready"
        });
    }
    // Both models share one GPU through the GPUGroup: the higher priority one serves.
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/llama-3-1-8b", "--timeout=60s"]);
    eventually(30, "the other model to be idle", || {
        k.jsonpath("modeldeployment", "qwen2-5-7b", "{.status.phase}") == "Idle"
    });
    assert_eq!(k.jsonpath("gpugroup", "gpu-node-1", "{.status.activeModel}"), "llama-3-1-8b");
}
