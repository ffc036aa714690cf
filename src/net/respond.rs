//! The response side of a forwarded request: classify, then pass through or rewrite.
//!
//! A response is rewritten only when it is a whole HTML page the profile wants changed.
//! Everything else (other types, HEAD, 1xx/204/206/304, unknown codings, the `pass` profile)
//! streams through untouched and unbuffered, in constant memory whatever its size.
//!
//! An HTML page is read whole, decoded up to `limits.max_rewrite_bytes`, before the client
//! gets a byte. That costs the time to first byte of a streamed rewrite, and buys what a
//! shared gateway needs: a page is either rewritten whole or, when it is too large, passed
//! through whole with the origin's own framing (never truncated); an origin that fails
//! mid-page yields a clear 502 instead of half a page; and the rewritten page has an exact
//! `Content-Length`. The removers and extractors of stage 2 need the whole page anyway.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::bodies::{self, ProxyBody, Replay};
use super::error::ProxyError;
use super::forward;
use super::State;
use crate::body::{self as codec, Coding, DecodeError, Decoder};
use crate::pipeline::{self, Profile};

/// What the proxy knows about the request a response answers.
pub struct Exchange<'a> {
    /// The request method.
    pub method: &'a Method,
    /// The origin's host, for error messages.
    pub host: &'a str,
    /// The absolute request URL: stage 2 resolves links against it and picks site rules by it.
    pub url: &'a str,
    /// The client's Accept-Encoding.
    pub accept_encoding: Option<HeaderValue>,
    /// The profile serving the client.
    pub profile: &'a Profile,
}

/// What happened to a response, for the access log.
pub struct Served {
    /// The response for the client.
    pub response: Response<ProxyBody>,
    /// "pass", "rewrite" or "too-large".
    pub action: &'static str,
    /// Bytes read from the origin so far (all of them for a rewrite; a pass-through counts
    /// the rest as it streams).
    pub origin_bytes: u64,
}

/// Serves an origin's response to the client.
pub async fn respond(state: &State, ex: &Exchange<'_>, resp: Response<Incoming>) -> Result<Served, ProxyError> {
    match respond_outcome(state, ex, resp).await? {
        Outcome::Rewritten(page) => Ok(page.into_served()),
        Outcome::Passed(served) => Ok(served),
    }
}

/// A page read whole, verified (the origin's body ended cleanly) and rewritten: what the
/// cache may keep.
pub struct Rewritten {
    /// The rewritten response head.
    pub parts: http::response::Parts,
    /// The exact body sent, encoded for the client.
    pub body: Bytes,
    /// Bytes read from the origin.
    pub origin_bytes: u64,
}

impl Rewritten {
    /// The response for the client.
    pub fn into_served(self) -> Served {
        Served { response: Response::from_parts(self.parts, bodies::full(self.body)), action: "rewrite", origin_bytes: self.origin_bytes }
    }
}

/// What [`respond_outcome`] did with a response.
pub enum Outcome {
    /// Rewritten whole.
    Rewritten(Rewritten),
    /// Passed through (possibly streaming), for the client as it is.
    Passed(Served),
}

/// Like [`respond`], but a rewritten page comes back as its parts and bytes, for the cache.
pub async fn respond_outcome(state: &State, ex: &Exchange<'_>, resp: Response<Incoming>) -> Result<Outcome, ProxyError> {
    let idle = state.config.upstream.body_idle_timeout;
    let Some(plan) = plan(ex, &resp, state.config.limits.max_rewrite_bytes) else {
        let resp = resp.map(|body| bodies::stream(body, idle));
        return Ok(Outcome::Passed(pass(state, resp, Vec::new(), "pass")));
    };
    let (mut parts, body) = resp.into_parts();
    let limit = state.config.limits.max_rewrite_bytes;
    let collected = collect(body, &plan, limit, idle, ex.host).await?;
    let (raw, decoded) = match collected {
        Collected::Whole { raw, decoded } => (raw, decoded),
        Collected::Stopped { raw, rest, why } => {
            let response = Response::from_parts(parts, rest);
            return Ok(Outcome::Passed(pass(state, response, raw, why)));
        }
    };
    let origin_bytes = raw.iter().map(|b| b.len() as u64).sum();
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut page = transform(ex.profile, decoded, content_type, ex.host, ex.url).await?;
    let coding = codec::choose_encoding(ex.accept_encoding.as_ref().and_then(|v| v.to_str().ok()));
    let body = match coding {
        // The page as it is: an identity encoder would only copy it.
        Coding::Identity => std::mem::take(&mut page.body),
        _ => codec::encode_all(coding, &page.body).map_err(|source| ProxyError::Encode { source })?,
    };
    rewrite_headers(&mut parts.headers, &page, coding, body.len(), ex.profile, state);
    Ok(Outcome::Rewritten(Rewritten { parts, body: Bytes::from(body), origin_bytes }))
}

