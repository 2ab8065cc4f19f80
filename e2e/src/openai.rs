//! An OpenAI-compatible test server: `/health`, `/v1/models`, `/v1/chat/completions` and
//! `/v1/completions`, streamed (one token per server-sent event) or not, at a decode speed the
//! test sets and may change while it runs.
//!
//! Each request gets its first token after [`Behaviour::time_to_first_token`], then the rest at
//! its rate (tokens per second of that request), `max_tokens` in all. The rate comes from a
//! hook on the prompt, so tests can make it depend on "applied settings" ([`Rate::set`]) and on
//! the workload class of the prompt ([`Behaviour::class`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use futures::StreamExt;
use serde_json::{Value, json};

/// A decode speed (tokens per second of one request) that a test can change at any time.
#[derive(Debug, Clone)]
pub struct Rate(Arc<Mutex<f64>>);

impl Rate {
    /// A rate of `tokens_per_second`.
    pub fn new(tokens_per_second: f64) -> Rate {
        Rate(Arc::new(Mutex::new(tokens_per_second)))
    }

    /// Sets it, for the requests that start from now on.
    pub fn set(&self, tokens_per_second: f64) {
        *self.0.lock().unwrap() = tokens_per_second;
    }

    /// Its value.
    pub fn get(&self) -> f64 {
        *self.0.lock().unwrap()
    }
}

/// Which prompts belong to a workload class.
pub type Predicate = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How the server behaves.
#[derive(Clone)]
pub struct Behaviour {
    /// The model id in `/v1/models` (requests for other models are still answered).
    pub model: String,
    /// Decode speed of a prompt of no class.
    pub rate: Rate,
    /// Workload classes: the first whose predicate holds for the prompt sets its rate.
    pub classes: Vec<(Predicate, Rate)>,
    /// Time until the first token of each request.
    pub time_to_first_token: Duration,
    /// For this long after the start every endpoint answers 503 (loading the model).
    pub not_ready_for: Duration,
    /// When set, requests must carry `Authorization: Bearer <key>` (else 401).
    pub api_key: Option<String>,
}

impl Behaviour {
    /// Serving `model` at `tokens_per_second` per request, the first token after 10 ms.
    pub fn new(model: &str, tokens_per_second: f64) -> Behaviour {
        Behaviour {
            model: model.to_owned(),
            rate: Rate::new(tokens_per_second),
            classes: Vec::new(),
            time_to_first_token: Duration::from_millis(10),
            not_ready_for: Duration::ZERO,
            api_key: None,
        }
    }

    /// With a workload class: prompts for which `predicate` holds decode at `rate`.
    pub fn class(
        mut self,
        predicate: impl Fn(&str) -> bool + Send + Sync + 'static,
        rate: Rate,
    ) -> Self {
        self.classes.push((Arc::new(predicate), rate));
        self
    }

    /// With this time to the first token.
    pub fn time_to_first_token(mut self, ttft: Duration) -> Self {
        self.time_to_first_token = ttft;
        self
    }

    /// Answering 503 for this long after the start.
    pub fn not_ready_for(mut self, duration: Duration) -> Self {
        self.not_ready_for = duration;
        self
    }

    /// Requiring this bearer token.
    pub fn api_key(mut self, key: &str) -> Self {
        self.api_key = Some(key.to_owned());
        self
    }

    /// The decode speed of a request with `prompt`.
    pub fn rate_for(&self, prompt: &str) -> f64 {
        self.classes
            .iter()
            .find(|(predicate, _)| predicate(prompt))
            .map_or_else(|| self.rate.get(), |(_, rate)| rate.get())
    }
}

/// What the running server shares with its handlers.
struct Shared {
    behaviour: Behaviour,
    started: Instant,
    completions: AtomicU64,
}

/// A running test server, stopped when dropped.
pub struct OpenAiServer {
    /// Its base URL, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    /// Its address.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OpenAiServer {
    /// Starts a server on 127.0.0.1 (a free port) in a thread of its own.
    pub fn start(behaviour: Behaviour) -> OpenAiServer {
        let shared =
            Arc::new(Shared { behaviour, started: Instant::now(), completions: AtomicU64::new(0) });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = axum::Router::new()
            .route("/health", get(health))
            .route("/v1/models", get(models))
            .route("/v1/chat/completions", post(chat))
            .route("/v1/completions", post(completions))
            .with_state(Arc::clone(&shared));
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                // Each token leaves at once, not held back for the previous one's ACK.
                let listener = listener.tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        OpenAiServer {
            url: format!("http://{addr}"),
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Completion requests answered (or being answered) so far, warm-ups included.
    pub fn requests(&self) -> u64 {
        self.shared.completions.load(Ordering::SeqCst)
    }

    /// The behaviour, whose rates can be changed while the server runs.
    pub fn behaviour(&self) -> &Behaviour {
        &self.shared.behaviour
    }
}

impl Drop for OpenAiServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Streams in flight end with the runtime; do not wait for slow clients.
        if let Some(thread) = self.thread.take() {
            drop(thread);
        }
    }
}

/// 503 while loading, 401 without the key; `None` when the request may proceed.
fn refuse(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    if shared.started.elapsed() < shared.behaviour.not_ready_for {
        return Some((StatusCode::SERVICE_UNAVAILABLE, "loading the model").into_response());
    }
    let expected = shared.behaviour.api_key.as_deref()?;
    let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    if given.and_then(|v| v.strip_prefix("Bearer ")) == Some(expected) {
        None
    } else {
        Some(
            (StatusCode::UNAUTHORIZED, Json(json!({"error": {"message": "bad key"}})))
                .into_response(),
        )
    }
}

