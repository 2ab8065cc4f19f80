//! HTML pages relayed by the pod and Service `proxy` get their links to the backend's own paths
//! rewritten to come back through the proxy, as upstream's API server rewrites them: a page
//! served at `/` linking `/static/app.css` would otherwise send the browser to the API server's
//! `/static/app.css`. Links are found with `lol_html`, a streaming HTML rewriter.
//!
//! The page is read whole (up to [`MAX_PAGE`]) before it is rewritten; a larger one, or one in
//! an encoding other than identity, gzip or deflate, is relayed as it is.

use std::io::{Read, Write};

use axum::body::Body;
use axum::http::header::{self, HeaderMap};
use bytes::Bytes;
use futures::{StreamExt, stream};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The largest page that is rewritten.
const MAX_PAGE: usize = 16 << 20;

/// The attributes that hold links, by element: those upstream rewrites that pages still use.
const LINKS: [(&str, &str); 23] = [
    ("a", "href"),
    ("area", "href"),
    ("audio", "src"),
    ("base", "href"),
    ("blockquote", "cite"),
    ("body", "background"),
    ("button", "formaction"),
    ("del", "cite"),
    ("embed", "src"),
    ("form", "action"),
    ("frame", "src"),
    ("iframe", "src"),
    ("img", "src"),
    ("input", "src"),
    ("input", "formaction"),
    ("ins", "cite"),
    ("link", "href"),
    ("object", "data"),
    ("q", "cite"),
    ("script", "src"),
    ("source", "src"),
    ("video", "src"),
    ("video", "poster"),
];

/// Whether a response with `headers` is an HTML page.
pub(super) fn is_html(headers: &HeaderMap) -> bool {
    let kind = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    kind.and_then(|k| k.split(';').next())
        .is_some_and(|k| k.trim().eq_ignore_ascii_case("text/html"))
}

/// The body of an HTML response with `headers`, its links rewritten by `link` (which gives the
/// new value of a link it changes), and with its `Content-Length` dropped when it changed.
pub(super) async fn relay(
    headers: &mut HeaderMap,
    body: Incoming,
    link: impl Fn(&str) -> Option<String>,
) -> Body {
    let encoding = headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    let Some(encoding) = Encoding::of(encoding) else { return Body::new(body) };
    let (page, rest) = read_up_to(body, MAX_PAGE).await;
    if let Some(rest) = rest {
        // Too large to rewrite: what was read, then the rest, as they came.
        let read = stream::iter(page.into_iter().map(Ok::<_, hyper::Error>));
        return Body::from_stream(read.chain(rest.into_data_stream()));
    }
    let page: Vec<u8> = page.concat();
    let rewritten = encoding
        .decode(&page)
        .and_then(|html| rewrite_links(&html, &link))
        .and_then(|html| encoding.encode(&html));
    match rewritten {
        Some(rewritten) if rewritten != page => {
            headers.remove(header::CONTENT_LENGTH);
            Body::from(rewritten)
        }
        _ => Body::from(page),
    }
}

/// Reads `body` until it ends or more than `limit` bytes came: the chunks read, and the rest of
/// the body if it did not end.
async fn read_up_to(mut body: Incoming, limit: usize) -> (Vec<Bytes>, Option<Incoming>) {
    let mut chunks = Vec::new();
    let mut size = 0;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map(|f| f.into_data()) else { break };
        let Ok(data) = data else { continue };
        size += data.len();
        chunks.push(data);
        if size > limit {
            return (chunks, Some(body));
        }
    }
    (chunks, None)
}

/// The content encodings a page can be rewritten in.
#[derive(Clone, Copy)]
enum Encoding {
    Identity,
    Gzip,
    Deflate,
}

impl Encoding {
    fn of(header: Option<&str>) -> Option<Encoding> {
        match header.map(str::trim) {
            None | Some("" | "identity") => Some(Encoding::Identity),
            Some("gzip" | "x-gzip") => Some(Encoding::Gzip),
            Some("deflate") => Some(Encoding::Deflate),
            Some(_) => None,
        }
    }

