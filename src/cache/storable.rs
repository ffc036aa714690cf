//! What the cache may store and what it may answer (RFC 9111 §3 and §4, as a shared cache):
//! a response judged with its body ([`admit`], a rewritten page) or on its head before its body
//! streams ([`admit_head`], then [`Pending::finish`]), and the requests a stored response may
//! answer ([`is_candidate`]).

use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName};
use http::{Method, StatusCode};
use http_cache_semantics::{CacheOptions, CachePolicy};

use super::{fields, Ask, Clock, Entry, Form, Head, Validators};

/// Why a response is not kept. Each is also a reason it is served as a miss.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a final response pith can store whole: 1xx, 206 (a part) and 304 (no body) never
    /// are (RFC 9111 §3). Other statuses are the policy's to judge ([`Refusal::Policy`]).
    Status(u16),
    /// The origin sets a cookie: the response is someone's, not everyone's.
    SetCookie,
    /// The request carried a Cookie and the origin did not say `public`.
    Credentials,
    /// `Vary: *`: no later request can be shown to match.
    VaryAll,
    /// RFC 9111 forbids a shared cache to store it (no-store, private, Authorization, method,
    /// a status neither understood nor cacheable by default without explicit freshness).
    Policy,
    /// Storable, but with no freshness and no validator it could never be served again.
    Useless,
    /// Larger than `cache.max_entry_bytes`.
    TooLarge {
        /// The entry's weight (at least; a streamed body is not read past the bound).
        bytes: u64,
    },
}

/// Builds the entry for a rewritten page, or says why it must not be kept. `origin` is the
/// origin's response head (status and headers as received), `served` the rewritten headers
/// and `body` the exact bytes sent.
pub fn admit(ask: &Ask, origin: (StatusCode, &HeaderMap), served: HeaderMap, body: Bytes, max_entry_bytes: u64, now: SystemTime) -> Result<Entry, Refusal> {
    admit_head(ask, origin, served, Form::Rewritten, max_entry_bytes, now)?.finish(body)
}

/// A response head found storable whose body is still to come: the entry it will make, and
/// how many body bytes fit in `cache.max_entry_bytes` beside its headers. A streamed response
/// is judged here before its first byte goes to the client, so that only a storable one is
/// copied as it streams ([`Pending::room`]), and made an entry only once it has ended whole
/// ([`Pending::finish`]).
#[derive(Debug)]
pub struct Pending {
    entry: Entry,
    head_bytes: u64,
    max_entry_bytes: u64,
}

impl Pending {
    /// Body bytes that may still be kept: past these the entry would be too large.
    pub fn room(&self) -> u64 {
        self.max_entry_bytes.saturating_sub(self.head_bytes)
    }

    /// The origin's `Vary` names the entry will be stored under.
    pub fn vary(&self) -> &[HeaderName] {
        &self.entry.vary
    }

    /// The entry with its whole body, or [`Refusal::TooLarge`]. The caller vouches that `body`
    /// is whole: it ended cleanly, never cut short.
    pub fn finish(self, body: Bytes) -> Result<Entry, Refusal> {
        let bytes = self.head_bytes + body.len() as u64;
        if bytes > self.max_entry_bytes {
            return Err(Refusal::TooLarge { bytes });
        }
        let weight = u32::try_from(bytes).unwrap_or(u32::MAX);
        Ok(Entry { body, weight, ..self.entry })
    }
}

/// Judges a response head by RFC 9111 §3 as a shared cache, before its body is read: `origin`
/// is the origin's status and headers as received, `served` the headers pith sends (for a
/// rewritten page, its own). Refused: a status that is not final or is 206 or 304, `Set-Cookie`,
/// `Vary: *` (§4.1: it never matches), a Cookie in the request without `public`, what the
/// policy forbids (no-store, private, Authorization without public, must-revalidate or
/// s-maxage (§3.5), a status neither cacheable by default nor with explicit freshness), and a
/// response that could never be served again (no freshness, no validator). A head whose stated
/// `Content-Length` cannot fit is refused as too large at once.
pub fn admit_head(ask: &Ask, origin: (StatusCode, &HeaderMap), served: HeaderMap, form: Form, max_entry_bytes: u64, now: SystemTime) -> Result<Pending, Refusal> {
    let (status, headers) = origin;
    if status.is_informational() || matches!(status, StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED) {
        return Err(Refusal::Status(status.as_u16()));
    }
    if headers.contains_key(header::SET_COOKIE) {
        return Err(Refusal::SetCookie);
    }
    let vary = vary_names(headers, form).ok_or(Refusal::VaryAll)?;
    if ask.headers.contains_key(header::COOKIE) && fields::directive(headers, "public").is_none() {
        return Err(Refusal::Credentials);
    }
    let mut read = fields::for_policy(headers);
    fields::with_apparent_age(&mut read, now);
    // The policy keeps the request's headers: copies of their own, as for everything kept.
    let request = Ask { method: ask.method.clone(), uri: ask.uri.clone(), headers: fields::detached(&ask.headers) };
    let policy = CachePolicy::new_options(&request, &Head { status, headers: &read }, now, CacheOptions::default());
    if !policy.is_storable() {
        return Err(Refusal::Policy);
    }
    let validators = Validators::of(headers);
    if policy.time_to_live(now).is_zero() && validators.is_empty() {
        return Err(Refusal::Useless);
    }
    let head_bytes = weigh(ask, headers, &served, 0);
    let stated = served.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let at_least = head_bytes.saturating_add(if form == Form::Origin { stated.unwrap_or(0) } else { 0 });
    if at_least > max_entry_bytes {
        return Err(Refusal::TooLarge { bytes: at_least });
    }
    let clock = Clock::of(&policy, now);
    let weight = u32::try_from(head_bytes).unwrap_or(u32::MAX);
    let entry = Entry { status, headers: fields::detached(&served), body: Bytes::new(), form, policy, validators, vary: vary.into(), weight, made: Instant::now(), clock };
    Ok(Pending { entry, head_bytes, max_entry_bytes })
}

