//! The HTTP cache of the whole gateway: a moka store bounded in bytes, optionally backed by a
//! disk tier, and HTTP freshness (RFC 9111) decided by `http-cache-semantics` as a shared
//! cache.
//!
//! It keeps every storable response to a GET, in every profile, in one of two [`Form`]s: a page
//! pith rewrote, as rewritten, or a response pith streamed through unchanged (images,
//! stylesheets, scripts, fonts, downloads), as the origin sent it. A rewritten page is read
//! whole before it is sent and judged with its body ([`admit`]); a streamed response is judged
//! on its head before its first byte goes out ([`admit_head`]), copied as it streams
//! ([`crate::net::exchange::tee`]) and made an entry only when it has ended whole
//! ([`Pending::finish`]).
//!
//! This module owns what a cache needs to be correct: the [`Key`] (method, URL, profile, a hash
//! of the profile's rules and settings, the client's encoding class, and the request headers the
//! origin's `Vary` names), the [`Entry`] (the response as sent to clients, plus the policy that
//! says how long it stays fresh and the origin's validators to revalidate it with), the rules
//! for what may be stored (RFC 9111 §3: a final status other than 206 and 304 that the policy
//! understands, no `no-store` or `private`, `Authorization` only as §3.5 allows, no `Vary: *`,
//! within `cache.max_entry_bytes`), the client's own conditionals answered from an entry
//! ([`Entry::is_not_modified_for`], dates compared as dates), and the counters `/metrics`
//! reports.
//!
//! Fetching, rewriting and serving belong to [`crate::net`]: it asks [`Cache::get_or_fill`]
//! with a future that fetches and rewrites, and moka's `try_get_with` runs that future once
//! for any number of concurrent misses of one key. A fill that must not be stored ends in the
//! future's error, which moka never caches: the waiters then fetch for themselves, so a page
//! the origin meant for one client is never handed to another. A streamed response also ends
//! its fill at once (its body is still coming) and is stored later with [`Cache::insert`].
//!
//! Which `Vary` headers a URL depends on is only known once the origin has answered, so the
//! cache remembers the names per URL ([`Cache::key`] reads them back): the first request for a
//! URL is keyed without them, and later ones with their own values.
//!
//! The policy reads the origin's fields as RFC 9111 says a cache reads them, not as sent
//! (`fields`: directive names in any case, the first member of a list-valued `Age`, an
//! invalid `Expires` as the past). An unsafe request that succeeds marks its URL's entries
//! invalid ([`Cache::invalidate_uri`]), whatever key they are under.
//!
//! With `cache.disk_dir` set, memory is the first of two tiers (`disk`): every entry stored
//! is also written to a file of its own in the background (write-through, so that a restart or
//! a crash keeps what memory held), and a memory miss ([`Cache::get`]) reads the key's file on
//! a blocking thread and promotes what it finds to memory. A file holds the key whole, the
//! served head, the freshness policy and the body under one checksum (`record`): a collision
//! of file names, a torn write or flipped bytes is never served. What the disk tier does not
//! keep: the marks of unsafe requests live in memory (the files of such a URL are removed
//! instead). The `Vary` names learnt per URL are kept on disk as a small record under the key
//! made without them ([`Cache::find_key`]), so a restarted cache finds each variant under its
//! request values.
//!
//! Where pith differs from RFC 9111 on purpose, it is because a rewritten page is pith's
//! rewrite, not the origin's bytes: its `ETag` is weakened (`W/`), its `Content-Length`,
//! `Content-Type` and `Content-Encoding` are those of the rewritten, re-encoded page (so a 304
//! from the origin does not replace them), `Content-MD5`, `Digest` and `Content-Range` are
//! dropped, and the key holds the profile, its rules and the client's encoding class besides
//! the URL and `Vary` values. A streamed response keeps the origin's fields, and a 304 updates
//! them as §3.2 says. Stricter than the RFC: a response with `Set-Cookie`, or to a request with
//! `Cookie` without `public`, is not kept, so that one person's response never reaches another.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Uri};
use http_cache_semantics::{AfterResponse, BeforeRequest, CachePolicy, RequestLike, ResponseLike};
use moka::notification::RemovalCause;

use crate::body::Coding;
use crate::config::{CacheConfig, DiskConfig};
use crate::profile::Profile;

mod disk;
mod fields;
pub mod range;
mod record;
mod stale;
mod storable;

pub use disk::{Disk, DiskError, DiskSnapshot};
pub use record::RecordError;
pub use stale::{is_server_error, Grace};
pub use storable::{admit, admit_head, is_candidate, is_range_candidate, is_conditional, is_only_if_cached, vary_names, Pending, Refusal};

/// What a cache lookup needs to know of a client's request: its method, absolute URL and
/// headers. The headers are the client's as they will be forwarded (hop-by-hop fields gone,
/// `Host` set to the URL's authority), so two clients asking for one URL look alike.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The request method.
    pub method: Method,
    /// The absolute URL.
    pub uri: Uri,
    /// The request headers.
    pub headers: HeaderMap,
}

impl Ask {
    /// The request as the cache reads it. Cache-Control and Pragma directive names are made
    /// lowercase here, once, because they are case-insensitive (RFC 9111 §5.2) and the policy
    /// matches them exactly. `Pragma` is read only from a request without `Cache-Control`:
    /// it is HTTP/1.0's, deprecated by RFC 9111 §5.4, and ignored when Cache-Control is
    /// present (RFC 7234 §5.4), so `Cache-Control: max-stale` with `Pragma: no-cache` (what
    /// a browser's fetch sends with its own cache off) is read as max-stale.
    pub fn new(method: Method, uri: Uri, mut headers: HeaderMap) -> Ask {
        if headers.contains_key(header::CACHE_CONTROL) {
            headers.remove(header::PRAGMA);
        }
        fields::lowercase_directives(&mut headers);
        Ask { method, uri, headers }
    }
}

impl RequestLike for Ask {
    fn uri(&self) -> Uri {
        self.uri.clone()
    }
    fn is_same_uri(&self, other: &Uri) -> bool {
        &self.uri == other
    }
    fn method(&self) -> &Method {
        &self.method
    }
    fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// A response head, for the policy.
struct Head<'a> {
    status: StatusCode,
    headers: &'a HeaderMap,
}

impl ResponseLike for Head<'_> {
    fn status(&self) -> StatusCode {
        self.status
    }
    fn headers(&self) -> &HeaderMap {
        self.headers
    }
}

/// The part of a key known before the origin answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BaseKey {
    method: Method,
    url: String,
    profile: String,
    /// Hash of the profile's rules and settings: a changed profile makes old entries unreachable.
    settings: u64,
    /// The content-coding pith sends this client (its encoding class).
    coding: &'static str,
}

/// A cache key: the [`BaseKey`] plus the values of the request headers the origin varies on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    base: BaseKey,
    vary: Vec<(HeaderName, Vec<HeaderValue>)>,
}

impl Key {
    /// The key of the same request when the response varies on `names`.
    pub fn with_vary(&self, names: &[HeaderName], request: &HeaderMap) -> Key {
        Key { base: self.base.clone(), vary: vary_values(names, request) }
    }

    /// The key of the same request before the `Vary` names are known: the key the disk tier
    /// keeps a URL's Vary names under.
    pub fn without_vary(&self) -> Key {
        Key { base: self.base.clone(), vary: Vec::new() }
    }

    /// True when the key was made with exactly these `Vary` names.
    pub fn varies_on(&self, names: &[HeaderName]) -> bool {
        self.vary.len() == names.len() && self.vary.iter().zip(names).all(|((a, _), b)| a == b)
    }
}

/// The request's values of the `Vary` names, each in its own allocation: a key is kept as
/// long as its entry ([`fields::detached`]).
fn vary_values(names: &[HeaderName], request: &HeaderMap) -> Vec<(HeaderName, Vec<HeaderValue>)> {
    names.iter().map(|n| (n.clone(), request.get_all(n).iter().map(fields::detached_value).collect())).collect()
}

