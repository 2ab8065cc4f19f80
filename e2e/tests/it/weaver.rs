//! The weaver model preflight against `keelson up`: a tiny catalog server answers
//! `/v1/models`; the ModelRouting's status, `GET /api/weaver/status` and `keelson weaver
//! status` report ready and missing models, the layers' precedence (environment > role
//! override file > resource), an unreachable catalog, nothing configured, a domain model
//! missing, and recovery once the catalog is fixed. Keelson's own `GET /v1/models` lists a
//! Ready ModelDeployment's served name and aliases.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::support::{Keelson, eventually};

/// A catalog server on loopback: answers `GET /v1/models` with the current list and keeps the
/// last `Authorization` header it saw.
struct Catalog {
    url: String,
    models: Arc<Mutex<Vec<String>>>,
    authorization: Arc<Mutex<Option<String>>>,
}

impl Catalog {
    fn start(models: &[&str]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let models: Arc<Mutex<Vec<String>>> =
            Arc::new(Mutex::new(models.iter().map(|m| (*m).to_owned()).collect()));
        let authorization = Arc::new(Mutex::new(None));
        let (list, seen) = (models.clone(), authorization.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                let _ = reader.read_line(&mut request_line);
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("authorization")
                    {
                        *seen.lock().unwrap() = Some(value.trim().to_owned());
                    }
                }
                let (status, body) = if request_line.starts_with("GET /v1/models ") {
                    let data: Vec<serde_json::Value> = list
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|id| serde_json::json!({"id": id, "object": "model", "owned_by": "test"}))
                        .collect();
                    ("200 OK", serde_json::json!({"object": "list", "data": data}).to_string())
                } else {
                    ("404 Not Found", "{}".to_owned())
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self { url, models, authorization }
    }

    fn set(&self, models: &[&str]) {
        *self.models.lock().unwrap() = models.iter().map(|m| (*m).to_owned()).collect();
    }
}

const ROUTING: &str = "apiVersion: serving.keelson.dev/v1alpha1
kind: ModelRouting
metadata:
  name: weaver
spec:
  preflightIntervalSeconds: 600
  roles:
    - {name: weaver-router, primary: res-router}
    - {name: weaver-subagent, primary: res-sub, fallbacks: [fb]}
  domains:
    - {name: research, model: res-domain}
    - {name: legal, model: claude-x, backend: claude}
";

fn status(k: &Keelson, name: &str, field: &str) -> String {
    k.jsonpath("modelrouting", name, &format!("{{.status.{field}}}"))
}

/// `keelson weaver status <args>` against `k`: exit code and stdout.
fn weaver_status(k: &Keelson, args: &[&str]) -> (i32, String) {
    let output = Command::new(keelson_e2e::keelson_binary())
        .args(["weaver", "status", "-n", "default", "--kubeconfig"])
        .arg(k.data_dir().join("kubeconfig"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap() + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), text)
}

/// Asks for a preflight now.
fn recheck(k: &Keelson, name: &str, n: u32) {
    k.ok(&["annotate", "modelrouting", name, &format!("keelson.dev/recheck={n}"), "--overwrite"]);
}

