//! The clinical endpoints against `keelson up`: parsing HL7v2 (`/api/v1/parse`), processing
//! events through workflows (`/api/v1/workflow`, from the default workflow file and from an
//! Integration's ConfigMap), and the metrics that follow them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::support::{Keelson, eventually};
use keelson_e2e::rest::Answer;

/// An ADT^A01 without PV1, with patient data that must never show up in errors or logs.
const ADT_A01: &str = "MSH|^~\\&|EPIC|HOSP|REC|FAC|20240101120000||ADT^A01^ADT_A01|MSG00001|P|2.5\r\
EVN|A01|20240101120000\r\
PID|1||123456789^^^HOSP^MR||DOE^JOHN^Q||19800315|M|||123 MAIN ST^^SPRINGFIELD^IL^62701||5551234567\r";

const ER7: &str = "application/hl7-v2+er7";

fn assert_error(answer: &Answer, status: u16, code: &str) {
    assert_eq!(answer.status, status, "{}", answer.text);
    assert_eq!(answer.code(), code, "{}", answer.text);
    assert!(answer.json["error"]["details"].is_array(), "{}", answer.text);
}

/// A destination answering every request with the current `status`, counting requests.
struct Destination {
    url: String,
    status: Arc<AtomicU16>,
    requests: Arc<AtomicUsize>,
}