/// Whose bytes an entry keeps, which decides what a 304 may change in it and how `Vary`
/// keys it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// pith's rewrite of a page: its type, coding, length and ETag are pith's, and it is
    /// encoded for the key's encoding class, which stands for `Accept-Encoding`.
    Rewritten,
    /// The origin's response as it streamed through (images, scripts, stylesheets, fonts, any
    /// response pith does not rewrite): its fields are the origin's, and a `Vary:
    /// Accept-Encoding` is honoured by value, since the origin chose the coding.
    Origin,
}

/// One kept response as it is sent to clients (a rewritten page or the origin's own bytes),
/// and what is needed to keep it correct over time.
#[derive(Debug)]
pub struct Entry {
    /// The status served: any final status RFC 9111 lets a shared cache store (200, 203, 204,
    /// 301, 404, 410, …; never 206 or 304).
    pub status: StatusCode,
    /// The served response's headers, without `Age` and `X-Cache` (added when served).
    pub headers: HeaderMap,
    /// The body exactly as sent: rewritten and encoded for the key's encoding class, or the
    /// origin's bytes.
    pub body: Bytes,
    /// Whose bytes these are.
    form: Form,
    /// Freshness and revalidation, from the origin's own response head.
    policy: CachePolicy,
    /// The origin's `ETag` and `Last-Modified` (a rewritten page's served ETag is weakened).
    validators: Validators,
    /// The origin's `Vary` names, lowercase; for a rewritten page without Accept-Encoding
    /// (the encoding class covers it).
    vary: Arc<[HeaderName]>,
    weight: u32,
    /// When the entry was made: an unsafe request to its URL after this makes it invalid
    /// (see [`Cache::invalidate_uri`]).
    made: Instant,
    /// When the policy was made, the `Age` it then gave, and until when it stays fresh: the
    /// hit path's answer without re-parsing headers (see [`Entry::freshness`]).
    clock: Clock,
}

#[derive(Debug, Clone, Copy)]
struct Clock {
    stored_at: SystemTime,
    age_at_store: Duration,
    fresh_until: SystemTime,
}

impl Clock {
    fn of(policy: &CachePolicy, now: SystemTime) -> Clock {
        Clock { stored_at: now, age_at_store: policy.age(now), fresh_until: now + policy.time_to_live(now) }
    }
}

#[derive(Debug, Clone, Default)]
struct Validators {
    etag: Option<HeaderValue>,
    last_modified: Option<HeaderValue>,
}

impl Validators {
    fn of(headers: &HeaderMap) -> Validators {
        let copy = |name| headers.get(name).map(fields::detached_value);
        Validators { etag: copy(header::ETAG), last_modified: copy(header::LAST_MODIFIED) }
    }

    fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// Whether a kept response may be served as it is.
pub enum Freshness {
    /// Serve it; `age` is for the `Age` header.
    Fresh {
        /// How long the page has been kept, plus the origin's own `Age`.
        age: Duration,
    },
    /// Ask the origin first, with these conditional headers (possibly none).
    Stale {
        /// `If-None-Match` and/or `If-Modified-Since` with the origin's validators.
        conditions: Vec<(HeaderName, HeaderValue)>,
    },
}

impl Entry {
    /// Bytes the entry takes in the store: its body, headers and key, roughly.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// How long the page has been kept, plus the `Age` the origin sent: the `Age` to serve.
    pub fn age(&self, now: SystemTime) -> Duration {
        self.clock.age_at_store + now.duration_since(self.clock.stored_at).unwrap_or_default()
    }

    /// The origin's `Vary` names this entry was stored under.
    pub fn vary(&self) -> &[HeaderName] {
        &self.vary
    }

    /// Whether the entry may answer `ask` at `now` (RFC 9111 §4), and if not, how to ask the
    /// origin whether it is still good.
    pub fn freshness(&self, ask: &Ask, now: SystemTime) -> Freshness {
        // The fast path, for a request without directives of its own: the key already matched
        // method, URL (hence Host) and the Vary values, so only the clock is left to check,
        // and the policy's answer (max-age less age) was computed when the entry was made.
        let directives = ask.headers.contains_key(header::CACHE_CONTROL) || ask.headers.contains_key(header::PRAGMA);
        if !directives && now < self.clock.fresh_until {
            return Freshness::Fresh { age: self.age(now) };
        }
        match self.policy.before_request(ask, now) {
            BeforeRequest::Fresh(_) => Freshness::Fresh { age: self.age(now) },
            BeforeRequest::Stale { .. } => self.stale(),
        }
    }

    /// How long past its freshness the entry is at `now`; zero while fresh.
    pub fn stale_for(&self, now: SystemTime) -> Duration {
        now.duration_since(self.clock.fresh_until).unwrap_or_default()
    }

    /// Whether the entry, stale at `now`, may still answer `request` under `grace`: what the
    /// origin's `stale-while-revalidate` or `stale-if-error` allows ([`stale`]).
    pub fn may_serve_stale(&self, request: &HeaderMap, grace: Grace, now: SystemTime) -> bool {
        stale::allows(&self.headers, request, grace, self.stale_for(now))
    }

    /// The part of the kept body that `request`'s `Range` asks for ([`range`]).
    pub fn part(&self, request: &HeaderMap) -> range::Part {
        range::part(request, self.body.len() as u64, self.headers.get(header::ETAG), self.headers.get(header::LAST_MODIFIED))
    }

    /// The answer for an entry that must be validated before it is used: the conditional
    /// headers made of the origin's validators.
    pub fn stale(&self) -> Freshness {
        let mut conditions = Vec::new();
        if let Some(etag) = &self.validators.etag {
            conditions.push((header::IF_NONE_MATCH, etag.clone()));
        }
        if let Some(lm) = &self.validators.last_modified {
            conditions.push((header::IF_MODIFIED_SINCE, lm.clone()));
        }
        Freshness::Stale { conditions }
    }

    /// The entry refreshed by the origin's 304 to a revalidation (RFC 9111 §4.3.4): the same
    /// body, a new policy, and every field of the 304 in place of the kept one, except those
    /// [`refresh_headers`] keeps. A 304 whose strong ETag is not the kept page's is about
    /// another representation: it refreshes nothing, and the caller fetches the page whole.
    pub fn refreshed(&self, ask: &Ask, not_modified: &HeaderMap, now: SystemTime) -> Result<Entry, RefreshError> {
        // A 304 without validators answers the one conditional pith sent, which named this
        // entry's own: it is about this entry.
        let mut with_validators = fields::for_policy(not_modified);
        fields::with_apparent_age(&mut with_validators, now);
        if Validators::of(not_modified).is_empty() {
            for (name, value) in [(header::ETAG, &self.validators.etag), (header::LAST_MODIFIED, &self.validators.last_modified)] {
                if let Some(v) = value {
                    with_validators.insert(name, v.clone());
                }
            }
        }
        let not_modified = &with_validators;
        let head = Head { status: StatusCode::NOT_MODIFIED, headers: not_modified };
        // The new policy keeps the request's headers: copies of their own ([`fields::detached`]).
        let ask = &Ask { method: ask.method.clone(), uri: ask.uri.clone(), headers: fields::detached(&ask.headers) };
        let AfterResponse::NotModified(policy, _) = self.policy.after_response(ask, &head, now) else {
            return Err(RefreshError::ValidatorMismatch { etag: not_modified.get(header::ETAG).cloned() });
        };
        let mut headers = self.headers.clone();
        refresh_headers(&mut headers, not_modified, self.form);
        let mut validators = self.validators.clone();
        if let Some(etag) = not_modified.get(header::ETAG) {
            validators.etag = Some(etag.clone());
            let served = if self.form == Form::Rewritten { weaken(etag) } else { etag.clone() };
            headers.insert(header::ETAG, served);
        }
        if let Some(lm) = not_modified.get(header::LAST_MODIFIED) {
            validators.last_modified = Some(lm.clone());
        }
        let clock = Clock::of(&policy, now);
        Ok(Entry { status: self.status, headers, body: self.body.clone(), form: self.form, policy, validators, vary: self.vary.clone(), weight: self.weight, made: Instant::now(), clock })
    }

