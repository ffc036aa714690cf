//! Image responses made smaller for a profile whose `images` transcode
//! ([`crate::images::Policy::is_transcoding`]): the proxy's side of [`crate::images::transcode`].
//!
//! A `200` answer to a GET typed JPEG, PNG, GIF or WebP, with no content-coding and no longer
//! than `limits.image_max_bytes`, is read whole (past the bound it streams on untouched, the
//! bytes read first included). The image then waits for a turn on a small pool, one fewer than
//! the machine's cores: decoding, scaling and encoding run on the blocking threads, never on
//! the async workers, and a burst of images queues there while pages keep flowing. Its bytes,
//! and once it has a turn what decoding it costs (its header gives the pixels), are held in
//! the rewrite memory budget ([`crate::net::exchange::budget`]) like a page's.
//!
//! Turns are given to clients in turn ([`take_turn`]): each client (by address, IPv6 by /64)
//! queues its own images, and a freed turn goes to the next client in the rotation, so one
//! client's forty images delay another's one by at most one image per client ahead of it. An
//! image that waited `limits.image_wait_ms` without a turn gets a small placeholder image
//! ([`PLACEHOLDER`], `Cache-Control: no-store`, never kept), never the untranscoded bytes:
//! asked for again, the image is transcoded then. Waits and placeholders are counted for
//! `/metrics` ([`crate::net::observe::image_counts`]).
//!
//! The client gets WebP when its `Accept` names `image/webp`, else JPEG, at most
//! `image_max_width` wide, with `Vary: Accept`; and the origin's bytes whenever the result is
//! not smaller or the image is animated, too large in pixels, truncated or undecodable. A
//! transcoded image is a [`respond::Rewritten`], kept by the cache like a rewritten page; the
//! key holds the client's image format class ([`crate::cache::Cache::key`]).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::net::exchange::bodies;
use crate::net::observe::{self, Action};
use crate::net::error::ProxyError;
use crate::net::exchange::respond::{self, Exchange, Outcome};
use crate::net::State;
use crate::images::transcode::{self, Format, Target, Transcoded, Untouched};

/// Types read for transcoding (`image/jpg` and `image/pjpeg` are JPEG as some servers name it).
const TYPES: [&str; 6] = ["image/jpeg", "image/jpg", "image/pjpeg", "image/png", "image/gif", "image/webp"];

/// Whether `resp` is an image the profile transcodes, by its head alone.
pub fn is_candidate(ex: &Exchange<'_>, resp: &Response<Incoming>, max_bytes: u64) -> bool {
    if !ex.profile.images().policy.is_transcoding() || *ex.method != Method::GET || resp.status() != StatusCode::OK {
        return false;
    }
    let headers = resp.headers();
    let typed = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| ct.split(';').next().unwrap_or("").trim())
        .is_some_and(|essence| TYPES.iter().any(|t| essence.eq_ignore_ascii_case(t)));
    let coded = headers.get_all(header::CONTENT_ENCODING).iter().any(|v| v.to_str().map_or(true, |c| !c.trim().eq_ignore_ascii_case("identity")));
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    typed && !coded && length.is_none_or(|n| n <= max_bytes)
}