/// The entry's footprint in memory: the body, the served headers, and the copies of the
/// request and origin headers the policy keeps, plus the structures around them. Each field
/// costs its bytes and a slot of its map, its value an allocation of its own; each map, its
/// index; the entry, its key and the cache's bookkeeping. The allowances were measured
/// (`scripts/cache-memory.sh`): with them a full memory tier stays near `cache.max_bytes`.
fn weigh(ask: &Ask, origin: &HeaderMap, served: &HeaderMap, body: usize) -> u64 {
    let size = |h: &HeaderMap| MAP_BYTES + h.iter().map(|(k, v)| k.as_str().len() + v.len() + FIELD_BYTES).sum::<usize>();
    (body + size(origin) + size(served) + size(&ask.headers) + 2 * ask.uri.to_string().len() + ENTRY_BYTES) as u64
}

/// What one header field costs beyond its name and value: its slot in the map and its value's
/// allocation.
const FIELD_BYTES: usize = 96;

/// What one header map costs beyond its fields: its index and spare capacity.
const MAP_BYTES: usize = 256;

/// What an entry costs beyond its body and header maps: the key, the policy's other fields,
/// and the cache's own bookkeeping.
const ENTRY_BYTES: usize = 7168;

/// The request headers a response varies on, lowercase and in order; `None` for `Vary: *`.
/// For a rewritten page Accept-Encoding is left out: pith encodes the page itself, for the
/// key's encoding class. The origin's own bytes keep it: their coding is the origin's choice,
/// made on the client's Accept-Encoding as sent.
pub fn vary_names(headers: &HeaderMap, form: Form) -> Option<Vec<HeaderName>> {
    let mut names = Vec::new();
    for field in headers.get_all(header::VARY).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')) {
        let field = field.trim();
        if field == "*" {
            return None;
        }
        let Ok(name) = HeaderName::from_bytes(field.to_ascii_lowercase().as_bytes()) else { continue };
        let implied = form == Form::Rewritten && name == header::ACCEPT_ENCODING;
        if !implied && !names.contains(&name) {
            names.push(name);
        }
    }
    names.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    Some(names)
}

/// True when a request may be answered from the cache: a GET (which may also fill it) or a
/// HEAD (answered from a stored GET, RFC 9111 §4), for a whole representation that the client
/// does not make conditional itself. (A client's conditional request is answered from a fresh
/// entry, but otherwise goes to the origin as sent, so the origin can answer it.)
pub fn is_candidate(method: &Method, headers: &HeaderMap) -> bool {
    (*method == Method::GET || *method == Method::HEAD)
        && !headers.contains_key(header::RANGE)
        && !headers.contains_key(header::IF_MATCH)
        && !headers.contains_key(header::IF_UNMODIFIED_SINCE)
        && !headers.contains_key(header::IF_RANGE)
}

/// True when a request asks for a part (`Range`) that a complete kept response may answer: a
/// GET without `If-Match` or `If-Unmodified-Since`, which only the origin can judge. What is
/// not kept goes to the origin, and a part is never kept.
pub fn is_range_candidate(method: &Method, headers: &HeaderMap) -> bool {
    *method == Method::GET
        && headers.contains_key(header::RANGE)
        && !headers.contains_key(header::IF_MATCH)
        && !headers.contains_key(header::IF_UNMODIFIED_SINCE)
}

/// True when the client's `Cache-Control` says `only-if-cached`: it wants a stored response
/// or a 504, never the origin (RFC 9111 §5.2.1.7). Directive names in any case.
pub fn is_only_if_cached(headers: &HeaderMap) -> bool {
    fields::directive(headers, "only-if-cached").is_some()
}

/// True when the client made its request conditional on what it already has.
pub fn is_conditional(headers: &HeaderMap) -> bool {
    headers.contains_key(header::IF_NONE_MATCH) || headers.contains_key(header::IF_MODIFIED_SINCE)
}