async fn health(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    refuse(&shared, &headers).unwrap_or_else(|| StatusCode::OK.into_response())
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    refuse(&shared, &headers).unwrap_or_else(|| {
        let model = json!({"id": shared.behaviour.model, "object": "model", "owned_by": "test"});
        Json(json!({"object": "list", "data": [model]})).into_response()
    })
}

async fn chat(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let prompt = body["messages"]
        .as_array()
        .map(|messages| {
            messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default();
    complete(&shared, &headers, &body, &prompt, Kind::Chat).await
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let prompt = body["prompt"].as_str().unwrap_or_default().to_owned();
    complete(&shared, &headers, &body, &prompt, Kind::Text).await
}

/// Chat or text completion.
#[derive(Clone, Copy)]
enum Kind {
    Chat,
    Text,
}

impl Kind {
    fn object(self, streamed: bool) -> &'static str {
        match (self, streamed) {
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Chat, false) => "chat.completion",
            (Kind::Text, _) => "text_completion",
        }
    }

    /// A choice carrying `text`: a delta when streamed.
    fn choice(self, text: &str, streamed: bool, finish: Option<&str>) -> Value {
        match (self, streamed) {
            (Kind::Chat, true) => {
                json!({"index": 0, "delta": {"content": text}, "finish_reason": finish})
            }
            (Kind::Chat, false) => {
                json!({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish})
            }
            (Kind::Text, _) => json!({"index": 0, "text": text, "finish_reason": finish}),
        }
    }
}

/// One server-sent event of a streamed answer.
#[derive(Clone, Copy)]
enum Step {
    /// Token `i` (from 0).
    Token(u64),
    /// The usage chunk.
    Usage,
    /// `[DONE]`.
    Done,
}

const WORDS: [&str; 8] = [" The", " crew", " saw", " Mars", " rise", " over", " the", " hull"];

async fn complete(
    shared: &Shared,
    headers: &HeaderMap,
    body: &Value,
    prompt: &str,
    kind: Kind,
) -> Response {
    if let Some(refused) = refuse(shared, headers) {
        return refused;
    }
    shared.completions.fetch_add(1, Ordering::SeqCst);
    let model = body["model"].as_str().unwrap_or(&shared.behaviour.model).to_owned();
    let tokens =
        body["max_tokens"].as_u64().or(body["max_completion_tokens"].as_u64()).unwrap_or(16).max(1);
    let rate = shared.behaviour.rate_for(prompt).max(f64::MIN_POSITIVE);
    let ttft = shared.behaviour.time_to_first_token;
    let start = tokio::time::Instant::now();
    // Token i (from 0) leaves i / rate after the first, which leaves at ttft: a schedule, so
    // delays do not add up. A streamed answer counts from when its first token actually left:
    // counted from the request, a first token delayed by a busy machine would have the others
    // catch up, and a client timing first token to last would measure a higher rate.
    let due =
        move |first: tokio::time::Instant, i: u64| first + Duration::from_secs_f64(i as f64 / rate);
    let usage = json!({"prompt_tokens": prompt.split_whitespace().count(), "completion_tokens": tokens, "total_tokens": prompt.split_whitespace().count() as u64 + tokens});
    let streamed = body["stream"].as_bool().unwrap_or(false);
    if !streamed {
        tokio::time::sleep_until(due(start + ttft, tokens - 1)).await;
        let text: String = (0..tokens).map(|i| WORDS[i as usize % WORDS.len()]).collect();
        return Json(json!({
            "id": "cmpl-test", "object": kind.object(false), "model": model,
            "choices": [kind.choice(&text, false, Some("length"))], "usage": usage,
        }))
        .into_response();
    }
    let include_usage = body["stream_options"]["include_usage"].as_bool().unwrap_or(false);
    let mut steps: Vec<Step> = (0..tokens).map(Step::Token).collect();
    if include_usage {
        steps.push(Step::Usage);
    }
    steps.push(Step::Done);
    let first_left = Arc::new(std::sync::OnceLock::new());
    let stream = futures::stream::iter(steps).then(move |step| {
        let (model, usage, first_left) = (model.clone(), usage.clone(), first_left.clone());
        async move {
            let chunk = |choices: Value, usage: Value| {
                let object = kind.object(true);
                json!({"id": "cmpl-test", "object": object, "model": model, "choices": choices, "usage": usage})
            };
            let data = match step {
                Step::Token(i) => {
                    match first_left.get() {
                        Some(first) => tokio::time::sleep_until(due(*first, i)).await,
                        None => {
                            tokio::time::sleep_until(start + ttft).await;
                            let _ = first_left.set(tokio::time::Instant::now());
                        }
                    }
                    let finish = (i + 1 == tokens).then_some("length");
                    let word = WORDS[i as usize % WORDS.len()];
                    chunk(json!([kind.choice(word, true, finish)]), Value::Null).to_string()
                }
                Step::Usage => chunk(json!([]), usage).to_string(),
                Step::Done => "[DONE]".to_owned(),
            };
            Ok::<_, std::convert::Infallible>(format!("data: {data}\n\n"))
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap()
}