/// Reads, transcodes and answers an image response that [`is_candidate`] accepted.
pub async fn respond(state: &State, ex: &Exchange<'_>, resp: Response<Incoming>) -> Result<Outcome, ProxyError> {
    let idle = state.config.upstream.body_idle_timeout;
    let max_bytes = state.config.limits.image_max_bytes;
    let expected = http_body::Body::size_hint(resp.body()).exact().unwrap_or(0);
    let Some(mut hold) = state.budget.reserve(expected).await else {
        let resp = resp.map(|body| bodies::stream(body, idle));
        return Ok(Outcome::Passed(respond::pass(state, resp, Vec::new(), Action::OverBudget, None)));
    };
    let (parts, mut body) = resp.into_parts();
    let mut raw = Vec::new();
    let mut len = 0u64;
    loop {
        let frame = tokio::time::timeout(idle, body.frame())
            .await
            .map_err(|_| ProxyError::Timeout { host: ex.host.to_string(), what: "send the rest of the image", after: idle })?;
        let chunk = match frame {
            None => break,
            Some(Err(e)) => return Err(ProxyError::Upstream { host: ex.host.to_string(), source: Box::new(e) }),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_trailers) => continue,
            },
        };
        len += chunk.len() as u64;
        raw.push(chunk);
        if len > max_bytes || !hold.cover(len).await {
            // Too large to transcode, or no room: the rest streams on after what was read.
            let rest = Response::from_parts(parts, bodies::stream(body, idle));
            return Ok(Outcome::Passed(respond::pass(state, rest, raw, Action::Pass, Some(hold))));
        }
    }
    let data = join(raw);
    let untouched = |why: Untouched, hold: crate::net::exchange::budget::Reservation| -> Result<Outcome, ProxyError> {
        tracing::debug!(url = ex.url, %why, "image served as the origin sent it");
        let whole = Response::from_parts(parts.clone(), bodies::full(Bytes::new()));
        Ok(Outcome::Passed(respond::pass(state, whole, vec![data.clone()], Action::Pass, Some(hold))))
    };
    let images = ex.profile.images();
    let accept = ex.accept.as_ref().and_then(|v| v.to_str().ok());
    // A page pith wrote may ask for the image no wider than it shows it.
    let hinted = crate::images::page::without_width(ex.url).map(|(w, _)| w);
    let max_width = hinted.map_or(images.max_width, |w| w.min(images.max_width));
    let target = Target { format: Format::for_accept(accept), max_width, quality: images.quality, max_pixels: state.config.limits.image_max_pixels };
    let Some(turn) = take_turn(ex.client, state.config.limits.image_wait).await else {
        observe::IMAGE_PLACEHOLDERS.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(url = ex.url, "image waited past limits.image_wait_ms for a transcoding turn; a placeholder was sent");
        return Ok(Outcome::Passed(placeholder(len)));
    };
    let transcoded = match run(&data, target, &mut hold, turn).await? {
        Ok(t) => t,
        Err(why) => return untouched(why, hold),
    };
    let mut parts = parts.clone();
    image_headers(&mut parts.headers, &transcoded, data.len(), ex, state);
    let body = Bytes::from(transcoded.bytes);
    hold.shrink_to(body.len() as u64);
    Ok(Outcome::Rewritten(respond::Rewritten::new(parts, body, len, hold)))
}

/// The chunks of a body as one buffer (a single chunk is not copied).
fn join(mut raw: Vec<Bytes>) -> Bytes {
    if raw.len() == 1 {
        return raw.pop().unwrap_or_default();
    }
    let mut all = BytesMut::with_capacity(raw.iter().map(Bytes::len).sum());
    for chunk in raw {
        all.extend_from_slice(&chunk);
    }
    all.freeze()
}

/// Transcodes on the pool, holding its `turn`, once the budget has room for what decoding costs
/// (RGBA at the original size, the scaled copy and the output, bounded by the header's pixels).
async fn run(data: &Bytes, target: Target, hold: &mut crate::net::exchange::budget::Reservation, _turn: Turn) -> Result<Result<Transcoded, Untouched>, ProxyError> {
    let pixels = transcode::pixels(data).unwrap_or(0).min(target.max_pixels);
    if !hold.cover(data.len() as u64 + pixels.saturating_mul(8)).await {
        return Ok(Err(Untouched::NoMemory));
    }
    let data = data.clone();
    match tokio::task::spawn_blocking(move || transcode::transcode(&data, &target)).await {
        Ok(result) => Ok(result),
        Err(join) => Err(ProxyError::Internal { what: format!("the transcoding task failed: {join}") }),
    }
}

/// A placeholder for an image that waited too long for its turn: a 1×1 light grey GIF
/// (43 bytes), the smallest image every browser shows.
pub const PLACEHOLDER: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xdd\xdd\xdd\xff\xff\xff!\xf9\x04\x00\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";

/// The placeholder response: never kept (no-store, and [`Action::Placeholder`]), `origin_bytes`
/// read from the origin for nothing.
fn placeholder(origin_bytes: u64) -> respond::Served {
    let mut resp = Response::new(bodies::full(Bytes::from_static(PLACEHOLDER)));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/gif"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-pith", HeaderValue::from_static("placeholder: the image waited too long for its turn to be made smaller; ask again to load it"));
    respond::Served { response: resp, action: Action::Placeholder, origin_bytes }
}

