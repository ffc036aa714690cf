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
//!
//! The pages being read and rewritten share a memory budget ([`budget`],
//! `limits.rewrite_memory_bytes`): a page reserves its expected cost before its body is read
//! and as it arrives; one that finds no room in time passes through unrewritten, like a page
//! that is too large, with [`Action::OverBudget`] in the log and in `x-pith`.
//!
//! What happened to a response is an [`Action`], and why a page read to be rewritten was
//! passed through after all is a [`Stop`]: one value decides both the branch taken here and
//! the access log's word.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::net::exchange::bodies::{self, ProxyBody, Replay};
use crate::net::observe::Action;
use crate::net::exchange::budget::{self, Path, Reservation};
use crate::net::exchange::images;
use crate::net::error::ProxyError;
use crate::net::upstream::forward;
use crate::net::State;
use crate::body::{self as codec, Coding, DecodeError, Decoder};
use crate::pipeline;
use crate::profile::Profile;

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
    /// The client's Accept: the format a transcoded image is sent in ([`crate::net::exchange::images`]).
    pub accept: Option<HeaderValue>,
    /// The profile serving the client.
    pub profile: &'a Profile,
    /// The client's address, when one client asked (not a background revalidation, not ICAP):
    /// its images take their turn to be transcoded ([`crate::net::exchange::images`]).
    pub client: Option<std::net::IpAddr>,
}

/// What happened to a response, for the access log.
pub struct Served {
    /// The response for the client.
    pub response: Response<ProxyBody>,
    /// What the access log calls it: pass, rewrite, too-large or over-budget from here; hit,
    /// revalidated or rewrite when the cache serves a kept response ([`crate::net::exchange::cached`]).
    pub action: Action,
    /// Bytes read from the origin, for a rewrite; 0 for a pass-through, whose bytes are all
    /// counted as they stream to the client (those read before it was passed through too).
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
    /// The page's share of the rewrite memory budget, held until the client has all of it.
    hold: Reservation,
}

impl Rewritten {
    /// A response read whole and rewritten (a page, or an image by [`crate::net::exchange::images`]), still
    /// holding its share of the rewrite memory budget.
    pub(in crate::net) fn new(parts: http::response::Parts, body: Bytes, origin_bytes: u64, hold: Reservation) -> Rewritten {
        Rewritten { parts, body, origin_bytes, hold }
    }