/// How a response will be rewritten; `None` means it passes through.
struct Plan {
    codings: Vec<Coding>,
    /// No Content-Type: look at the first bytes before deciding it is HTML.
    sniff: bool,
}

fn plan(ex: &Exchange<'_>, resp: &Response<Incoming>, limit: u64) -> Option<Plan> {
    let status = resp.status();
    let untouchable = ex.profile.is_pass()
        || *ex.method == Method::HEAD
        || status.is_informational()
        || matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED | StatusCode::PARTIAL_CONTENT);
    if untouchable {
        return None;
    }
    let headers = resp.headers();
    let sniff = match headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
        Some(ct) if is_html_type(ct) => false,
        Some(_) => return None,
        None => true,
    };
    let encoding = headers.get_all(header::CONTENT_ENCODING).iter().filter_map(|v| v.to_str().ok()).collect::<Vec<_>>().join(",");
    // A coding pith cannot undo is passed through: the client asked for it.
    let codings = codec::parse_content_encoding(&encoding).ok()?;
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if length.is_some_and(|n| n > limit) {
        return None;
    }
    Some(Plan { codings, sniff })
}

/// `text/html` and `application/xhtml+xml`, any parameters.
fn is_html_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("text/html") || essence.eq_ignore_ascii_case("application/xhtml+xml")
}

/// The HTML signatures of the WHATWG MIME sniffing standard, after leading whitespace.
fn looks_like_html(prefix: &[u8]) -> bool {
    const TAGS: [&[u8]; 17] = [
        b"<!doctype html", b"<html", b"<head", b"<script", b"<iframe", b"<h1", b"<div", b"<font", b"<table", b"<a",
        b"<style", b"<title", b"<b", b"<body", b"<br", b"<p", b"<!--",
    ];
    let start = prefix.iter().position(|b| !b" \t\n\x0c\r".contains(b)).unwrap_or(prefix.len());
    let s = &prefix[start..];
    TAGS.iter().any(|tag| {
        s.len() > tag.len()
            && s[..tag.len()].eq_ignore_ascii_case(tag)
            && (tag == b"<!--" || s[tag.len()] == b' ' || s[tag.len()] == b'>')
    })
}

/// Bytes of decoded prefix looked at when sniffing.
const SNIFF_BYTES: usize = 512;

