//! Test support: a real HTTP destination (axum on 127.0.0.1:0), metric reading, log capture
//! and event fixtures.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use keelson_integration::engine::{Engine, EngineSettings, Workflow};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

/// One request the destination received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

struct Inner {
    requests: Mutex<Vec<Received>>,
    /// Status answered once `fail_first` is used up.
    status: AtomicU16,
    /// Requests still to answer 503.
    fail_first: AtomicU32,
    delay_ms: AtomicU64,
    gated: AtomicBool,
    gate: Semaphore,
    arrived: Notify,
}

/// A destination that records every request and answers a configurable status.
#[derive(Clone)]
pub struct Destination {
    inner: Arc<Inner>,
    pub addr: SocketAddr,
}

async fn record(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    inner.requests.lock().unwrap().push(Received {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    inner.arrived.notify_waiters();
    if inner.gated.load(Ordering::SeqCst) {
        inner.gate.acquire().await.unwrap().forget();
    }
    let delay = inner.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let failing =
        inner.fail_first.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if failing.is_ok() {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    StatusCode::from_u16(inner.status.load(Ordering::SeqCst)).unwrap()
}

impl Destination {
    /// Starts a destination answering `status`.
    pub async fn start(status: u16) -> Self {
        let inner = Arc::new(Inner {
            requests: Mutex::default(),
            status: AtomicU16::new(status),
            fail_first: AtomicU32::new(0),
            delay_ms: AtomicU64::new(0),
            gated: AtomicBool::new(false),
            gate: Semaphore::new(0),
            arrived: Notify::new(),
        });
        let app = Router::new().fallback(record).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { inner, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The `destination` label / circuit key of this server.
    pub fn destination(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn count(&self) -> usize {
        self.inner.requests.lock().unwrap().len()
    }

    pub fn requests(&self) -> Vec<Received> {
        self.inner.requests.lock().unwrap().clone()
    }

    pub fn set_status(&self, status: u16) {
        self.inner.status.store(status, Ordering::SeqCst);
    }

    pub fn fail_first(&self, n: u32) {
        self.inner.fail_first.store(n, Ordering::SeqCst);
    }

    pub fn set_delay(&self, delay: Duration) {
        self.inner.delay_ms.store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Holds every request until [`Destination::release`].
    pub fn hold(&self) {
        self.inner.gated.store(true, Ordering::SeqCst);
    }

    /// Stops holding new requests.
    pub fn unhold(&self) {
        self.inner.gated.store(false, Ordering::SeqCst);
    }

    /// Lets one held request answer.
    pub fn release(&self) {
        self.inner.gate.add_permits(1);
    }

    /// Waits until at least `n` requests have arrived (at most 5 s).
    pub async fn wait_for(&self, n: usize) {
        let wait = async {
            loop {
                let notified = self.inner.arrived.notified();
                if self.count() >= n {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait).await.expect("requests did not arrive");
    }
}

/// A fresh registry and engine.
pub fn engine() -> (Engine, Registry) {
    engine_with(EngineSettings::default())
}

pub fn engine_with(settings: EngineSettings) -> (Engine, Registry) {
    let mut registry = Registry::default();
    let engine = Engine::new(settings, &mut registry).unwrap();
    (engine, registry)
}

/// The registry in the Prometheus text format.
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of one series (`name{labels}` exactly as encoded), if present.
pub fn metric(registry: &Registry, series: &str) -> Option<f64> {
    encode(registry)
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

pub fn workflow(yaml: &str) -> Workflow {
    Workflow::from_yaml(yaml).unwrap_or_else(|error| panic!("{error}"))
}

/// A canonical ADT^A01 event (event-shape.md).
pub fn admit_event() -> Value {
    json!({
        "id": "evt_0123456789abcdef0123456789abcdef",
        "type": "inpatient_admit",
        "timestamp": "2024-01-01T12:00:00Z",
        "source_format": "hl7v2",
        "source_message_id": "MSG00001",
        "message_type": "ADT^A01",
        "version": "2.5",
        "sending_application": "EPIC",
        "sending_facility": "HOSP",
        "patient": {
            "mrn": "123456789",
            "identifiers": [{"value": "123456789", "type": "MR", "assigner": "HOSP"}],
            "name": {"family": "DOE", "given": "JOHN", "middle": "Q"},
            "birth_date": "1980-03-15",
            "gender": "M",
            "addresses": [{"line1": "123 MAIN ST", "city": "SPRINGFIELD", "state": "IL", "postal_code": "62701"}],
            "phones": ["5551234567"],
            "ssn": "123-45-6789"
        },
        "encounter": {
            "id": "V100",
            "class": "I",
            "location": {"unit": "ICU", "room": "101", "bed": "A"},
            "attending": {"id": "1234", "family": "SMITH", "given": "JANE"},
            "admit_time": "2024-01-01T11:30:00Z"
        }
    })
}

/// [`admit_event`] with its own id (`evt_…n`).
pub fn admit_event_n(n: u32) -> Value {
    let mut event = admit_event();
    event["id"] = json!(format!("evt_{n:032x}"));
    event
}

/// A canonical ORU^R01 event with two results.
pub fn lab_event() -> Value {
    json!({
        "id": "evt_fedcba9876543210fedcba9876543210",
        "type": "lab_result",
        "message_type": "ORU^R01",
        "patient": {
            "mrn": "555",
            "identifiers": [{"value": "555", "type": "MR", "system": "urn:oid:2.16.840.1.113883.19.5"}],
            "name": {"family": "ROE", "given": "JANE"},
            "gender": "F"
        },
        "test": {"panel": {"code": "24323-8", "display": "Metabolic panel", "system": "LN"}, "observed_at": "2024-01-01T08:00:00Z"},
        "results": [
            {"set_id": "1", "value_type": "NM", "test": {"code": "2345-7", "display": "Glucose", "system": "LN"}, "result": "182", "units": "mg/dL", "reference_range": "70-105", "abnormal_flags": "H", "status": "F"},
            {"set_id": "2", "value_type": "ST", "test": {"code": "8251-1", "display": "Note", "system": "LN"}, "result": "fasting", "status": "P"}
        ]
    })
}

/// Captures tracing events written on the capturing test's thread.
///
/// The subscriber is the process-wide default (installed once), writing only on threads that
/// asked to capture: a per-thread (scoped) subscriber is not reliable here, because a callsite
/// first hit on another test thread would cache "nobody listens" for every thread.
pub mod logs {
    use std::cell::RefCell;
    use std::fmt::Write as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex, Once};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    #[derive(Clone, Default)]
    pub struct Captured(Arc<Mutex<String>>);

    impl Captured {
        pub fn text(&self) -> String {
            self.0.lock().unwrap().clone()
        }
    }

    thread_local! {
        static CURRENT: RefCell<Option<Captured>> = const { RefCell::new(None) };
    }

    /// Stops capturing on this thread when dropped.
    pub struct Guard(());

    impl Drop for Guard {
        fn drop(&mut self) {
            CURRENT.with(|current| current.borrow_mut().take());
        }
    }

    struct Capture {
        next: AtomicU64,
    }

    struct Line<'a>(&'a mut String);

    impl Visit for Line<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, " {}={:?}", field.name(), value);
        }
    }

    fn with_buffer(write: impl FnOnce(&mut String)) {
        CURRENT.with(|current| {
            if let Some(captured) = current.borrow().as_ref() {
                write(&mut captured.0.lock().unwrap());
            }
        });
    }

    impl Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, span: &Attributes<'_>) -> Id {
            with_buffer(|out| span.record(&mut Line(out)));
            Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
        }
        fn record(&self, _: &Id, values: &Record<'_>) {
            with_buffer(|out| values.record(&mut Line(out)));
        }
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            with_buffer(|out| {
                out.push_str(event.metadata().level().as_str());
                event.record(&mut Line(out));
                out.push('\n');
            });
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// Captures this thread's logs until the guard is dropped.
    pub fn capture() -> (Captured, Guard) {
        static INSTALL: Once = Once::new();
        INSTALL.call_once(|| {
            tracing::subscriber::set_global_default(Capture { next: AtomicU64::new(0) })
                .expect("no other global subscriber in this test binary");
            tracing::callsite::rebuild_interest_cache();
        });
        let captured = Captured::default();
        CURRENT.with(|current| *current.borrow_mut() = Some(captured.clone()));
        (captured, Guard(()))
    }
}