    /// The response for the client.
    pub fn into_served(self) -> Served {
        let body = budget::rewritten(self.body, self.hold).map_err(|never| match never {}).boxed_unsync();
        Served { response: Response::from_parts(self.parts, body), action: Action::Rewrite, origin_bytes: self.origin_bytes }
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
    if images::is_candidate(ex, &resp, state.config.limits.image_max_bytes) {
        return images::respond(state, ex, resp).await;
    }
    let Some(plan) = plan(ex.method, ex.profile, resp.status(), resp.headers(), state.config.limits.max_rewrite_bytes) else {
        let resp = resp.map(|body| bodies::stream(body, idle));
        return Ok(Outcome::Passed(pass(state, resp, Vec::new(), Action::Pass, None)));
    };
    let limit = state.config.limits.max_rewrite_bytes;
    let path = Path::of(ex.profile);
    let (sent, expected) = (http_body::Body::size_hint(resp.body()).exact().unwrap_or(0), expected_size(&plan, resp.body(), limit));
    let Some(mut hold) = state.budget.reserve(budget::page_cost(path, sent, expected, expected, 0)).await else {
        let resp = resp.map(|body| bodies::stream(body, idle));
        return Ok(Outcome::Passed(over_budget(pass(state, resp, Vec::new(), Action::OverBudget, None), ex)));
    };
    let (mut parts, body) = resp.into_parts();
    let collected = collect(body, &plan, limit, idle, ex.host, Budgeted { hold: &mut hold, path }).await?;
    let (raw, decoded) = match collected {
        Collected::Whole { raw, decoded } => (raw, decoded),
        Collected::Stopped { raw, rest, why } => {
            // What was read stays held until it is sent.
            hold.shrink_to(raw.iter().map(|b| b.len() as u64).sum());
            let served = pass(state, Response::from_parts(parts, rest), raw, why.action(), Some(hold));
            return Ok(Outcome::Passed(if why == Stop::OverBudget { over_budget(served, ex) } else { served }));
        }
    };
    let origin_bytes = raw.iter().map(|b| b.len() as u64).sum();
    // The decoded page is all that rewriting needs.
    drop(raw);
    let bar = crate::net::own::control::bar(&state.control, &state.config.control, ex.profile, ex.url);
    let body = rewrite(state, ex, &mut parts.headers, decoded, bar).await?;
    hold.shrink_to(body.len() as u64);
    // The encoders leave up to half of the buffer unused; a kept page would keep it all.
    let mut body = body;
    body.shrink_to_fit();
    Ok(Outcome::Rewritten(Rewritten { parts, body: Bytes::from(body), origin_bytes, hold }))
}

/// Rewrites a whole decoded page for the client of `ex`: the pipeline in the profile's form,
/// the body encoded as the client accepts, `headers` (the origin's) made to match. The step
/// after reading a page, shared by the proxy and the ICAP service ([`crate::net::icap`]). `bar` is
/// the control bar to put at the top of the page ([`crate::net::own::control::bar`]): the proxy's pages
/// have it, an ICAP client's do not (its clients reach pith's own pages through it only if
/// it says so).
pub async fn rewrite(state: &State, ex: &Exchange<'_>, headers: &mut HeaderMap, decoded: Vec<u8>, bar: Option<String>) -> Result<Vec<u8>, ProxyError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let coding = codec::choose_encoding(ex.accept_encoding.as_ref().and_then(|v| v.to_str().ok()));
    // A reading page under the bar: unsure of its content, it links to the page de-cluttered,
    // as the bar does; and it drops its own link to the original when the bar has one.
    let linked = bar.as_ref().filter(|_| ex.profile.reader.is_some()).map(|_| {
        let mut profile = ex.profile.clone();
        profile.declutter_link = crate::net::own::control::declutter_link(&state.control, &state.config.control, ex.profile, ex.url);
        profile.bar_original = state.config.control.offered("pass").is_some();
        profile
    });
    let (page, body) = transform(linked.as_ref().unwrap_or(ex.profile), decoded, content_type, coding, (ex.host, ex.url), bar).await?;
    rewrite_headers(headers, &page, coding, body.len(), ex.profile, state);
    Ok(body)
}

/// Says in `x-pith` that a page passed through unrewritten for want of memory.
fn over_budget(mut served: Served, ex: &Exchange<'_>) -> Served {
    if let Ok(v) = HeaderValue::from_str(&format!("profile={}; not-rewritten={}", ex.profile.name, Action::OverBudget)) {
        served.response.headers_mut().insert("x-pith", v);
    }
    tracing::debug!(url = ex.url, "no room in limits.rewrite_memory_bytes: the page passes through unrewritten");
    served
}

/// The decoded size a page is expected to have, on its origin's word (Content-Length): a
/// compressed one grows, by about four times for HTML; never more than the limit.
fn expected_size(plan: &Plan, body: &Incoming, limit: u64) -> u64 {
    let growth = if plan.codings.iter().all(|&c| c == Coding::Identity) { 1 } else { 4 };
    http_body::Body::size_hint(body).exact().unwrap_or(0).saturating_mul(growth).min(limit)
}

/// How a response will be rewritten; `None` means it passes through.
pub struct Plan {
    /// The content-codings to undo, in the order applied.
    pub codings: Vec<Coding>,
    /// No Content-Type: look at the first bytes ([`looks_like_html`]) before deciding it is HTML.
    pub sniff: bool,
}

/// Whether a response to `method` with `status` and `headers` is read to be rewritten for
/// `profile`, and how: the one decision the proxy and the ICAP service both obey.
pub fn plan(method: &Method, profile: &Profile, status: StatusCode, headers: &HeaderMap, limit: u64) -> Option<Plan> {
    let untouchable = profile.is_pass()
        || *method == Method::HEAD
        || status.is_informational()
        || matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED | StatusCode::PARTIAL_CONTENT);
    if untouchable {
        return None;
    }
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
pub fn looks_like_html(prefix: &[u8]) -> bool {
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
pub const SNIFF_BYTES: usize = 512;

enum Collected {
    /// The whole page, as read and decoded.
    Whole { raw: Vec<Bytes>, decoded: Vec<u8> },
    /// Not to be rewritten after all; `raw` was read, `rest` is the remainder.
    Stopped { raw: Vec<Bytes>, rest: ProxyBody, why: Stop },
}

/// Why a page read to be rewritten is passed through after all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Sniffing found no HTML signature: it is passed through like any other type.
    NotHtml,
    /// It decoded to more than `limits.max_rewrite_bytes`.
    TooLarge,
    /// The rewrite memory budget had no room for what it has become.
    OverBudget,
}

impl Stop {
    /// What the access log calls the pass-through.
    fn action(self) -> Action {
        match self {
            Stop::NotHtml => Action::Pass,
            Stop::TooLarge => Action::TooLarge,
            Stop::OverBudget => Action::OverBudget,
        }
    }
}

/// A page's reservation in the rewrite memory budget, grown as the page is read, and how the
/// page will be rewritten (what it will cost).
struct Budgeted<'a> {
    hold: &'a mut Reservation,
    path: Path,
}

