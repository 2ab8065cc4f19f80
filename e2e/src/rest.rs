//! A small client of the orchestrator REST API, for tests and benchmarks.

use std::time::Duration;

use serde_json::Value;

/// An answer: status, headers and the body as JSON (`Null` when empty or not JSON).
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Response headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as JSON.
    pub json: Value,
    /// The body as text.
    pub text: String,
}

impl Answer {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The error code of an error body.
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or_default()
    }
}

/// The REST API of a `keelson up`, called with a bearer token.
#[derive(Clone)]
pub struct Rest {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The bearer token, if any.
    pub token: Option<String>,
    agent: ureq::Agent,
}

impl Rest {
    /// A client of `base` with `token`.
    pub fn new(base: impl Into<String>, token: Option<String>) -> Self {
        // No pooled connections: a server may close one after an early error answer (say a
        // 405 to a request whose body it did not read), and reusing it would fail the next
        // request for a reason that is not the one under test.
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            // ureq sends the body anyway once 1 s passes without a `100 Continue`; on a loaded
            // machine a server refusing the body by its length may answer later than that, and
            // the body then meets a closed connection (a broken pipe instead of its 413).
            .timeout_await_100(Some(Duration::from_secs(10)))
            .max_idle_connections(0)
            .build()
            .into();
        Self { base: base.into(), token, agent }
    }

    /// The same server with another token.
    pub fn with_token(&self, token: Option<&str>) -> Self {
        Self { token: token.map(str::to_owned), ..self.clone() }
    }

    /// Sends a request; `body` is sent as JSON when given.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        let text = body.map(Value::to_string);
        self.raw(method, path, text.as_deref(), "application/json", &[])
    }

    /// Sends a request with a raw body, content type and extra headers.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        content_type: &str,
        headers: &[(&str, &str)],
    ) -> Answer {
        let uri = format!("{}{path}", self.base);
        let mut request = ureq::http::Request::builder().method(method).uri(&uri);
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request.header("content-type", content_type);
            // As curl does above 1 MiB: a server refusing the body by its length answers
            // before it is sent, instead of closing the connection on a client still writing.
            if body.len() > 1 << 20 {
                request = request.header("expect", "100-continue");
            }
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(body.unwrap_or_default().to_owned()).expect("a valid request");
        let mut response =
            self.agent.run(request).unwrap_or_else(|e| panic!("{method} {uri}: {e}"));
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let text =
            response.body_mut().with_config().limit(64 << 20).read_to_string().unwrap_or_default();
        Answer {
            status: response.status().as_u16(),
            headers,
            json: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }

    /// `GET`.
    pub fn get(&self, path: &str) -> Answer {
        self.call("GET", path, None)
    }

    /// `POST` with a JSON body.
    pub fn post(&self, path: &str, body: Value) -> Answer {
        self.call("POST", path, Some(&body))
    }

    /// `POST` without a body.
    pub fn post_empty(&self, path: &str) -> Answer {
        self.call("POST", path, None)
    }

    /// `PUT` with a JSON body.
    pub fn put(&self, path: &str, body: Value) -> Answer {
        self.call("PUT", path, Some(&body))
    }

    /// `DELETE`.
    pub fn delete(&self, path: &str) -> Answer {
        self.call("DELETE", path, None)
    }
}