    /// True when the client's own conditional headers say it already has this response:
    /// `If-None-Match` by weak comparison, else `If-Modified-Since` compared as a date (never as
    /// a string: `Friday, 02-Jan-26 00:00:00 GMT` is later than `Thu, 01 Jan 2026 00:00:00
    /// GMT`) with `Last-Modified`, or with `Date` when the response has none, or with the time
    /// it was stored when it has neither (RFC 9111 §4.3.2); an invalid `If-Modified-Since` is
    /// ignored (RFC 9110 §13.1.3).
    pub fn is_not_modified_for(&self, request: &HeaderMap) -> bool {
        let tag = |v: &str| v.trim().trim_start_matches("W/").to_string();
        if let Some(inm) = request.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
            let Some(ours) = self.headers.get(header::ETAG).and_then(|v| v.to_str().ok()) else { return false };
            return inm.split(',').any(|t| t.trim() == "*" || tag(t) == tag(ours));
        }
        let Some(since) = request.get(header::IF_MODIFIED_SINCE).and_then(fields::seconds_since_epoch) else { return false };
        let stated = self.headers.get(header::LAST_MODIFIED).or_else(|| self.headers.get(header::DATE));
        let modified = match stated {
            Some(value) => fields::seconds_since_epoch(value),
            None => self.clock.stored_at.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| Duration::from_secs(d.as_secs())),
        };
        modified.is_some_and(|modified| modified <= since)
    }
}

/// Fields of a 304 that never replace a kept response's. RFC 9111 §3.2 excepts the fields a
/// cache does not store (§3.1: hop-by-hop and proxy-authentication fields), Content-Length,
/// and the fields the integrity of the stored bytes depends on: their coding, range and
/// digests describe the body kept, and a 304 must not make them say otherwise (the cache test
/// suite requires Content-Encoding, Content-MD5 and Content-Range kept). `Age` and `X-Cache`
/// are pith's to set when it serves; `Vary` made the entry's key; `Set-Cookie` would hand one
/// client's cookie to every other; `ETag` is refreshed apart.
const KEPT_ON_REFRESH: [&str; 20] = [
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    "proxy-authenticate", "proxy-authentication-info", "proxy-authorization", "content-length",
    "content-encoding", "content-range", "content-md5", "digest",
    "age", "x-cache", "vary", "set-cookie", "etag",
];

/// Fields a 304 does not replace in a rewritten page besides [`KEPT_ON_REFRESH`]: those that
/// describe pith's bytes rather than the origin's, its type and `x-pith` summary (§3.2: the
/// fields the stored response depends on). The origin's own bytes (a [`Form::Origin`] entry)
/// take these from the 304.
const KEPT_ON_REFRESH_REWRITTEN: [&str; 4] = ["content-type", "accept-ranges", "x-pith", "x-pith-fallback"];

/// Replaces the kept response's fields with those of the origin's 304 (RFC 9111 §3.2), but for
/// [`KEPT_ON_REFRESH`], for a rewritten page [`KEPT_ON_REFRESH_REWRITTEN`], and the fields the
/// 304's own `Connection` names.
fn refresh_headers(kept: &mut HeaderMap, not_modified: &HeaderMap, form: Form) {
    let is_kept = |name: &str| KEPT_ON_REFRESH.contains(&name) || (form == Form::Rewritten && KEPT_ON_REFRESH_REWRITTEN.contains(&name));
    let connection: Vec<String> = not_modified
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim().to_ascii_lowercase())
        .collect();
    for name in not_modified.keys() {
        if is_kept(name.as_str()) || connection.iter().any(|c| c == name.as_str()) {
            continue;
        }
        kept.remove(name);
        for value in not_modified.get_all(name) {
            kept.append(name.clone(), value.clone());
        }
    }
}

/// A validator the served copy carries: weak, because the bytes are pith's, not the origin's.
fn weaken(etag: &HeaderValue) -> HeaderValue {
    match etag.to_str() {
        Ok(s) if !s.starts_with("W/") => HeaderValue::from_str(&format!("W/{s}")).unwrap_or_else(|_| etag.clone()),
        _ => etag.clone(),
    }
}

/// Why a 304 could not refresh a kept response.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The origin said "not modified" with an ETag that is not the kept page's.
    #[error("the origin answered 304 Not Modified with validator {etag:?}, which matches no kept page")]
    ValidatorMismatch {
        /// The 304's ETag.
        etag: Option<HeaderValue>,
    },
}

/// The counters behind `/metrics`.
#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    revalidations: AtomicU64,
    stores: AtomicU64,
    evictions: AtomicU64,
}

/// What the cache has done since start-up, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Requests answered from a kept response without asking the origin.
    pub hits: u64,
    /// Cacheable requests that needed the origin's whole response.
    pub misses: u64,
    /// Kept responses the origin confirmed with 304 (served without fetching or rewriting again).
    pub revalidations: u64,
    /// Pages stored (or stored again after changing).
    pub stores: u64,
    /// Pages dropped to stay within `max_bytes`.
    pub evictions: u64,
    /// Pages kept now.
    pub entries: u64,
    /// Bytes kept now (entry weights).
    pub bytes: u64,
    /// The bound on `bytes`.
    pub max_bytes: u64,
    /// The disk tier's, when there is one.
    pub disk: Option<DiskSnapshot>,
}

/// How long a URL whose last response could not be kept goes straight to the origin, without
/// waiting on other requests for it (images, scripts, private pages).
const PASS_FOR: Duration = Duration::from_secs(30);

/// Most hosts an operator's purges are remembered for ([`Cache::purge_host`]).
pub const MAX_PURGED_HOSTS: usize = 1024;

/// The store: kept responses by key, bounded in bytes, plus the `Vary` names seen per URL and
/// the URLs recently found not worth keeping.
pub struct Cache {
    entries: moka::future::Cache<Key, Arc<Entry>>,
    variants: moka::sync::Cache<BaseKey, Arc<[HeaderName]>>,
    passes: moka::sync::Cache<BaseKey, ()>,
    /// When an unsafe request last succeeded, per URL: entries made before then are invalid.
    invalidated: moka::sync::Cache<String, Instant>,
    /// When an operator last purged a host (`http://pith/admin`): its entries made before then
    /// are invalid. Read only once some host was purged ([`Cache::purge_host`]).
    purged_hosts: std::sync::RwLock<BTreeMap<String, Instant>>,
    settings: BTreeMap<String, u64>,
    /// `cache.pass`: whether the `pass` profile's requests use the cache.
    serves_pass: bool,
    max_bytes: u64,
    max_entry_bytes: u64,
    counters: Arc<Counters>,
    /// Bytes of streamed responses being copied for the store now, and their bound
    /// ([`Cache::hold_copy`]).
    copying: AtomicU64,
    max_copying: u64,
    /// The disk tier (`cache.disk_dir`), and the settings it was opened with.
    disk: Option<(Arc<Disk>, DiskConfig)>,
    /// Keys being revalidated in the background (`stale-while-revalidate`): one request to
    /// the origin per key, however many clients are served the stale entry meanwhile.
    revalidating: std::sync::Mutex<std::collections::HashSet<Key>>,
}