    fn decode(self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        match self {
            Encoding::Identity => return Some(bytes.to_vec()),
            Encoding::Gzip => flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).ok()?,
            Encoding::Deflate => {
                flate2::read::ZlibDecoder::new(bytes).read_to_end(&mut out).ok()?
            }
        };
        Some(out)
    }

    fn encode(self, bytes: &[u8]) -> Option<Vec<u8>> {
        let level = flate2::Compression::default();
        match self {
            Encoding::Identity => Some(bytes.to_vec()),
            Encoding::Gzip => {
                let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
                encoder.write_all(bytes).ok()?;
                encoder.finish().ok()
            }
            Encoding::Deflate => {
                let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
                encoder.write_all(bytes).ok()?;
                encoder.finish().ok()
            }
        }
    }
}

/// `html` with every link attribute that `link` changes set to what it gives; none if the page
/// cannot be parsed.
fn rewrite_links(html: &[u8], link: &impl Fn(&str) -> Option<String>) -> Option<Vec<u8>> {
    let handlers = LINKS
        .iter()
        .map(|&(element, attribute)| {
            let selector = format!("{element}[{attribute}]");
            lol_html::element!(selector, move |el| {
                if let Some(new) = el.get_attribute(attribute).and_then(|value| link(&value)) {
                    el.set_attribute(attribute, &new)?;
                }
                Ok(())
            })
        })
        .collect();
    let settings = lol_html::Settings { element_content_handlers: handlers, ..Default::default() };
    let mut out = Vec::with_capacity(html.len() + html.len() / 8);
    let mut rewriter =
        lol_html::HtmlRewriter::new(settings, |chunk: &[u8]| out.extend_from_slice(chunk));
    rewriter.write(html).ok()?;
    rewriter.end().ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rooted(value: &str) -> Option<String> {
        value.starts_with('/').then(|| format!("/proxy{value}"))
    }

    #[test]
    fn links_to_the_backends_paths_are_rewritten_and_the_rest_kept() {
        let page = br#"<!doctype html><html><head><link rel="stylesheet" href="/static/app.css"><script src="/app.js"></script></head>
<body><a href="/docs#intro">docs</a> <a href="relative/page">rel</a> <a href="https://example.com/">out</a>
<img src="/logo.png" alt="/not-a-link"><form action="/login" method="post"></form><p>/text/stays</p></body></html>"#;
        let out = String::from_utf8(rewrite_links(page, &rooted).unwrap()).unwrap();
        for rewritten in [
            r#"href="/proxy/static/app.css""#,
            r#"src="/proxy/app.js""#,
            r#"href="/proxy/docs#intro""#,
            r#"src="/proxy/logo.png""#,
            r#"action="/proxy/login""#,
        ] {
            assert!(out.contains(rewritten), "{rewritten} in {out}");
        }
        for kept in [
            r#"href="relative/page""#,
            r#"href="https://example.com/""#,
            r#"alt="/not-a-link""#,
            "<p>/text/stays</p>",
        ] {
            assert!(out.contains(kept), "{kept} in {out}");
        }
    }

    #[test]
    fn encoded_pages_are_decoded_and_encoded_again() {
        for encoding in [Encoding::Gzip, Encoding::Deflate] {
            let page = br#"<a href="/x">x</a>"#;
            let sent = encoding.encode(page).unwrap();
            let rewritten =
                encoding.decode(&sent).and_then(|h| rewrite_links(&h, &rooted)).unwrap();
            assert_eq!(rewritten, br#"<a href="/proxy/x">x</a>"#);
        }
        assert!(Encoding::of(Some("br")).is_none(), "left as it is");
    }

    #[test]
    fn html_is_told_by_its_content_type() {
        let headers = |kind: &'static str| {
            HeaderMap::from_iter([(header::CONTENT_TYPE, header::HeaderValue::from_static(kind))])
        };
        assert!(is_html(&headers("text/html; charset=utf-8")));
        assert!(is_html(&headers("TEXT/HTML")));
        assert!(!is_html(&headers("application/json")));
        assert!(!is_html(&HeaderMap::new()));
    }
}
