//! Waiting for the model server: its readiness paths, polled until each answers 2xx.

use std::time::{Duration, Instant};

use reqwest::StatusCode;

use super::BenchError;
use super::args::Backend;

/// The paths that must answer 2xx, in order, before the backend serves.
pub fn readiness_paths(backend: Backend) -> &'static [&'static str] {
    match backend {
        Backend::Vllm | Backend::MlcLlm | Backend::Llamacpp | Backend::Diffusers => {
            &["/health", "/v1/models"]
        }
        Backend::Tei => &["/health", "/info"],
    }
}

/// What an answer of a readiness path means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// 2xx: this path is ready.
    Ready,
    /// Still starting (502, 503, 504, 404, or no connection): ask again.
    Starting,
    /// Any other status: waiting will not help.
    Broken,
}

/// How an HTTP status of a readiness path is read.
pub fn classify(status: StatusCode) -> Readiness {
    match status.as_u16() {
        200..=299 => Readiness::Ready,
        404 | 502..=504 => Readiness::Starting,
        _ => Readiness::Broken,
    }
}

/// Polls every readiness path of `backend` at `endpoint` until each answers 2xx, every
/// `interval`, for at most `timeout`; a progress line on stderr while it waits.
pub async fn until_ready(
    http: &reqwest::Client,
    endpoint: &str,
    backend: Backend,
    api_key: Option<&str>,
    interval: Duration,
    timeout: Duration,
) -> Result<(), BenchError> {
    let started = Instant::now();
    let deadline = started + timeout;
    for path in readiness_paths(backend) {
        let url = format!("{endpoint}{path}");
        loop {
            let mut request = http.get(&url).timeout(interval.max(Duration::from_secs(5)));
            if let Some(key) = api_key {
                request = request.bearer_auth(key);
            }
            let last = match request.send().await {
                Ok(response) => match classify(response.status()) {
                    Readiness::Ready => break,
                    Readiness::Starting => format!("HTTP {}", response.status().as_u16()),
                    Readiness::Broken => {
                        let status = response.status();
                        let body = response.text().await.unwrap_or_default();
                        return Err(BenchError::NotServing {
                            url,
                            status: status.as_u16(),
                            body: super::client::excerpt(&body),
                        });
                    }
                },
                Err(e) => super::client::error_chain(&e),
            };
            if Instant::now() + interval > deadline {
                return Err(BenchError::ColdStartTimeout { url, waited: timeout, last });
            }
            eprintln!(
                "waiting for {url} ({last}), {}s of {}s",
                started.elapsed().as_secs(),
                timeout.as_secs()
            );
            tokio::time::sleep(interval).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        for ready in [200, 204] {
            assert_eq!(classify(StatusCode::from_u16(ready).unwrap()), Readiness::Ready);
        }
        for starting in [404, 502, 503, 504] {
            assert_eq!(classify(StatusCode::from_u16(starting).unwrap()), Readiness::Starting);
        }
        for broken in [400, 401, 403, 500, 301] {
            assert_eq!(classify(StatusCode::from_u16(broken).unwrap()), Readiness::Broken);
        }
    }

    #[test]
    fn paths_per_backend() {
        assert_eq!(readiness_paths(Backend::Vllm), ["/health", "/v1/models"]);
        assert_eq!(readiness_paths(Backend::Tei), ["/health", "/info"]);
        assert_eq!(readiness_paths(Backend::Diffusers), ["/health", "/v1/models"]);
    }
}