/// Reads and decodes a body until its end, its decoded size passes `limit`, sniffing says it
/// is not HTML, or the rewrite memory budget has no room for what it has become.
async fn collect(body: Incoming, plan: &Plan, limit: u64, idle: std::time::Duration, host: &str, budgeted: Budgeted<'_>) -> Result<Collected, ProxyError> {
    // Sized for the whole body when the origin says how long it is, so that gathering it does
    // not copy it over as it grows; never more than a few MiB on the origin's word alone.
    const PRESIZE_MAX: u64 = 4 << 20;
    let expected = expected_size(plan, &body, limit);
    let mut body = body;
    let mut raw = Vec::new();
    let (mut raw_len, mut tags) = (0u64, 0u64);
    let mut decoded = Vec::with_capacity(expected.min(PRESIZE_MAX) as usize);
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
            raw_len += chunk.len() as u64;
            raw.push(chunk.clone());
        }
        let before = decoded.len();
        match decoder.decode_into(&chunk, end, &mut decoded) {
            Ok(()) => {}
            Err(DecodeError::LimitExceeded { .. }) => return Ok(stopped(raw, body, idle, Stop::TooLarge)),
            Err(source) => return Err(ProxyError::Decode { host: host.to_string(), source }),
        }
        if sniffing && (decoded.len() >= SNIFF_BYTES || end) {
            if !looks_like_html(&decoded[..decoded.len().min(SNIFF_BYTES)]) {
                return Ok(stopped(raw, body, idle, Stop::NotHtml));
            }
            sniffing = false;
        }
        tags += budget::count_tags(&decoded[before..]);
        let cost = budget::page_cost(budgeted.path, raw_len, decoded.capacity() as u64, decoded.len() as u64, tags);
        if !budgeted.hold.cover(cost).await {
            return Ok(stopped(raw, body, idle, Stop::OverBudget));
        }
        if end {
            return Ok(Collected::Whole { raw, decoded });
        }
    }
}

fn stopped(raw: Vec<Bytes>, rest: Incoming, idle: std::time::Duration, why: Stop) -> Collected {
    let rest = bodies::stream(rest, idle);
    Collected::Stopped { raw, rest, why }
}

/// A response streamed to the client untouched, after any bytes already read; `hold` is their
/// share of the rewrite memory budget, given back as they are sent.
pub(in crate::net) fn pass<B>(state: &State, resp: Response<B>, read: Vec<Bytes>, action: Action, hold: Option<Reservation>) -> Served
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<bodies::BodyError>,
{
    let (mut parts, body) = resp.into_parts();
    strip_response_hop_by_hop(&mut parts.headers, state);
    let body = Replay::new(read, body.map_err(Into::into));
    let body = match hold {
        Some(hold) => budget::replayed(body, hold).boxed_unsync(),
        None => body.boxed_unsync(),
    };
    // Every byte, those read before the decision included, is counted as it is sent: the
    // access log's body wrapper counts a pass-through's bytes as origin bytes.
    Served { response: Response::from_parts(parts, body), action, origin_bytes: 0 }
}

pub(in crate::net) fn strip_response_hop_by_hop(headers: &mut HeaderMap, state: &State) {
    forward::strip_hop_by_hop(headers);
    forward::add_via(headers, &state.via);
}