impl Destination {
    fn start(status: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let status = Arc::new(AtomicU16::new(status));
        let requests = Arc::new(AtomicUsize::new(0));
        let (answer, count) = (status.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                count.fetch_add(1, Ordering::SeqCst);
                let code = answer.load(Ordering::SeqCst);
                let _ = write!(
                    reader.get_mut(),
                    "HTTP/1.1 {code} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        Self { url, status, requests }
    }
}

fn metrics(k: &Keelson) -> String {
    let url = format!("http://127.0.0.1:{}/metrics", k.metrics_port);
    let mut response = ureq::get(&url).call().unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    response.body_mut().read_to_string().unwrap()
}

/// The value of the sample line starting with `prefix` (name and labels).
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[test]
fn parse_turns_messages_into_events_and_refuses_bad_ones_without_echoing_them() {
    let k = Keelson::up();
    k.wait_api_ready();
    let rest = k.rest();

    // Raw ER7: the event, the MISSING_PV1 warning and lineage with redacted identity fields.
    let answer = rest.raw("POST", "/api/v1/parse", Some(ADT_A01), ER7, &[]);
    assert_eq!(answer.status, 200, "{}", answer.text);
    let body = &answer.json;
    assert_eq!(body["message_type"], "ADT");
    assert_eq!(body["trigger"], "A01");
    assert_eq!(body["control_id"], "MSG00001");
    assert_eq!(body["version"], "2.5");
    assert_eq!(body["events"][0]["type"], "patient_admit");
    assert_eq!(body["events"][0]["patient"]["mrn"], "123456789");
    assert_eq!(body["events"][0]["patient"]["name"]["family"], "DOE");
    let warnings = body["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w["code"] == "MISSING_PV1" && w["phase"] == "semantic"));
    let lineage = body["lineage"].as_array().unwrap();
    let name = lineage.iter().find(|l| l["source"] == "PID-5").expect("PID-5 lineage");
    assert_eq!(name["target"], "event.patient.name");
    assert_eq!(name["value_preview"], "[redacted]");

    // JSON with strict rules: LF line endings are refused, with the diagnostic's code.
    let lf = ADT_A01.replace('\r', "\n");
    let answer = rest.post("/api/v1/parse", json!({"message": lf, "strict": true}));
    assert_error(&answer, 422, "INVALID_HL7V2_MESSAGE");
    let details = answer.json["error"]["details"].as_array().unwrap();
    assert!(details.iter().any(|d| d["code"] == "NON_STANDARD_LINE_ENDING"), "{}", answer.text);
    // … and accepted with a warning otherwise.
    let answer = rest.post("/api/v1/parse", json!({"message": lf}));
    assert_eq!(answer.status, 200, "{}", answer.text);

    // Invalid input: 422 with a code and never the text sent.
    for bad in ["", "PID|1||SECRET-MRN-77", "not a valid message SECRET-MRN-77"] {
        let answer = rest.raw("POST", "/api/v1/parse", Some(bad), "text/plain", &[]);
        assert_error(&answer, 422, "INVALID_HL7V2_MESSAGE");
        assert!(!answer.text.contains("SECRET"), "{}", answer.text);
        assert!(answer.json["error"]["details"][0]["code"].is_string(), "{}", answer.text);
    }
    let answer = rest.raw(
        "POST",
        "/api/v1/parse",
        Some("{\"message\": 7, \"x\": \"SECRET\"}"),
        "application/json",
        &[],
    );
    assert_error(&answer, 400, "BAD_REQUEST");
    assert!(!answer.text.contains("SECRET"), "{}", answer.text);

    // Too large: the parser's 1 MiB limit, and the body limit beyond 2 MiB.
    let big = format!("{ADT_A01}NTE|1||{}\r", "x".repeat(1536 * 1024));
    assert_error(
        &rest.raw("POST", "/api/v1/parse", Some(&big), ER7, &[]),
        413,
        "PAYLOAD_TOO_LARGE",
    );
    let huge = "x".repeat(3 << 20);
    assert_error(
        &rest.raw("POST", "/api/v1/parse", Some(&huge), ER7, &[]),
        413,
        "PAYLOAD_TOO_LARGE",
    );
    // A form body (curl -d strips the carriage returns) is refused with a hint.
    let form =
        rest.raw("POST", "/api/v1/parse", Some(ADT_A01), "application/x-www-form-urlencoded", &[]);
    assert_error(&form, 415, "UNSUPPORTED_MEDIA_TYPE");
    assert!(form.text.contains("--data-binary"), "{}", form.text);

    // Parsing needs a token, and a read token is enough; processing needs a write token.
    let anonymous = rest.with_token(None);
    assert_error(
        &anonymous.raw("POST", "/api/v1/parse", Some(ADT_A01), ER7, &[]),
        401,
        "UNAUTHORIZED",
    );
    let reader = rest.with_token(Some(&k.read_token("viewer")));
    eventually(10, "the read token to be known", || {
        reader.raw("POST", "/api/v1/parse", Some(ADT_A01), ER7, &[]).status == 200
    });
    let event = json!({"event": {"type": "patient_admit"}});
    assert_error(&reader.post("/api/v1/workflow", event), 403, "FORBIDDEN");

    // No workflow configured and no integration named.
    assert_error(&rest.post("/api/v1/workflow", json!({"event": {"type": "x"}})), 409, "CONFLICT");
    assert_error(&rest.post("/api/v1/workflow", json!({"event": {"id": 1}})), 400, "INVALID");
}

#[test]
fn workflows_deliver_retry_dead_letter_and_open_circuits_and_metrics_follow() {
    let failing = Destination::start(500);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("workflow.yaml");
    std::fs::write(
        &file,
        format!(
            "workflow:
  name: admissions
  version: \"1\"
  routes:
    - name: admit
      filter:
        event_type: [patient_admit, inpatient_admit]
      actions:
        - id: notify
          type: webhook
          url: {}/adt
          timeout: 2s
    - name: labs
      filter:
        event_type: lab_result
      actions:
        - id: audit
          type: log
  retry: {{max_attempts: 2, initial_backoff: 10ms, max_backoff: 20ms}}
  circuit_breaker: {{failure_threshold: 2, open_for: 10m}}
",
            failing.url
        ),
    )
    .unwrap();
    let k = Keelson::up_with_env(&[], &[("KEELSON_WORKFLOW_CONFIG", file.to_str().unwrap())]);
    k.wait_api_ready();
    let rest = k.rest();

    // A raw message: parsed, routed to `admit`, retried, dead-lettered.
    let answer = rest.post("/api/v1/workflow", json!({"message": ADT_A01}));
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["workflow"], "admissions");
    let outcome = &answer.json["events"][0];
    assert_eq!(outcome["event_type"], "patient_admit");
    let routes = outcome["routes"].as_array().unwrap();
    let admit = routes.iter().find(|r| r["route"] == "admit").unwrap();
    assert_eq!(admit["matched"], true);
    assert_eq!(admit["actions"][0]["status"], "failed", "{}", answer.text);
    assert_eq!(admit["actions"][0]["attempts"], 2);
    assert_eq!(routes.iter().find(|r| r["route"] == "labs").unwrap()["matched"], false);
    assert_eq!(outcome["dead_lettered"], true);
    assert_eq!(failing.requests.load(Ordering::SeqCst), 2);
    assert!(answer.json["warnings"].as_array().unwrap().iter().any(|w| w["code"] == "MISSING_PV1"));

    // Two failures opened the circuit: the next event is refused without a request.
    let answer =
        rest.post("/api/v1/workflow", json!({"event": {"id": "e2", "type": "patient_admit"}}));
    assert_eq!(
        answer.json["events"][0]["routes"][0]["actions"][0]["status"], "circuit_open",
        "{}",
        answer.text
    );
    assert_eq!(failing.requests.load(Ordering::SeqCst), 2);

    let text = metrics(&k);
    let destination = failing.url.clone();
    assert_eq!(
        sample(&text, &format!("workflow_circuit_breaker_state{{destination=\"{destination}\"}}")),
        Some(2.0),
        "{text}"
    );
    assert_eq!(sample(&text, "workflow_dlq_size"), Some(2.0), "{text}");
    assert!(sample(&text, "workflow_events_processed_total").is_some(), "{text}");
    assert!(sample(&text, "workflow_action_errors_total").is_some_and(|n| n >= 1.0), "{text}");
    assert_eq!(sample(&text, "workflow_events_in_progress"), Some(0.0), "{text}");
    assert!(
        text.contains(
            "http_requests_total{method=\"POST\",route=\"/api/v1/workflow\",status=\"200\"} 2"
        ),
        "{text}"
    );
    failing.status.store(200, Ordering::SeqCst);

    // An Integration's workflow comes from the ConfigMap its spec names.
    let manifest = "apiVersion: v1
kind: ConfigMap
metadata: {name: lab-routing}
data:
  workflow.yaml: |
    workflow:
      name: lab-routing
      version: \"3\"
      routes:
        - name: labs
          filter: {event_type: lab_result}
          actions:
            - {id: audit, type: log}
---
apiVersion: integration.keelson.dev/v1alpha1
kind: Integration
metadata: {name: lab-feed}
spec:
  integrationId: lab-feed
  tenant: general
  sourceProfile: {id: lab-profile}
  workflow: {id: lab-routing}
";
    let path = k.dir.path().join("integration.yaml");
    std::fs::write(&path, manifest).unwrap();
    k.ok(&["apply", "-f", path.to_str().unwrap()]);
    let event: Value = json!({"id": "lab-1", "type": "lab_result", "results": []});
    let answer =
        rest.post("/api/v1/workflow", json!({"event": event, "integration_id": "lab-feed"}));
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["workflow"], "lab-routing");
    assert_eq!(answer.json["integration_id"], "lab-feed");
    assert_eq!(
        answer.json["events"][0]["routes"][0]["actions"][0]["status"], "succeeded",
        "{}",
        answer.text
    );
    let unknown = rest.post("/api/v1/workflow", json!({"event": event, "integration_id": "nope"}));
    assert_error(&unknown, 404, "NOT_FOUND");
}