impl Cache {
    /// A cache sized by `config`, for the profiles of this configuration. Its disk tier, if
    /// `config` has one, is opened here (the folder is listed: blocking); one that cannot be
    /// opened is logged, and the cache runs in memory.
    pub fn new(config: &CacheConfig, profiles: &BTreeMap<String, Arc<Profile>>) -> Cache {
        let disk = config.disk.as_ref().and_then(|d| Some((disk::open_or_warn(&d.dir, d.max_bytes, max_queued(config))?, d.clone())));
        Cache::with_disk(config, profiles, disk)
    }

    /// A cache for a new configuration that keeps `prev`'s disk tier when its folder and bound
    /// are unchanged: the folder is not listed again, and writes still in flight stay in
    /// its index. The memory tier starts empty, so no page rewritten by old rules is served
    /// from it; on disk, such pages are under keys the new rules never make.
    pub fn reconfigured(config: &CacheConfig, profiles: &BTreeMap<String, Arc<Profile>>, prev: &Cache) -> Cache {
        match (&prev.disk, &config.disk) {
            (Some((disk, was)), Some(now)) if was == now => Cache::with_disk(config, profiles, Some((disk.clone(), now.clone()))),
            _ => Cache::new(config, profiles),
        }
    }

    fn with_disk(config: &CacheConfig, profiles: &BTreeMap<String, Arc<Profile>>, disk: Option<(Arc<Disk>, DiskConfig)>) -> Cache {
        let counters = Arc::new(Counters::default());
        let evicted = counters.clone();
        let entries = moka::future::Cache::builder()
            .max_capacity(config.max_bytes)
            .weigher(|_key: &Key, entry: &Arc<Entry>| entry.weight())
            .eviction_listener(move |_key, _entry, cause| {
                if matches!(cause, RemovalCause::Size | RemovalCause::Expired) {
                    evicted.evictions.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build();
        // The Vary names are small; they get an eighth of the budget, weighed by URL length.
        let variants = moka::sync::Cache::builder()
            .max_capacity((config.max_bytes / 8).max(64 * 1024))
            .weigher(|key: &BaseKey, names: &Arc<[HeaderName]>| u32::try_from(key.url.len() + 64 * (names.len() + 1)).unwrap_or(u32::MAX))
            .build();
        let passes = moka::sync::Cache::builder().max_capacity(16 * 1024).time_to_live(PASS_FOR).build();
        // Bounded like the Vary names: under a flood of POSTs to distinct URLs the oldest marks
        // go first, and a page kept from before such a mark is then served until it is stale.
        let invalidated = moka::sync::Cache::builder()
            .max_capacity((config.max_bytes / 16).max(64 * 1024))
            .weigher(|url: &String, _at: &Instant| u32::try_from(url.len() + 64).unwrap_or(u32::MAX))
            .build();
        let settings = profiles.iter().map(|(name, p)| (name.clone(), settings_hash(p))).collect();
        // Copies in flight are a quarter of the store's bound, never less than one whole entry.
        let max_copying = (config.max_bytes / 4).max(config.max_entry_bytes);
        Cache {
            entries,
            variants,
            passes,
            invalidated,
            purged_hosts: std::sync::RwLock::default(),
            settings,
            serves_pass: config.pass,
            max_bytes: config.max_bytes,
            max_entry_bytes: config.max_entry_bytes,
            counters,
            copying: AtomicU64::new(0),
            max_copying,
            disk,
            revalidating: Default::default(),
        }
    }

    /// Claims `key` for a background revalidation: false when one is running already. The
    /// claim ends with [`Cache::end_revalidation`].
    pub fn begin_revalidation(&self, key: &Key) -> bool {
        self.revalidating.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key.clone())
    }

    /// Ends the claim [`Cache::begin_revalidation`] made.
    pub fn end_revalidation(&self, key: &Key) {
        self.revalidating.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(key);
    }

    /// True when requests served by `profile` use the cache: every profile, the `pass` profile
    /// unless `cache.pass = false`.
    pub fn serves(&self, profile: &Profile) -> bool {
        self.serves_pass || !profile.is_pass()
    }

    /// Takes `bytes` more of the room for copies of streamed responses in flight, or says there
    /// is none. Each download copies up to `cache.max_entry_bytes` before it can be stored, so
    /// many at once could hold many times that outside the store's own bound; together they may
    /// hold a quarter of `cache.max_bytes` (at least one entry), and a download that finds no
    /// room streams on uncopied. Given back with [`Cache::release_copy`].
    pub fn hold_copy(&self, bytes: u64) -> bool {
        let max = self.max_copying;
        self.copying.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| held.checked_add(bytes).filter(|&total| total <= max)).is_ok()
    }

    /// Gives back `bytes` taken with [`Cache::hold_copy`].
    pub fn release_copy(&self, bytes: u64) {
        let _ = self.copying.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| Some(held.saturating_sub(bytes)));
    }

    /// The largest entry kept (`cache.max_entry_bytes`).
    pub fn max_entry_bytes(&self) -> u64 {
        self.max_entry_bytes
    }