/// Turns for transcoding: one fewer than the machine's cores, at least one, so a burst of
/// images leaves a core to the async workers and the pages. Shared by every listener and kept
/// across reloads: it depends on the machine, not on the configuration. Waiting images queue
/// per client; a freed turn goes to the next client in the rotation.
struct Turns {
    free: usize,
    /// Clients with images waiting, in the order their turn comes.
    rotation: VecDeque<Option<IpAddr>>,
    /// Each waiting client's images, first come first.
    waiting: HashMap<Option<IpAddr>, VecDeque<oneshot::Sender<()>>>,
}

fn turns() -> &'static Mutex<Turns> {
    static TURNS: std::sync::OnceLock<Mutex<Turns>> = std::sync::OnceLock::new();
    TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Mutex::new(Turns { free: cores.saturating_sub(1).max(1), rotation: VecDeque::new(), waiting: HashMap::new() })
    })
}

/// A transcoding turn; given to the next waiting client when dropped.
struct Turn(());

impl Drop for Turn {
    fn drop(&mut self) {
        let mut guard = turns().lock().unwrap_or_else(PoisonError::into_inner);
        let t = &mut *guard;
        while let Some(client) = t.rotation.pop_front() {
            let Some(queue) = t.waiting.get_mut(&client) else { continue };
            let next = queue.pop_front();
            if queue.is_empty() {
                t.waiting.remove(&client);
            } else {
                t.rotation.push_back(client);
            }
            // A waiter that gave up (its deadline passed, its client left) is skipped.
            if next.is_some_and(|tx| tx.send(()).is_ok()) {
                return;
            }
        }
        t.free += 1;
    }
}

/// A place in a client's queue; a turn handed to it after it stopped waiting is passed on.
struct Waiting(oneshot::Receiver<()>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.close();
        if self.0.try_recv().is_ok() {
            drop(Turn(()));
        }
    }
}

/// A turn for `client`'s image (its address, IPv6 by /64; `None` for requests no one client
/// made), at once when one is free and no one waits, else when the rotation comes to it;
/// `None` after `wait`.
async fn take_turn(client: Option<IpAddr>, wait: std::time::Duration) -> Option<Turn> {
    let client = client.map(crate::net::accept::rate::client_key);
    let rx = {
        let mut guard = turns().lock().unwrap_or_else(PoisonError::into_inner);
        let t = &mut *guard;
        if t.free > 0 && t.rotation.is_empty() {
            t.free -= 1;
            return Some(Turn(()));
        }
        let (tx, rx) = oneshot::channel();
        let queue = t.waiting.entry(client).or_default();
        if queue.is_empty() {
            t.rotation.push_back(client);
        }
        queue.push_back(tx);
        rx
    };
    observe::IMAGE_WAITS.fetch_add(1, Ordering::Relaxed);
    let mut waiting = Waiting(rx);
    match tokio::time::timeout(wait, &mut waiting.0).await {
        Ok(Ok(())) => Some(Turn(())),
        _ => None,
    }
}

/// Headers of a transcoded image: its type and length, `Vary: Accept` (the format follows the
/// client's `Accept`), validators weakened (the bytes are no longer the origin's), and in
/// `x-pith` what was done.
fn image_headers(headers: &mut HeaderMap, t: &Transcoded, original: usize, ex: &Exchange<'_>, state: &State) {
    respond::strip_response_hop_by_hop(headers, state);
    for name in [header::CONTENT_LENGTH, header::CONTENT_ENCODING, header::ACCEPT_RANGES, header::CONTENT_RANGE] {
        headers.remove(name);
    }
    headers.remove("content-md5");
    headers.remove("digest");
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(t.format.content_type()));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(t.bytes.len()));
    let varies = headers.get_all(header::VARY).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|f| f.trim() == "*" || f.trim().eq_ignore_ascii_case("accept"));
    if !varies {
        headers.append(header::VARY, HeaderValue::from_static("Accept"));
    }
    if let Some(etag) = headers.get(header::ETAG).and_then(|v| v.to_str().ok()).filter(|e| !e.starts_with("W/")) {
        if let Ok(weak) = HeaderValue::from_str(&format!("W/{etag}")) {
            headers.insert(header::ETAG, weak);
        }
    }
    let summary = format!(
        "profile={}; image={}; from={}x{},{}; to={}x{},{}",
        ex.profile.name,
        t.format.content_type(),
        t.from.0,
        t.from.1,
        original,
        t.to.0,
        t.to.1,
        t.bytes.len()
    );
    if let Ok(v) = HeaderValue::from_str(&summary) {
        headers.insert("x-pith", v);
    }
}