#[test]
fn weaver_preflight_layers_missing_models_and_recovery() {
    let catalog = Catalog::start(&["env-router", "file-sub", "fb", "other"]);
    let files = tempfile::tempdir().unwrap();
    let roles = files.path().join("roles.yaml");
    let domains = files.path().join("domains.yaml");
    std::fs::write(
        &roles,
        "roles:\n  weaver-router: {primary: file-router}\n  weaver-subagent: {primary: file-sub}\n",
    )
    .unwrap();
    std::fs::write(&domains, "domains:\n  - {name: research, model: domain-m, tools: [search]}\n")
        .unwrap();
    let k = Keelson::up_with_env(
        &[],
        &[
            ("SERVING_URL", catalog.url.as_str()),
            ("MASTER_KEY", "sk-weaver-test"),
            ("WEAVER_ROUTER_MODEL", "env-router"),
            ("KEELSON_WEAVER_ROLES_FILE", roles.to_str().unwrap()),
            ("KEELSON_WEAVER_DOMAINS_FILE", domains.to_str().unwrap()),
        ],
    );
    k.apply("routing.yaml", ROUTING);
    // The environment beats the file, which beats the resource; a fallback counts; the
    // claude domain does not; the domain file's model is missing.
    eventually(30, "the first preflight", || !status(&k, "weaver", "checkedAt").is_empty());
    assert_eq!(status(&k, "weaver", "degraded"), "true");
    assert_eq!(status(&k, "weaver", "missingModels"), r#"["domain-m"]"#);
    assert_eq!(status(&k, "weaver", "readyModels"), r#"["env-router","fb","file-sub"]"#);
    assert_eq!(status(&k, "weaver", "catalogSize"), "4");
    assert_eq!(catalog.authorization.lock().unwrap().as_deref(), Some("Bearer sk-weaver-test"));
    assert_eq!(
        k.jsonpath("modelrouting", "weaver", "{.status.conditions[?(@.type==\"Ready\")].reason}"),
        "ModelsMissing"
    );

    // The HTTP API, with a read token; none is refused.
    k.wait_api_ready();
    let token = k.read_token("weaver-reader");
    let rest = k.rest().with_token(Some(&token));
    let answer = rest.get("/api/weaver/status");
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["degraded"], true);
    assert_eq!(answer.json["missing_models"], serde_json::json!(["domain-m"]));
    assert_eq!(answer.json["ready_models"], serde_json::json!(["env-router", "fb", "file-sub"]));
    assert_eq!(answer.json["catalog_size"], 4);
    assert!(answer.json.get("catalog_error").is_none(), "{}", answer.text);
    assert!(answer.json["checked_at"].is_string());
    assert_eq!(rest.with_token(None).get("/api/weaver/status").status, 401);
    assert_eq!(rest.get("/api/weaver/status?name=nope").status, 404);

    // The command line: exit 1 and the model remediations.
    let (code, text) = weaver_status(&k, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("Missing models:  domain-m"), "{text}");
    assert!(text.contains("spec.litellm.aliases"), "{text}");
    assert!(!text.contains("sk-weaver-test"), "{text}");
    let (code, json) = weaver_status(&k, &["weaver", "-o", "json"]);
    assert_eq!(code, 1, "{json}");
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["missing_models"], serde_json::json!(["domain-m"]));

    // Fixing the catalog: the next cycle (asked for by an annotation) is not degraded.
    catalog.set(&["env-router", "file-sub", "fb", "domain-m"]);
    recheck(&k, "weaver", 1);
    eventually(30, "recovery", || status(&k, "weaver", "degraded") == "false");
    assert_eq!(status(&k, "weaver", "missingModels"), "");
    let (code, text) = weaver_status(&k, &["weaver"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("ok: 4 models ready"), "{text}");
    let events = k.ok(&["get", "events", "--field-selector=involvedObject.name=weaver"]);
    assert!(events.contains("ModelsMissing") && events.contains("ModelsReady"), "{events}");

    // A changed role override file is a new input: checked without being asked.
    std::fs::write(&roles, "roles:\n  weaver-subagent: {primary: new-sub}\n").unwrap();
    eventually(30, "the file change to be checked", || {
        status(&k, "weaver", "missingModels") == r#"["new-sub"]"#
    });
    // A broken file is ignored (the resource's value comes back) and said so.
    std::fs::write(&roles, "roles: [unclosed\n").unwrap();
    eventually(30, "the broken file to be reported", || {
        k.jsonpath(
            "modelrouting",
            "weaver",
            "{.status.conditions[?(@.type==\"ConfigValid\")].status}",
        ) == "False"
    });
    assert_eq!(status(&k, "weaver", "missingModels"), r#"["res-sub"]"#);
}

#[test]
fn an_unreachable_catalog_makes_every_model_missing() {
    let closed = keelson_e2e::bench::free_port();
    let url = format!("http://127.0.0.1:{closed}");
    let k = Keelson::up_with_env(&[], &[("SERVING_URL", url.as_str())]);
    k.apply("routing.yaml", ROUTING);
    eventually(30, "the first preflight", || !status(&k, "weaver", "checkedAt").is_empty());
    assert_eq!(status(&k, "weaver", "degraded"), "true");
    assert_eq!(
        status(&k, "weaver", "missingModels"),
        r#"["fb","res-domain","res-router","res-sub"]"#
    );
    assert_eq!(status(&k, "weaver", "readyModels"), "");
    let error = status(&k, "weaver", "catalogError");
    assert!(error.contains(&url) && error.to_lowercase().contains("refused"), "{error}");
    assert_eq!(
        k.jsonpath("modelrouting", "weaver", "{.status.conditions[?(@.type==\"Ready\")].reason}"),
        "CatalogUnreachable"
    );
    let (code, text) = weaver_status(&k, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("catalog URL setting") && text.contains("network policy"), "{text}");
    k.wait_api_ready();
    let answer = k.rest().get("/api/weaver/status");
    assert!(answer.json["catalog_error"].as_str().unwrap().contains("refused"), "{}", answer.text);
    // No routing of that name: exit 2.
    let (code, text) = weaver_status(&k, &["nope"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not found"), "{text}");
}

#[test]
fn keelson_s_own_catalog_serves_the_weaver_and_nothing_configured_is_ok() {
    let k = Keelson::up_with(&["--node", "gpu-0,nvidia.com/gpu=1", "--pod-ready-delay", "200ms"]);
    k.apply(
        "qwen.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelDeployment\nmetadata:\n  name: qwen\nspec:\n  backend: vllm\n  model: Qwen/Qwen2.5-7B-Instruct\n  resources:\n    limits: {nvidia.com/gpu: \"1\"}\n  litellm:\n    servedModelName: qwen2.5-7b\n    aliases: [qwen-chat]\n",
    );
    k.ok(&["wait", "--for=condition=Ready", "modeldeployment/qwen", "--timeout=60s"]);
    k.wait_api_ready();
    let rest = k.rest();
    eventually(30, "the catalog to list the model", || {
        rest.get("/v1/models").json["data"].as_array().is_some_and(|d| d.len() == 2)
    });
    let answer = rest.get("/v1/models");
    assert_eq!(answer.json["object"], "list");
    assert_eq!(answer.json["data"][0]["id"], "qwen-chat");
    assert_eq!(answer.json["data"][1]["id"], "qwen2.5-7b");
    assert_eq!(answer.json["data"][1]["object"], "model");
    assert_eq!(answer.json["data"][1]["owned_by"], "keelson");
    assert!(answer.json["data"][1]["created"].is_i64());
    assert_eq!(rest.with_token(None).get("/v1/models").status, 401);

    k.apply(
        "routing.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelRouting\nmetadata:\n  name: weaver\nspec:\n  roles:\n    - {name: weaver-router, primary: qwen-chat, fallbacks: [qwen2.5-7b]}\n",
    );
    eventually(30, "the preflight", || !status(&k, "weaver", "checkedAt").is_empty());
    assert_eq!(status(&k, "weaver", "degraded"), "false");
    assert_eq!(status(&k, "weaver", "readyModels"), r#"["qwen-chat","qwen2.5-7b"]"#);

    // Nothing configured is not degraded, and the catalog size is reported.
    k.apply(
        "empty.yaml",
        "apiVersion: serving.keelson.dev/v1alpha1\nkind: ModelRouting\nmetadata:\n  name: empty\nspec: {}\n",
    );
    eventually(30, "the empty preflight", || !status(&k, "empty", "checkedAt").is_empty());
    assert_eq!(status(&k, "empty", "degraded"), "false");
    assert_eq!(status(&k, "empty", "catalogSize"), "2");

    // Two routings: the API and the command line want a name.
    let answer = rest.get("/api/weaver/status");
    assert_eq!(answer.status, 409, "{}", answer.text);
    assert!(answer.text.contains("empty, weaver"), "{}", answer.text);
    let answer = rest.get("/api/weaver/status?name=empty");
    assert_eq!(answer.json["degraded"], false);
    assert_eq!(answer.json["catalog_size"], 2);
    let (code, text) = weaver_status(&k, &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("several ModelRoutings"), "{text}");
    let (code, text) = weaver_status(&k, &["empty"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("ok: 0 models ready"), "{text}");
}