    /// The key of `ask` for `profile`, whose pages are encoded as `coding`, with the `Vary`
    /// names last seen for this URL.
    pub fn key(&self, ask: &Ask, profile: &Profile, coding: Coding) -> Key {
        let settings = self.settings.get(&profile.name).copied().unwrap_or_else(|| settings_hash(profile));
        // A profile that transcodes images serves a WebP client other bytes than a JPEG-only
        // one: the client's image format class is part of the key (mixed into the settings
        // hash, so the disk tier's entry format stays as it is).
        let settings = if profile.images().policy.is_transcoding() {
            image_class(settings, ask.headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()))
        } else {
            settings
        };
        // A page adapted for its listener (links, charset, HTML 3.2) is another page.
        let name = match &profile.adapt {
            Some(adapt) => format!("{} {}", profile.name, adapt.tag()),
            None => profile.name.clone(),
        };
        let base = BaseKey { method: ask.method.clone(), url: ask.uri.to_string(), profile: name, settings, coding: coding.as_str() };
        let names = self.variants.get(&base);
        let vary = names.map(|n| vary_values(&n, &ask.headers)).unwrap_or_default();
        Key { base, vary }
    }

    /// [`Cache::key`], and when memory does not know the URL's `Vary` names (after a restart,
    /// or once they were evicted), what the disk tier keeps under the key made without them:
    /// the names (the key is then made with the request's values of them), or the entry of a
    /// response that does not vary (promoted to memory, so that it is not read twice). No
    /// file is read when the disk tier holds nothing under that key.
    pub async fn find_key(&self, ask: &Ask, profile: &Profile, coding: Coding) -> Key {
        let key = self.key(ask, profile, coding);
        let Some((disk, _)) = &self.disk else { return key };
        if !key.vary.is_empty() || self.variants.contains_key(&key.base) || !disk.holds(&key) || self.entries.contains_key(&key) {
            return key;
        }
        match disk.read(&key).await {
            Some(record::Record::Varies(names)) => {
                let key = key.with_vary(&names, &ask.headers);
                self.variants.insert(key.base.clone(), names);
                key
            }
            Some(record::Record::Entry(entry)) => {
                self.variants.insert(key.base.clone(), entry.vary.clone());
                self.entries.insert(key.clone(), entry).await;
                key
            }
            None => key,
        }
    }

    /// The entry under `key`, fresh or not: from memory, else from the disk tier, and then
    /// kept in memory again (promoted) without being written back.
    pub async fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        if let Some(entry) = self.entries.get(key).await {
            return Some(entry);
        }
        let (disk, _) = self.disk.as_ref()?;
        let record::Record::Entry(entry) = disk.read(key).await? else { return None };
        self.entries.insert(key.clone(), entry.clone()).await;
        Some(entry)
    }

    /// Drops the entry under `key`, in memory and on disk (a stale entry about to be
    /// revalidated, so that concurrent requests wait for the revalidation instead of repeating
    /// it; the revalidated entry is stored again).
    pub async fn invalidate(&self, key: &Key) {
        self.entries.invalidate(key).await;
        if let Some((disk, _)) = &self.disk {
            disk.remove(key);
        }
    }

    /// The entry under `key`, or the one `fill` produces, which is then stored. Concurrent
    /// calls for one key run one `fill`; the others wait for it. An `Err` from `fill` is
    /// stored nowhere and handed to every waiter.
    pub async fn get_or_fill<F, E>(&self, key: Key, fill: F) -> Result<Arc<Entry>, Arc<E>>
    where
        F: Future<Output = Result<Arc<Entry>, E>>,
        E: Send + Sync + 'static,
    {
        self.entries.try_get_with(key, fill).await
    }

    /// Remembers the `Vary` names an entry was stored with, so the next lookup of its URL
    /// uses them, counts the store, and writes the entry through to the disk tier. The names
    /// of a varying response are written too, under the key made without them
    /// ([`Cache::find_key`] reads them after a restart), unless that file holds them already;
    /// a response that does not vary is written under that very key, in their place.
    pub fn note_stored(&self, key: &Key, entry: &Arc<Entry>) {
        self.passes.invalidate(&key.base);
        let known = self.variants.get(&key.base);
        self.variants.insert(key.base.clone(), entry.vary.clone());
        self.counters.stores.fetch_add(1, Ordering::Relaxed);
        if let Some((disk, _)) = &self.disk {
            disk.write(key, record::Record::Entry(entry.clone()));
            let base = key.without_vary();
            let on_disk = entry.vary.is_empty() || (known.is_some_and(|k| k == entry.vary) && disk.holds(&base));
            if !on_disk {
                disk.write(&base, record::Record::Varies(entry.vary.clone()));
            }
        }
    }

    /// Stores `entry` under `key` directly: for a fill whose response varies on headers
    /// other than those its key was made with.
    pub async fn insert(&self, key: Key, entry: Arc<Entry>) {
        self.note_stored(&key, &entry);
        self.entries.insert(key, entry).await;
    }

    /// Marks every kept response of `url` invalid, whatever its profile, encoding or variant,
    /// because an unsafe request to it succeeded (RFC 9111 §4.4). An invalid page is not
    /// served again before the origin confirms it with a 304 ([`Cache::is_invalid`]): §4.4
    /// allows marking instead of removing, and a mark is one insert where finding every key of
    /// a URL would take a scan of the store. The disk tier's files of the URL are removed
    /// (found by their names, [`disk::Disk::remove_url`]), since the mark does not outlive a
    /// restart.
    pub fn invalidate_uri(&self, url: &str) {
        self.invalidated.insert(url.to_string(), Instant::now());
        // The mark is in memory only: the files go, or a restart would serve them again.
        if let Some((disk, _)) = &self.disk {
            disk.remove_url(url);
        }
    }

    /// True when an unsafe request to the entry's URL succeeded after the entry was made, or an
    /// operator purged its host since.
    pub fn is_invalid(&self, key: &Key, entry: &Entry) -> bool {
        self.invalidated.get(key.base.url.as_str()).is_some_and(|at| entry.made <= at) || self.is_purged(&key.base.url, entry.made)
    }

    /// Marks every kept response of `host` (any port, scheme or profile) invalid, as
    /// [`Cache::invalidate_uri`] does for one URL. At most [`MAX_PURGED_HOSTS`] are remembered;
    /// past it the oldest mark goes.
    pub fn purge_host(&self, host: &str) {
        let mut hosts = self.purged_hosts.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if hosts.len() >= MAX_PURGED_HOSTS && !hosts.contains_key(host) {
            if let Some(oldest) = hosts.iter().min_by_key(|(_, at)| **at).map(|(h, _)| h.clone()) {
                hosts.remove(&oldest);
            }
        }
        hosts.insert(host.to_ascii_lowercase(), Instant::now());
    }

    fn is_purged(&self, url: &str, made: Instant) -> bool {
        let hosts = self.purged_hosts.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if hosts.is_empty() {
            return false;
        }
        let authority = url.split_once("://").map_or("", |(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""));
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
        };
        hosts.get(&host.to_ascii_lowercase()).is_some_and(|at| made <= *at)
    }

    /// Remembers for a while that the response for `key`'s URL was not kept (not a page, or not
    /// storable), so the next requests for it skip the cache and its waiting.
    pub fn note_pass(&self, key: &Key) {
        self.passes.insert(key.base.clone(), ());
    }

    /// True when the URL's last response was not kept, within the last 30 s.
    pub fn is_pass(&self, key: &Key) -> bool {
        self.passes.contains_key(&key.base)
    }

    /// Counts a request answered from a kept response.
    pub fn count_hit(&self) {
        self.counters.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a cacheable request that needed the origin's whole response.
    pub fn count_miss(&self) {
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a kept response confirmed by a 304.
    pub fn count_revalidation(&self) {
        self.counters.revalidations.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters and the store's size now (pending evictions applied first).
    pub async fn snapshot(&self) -> Snapshot {
        self.entries.run_pending_tasks().await;
        let c = &self.counters;
        Snapshot {
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            revalidations: c.revalidations.load(Ordering::Relaxed),
            stores: c.stores.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            entries: self.entries.entry_count(),
            bytes: self.entries.weighted_size(),
            max_bytes: self.max_bytes,
            disk: self.disk.as_ref().map(|(disk, _)| disk.snapshot()),
        }
    }
}

/// Bytes of entries that may wait to be written to disk: a quarter of the memory tier, at least
/// one entry. They are mostly the same entries memory holds (shared, not copied).
fn max_queued(config: &CacheConfig) -> u64 {
    (config.max_bytes / 4).max(config.max_entry_bytes)
}

/// `settings` with the client's image format class (WebP or JPEG, [`crate::images::transcode::Format`]).
fn image_class(settings: u64, accept: Option<&str>) -> u64 {
    let format = crate::images::transcode::Format::for_accept(accept);
    record::name(format!("{settings:x}\0{}", format.content_type()).as_bytes())
}

/// A hash of everything in a profile that shapes its output: the rules' own canonical
/// fingerprint, the output form, the stage-2 settings (preset, choices, the site rules'
/// fingerprint, the ad lists, the image settings) and the reading-mode extractor, and the build of pith that
/// rewrites ([`build_id`]). Stable from one run of a build to the next (FNV-1a over text that
/// has no map order or address in it), because disk entries are found by keys that hold it.
pub fn settings_hash(profile: &Profile) -> u64 {
    let mut text = format!("{}\0{}\0{:x}\0{:?}", build_id(), profile.name, profile.rules.fingerprint(), profile.output);
    if let Some(stage2) = &profile.stage2 {
        text.push_str(&format!("\0{:?}\0{:x}\0{:?}\0{:?}", stage2.options, stage2.sites.fingerprint(), stage2.ads, stage2.images));
    }
    if let Some(reader) = &profile.reader {
        text.push_str(&format!("\0{:?}", reader.algorithm));
    }
    record::name(text.as_bytes())
}

/// Which build of pith is running: its version and the size and time of its executable. The
/// removers, the extractors and the word lists built into a binary shape the pages it writes,
/// so a page rewritten by another build is not served from the disk tier as this one's.
fn build_id() -> &'static str {
    static ID: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let exe = std::env::current_exe().and_then(std::fs::metadata).ok();
        let stamp = exe.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        format!("{} {} {}", env!("CARGO_PKG_VERSION"), exe.map_or(0, |m| m.len()), stamp.map_or(0, |d| d.as_nanos()))
    });
    &ID
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(headers: &[(&str, &str)]) -> Ask {
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.append(HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h.insert(header::HOST, HeaderValue::from_static("example.com"));
        Ask { method: Method::GET, uri: "http://example.com/a".parse().unwrap(), headers: h }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        ask(pairs).headers
    }

    fn admitted(request: &[(&str, &str)], status: u16, response: &[(&str, &str)]) -> Result<Entry, Refusal> {
        let served = headers(&[("content-type", "text/html")]);
        let origin = headers(response);
        admit(&ask(request), (StatusCode::from_u16(status).unwrap(), &origin), served, Bytes::from_static(b"<p>page</p>"), 1 << 20, SystemTime::now())
    }

    macro_rules! kept {
        ($name:ident, request = [$($req:expr),*], $status:expr, response = [$($res:expr),*], $expect:expr) => {
            #[test]
            fn $name() {
                let got = admitted(&[$($req),*], $status, &[$($res),*]).map(|_| ());
                assert_eq!(got, $expect);
            }
        };
    }

    kept!(max_age_is_kept, request = [], 200, response = [("cache-control", "max-age=60")], Ok(()));
    kept!(s_maxage_is_kept, request = [], 200, response = [("cache-control", "s-maxage=60")], Ok(()));
    #[test]
    fn expires_is_kept() {
        let date = |secs: u64| httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(secs));
        assert_eq!(admitted(&[], 200, &[("date", &date(0)), ("expires", &date(3600))]).map(|_| ()), Ok(()));
    }

    /// RFC 9111 §4.2.3: a response whose `Date` is older than its lifetime is stale on arrival
    /// (its apparent age counts), and is then kept only with a validator.
    #[test]
    fn rfc9111_4_2_3_apparent_age_counts() {
        let now = SystemTime::now();
        let two_hours_ago = httpdate::fmt_http_date(now - Duration::from_secs(7200));
        let entry = admitted(&[], 200, &[("date", &two_hours_ago), ("cache-control", "max-age=3600"), ("etag", "\"a\"")]).unwrap();
        let after = SystemTime::now();
        assert!(matches!(entry.freshness(&ask(&[]), after), Freshness::Stale { .. }));
        assert!(entry.age(after) >= Duration::from_secs(7199), "served with the Age it has");
        assert_eq!(admitted(&[], 200, &[("date", &two_hours_ago), ("cache-control", "max-age=3600")]).map(|_| ()), Err(Refusal::Useless));
        let fresh = admitted(&[], 200, &[("date", &httpdate::fmt_http_date(now)), ("cache-control", "max-age=3600")]).unwrap();
        assert!(matches!(fresh.freshness(&ask(&[]), SystemTime::now()), Freshness::Fresh { .. }));
    }

    /// RFC 9111 §5.4 (and RFC 7234 §5.4): with Cache-Control present, Pragma is ignored; alone,
    /// its no-cache still asks for validation.
    #[test]
    fn rfc9111_5_4_pragma_yields_to_cache_control() {
        let now = SystemTime::now();
        let entry = admitted(&[], 200, &[("cache-control", "max-age=1"), ("etag", "\"a\"")]).unwrap();
        let later = now + Duration::from_secs(30);
        let asked = |pairs: &[(&str, &str)]| Ask::new(Method::GET, "http://example.com/a".parse().unwrap(), headers(pairs));
        assert!(matches!(entry.freshness(&asked(&[("cache-control", "max-stale=1000"), ("pragma", "no-cache")]), later), Freshness::Fresh { .. }), "max-stale allows it");
        assert!(matches!(entry.freshness(&asked(&[("pragma", "no-cache")]), now), Freshness::Stale { .. }), "Pragma alone still counts");
        assert!(matches!(entry.freshness(&asked(&[("cache-control", "max-stale=10")]), later), Freshness::Stale { .. }), "past what max-stale allows");
    }
    kept!(last_modified_is_kept, request = [], 200, response = [("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")], Ok(()));
    kept!(no_cache_with_etag_is_kept, request = [], 200, response = [("cache-control", "no-cache"), ("etag", "\"x\"")], Ok(()));
    kept!(no_store, request = [], 200, response = [("cache-control", "no-store, max-age=60")], Err(Refusal::Policy));
    kept!(private, request = [], 200, response = [("cache-control", "private, max-age=60")], Err(Refusal::Policy));
    kept!(set_cookie, request = [], 200, response = [("cache-control", "public, max-age=60"), ("set-cookie", "a=b")], Err(Refusal::SetCookie));
    kept!(cookie_not_public, request = [("cookie", "a=b")], 200, response = [("cache-control", "max-age=60")], Err(Refusal::Credentials));
    kept!(cookie_public, request = [("cookie", "a=b")], 200, response = [("cache-control", "public, max-age=60")], Ok(()));
    kept!(authorization_not_public, request = [("authorization", "Basic eA==")], 200, response = [("cache-control", "max-age=60")], Err(Refusal::Policy));
    kept!(authorization_public, request = [("authorization", "Basic eA==")], 200, response = [("cache-control", "public, max-age=60")], Ok(()));
    kept!(request_no_store, request = [("cache-control", "no-store")], 200, response = [("cache-control", "max-age=60")], Err(Refusal::Policy));
    // RFC 9111 §3: any final status the cache understands, with explicit freshness or
    // cacheable by default (§4.2.2: then heuristic freshness or a validator makes it useful).
    kept!(rfc9111_3_not_found_with_max_age, request = [], 404, response = [("cache-control", "max-age=60")], Ok(()));
    kept!(rfc9111_3_gone_with_last_modified, request = [], 410, response = [("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")], Ok(()));
    kept!(rfc9111_3_moved_permanently, request = [], 301, response = [("cache-control", "max-age=60"), ("location", "/b")], Ok(()));
    kept!(rfc9111_3_no_content, request = [], 204, response = [("cache-control", "max-age=60")], Ok(()));
    kept!(rfc9111_3_found_with_max_age, request = [], 302, response = [("cache-control", "max-age=60")], Ok(()));
    kept!(rfc9111_3_found_without_freshness, request = [], 302, response = [("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")], Err(Refusal::Policy));
    kept!(rfc9111_3_server_error_not_understood, request = [], 500, response = [("cache-control", "max-age=60")], Err(Refusal::Policy));
    kept!(rfc9111_3_partial_content, request = [], 206, response = [("cache-control", "max-age=60")], Err(Refusal::Status(206)));
    kept!(rfc9111_3_not_modified, request = [], 304, response = [("cache-control", "max-age=60")], Err(Refusal::Status(304)));
    // RFC 9111 §3.5: a request with Authorization only with must-revalidate, public or s-maxage.
    kept!(rfc9111_3_5_authorization_s_maxage, request = [("authorization", "Basic eA==")], 200, response = [("cache-control", "s-maxage=60")], Ok(()));
    kept!(rfc9111_3_5_authorization_must_revalidate, request = [("authorization", "Basic eA==")], 200, response = [("cache-control", "max-age=60, must-revalidate")], Ok(()));
    kept!(vary_star, request = [], 200, response = [("cache-control", "max-age=60"), ("vary", "*")], Err(Refusal::VaryAll));
    kept!(nothing_to_go_on, request = [], 200, response = [], Err(Refusal::Useless));

    #[test]
    fn too_large_is_refused() {
        let origin = headers(&[("cache-control", "max-age=60")]);
        let body = Bytes::from(vec![b'x'; 5000]);
        let got = admit(&ask(&[]), (StatusCode::OK, &origin), HeaderMap::new(), body, 4096, SystemTime::now());
        assert!(matches!(got, Err(Refusal::TooLarge { bytes }) if bytes > 5000));
    }

    #[test]
    fn vary_names_are_normalised() {
        let h = headers(&[("vary", "Accept-Encoding, User-Agent"), ("vary", "accept-language, user-agent")]);
        let names = vary_names(&h, Form::Rewritten).unwrap();
        assert_eq!(names.iter().map(HeaderName::as_str).collect::<Vec<_>>(), ["accept-language", "user-agent"]);
        let names = vary_names(&h, Form::Origin).unwrap();
        assert_eq!(names.iter().map(HeaderName::as_str).collect::<Vec<_>>(), ["accept-encoding", "accept-language", "user-agent"], "the origin chose its coding by Accept-Encoding");
        assert!(vary_names(&headers(&[("vary", "a, *")]), Form::Origin).is_none());
    }

    /// A streamed response is judged on its head: its room is what is left of
    /// `max_entry_bytes` beside the headers, a stated Content-Length past it is refused at once,
    /// and a body that outgrows it is refused when finished.
    #[test]
    fn a_pending_entry_has_room_for_its_body() {
        let origin = headers(&[("cache-control", "max-age=60")]);
        let pending = admit_head(&ask(&[]), (StatusCode::OK, &origin), origin.clone(), Form::Origin, 16384, SystemTime::now()).unwrap();
        let room = pending.room();
        assert!(room > 0 && room < 16384, "{room}");
        let entry = pending.finish(Bytes::from(vec![b'x'; room as usize])).expect("fits exactly");
        assert_eq!(u64::from(entry.weight()), 16384);
        let pending = admit_head(&ask(&[]), (StatusCode::OK, &origin), origin.clone(), Form::Origin, 16384, SystemTime::now()).unwrap();
        assert!(matches!(pending.finish(Bytes::from(vec![b'x'; room as usize + 1])), Err(Refusal::TooLarge { .. })));
        let stated = headers(&[("cache-control", "max-age=60"), ("content-length", "20000")]);
        let refused = admit_head(&ask(&[]), (StatusCode::OK, &stated), stated.clone(), Form::Origin, 16384, SystemTime::now());
        assert!(matches!(refused, Err(Refusal::TooLarge { bytes }) if bytes > 20000));
    }

    /// RFC 9111 §3.2: a 304 replaces the origin's own fields of a streamed-through response,
    /// type and ETag included (they describe the origin's bytes, which are what is kept), but
    /// never its Content-Length, nor the coding and digests the kept bytes depend on.
    #[test]
    fn rfc9111_3_2_a_304_updates_an_origin_entry_s_own_fields() {
        let now = SystemTime::now();
        let origin = headers(&[("cache-control", "no-cache"), ("etag", "\"v1\""), ("content-type", "image/png"), ("content-length", "4"), ("content-encoding", "identity"), ("content-md5", "abc=")]);
        let pending = admit_head(&ask(&[]), (StatusCode::OK, &origin), origin.clone(), Form::Origin, 1 << 20, now).unwrap();
        let entry = pending.finish(Bytes::from_static(b"\x89PNG")).unwrap();
        let not_modified = headers(&[("etag", "\"v1\""), ("content-type", "image/x-png"), ("content-length", "0"), ("x-note", "new"), ("content-encoding", "gzip"), ("content-md5", "xyz=")]);
        let fresh = entry.refreshed(&ask(&[]), &not_modified, now).unwrap();
        assert_eq!(fresh.headers[header::CONTENT_TYPE], "image/x-png");
        assert_eq!(fresh.headers[header::ETAG], "\"v1\"", "the origin's own ETag stays strong");
        assert_eq!(fresh.headers[header::CONTENT_LENGTH], "4");
        assert_eq!((&fresh.headers[header::CONTENT_ENCODING], &fresh.headers["content-md5"]), (&HeaderValue::from_static("identity"), &HeaderValue::from_static("abc=")), "the kept bytes' coding and digest");
        assert_eq!(fresh.headers["x-note"], "new");
        assert_eq!(fresh.body, Bytes::from_static(b"\x89PNG"));
    }

    /// RFC 9111 §4.3.2: without Last-Modified or Date, If-Modified-Since is compared with the
    /// time the response was stored.
    #[test]
    fn rfc9111_4_3_2_if_modified_since_without_dates_uses_the_time_stored() {
        let origin = headers(&[("cache-control", "max-age=60")]);
        let entry = admit(&ask(&[]), (StatusCode::OK, &origin), HeaderMap::new(), Bytes::new(), 1 << 20, SystemTime::now()).unwrap();
        let date = |t: SystemTime| httpdate::fmt_http_date(t);
        let later = date(SystemTime::now() + Duration::from_secs(3600));
        let earlier = date(SystemTime::now() - Duration::from_secs(3600));
        assert!(entry.is_not_modified_for(&headers(&[("if-modified-since", later.as_str())])));
        assert!(!entry.is_not_modified_for(&headers(&[("if-modified-since", earlier.as_str())])));
    }

    #[test]
    fn fresh_then_stale_with_validators() {
        let now = SystemTime::now();
        let origin = headers(&[("cache-control", "max-age=60"), ("etag", "\"v1\""), ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")]);
        let entry = admit(&ask(&[]), (StatusCode::OK, &origin), HeaderMap::new(), Bytes::new(), 1 << 20, now).unwrap();
        assert!(matches!(entry.freshness(&ask(&[]), now + Duration::from_secs(30)), Freshness::Fresh { age } if age.as_secs() == 30));
        let Freshness::Stale { conditions } = entry.freshness(&ask(&[]), now + Duration::from_secs(61)) else { panic!("stale after max-age") };
        assert_eq!(conditions[0], (header::IF_NONE_MATCH, HeaderValue::from_static("\"v1\"")));
        assert_eq!(conditions[1].0, header::IF_MODIFIED_SINCE);
        assert!(matches!(entry.freshness(&ask(&[("cache-control", "no-cache")]), now), Freshness::Stale { .. }), "a client's no-cache forces revalidation");
    }

    #[test]
    fn origin_age_counts() {
        let now = SystemTime::now();
        let origin = headers(&[("cache-control", "max-age=60"), ("age", "100"), ("etag", "\"v\"")]);
        let entry = admit(&ask(&[]), (StatusCode::OK, &origin), HeaderMap::new(), Bytes::new(), 1 << 20, now).unwrap();
        assert!(matches!(entry.freshness(&ask(&[]), now), Freshness::Stale { .. }));
        assert_eq!(entry.age(now).as_secs(), 100);
    }

    #[test]
    fn a_304_refreshes_headers_and_keeps_the_body() {
        let now = SystemTime::now();
        let origin = headers(&[("cache-control", "max-age=0"), ("etag", "\"v1\"")]);
        let served = headers(&[("etag", "W/\"v1\""), ("cache-control", "max-age=0")]);
        let entry = admit(&ask(&[]), (StatusCode::OK, &origin), served, Bytes::from_static(b"body"), 1 << 20, now).unwrap();
        let fresh = entry.refreshed(&ask(&[]), &headers(&[("cache-control", "max-age=600"), ("etag", "\"v1\"")]), now).unwrap();
        assert_eq!(fresh.body, Bytes::from_static(b"body"));
        assert_eq!(fresh.headers[header::CACHE_CONTROL], "max-age=600");
        assert_eq!(fresh.headers[header::ETAG], "W/\"v1\"", "the served ETag stays weak");
        assert!(matches!(fresh.freshness(&ask(&[]), now), Freshness::Fresh { .. }));
        let other = entry.refreshed(&ask(&[]), &headers(&[("etag", "\"v2\"")]), now);
        assert!(matches!(other, Err(RefreshError::ValidatorMismatch { .. })));
    }

    /// RFC 9111 §3.2: every field of the 304 replaces the kept one, but the fields the kept
    /// (rewritten) body depends on, hop-by-hop fields and those its Connection names.
    #[test]
    fn rfc9111_3_2_a_304_replaces_all_but_the_excepted_fields() {
        let now = SystemTime::now();
        let origin = headers(&[("cache-control", "no-cache"), ("etag", "\"v1\""), ("x-note", "old"), ("link", "<a>"), ("link", "<b>")]);
        let served = headers(&[("content-type", "text/html; charset=utf-8"), ("content-length", "4"), ("etag", "W/\"v1\""), ("x-note", "old"), ("link", "<a>"), ("link", "<b>"), ("vary", "Accept-Encoding"), ("x-pith", "profile=declutter")]);
        let entry = admit(&ask(&[]), (StatusCode::OK, &origin), served, Bytes::from_static(b"body"), 1 << 20, now).unwrap();
        let not_modified = headers(&[
            ("etag", "\"v1\""), ("x-note", "new"), ("link", "<c>"), ("content-type", "text/plain"), ("content-length", "0"),
            ("vary", "Cookie"), ("x-pith", "forged"), ("set-cookie", "id=1"), ("connection", "x-hop"), ("x-hop", "1"), ("age", "5"),
        ]);
        let fresh = entry.refreshed(&ask(&[]), &not_modified, now).unwrap();
        let all = |name: &str| fresh.headers.get_all(name).iter().map(|v| v.to_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(all("x-note"), ["new"]);
        assert_eq!(all("link"), ["<c>"], "a field's every stored line is replaced");
        assert_eq!(all("content-type"), ["text/html; charset=utf-8"]);
        assert_eq!(all("content-length"), ["4"]);
        assert_eq!(all("vary"), ["Accept-Encoding"]);
        assert_eq!(all("x-pith"), ["profile=declutter"]);
        assert_eq!(all("etag"), ["W/\"v1\""]);
        for never in ["set-cookie", "connection", "x-hop", "age"] {
            assert!(all(never).is_empty(), "{never} must not be stored: {:?}", fresh.headers);
        }
    }

    #[test]
    fn client_validators_are_compared_weakly() {
        let origin = headers(&[("cache-control", "max-age=60")]);
        let served = headers(&[("etag", "W/\"v1\""), ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")]);
        let entry = admit(&ask(&[]), (StatusCode::OK, &origin), served, Bytes::new(), 1 << 20, SystemTime::now()).unwrap();
        assert!(entry.is_not_modified_for(&headers(&[("if-none-match", "\"x\", \"v1\"")])));
        assert!(entry.is_not_modified_for(&headers(&[("if-none-match", "*")])));
        assert!(!entry.is_not_modified_for(&headers(&[("if-none-match", "\"v2\"")])));
        assert!(entry.is_not_modified_for(&headers(&[("if-modified-since", "Thu, 01 Jan 2026 00:00:00 GMT")])));
        // RFC 9110 §13.1.3: compared as dates; an invalid date is ignored.
        assert!(entry.is_not_modified_for(&headers(&[("if-modified-since", "Friday, 02-Jan-26 00:00:00 GMT")])), "later, in RFC 850 form");
        assert!(!entry.is_not_modified_for(&headers(&[("if-modified-since", "Wed, 31 Dec 2025 23:59:59 GMT")])), "earlier");
        assert!(!entry.is_not_modified_for(&headers(&[("if-modified-since", "Thu, 01  Jan 2026 00:00:00 GMT")])), "invalid");
        assert!(!entry.is_not_modified_for(&headers(&[])));
    }

    #[test]
    fn only_if_cached_is_read_in_any_case() {
        assert!(is_only_if_cached(&headers(&[("cache-control", "max-age=0, Only-If-Cached")])));
        assert!(!is_only_if_cached(&headers(&[("cache-control", "no-cache")])));
        assert!(!is_only_if_cached(&headers(&[])));
    }

    #[test]
    fn candidates_are_whole_unconditional_gets() {
        assert!(is_candidate(&Method::GET, &headers(&[])));
        assert!(is_candidate(&Method::GET, &headers(&[("if-none-match", "\"a\"")])), "answered from a fresh page");
        assert!(!is_candidate(&Method::POST, &headers(&[])));
        assert!(is_candidate(&Method::HEAD, &headers(&[])), "answered from a stored GET");
        assert!(!is_candidate(&Method::GET, &headers(&[("range", "bytes=0-1")])));
    }

    fn cache(max_bytes: u64) -> (Cache, Arc<Profile>) {
        let profile = Arc::new(Profile::new("declutter", Arc::new(crate::html::rules::RuleSet::empty()), crate::profile::Output::Html));
        let profiles = BTreeMap::from([("declutter".to_string(), profile.clone())]);
        (Cache::new(&CacheConfig { enabled: true, pass: true, max_bytes, max_entry_bytes: max_bytes, disk: None }, &profiles), profile)
    }

    #[tokio::test]
    async fn keys_separate_encodings_profiles_and_learnt_vary_values() {
        let (cache, profile) = cache(1 << 20);
        let en = ask(&[("accept-language", "en")]);
        let fr = ask(&[("accept-language", "fr")]);
        assert_eq!(cache.key(&en, &profile, Coding::Identity), cache.key(&fr, &profile, Coding::Identity), "no Vary known yet");
        assert_ne!(cache.key(&en, &profile, Coding::Identity), cache.key(&en, &profile, Coding::Gzip));
        // The same profile name with other rules (a changed config) keys differently.
        let other = Arc::new(Profile::new("declutter", Arc::new(crate::html::rules::RuleSet::builtin("declutter").unwrap()), crate::profile::Output::Html));
        let changed = Cache::new(&CacheConfig { enabled: true, pass: true, max_bytes: 1 << 20, max_entry_bytes: 1 << 20, disk: None }, &BTreeMap::from([("declutter".to_string(), other.clone())]));
        assert_ne!(cache.key(&en, &profile, Coding::Identity), changed.key(&en, &other, Coding::Identity), "changed rules, new key");
        let origin = headers(&[("cache-control", "max-age=60"), ("vary", "Accept-Language")]);
        let entry = admit(&en, (StatusCode::OK, &origin), HeaderMap::new(), Bytes::new(), 1 << 20, SystemTime::now()).unwrap();
        let key = cache.key(&en, &profile, Coding::Identity).with_vary(entry.vary(), &en.headers);
        cache.insert(key.clone(), Arc::new(entry)).await;
        assert_eq!(cache.key(&en, &profile, Coding::Identity), key);
        assert_ne!(cache.key(&fr, &profile, Coding::Identity), key);
        assert!(cache.get(&key).await.is_some());
    }

    #[tokio::test]
    async fn the_weigher_bounds_bytes() {
        let (cache, profile) = cache(64 * 1024);
        let origin = headers(&[("cache-control", "max-age=60")]);
        for i in 0..50 {
            let mut a = ask(&[]);
            a.uri = format!("http://example.com/{i}").parse().unwrap();
            let entry = admit(&a, (StatusCode::OK, &origin), HeaderMap::new(), Bytes::from(vec![b'x'; 4000]), 1 << 20, SystemTime::now()).unwrap();
            cache.insert(cache.key(&a, &profile, Coding::Identity), Arc::new(entry)).await;
        }
        let s = cache.snapshot().await;
        assert!(s.bytes <= 64 * 1024 && s.entries < 50, "{s:?}");
        assert_eq!(s.stores, 50);
        assert!(s.evictions > 0, "{s:?}");
    }

    #[tokio::test]
    async fn a_url_not_kept_is_passed_until_a_page_is_stored() {
        let (cache, profile) = cache(1 << 20);
        let a = ask(&[]);
        let key = cache.key(&a, &profile, Coding::Identity);
        assert!(!cache.is_pass(&key));
        cache.note_pass(&key);
        assert!(cache.is_pass(&key));
        assert!(cache.is_pass(&cache.key(&a, &profile, Coding::Identity).with_vary(&[header::ACCEPT_LANGUAGE], &a.headers)), "per URL, whatever the variant");
        let origin = headers(&[("cache-control", "max-age=60")]);
        let entry = admit(&a, (StatusCode::OK, &origin), HeaderMap::new(), Bytes::new(), 1 << 20, SystemTime::now()).unwrap();
        cache.insert(key.clone(), Arc::new(entry)).await;
        assert!(!cache.is_pass(&key));
    }
}