enum Collected {
    /// The whole page, as read and decoded.
    Whole { raw: Vec<Bytes>, decoded: Vec<u8> },
    /// Not to be rewritten after all; `raw` was read, `rest` is the remainder.
    Stopped { raw: Vec<Bytes>, rest: ProxyBody, why: &'static str },
}

/// Reads and decodes a body until its end, its decoded size passes `limit`, or sniffing
/// says it is not HTML.
async fn collect(body: Incoming, plan: &Plan, limit: u64, idle: std::time::Duration, host: &str) -> Result<Collected, ProxyError> {
    // Sized for the whole body when the origin says how long it is (a compressed one grows,
    // by about four times for HTML), so that gathering it does not copy it over as it grows;
    // within the limit, and never more than a few MiB on the origin's word alone.
    const PRESIZE_MAX: u64 = 4 << 20;
    let growth = if plan.codings.iter().all(|&c| c == Coding::Identity) { 1 } else { 4 };
    let expected = http_body::Body::size_hint(&body).exact().unwrap_or(0).saturating_mul(growth);
    let mut body = body;
    let mut raw = Vec::new();
    let mut decoded = Vec::with_capacity(expected.min(limit).min(PRESIZE_MAX) as usize);
    let mut decoder = Decoder::new(&plan.codings, limit);
    let mut sniffing = plan.sniff;
    loop {
        let frame = tokio::time::timeout(idle, body.frame())
            .await
            .map_err(|_| ProxyError::Timeout { host: host.to_string(), what: "send the rest of the page", after: idle })?;
        let (chunk, end) = match frame {
            None => (Bytes::new(), true),
            Some(Err(e)) => return Err(ProxyError::Upstream { host: host.to_string(), source: Box::new(e) }),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => (data, false),
                Err(_trailers) => continue,
            },
        };
        if !chunk.is_empty() {
            raw.push(chunk.clone());
        }
        match decoder.decode_into(&chunk, end, &mut decoded) {
            Ok(()) => {}
            Err(DecodeError::LimitExceeded { .. }) => return Ok(stopped(raw, body, idle, "too-large")),
            Err(source) => return Err(ProxyError::Decode { host: host.to_string(), source }),
        }
        if sniffing && (decoded.len() >= SNIFF_BYTES || end) {
            if !looks_like_html(&decoded[..decoded.len().min(SNIFF_BYTES)]) {
                return Ok(stopped(raw, body, idle, "pass"));
            }
            sniffing = false;
        }
        if end {
            return Ok(Collected::Whole { raw, decoded });
        }
    }
}

fn stopped(raw: Vec<Bytes>, rest: Incoming, idle: std::time::Duration, why: &'static str) -> Collected {
    let rest = bodies::stream(rest, idle);
    Collected::Stopped { raw, rest, why }
}