/// Runs the pipeline; large pages go to the blocking pool so one big page does not stall
/// the other connections of this worker thread.
/// Rewrites the page and encodes it for the client: inline for an ordinary page, on the
/// blocking pool for a large one, whose parse and compression would hold an async worker for
/// long, and in turns ([`large_rewrites`]) for a huge one.
/// `bar` is the control bar to put atop an HTML page ([`crate::net::own::control::bar`]).
async fn transform(profile: &Profile, doc: Vec<u8>, content_type: Option<String>, coding: Coding, (host, url): (&str, &str), bar: Option<String>) -> Result<(pipeline::Page, Vec<u8>), ProxyError> {
    const INLINE_BYTES: usize = 512 * 1024;
    const HUGE_BYTES: usize = 4 << 20;
    let (inline, huge) = (doc.len() <= INLINE_BYTES, doc.len() > HUGE_BYTES);
    let host = host.to_string();
    let job = move |profile: &Profile, url: &str| -> Result<(pipeline::Page, Vec<u8>), ProxyError> {
        let started = std::time::Instant::now();
        let mut page = process(profile, &doc, content_type.as_deref(), url).map_err(|source| ProxyError::Rewrite { host, source })?;
        crate::net::observe::rewrite_time().observe(started.elapsed());
        if page.reading.as_ref().is_some_and(|r| r.unsure) {
            crate::net::observe::unsure_pages().fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(bar) = bar.as_deref().filter(|_| page.content_type.starts_with("text/html")) {
            // The listener's last pass (charset, HTML 3.2) made the page; it makes the bar too.
            let bar = profile.adapt.as_ref().map_or_else(|| bar.as_bytes().to_vec(), |adapt| adapt.fragment(bar));
            crate::net::own::control::insert_bar(&mut page.body, &bar);
        }
        let body = match coding {
            // The page as it is: an identity encoder would only copy it.
            Coding::Identity => std::mem::take(&mut page.body),
            _ => codec::encode_all(coding, &page.body).map_err(|source| ProxyError::Encode { source })?,
        };
        Ok((page, body))
    };
    if inline {
        return job(profile, url);
    }
    // Huge pages take turns for all cores but one, so a burst of them leaves a core to the
    // async workers and to ordinary pages: without it, 16 pages of 15 MiB at once on two cores
    // made every small page wait its share of seventeen threads. Pages of a few hundred KiB,
    // common on the web, never queue behind them.
    let _turn = if huge {
        Some(large_rewrites().acquire().await.map_err(|_| ProxyError::Internal { what: "the rewriting turns were closed".to_string() })?)
    } else {
        None
    };
    let (profile, url) = (profile.clone(), url.to_string());
    match tokio::task::spawn_blocking(move || job(&profile, &url)).await {
        Ok(result) => result,
        Err(join) => Err(ProxyError::Internal { what: format!("the rewriting task failed: {join}") }),
    }
}

/// Turns for rewriting huge pages: one fewer than the machine's cores,
/// at least one. Shared by every listener and kept across reloads (it depends on the machine,
/// not on the configuration).
fn large_rewrites() -> &'static tokio::sync::Semaphore {
    static TURNS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        tokio::sync::Semaphore::new(cores.saturating_sub(1).max(1))
    })
}

/// Runs the pipeline in the profile's output form; the form served is the pipeline's decision
/// ([`pipeline::ServedForm`]), which [`rewrite_headers`] reports.
fn process(profile: &Profile, doc: &[u8], content_type: Option<&str>, url: &str) -> Result<pipeline::Page, pipeline::PipelineError> {
    let page = pipeline::process(profile, doc, content_type, profile.output, Some(url))?;
    if page.form.is_fallback() {
        tracing::debug!(url, form = ?page.form, "page too deep for the tree; serving the stage-1 HTML page");
    }
    Ok(page)
}

/// Headers of a rewritten page: new type, coding and length; validators weakened, because
/// the bytes are no longer the origin's.
fn rewrite_headers(headers: &mut HeaderMap, page: &pipeline::Page, coding: Coding, len: usize, profile: &Profile, state: &State) {
    rewritten_head(headers, page.content_type, coding, state);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
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
    if let Some(reading) = page.reading_summary() {
        summary.push_str("; ");
        summary.push_str(&reading);
    }
    if let Ok(v) = HeaderValue::from_str(&summary) {
        headers.insert("x-pith", v);
    }
    // Another form than asked, the safety net fired, or reading mode served the declutter
    // page: say what, and why.
    if let Some(fallback) = page.fallback_header() {
        if let Ok(v) = HeaderValue::from_str(&fallback) {
            headers.insert("x-pith-fallback", v);
        }
    }
}

/// The headers of a rewritten page that do not depend on what the rewriting found: hop-by-hop
/// fields and what described the origin's bytes (length, coding, ranges, digests) gone; the new
/// type and coding; `Vary: Accept-Encoding`; validators weakened. The ICAP service sends them
/// alone (with no length) when it must answer before it has read a long page whole
/// ([`crate::net::icap`]).
pub fn rewritten_head(headers: &mut HeaderMap, content_type: &'static str, coding: Coding, state: &State) {
    strip_response_hop_by_hop(headers, state);
    for name in [header::CONTENT_LENGTH, header::CONTENT_ENCODING, header::ACCEPT_RANGES, header::CONTENT_RANGE] {
        headers.remove(name);
    }
    headers.remove("content-md5");
    headers.remove("digest");
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
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