/// A response streamed to the client untouched, after any bytes already read.
fn pass<B>(state: &State, resp: Response<B>, read: Vec<Bytes>, action: &'static str) -> Served
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<bodies::BodyError>,
{
    let origin_bytes = read.iter().map(|b| b.len() as u64).sum();
    let (mut parts, body) = resp.into_parts();
    strip_response_hop_by_hop(&mut parts.headers, state);
    let body = Replay::new(read, body.map_err(Into::into)).boxed_unsync();
    Served { response: Response::from_parts(parts, body), action, origin_bytes }
}

fn strip_response_hop_by_hop(headers: &mut HeaderMap, state: &State) {
    forward::strip_hop_by_hop(headers);
    forward::add_via(headers, &state.via);
}

/// Runs the pipeline; large pages go to the blocking pool so one big page does not stall
/// the other connections of this worker thread.
async fn transform(profile: &Profile, doc: Vec<u8>, content_type: Option<String>, host: &str, url: &str) -> Result<pipeline::Page, ProxyError> {
    const INLINE_BYTES: usize = 512 * 1024;
    let rewrite_error = |source| ProxyError::Rewrite { host: host.to_string(), source };
    if doc.len() <= INLINE_BYTES {
        return process(profile, &doc, content_type.as_deref(), url).map_err(rewrite_error);
    }
    let profile = profile.clone();
    let url = url.to_string();
    let job = tokio::task::spawn_blocking(move || process(&profile, &doc, content_type.as_deref(), &url));
    match job.await {
        Ok(result) => result.map_err(rewrite_error),
        Err(join) => Err(ProxyError::Internal { what: format!("the rewriting task failed: {join}") }),
    }
}

/// Runs the pipeline in the profile's output form. A page nested deeper than the tree holds
/// cannot be rendered as text whole; rather than refuse it (a 500 over a page that is fine
/// HTML), the text form falls back to the stage-1 HTML page, as the HTML form already does.
/// [`rewrite_headers`] says so in `x-pith-fallback`.
fn process(profile: &Profile, doc: &[u8], content_type: Option<&str>, url: &str) -> Result<pipeline::Page, pipeline::PipelineError> {
    match pipeline::process(profile, doc, content_type, profile.output, Some(url)) {
        Err(pipeline::PipelineError::TooDeep { depth }) if profile.output == pipeline::Output::Text => {
            tracing::debug!(url, depth, "page too deep to render as text; serving the stage-1 HTML page");
            pipeline::process(profile, doc, content_type, pipeline::Output::Html, Some(url))
        }
        other => other,
    }
}

/// True when [`process`] served the stage-1 HTML page instead of the profile's text form.
fn is_too_deep_fallback(page: &pipeline::Page, profile: &Profile) -> bool {
    profile.output == pipeline::Output::Text && page.content_type.starts_with("text/html")
}

/// Headers of a rewritten page: new type, coding and length; validators weakened, because
/// the bytes are no longer the origin's.
fn rewrite_headers(headers: &mut HeaderMap, page: &pipeline::Page, coding: Coding, len: usize, profile: &Profile, state: &State) {
    strip_response_hop_by_hop(headers, state);
    for name in [header::CONTENT_LENGTH, header::CONTENT_ENCODING, header::ACCEPT_RANGES, header::CONTENT_RANGE] {
        headers.remove(name);
    }
    headers.remove("content-md5");
    headers.remove("digest");
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(page.content_type));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if coding != Coding::Identity {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding.as_str()));
    }
    if !varies_on_encoding(headers) {
        headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    if let Some(etag) = headers.get(header::ETAG).and_then(|v| v.to_str().ok()).filter(|e| !e.starts_with("W/")) {
        if let Ok(weak) = HeaderValue::from_str(&format!("W/{etag}")) {
            headers.insert(header::ETAG, weak);
        }
    }
    let mut summary = format!(
        "profile={}; removed-elements={}; removed-attributes={}; charset={}{}",
        profile.name,
        page.stats.elements_removed,
        page.stats.attributes_removed,
        page.charset,
        if page.stats.bailed_out { "; bailed-out" } else { "" }
    );
    if let Some(removal) = &page.removal {
        summary.push_str("; ");
        summary.push_str(&removal.summary());
    }
    if let Some(reading) = &page.reading {
        summary.push_str("; ");
        summary.push_str(&reading.summary());
    }
    if let Ok(v) = HeaderValue::from_str(&summary) {
        headers.insert("x-pith", v);
    }
    // The safety net fired, or reading mode served the declutter page: say what, and why.
    if let Some(fallback) = page.fallback_header() {
        if let Ok(v) = HeaderValue::from_str(&fallback) {
            headers.insert("x-pith-fallback", v);
        }
    }
    if is_too_deep_fallback(page, profile) {
        headers.insert("x-pith-fallback", HeaderValue::from_static("too-deep; served as de-cluttered HTML, not text"));
    }
}

/// True when `Vary` already covers Accept-Encoding (or everything).
fn varies_on_encoding(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|f| f.trim() == "*" || f.trim().eq_ignore_ascii_case("accept-encoding"))
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! sniffs {
        ($name:ident, $input:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!(looks_like_html($input), $expect);
            }
        };
    }

    sniffs!(doctype, b"  \n<!DOCTYPE html><html>", true);
    sniffs!(html_tag, b"<HTML>", true);
    sniffs!(p_tag, b"<p class=x>", true);
    sniffs!(comment, b"<!-- x -->", true);
    sniffs!(json, b"{\"a\": 1}", false);
    sniffs!(png, b"\x89PNG\r\n\x1a\n", false);
    sniffs!(not_a_tag, b"<pre>", false);
    sniffs!(empty, b"", false);

    #[test]
    fn vary_is_not_repeated() {
        let mut h = HeaderMap::new();
        assert!(!varies_on_encoding(&h));
        h.append(header::VARY, HeaderValue::from_static("Cookie, accept-encoding"));
        assert!(varies_on_encoding(&h));
    }

    #[test]
    fn html_types() {
        assert!(is_html_type("text/html"));
        assert!(is_html_type("Text/HTML; charset=utf-8"));
        assert!(is_html_type("application/xhtml+xml"));
        assert!(!is_html_type("text/plain"));
        assert!(!is_html_type("text/htmlx"));
    }
}
