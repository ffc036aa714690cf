//! The cache, forward and respond steps of a request, in that order.
//!
//! A request the cache may answer ([`crate::cache::is_candidate`]: a GET or HEAD, not a range,
//! for any profile; the `pass` profile unless `cache.pass = false`) is looked up first. A fresh
//! response is served from memory (`X-Cache: HIT`); a stale one is revalidated with the
//! origin's validators, and a 304 serves the kept response again (`X-Cache: REVALIDATED`);
//! otherwise the response is fetched (`X-Cache: MISS`) and kept when HTTP allows it. A page
//! pith rewrites is kept as rewritten, read whole before it is sent; any other response streams
//! to the client as it arrives while [`crate::net::exchange::tee`] keeps a copy, stored only once the body
//! has ended whole within `cache.max_entry_bytes`.
//!
//! A HEAD is answered from a fresh stored GET, head only (RFC 9111 §4); otherwise it goes to the
//! origin and nothing is stored. A request with `Cache-Control: only-if-cached` that finds
//! nothing fresh gets 504 and the origin is not asked (§5.2.1.7). A client's own conditional
//! request gets 304 from a fresh entry its validators match (§4.3.2), else goes to the origin.
//!
//! Concurrent misses for one key run one fetch ([`Cache::get_or_fill`]). The fill future
//! takes the request of the client whose call runs it from a shared slot: the client whose
//! request is still in its slot afterwards was a waiter. A waiter gets the stored page; when
//! the fill kept nothing at once (a private page, an error, a response still streaming), the
//! waiter looks up once more (the origin's `Vary` is known by then) and otherwise forwards its
//! own request, so nothing meant for one client reaches another, and no client waits for
//! another's download to end.
//!
//! A 304 that names another representation than the kept one (a different strong ETag)
//! refreshes nothing: the response is asked for again, whole.
//!
//! A GET for a part (`Range`) is cut from a fresh kept response (206, or 416 past its end;
//! [`crate::cache::range`]); otherwise it goes to the origin, and a part is never kept.
//!
//! A stale entry may still be served where the origin allows it (RFC 5861,
//! [`crate::cache::Grace`]): within `stale-while-revalidate` it is served at once
//! (`X-Cache: STALE`) while one revalidation per key runs in the background; within
//! `stale-if-error` it is served when the revalidation finds the origin unreachable or
//! failing (500, 502, 503, 504).
//!
//! Everything else (other methods, the cache switched off) goes straight to the origin
//! as before; an unsafe method (POST, PUT, DELETE, …) that succeeds then invalidates what is
//! kept for its URL, in every profile (RFC 9111 §4.4).

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use hyper::body::Incoming;

use crate::net::exchange::bodies;
use crate::net::observe::Action;
use crate::net::error::ProxyError;
use crate::net::upstream::forward;
use crate::net::exchange::respond::{self, Exchange, Outcome, Served};
use crate::net::exchange::tee::{Store, Tee};
use crate::net::State;
use crate::body as codec;
use crate::cache::range::{self, Part};
use crate::cache::{self, Ask, Cache, Entry, Form, Freshness, Grace, Key};
use crate::profile::Profile;

/// Where a request goes, for the steps after admission.
pub struct Target<'a> {
    /// The origin's host, for errors.
    pub host: &'a str,
    /// The absolute URL.
    pub uri: Uri,
    /// The profile serving the client (shared: a background revalidation outlives the request).
    pub profile: &'a Arc<Profile>,
    /// The client's listener refuses private destinations ([`crate::config::ListenerConfig::deny_private`]).
    pub deny_private: bool,
    /// The client's address, whose images take their turn to be transcoded ([`crate::net::exchange::images`]).
    pub client: Option<std::net::IpAddr>,
}

/// Serves a request that is not for pith itself: from the cache when it can, else from the
/// origin.
pub async fn serve(state: &Arc<State>, target: Target<'_>, req: Request<Incoming>) -> Result<Served, ProxyError> {
    let Some(cache) = state.cache.as_ref() else {
        return forward_and_respond(state, &target, req).await;
    };
    check_before_reuse(state, &target).await?;
    if !req.method().is_safe() {
        let served = forward_and_respond(state, &target, req).await?;
        invalidate(cache, &target.uri, &served.response);
        return Ok(served);
    }
    if !cache.serves(target.profile) {
        return forward_and_respond(state, &target, req).await;
    }
    if cache::is_range_candidate(req.method(), req.headers()) {
        return ranged(state, cache, &target, req).await;
    }
    if !cache::is_candidate(req.method(), req.headers()) {
        return forward_and_respond(state, &target, req).await;
    }
    // A HEAD is looked up as the GET it would be answered from.
    let ask = ask(&req, &target.uri, Method::GET);
    let coding = codec::choose_encoding(req.headers().get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()));
    if req.method() == Method::HEAD {
        let key = cache.find_key(&ask, target.profile, coding).await;
        return head(state, cache, &target, &ask, key, req).await;
    }
    let mut req = req;
    // Twice at most: a waiter whose fill kept nothing looks again once, with the Vary names
    // the fill learnt.
    for _ in 0..2 {
        let key = cache.find_key(&ask, target.profile, coding).await;
        req = match lookup(state, cache, &target, &ask, key, req).await? {
            Looked::Served(served) => return Ok(served),
            Looked::Again(req) => req,
        };
    }
    Ok(with_x_cache(forward_and_respond(state, &target, req).await?, Lookup::Miss))
}

/// The destination checked against the listener's deny rules before the cache may answer:
/// a page kept for a listener that may reach private addresses must not be served to one
/// that may not. Only needed when listeners differ in that policy; the connection itself is
/// checked again by the client of the listener's policy ([`forward::Clients`]).
async fn check_before_reuse(state: &State, target: &Target<'_>) -> Result<(), ProxyError> {
    if !target.deny_private || state.listeners.iter().all(|l| l.deny_private) {
        return Ok(());
    }
    let cfg = &state.config.upstream;
    let port = target.uri.port_u16().unwrap_or(if target.uri.scheme() == Some(&http::uri::Scheme::HTTPS) { 443 } else { 80 });
    let rules = crate::net::upstream::resolve::DenyRules::new(cfg, true);
    match tokio::time::timeout(cfg.connect_timeout, crate::net::upstream::resolve::resolve(target.host, port, rules)).await {
        Err(_) => Err(ProxyError::Timeout { host: target.host.to_string(), what: "resolve", after: cfg.connect_timeout }),
        Ok(Err(source @ crate::net::upstream::resolve::ResolveError::Denied { .. })) => Err(ProxyError::Destination { source }),
        // A name that does not resolve now is left to the fetch to report.
        Ok(Err(_)) | Ok(Ok(_)) => Ok(()),
    }
}

/// A HEAD: the head of a fresh stored GET (RFC 9111 §4: a stored response to GET may answer
/// HEAD), else the origin's own answer, which stores nothing.
async fn head(state: &State, cache: &Cache, target: &Target<'_>, ask: &Ask, key: Key, req: Request<Incoming>) -> Result<Served, ProxyError> {
    if let Some(entry) = fresh(cache, &key, ask).await {
        cache.count_hit();
        return Ok(from_entry(&entry, Lookup::Hit, 0, req.headers(), Reply::Head));
    }
    if cache::is_only_if_cached(req.headers()) {
        return Err(ProxyError::NotCached { url: target.uri.to_string() });
    }
    Ok(with_x_cache(forward_and_respond(state, target, req).await?, Lookup::Miss))
}

/// A GET for a part (`Range`): cut from a fresh kept response (206, or 416 for a range past
/// its end), else the origin's answer as it comes; a part is never kept.
async fn ranged(state: &State, cache: &Cache, target: &Target<'_>, req: Request<Incoming>) -> Result<Served, ProxyError> {
    let ask = ask(&req, &target.uri, Method::GET);
    let coding = codec::choose_encoding(req.headers().get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()));
    if let Some(entry) = fresh(cache, &cache.find_key(&ask, target.profile, coding).await, &ask).await {
        cache.count_hit();
        return Ok(from_entry(&entry, Lookup::Hit, 0, req.headers(), Reply::Part));
    }
    if cache::is_only_if_cached(req.headers()) {
        return Err(ProxyError::NotCached { url: target.uri.to_string() });
    }
    Ok(with_x_cache(forward_and_respond(state, target, req).await?, Lookup::Miss))
}

/// The entry under `key` when it may answer `ask` as it is.
async fn fresh(cache: &Cache, key: &Key, ask: &Ask) -> Option<Arc<Entry>> {
    let entry = cache.get(key).await?;
    let usable = !cache.is_invalid(key, &entry) && matches!(entry.freshness(ask, SystemTime::now()), Freshness::Fresh { .. });
    usable.then_some(entry)
}

enum Looked {
    Served(Served),
    /// A fill by another request kept nothing; this request is still to be sent.
    Again(Request<Incoming>),
}

/// An unsafe request (POST, PUT, DELETE, …) that succeeded (2xx, 3xx) invalidates what is
/// kept for its URL, and for the URLs its `Location` and `Content-Location` name on the same
/// host: the request may have changed them (RFC 9111 §4.4). Another host's URL is left
/// alone, so that one site cannot flush another's pages.
fn invalidate(cache: &Cache, uri: &Uri, response: &Response<bodies::ProxyBody>) {
    let status = response.status();
    if !(status.is_success() || status.is_redirection()) {
        return;
    }
    cache.invalidate_uri(&uri.to_string());
    for name in [header::LOCATION, header::CONTENT_LOCATION] {
        let Some(named) = response.headers().get(&name).and_then(|v| v.to_str().ok()) else { continue };
        if let Some(same_host) = same_host_url(uri, named) {
            cache.invalidate_uri(&same_host);
        }
    }
}

/// `reference` resolved against `base`, as a cache key spells URLs, when it is on the same
/// host; `None` otherwise or when it is not a valid URL.
fn same_host_url(base: &Uri, reference: &str) -> Option<String> {
    let base = url::Url::parse(&base.to_string()).ok()?;
    let resolved = base.join(reference).ok()?;
    let same = resolved.host_str().is_some_and(|h| base.host_str().is_some_and(|b| h.eq_ignore_ascii_case(b)));
    let uri: Uri = resolved.as_str().parse().ok()?;
    same.then(|| uri.to_string())
}

/// One look at the cache under `key`: a fresh entry, or a (re)validating fill.
async fn lookup(state: &Arc<State>, cache: &Arc<Cache>, target: &Target<'_>, ask: &Ask, key: Key, req: Request<Incoming>) -> Result<Looked, ProxyError> {
    let mut stale = None;
    if let Some(entry) = cache.get(&key).await {
        let invalid = cache.is_invalid(&key, &entry);
        let freshness = if invalid { entry.stale() } else { entry.freshness(ask, SystemTime::now()) };
        match freshness {
            Freshness::Fresh { .. } => {
                cache.count_hit();
                return Ok(Looked::Served(from_entry(&entry, Lookup::Hit, 0, req.headers(), Reply::Whole)));
            }
            Freshness::Stale { conditions } if !invalid && !cache::is_conditional(req.headers()) && entry.may_serve_stale(req.headers(), Grace::WhileRevalidate, SystemTime::now()) => {
                cache.count_hit();
                let served = from_entry(&entry, Lookup::Stale, 0, req.headers(), Reply::Whole);
                Background { state: state.clone(), cache: cache.clone(), profile: target.profile.clone(), host: target.host.to_string(), deny_private: target.deny_private, ask: ask.clone(), key }.revalidate(entry, conditions, head_of(&req));
                return Ok(Looked::Served(served));
            }
            Freshness::Stale { conditions } => stale = Some((entry, conditions)),
        }
    }
    if cache::is_only_if_cached(req.headers()) {
        return Err(ProxyError::NotCached { url: target.uri.to_string() });
    }
    // A client revalidating its own copy is answered by the origin, unless a fresh page is
    // kept; so is a URL whose last response could not be kept.
    if cache::is_conditional(req.headers()) || (stale.is_none() && cache.is_pass(&key)) {
        return Ok(Looked::Served(with_x_cache(forward_and_respond(state, target, req).await?, Lookup::Miss)));
    }
    if stale.is_some() {
        // Requests arriving during the revalidation wait for it instead of repeating it.
        cache.invalidate(&key).await;
    }
    let client_headers = req.headers().clone();
    let slot = Arc::new(Mutex::new(Slot::Waiting(Box::new(req))));
    let fill = Fill { state, cache, target, ask, key: key.clone(), slot: slot.clone(), stale };
    let result = cache.get_or_fill(key, fill.run()).await;
    let ran = std::mem::replace(&mut *lock(&slot), Slot::Taken);
    match (result, ran) {
        (Ok(entry), Slot::Ran { lookup, origin_bytes }) => Ok(Looked::Served(from_entry(&entry, lookup, origin_bytes, &client_headers, Reply::Whole))),
        (Ok(entry), _) => {
            cache.count_hit();
            Ok(Looked::Served(from_entry(&entry, Lookup::Hit, 0, &client_headers, Reply::Whole)))
        }
        (Err(unstored), Slot::Waiting(req)) => {
            drop(unstored);
            Ok(Looked::Again(*req))
        }
        (Err(unstored), _) => match lock(&unstored.0).take() {
            Some(result) => result.map(|served| Looked::Served(with_x_cache(served, Lookup::Miss))),
            None => Err(ProxyError::Internal { what: "a cache fill's response was taken twice".to_string() }),
        },
    }
}

/// Where the request of the client calling [`Cache::get_or_fill`] waits: taken by the fill
/// when this client's future is the one that runs.
enum Slot {
    Waiting(Box<Request<Incoming>>),
    Ran { lookup: Lookup, origin_bytes: u64 },
    Taken,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; it is still usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a fill that kept nothing hands back: the response (or error) for the client that ran
/// it. Waiters never take it: the slot tells them apart.
struct Unstored(Box<Mutex<Option<Result<Served, ProxyError>>>>);

impl Unstored {
    fn new(result: Result<Served, ProxyError>) -> Unstored {
        Unstored(Box::new(Mutex::new(Some(result))))
    }
}

/// A stale entry and the conditional headers that revalidate it.
type Stale = (Arc<Entry>, Vec<(header::HeaderName, HeaderValue)>);

/// One fetch-and-rewrite for a key, possibly a revalidation of a stale entry.
struct Fill<'a> {
    state: &'a State,
    cache: &'a Arc<Cache>,
    target: &'a Target<'a>,
    ask: &'a Ask,
    key: Key,
    slot: Arc<Mutex<Slot>>,
    stale: Option<Stale>,
}

impl Fill<'_> {
    async fn run(self) -> Result<Arc<Entry>, Unstored> {
        let taken = std::mem::replace(&mut *lock(&self.slot), Slot::Ran { lookup: Lookup::Miss, origin_bytes: 0 });
        let Slot::Waiting(req) = taken else {
            return Err(Unstored::new(Err(ProxyError::Internal { what: "a cache fill ran without its request".to_string() })));
        };
        let mut req = *req;
        // The request as the client sent it, to ask again for the whole page should the
        // revalidation's 304 be about another representation (a GET has no body to keep).
        let mut unconditional = None;
        if let Some((_, conditions)) = &self.stale {
            if http_body::Body::is_end_stream(req.body()) {
                unconditional = Some(head_of(&req));
            }
            for (name, value) in conditions {
                req.headers_mut().insert(name.clone(), value.clone());
            }
        }
        let accept_encoding = req.headers().get(header::ACCEPT_ENCODING).cloned();
        let accept = req.headers().get(header::ACCEPT).cloned();
        let sent = send(self.state, self.target, req).await;
        if let Some(entry) = self.stale_if_error(&sent) {
            return Ok(entry);
        }
        let mut resp = match sent {
            Ok(resp) => resp,
            Err(e) => return Err(Unstored::new(Err(e))),
        };
        if resp.status() == StatusCode::NOT_MODIFIED {
            if let Some((entry, _)) = &self.stale {
                let refused = match entry.refreshed(self.ask, resp.headers(), SystemTime::now()) {
                    Ok(entry) => return Ok(self.refreshed(entry)),
                    Err(refused) => refused,
                };
                resp = self.fetch_whole(unconditional, refused).await?;
            }
        }
        self.cache.count_miss();
        let (status, origin_headers) = (resp.status(), resp.headers().clone());
        let url = self.target.uri.to_string();
        let ex = Exchange { method: &self.ask.method, host: self.target.host, url: &url, accept_encoding, accept, profile: self.target.profile, client: self.target.client };
        let page = match respond::respond_outcome(self.state, &ex, resp).await {
            Ok(Outcome::Rewritten(page)) => page,
            Ok(Outcome::Passed(served)) => return Err(Unstored::new(Ok(self.keep_streamed(status, &origin_headers, served).await))),
            Err(e) => return Err(Unstored::new(Err(e))),
        };
        self.set_ran(Lookup::Miss, page.origin_bytes);
        self.keep(status, &origin_headers, page).await
    }

    fn set_ran(&self, lookup: Lookup, origin_bytes: u64) {
        *lock(&self.slot) = Slot::Ran { lookup, origin_bytes };
    }

    /// The stale entry being revalidated, when the origin failed (unreachable, or 500, 502,
    /// 503, 504) and its `stale-if-error` (or the client's) covers how stale it is. It is kept
    /// again as it was, so the next request asks the origin again.
    fn stale_if_error(&self, sent: &Result<Response<Incoming>, ProxyError>) -> Option<Arc<Entry>> {
        let (entry, _) = self.stale.as_ref()?;
        let failed = match sent {
            Ok(resp) => cache::is_server_error(resp.status()),
            Err(_) => true,
        };
        if !failed || !entry.may_serve_stale(&self.ask.headers, Grace::IfError, SystemTime::now()) {
            return None;
        }
        tracing::debug!(url = %self.target.uri, "origin failed; serving the kept response stale");
        self.set_ran(Lookup::Stale, 0);
        Some(entry.clone())
    }

    /// A 304 to the revalidation: the kept page again, with refreshed freshness.
    fn refreshed(&self, entry: Entry) -> Arc<Entry> {
        self.cache.count_revalidation();
        self.set_ran(Lookup::Revalidated, 0);
        let entry = Arc::new(entry);
        self.cache.note_stored(&self.key, &entry);
        entry
    }

    /// The page asked for again without conditions, because the origin's 304 named another
    /// representation than the kept one: the kept page must not be used, and the origin's
    /// current one is fetched instead (RFC 9111 §4.3.4). A request with a body cannot be sent
    /// twice; it gets the refusal as an upstream error.
    async fn fetch_whole(&self, unconditional: Option<Request<()>>, refused: cache::RefreshError) -> Result<Response<Incoming>, Unstored> {
        tracing::debug!(url = %self.target.uri, error = %refused, "revalidation answered for another representation; fetching the page whole");
        let Some(req) = unconditional else {
            return Err(Unstored::new(Err(ProxyError::Upstream { host: self.target.host.to_string(), source: Box::new(refused) })));
        };
        let via = self.state.config.upstream.send_via.then_some(&self.state.via);
        let sent = match forward::prepare(req, self.target.uri.clone(), via) {
            Ok(req) => forward::send_bodiless(&self.state.clients, self.target.deny_private, req, self.target.host, &self.state.config.upstream).await,
            Err(e) => Err(e),
        };
        sent.map_err(|e| Unstored::new(Err(e)))
    }

    /// A response streamed through unrewritten, with a copy kept as it streams when HTTP
    /// allows storing it ([`Tee`]). Requests for its URL meanwhile go to the origin rather
    /// than wait for the download to end ([`Cache::note_pass`]); storing the entry lifts that.
    async fn keep_streamed(&self, status: StatusCode, origin_headers: &HeaderMap, served: Served) -> Served {
        // A page passed for want of memory is rewritten (and kept) next time; a placeholder
        // is never kept.
        if matches!(served.action, Action::OverBudget | Action::Placeholder) {
            return served;
        }
        self.cache.note_pass(&self.key);
        let stored = served.response.headers().clone();
        let pending = match cache::admit_head(self.ask, (status, origin_headers), stored, Form::Origin, self.cache.max_entry_bytes(), SystemTime::now()) {
            Ok(pending) => pending,
            Err(refusal) => {
                tracing::debug!(url = %self.target.uri, ?refusal, "response not kept");
                return served;
            }
        };
        let key = if self.key.varies_on(pending.vary()) { self.key.clone() } else { self.key.with_vary(pending.vary(), &self.ask.headers) };
        let (parts, body) = served.response.into_parts();
        if http_body::Body::is_end_stream(&body) {
            // An empty body (a 204, a redirect with Content-Length: 0) is never polled.
            if let Ok(entry) = pending.finish(Bytes::new()) {
                self.cache.insert(key, Arc::new(entry)).await;
            }
            return Served { response: Response::from_parts(parts, body), ..served };
        }
        let store = Store { cache: self.cache.clone(), key, url: self.target.uri.to_string() };
        let body = http_body_util::BodyExt::boxed_unsync(Tee::new(body, pending, store));
        Served { response: Response::from_parts(parts, body), ..served }
    }

    /// Keeps a rewritten page when HTTP allows it. A page that varies on other request
    /// headers than the key was made with is stored under its proper key here, and the
    /// waiters look again.
    async fn keep(&self, status: StatusCode, origin_headers: &HeaderMap, page: respond::Rewritten) -> Result<Arc<Entry>, Unstored> {
        let admitted = cache::admit(self.ask, (status, origin_headers), page.parts.headers.clone(), page.body.clone(), self.cache.max_entry_bytes(), SystemTime::now());
        let entry = match admitted {
            Ok(entry) => Arc::new(entry),
            Err(refusal) => {
                tracing::debug!(url = %self.target.uri, ?refusal, "page not kept");
                self.cache.note_pass(&self.key);
                return Err(Unstored::new(Ok(page.into_served())));
            }
        };
        if self.key.varies_on(entry.vary()) {
            self.cache.note_stored(&self.key, &entry);
            return Ok(entry);
        }
        let key = self.key.with_vary(entry.vary(), &self.ask.headers);
        self.cache.insert(key, entry.clone()).await;
        Err(Unstored::new(Ok(from_entry(&entry, Lookup::Miss, page.origin_bytes, &self.ask.headers, Reply::Whole))))
    }
}

/// A revalidation that outlives the request it was started for (`stale-while-revalidate`):
/// that client was served the stale entry at once; this brings the entry up to date for the
/// next. One runs per key at a time ([`Cache::begin_revalidation`]); should it fail, the stale
/// entry stays, and is served until its window ends.
struct Background {
    state: Arc<State>,
    cache: Arc<Cache>,
    profile: Arc<Profile>,
    host: String,
    deny_private: bool,
    ask: Ask,
    key: Key,
}

impl Background {
    /// Starts revalidating `entry`, asking as the client's request `head` did with
    /// `conditions` added, unless a revalidation of the key is running already.
    fn revalidate(self, entry: Arc<Entry>, conditions: Vec<(header::HeaderName, HeaderValue)>, mut head: Request<()>) {
        if !self.cache.begin_revalidation(&self.key) {
            return;
        }
        for (name, value) in conditions {
            head.headers_mut().insert(name, value);
        }
        tokio::spawn(async move {
            if let Err(e) = self.run(&entry, head).await {
                tracing::debug!(url = %self.ask.uri, error = %e, "background revalidation failed; the stale entry stays");
            }
            self.cache.end_revalidation(&self.key);
        });
    }

    async fn run(&self, entry: &Entry, head: Request<()>) -> Result<(), ProxyError> {
        let via = self.state.config.upstream.send_via.then_some(&self.state.via);
        let req = forward::prepare(head, self.ask.uri.clone(), via)?;
        let accept_encoding = req.headers().get(header::ACCEPT_ENCODING).cloned();
        let resp = forward::send_bodiless(&self.state.clients, self.deny_private, req, &self.host, &self.state.config.upstream).await?;
        if resp.status() == StatusCode::NOT_MODIFIED {
            match entry.refreshed(&self.ask, resp.headers(), SystemTime::now()) {
                Ok(refreshed) => {
                    self.cache.count_revalidation();
                    self.cache.insert(self.key.clone(), Arc::new(refreshed)).await;
                }
                // About another representation: the next request fetches the page whole.
                Err(_) => self.cache.invalidate(&self.key).await,
            }
            return Ok(());
        }
        if cache::is_server_error(resp.status()) {
            return Ok(());
        }
        self.cache.count_miss();
        let (status, origin_headers) = (resp.status(), resp.headers().clone());
        let url = self.ask.uri.to_string();
        let accept = self.ask.headers.get(header::ACCEPT).cloned();
        let ex = Exchange { method: &self.ask.method, host: &self.host, url: &url, accept_encoding, accept, profile: &self.profile, client: None };
        let now = SystemTime::now();
        let max = self.cache.max_entry_bytes();
        let admitted = match respond::respond_outcome(&self.state, &ex, resp).await? {
            Outcome::Rewritten(page) => cache::admit(&self.ask, (status, &origin_headers), page.parts.headers, page.body, max, now),
            Outcome::Passed(served) if matches!(served.action, Action::OverBudget | Action::Placeholder) => return Ok(()),
            Outcome::Passed(served) => match cache::admit_head(&self.ask, (status, &origin_headers), served.response.headers().clone(), Form::Origin, max, now) {
                Ok(pending) => {
                    let room = usize::try_from(pending.room()).unwrap_or(usize::MAX);
                    let Ok(body) = http_body_util::BodyExt::collect(http_body_util::Limited::new(served.response.into_body(), room)).await else {
                        // Too large to keep now, or cut off: the kept entry no longer stands for it.
                        self.cache.invalidate(&self.key).await;
                        return Ok(());
                    };
                    pending.finish(body.to_bytes())
                }
                Err(refusal) => Err(refusal),
            },
        };
        match admitted {
            Ok(entry) => {
                let key = if self.key.varies_on(entry.vary()) { self.key.clone() } else { self.key.with_vary(entry.vary(), &self.ask.headers) };
                self.cache.insert(key, Arc::new(entry)).await;
            }
            // No longer storable (now `no-store`, say): the stale entry must not be served again.
            Err(_) => self.cache.invalidate(&self.key).await,
        }
        Ok(())
    }
}

/// A copy of a request's head, with no body.
fn head_of(req: &Request<Incoming>) -> Request<()> {
    let mut head = Request::new(());
    *head.method_mut() = req.method().clone();
    *head.uri_mut() = req.uri().clone();
    *head.version_mut() = req.version();
    *head.headers_mut() = req.headers().clone();
    *head.extensions_mut() = req.extensions().clone();
    head
}

/// The request as the cache sees it, as a `method` request: the client's headers as they will
/// be forwarded.
fn ask(req: &Request<Incoming>, uri: &Uri, method: Method) -> Ask {
    let mut headers = req.headers().clone();
    forward::strip_hop_by_hop(&mut headers);
    if let Some(host) = uri.authority().and_then(|a| HeaderValue::from_str(a.as_str()).ok()) {
        headers.insert(header::HOST, host);
    }
    Ask::new(method, uri.clone(), headers)
}

/// Prepares and sends a request upstream.
async fn send(state: &State, target: &Target<'_>, req: Request<Incoming>) -> Result<Response<Incoming>, ProxyError> {
    let via = state.config.upstream.send_via.then_some(&state.via);
    let req = forward::prepare(req, target.uri.clone(), via)?;
    forward::send(&state.clients, target.deny_private, req, target.host, &state.config.upstream).await
}

/// The uncached path: forward, then classify and rewrite or pass through.
async fn forward_and_respond(state: &State, target: &Target<'_>, req: Request<Incoming>) -> Result<Served, ProxyError> {
    let method = req.method().clone();
    let accept_encoding = req.headers().get(header::ACCEPT_ENCODING).cloned();
    let accept = req.headers().get(header::ACCEPT).cloned();
    let url = target.uri.to_string();
    let resp = send(state, target, req).await?;
    let ex = Exchange { method: &method, host: target.host, url: &url, accept_encoding, accept, profile: target.profile, client: target.client };
    respond::respond(state, &ex, resp).await
}

/// What a kept response answers with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// Head and body (a GET).
    Whole,
    /// The head alone, `Content-Length` as for the GET (a HEAD).
    Head,
    /// The part the request's `Range` asks for (a 206), or the whole when it asks for none.
    Part,
}

/// What the cache did for a request: its `X-Cache` header and, for a kept response, the
/// access log's action. One value gives both, so the header and the log cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// A fresh kept response.
    Hit,
    /// Nothing usable was kept: the origin answered (and its page was kept, if HTTP allows).
    Miss,
    /// A stale kept response that the origin said has not changed.
    Revalidated,
    /// A stale kept response served as the origin allowed (RFC 5861).
    Stale,
}

impl Lookup {
    /// The `X-Cache` header's word for it.
    const fn x_cache(self) -> &'static str {
        match self {
            Lookup::Hit => "HIT",
            Lookup::Miss => "MISS",
            Lookup::Revalidated => "REVALIDATED",
            Lookup::Stale => "STALE",
        }
    }

    /// The access log's action when a kept response is served: a page fetched on a miss was
    /// rewritten for this request.
    const fn action(self) -> Action {
        match self {
            Lookup::Hit => Action::Hit,
            Lookup::Miss => Action::Rewrite,
            Lookup::Revalidated => Action::Revalidated,
            Lookup::Stale => Action::Stale,
        }
    }
}

/// A kept response for one client: 304 when the client's own validators match it, else the
/// response (its head alone for a HEAD), with `Age` and `X-Cache`.
fn from_entry(entry: &Entry, lookup: Lookup, origin_bytes: u64, request: &HeaderMap, reply: Reply) -> Served {
    let age = HeaderValue::from(entry.age(SystemTime::now()).as_secs());
    let mut response = if entry.is_not_modified_for(request) {
        let mut resp = Response::new(bodies::full(Bytes::new()));
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        for name in [header::ETAG, header::CACHE_CONTROL, header::EXPIRES, header::DATE, header::VARY, header::CONTENT_LOCATION, header::VIA] {
            for value in entry.headers.get_all(&name) {
                resp.headers_mut().append(name.clone(), value.clone());
            }
        }
        resp
    } else {
        let len = entry.body.len() as u64;
        let part = if reply == Reply::Part && entry.status == StatusCode::OK { entry.part(request) } else { Part::Whole };
        let (status, body) = match part {
            Part::Whole if reply == Reply::Head => (entry.status, Bytes::new()),
            Part::Whole => (entry.status, entry.body.clone()),
            // `last` < `len`: [`cache::range::part`] clips it.
            Part::Bytes { first, last } => (StatusCode::PARTIAL_CONTENT, entry.body.slice(first as usize..=last as usize)),
            Part::Unsatisfiable => (StatusCode::RANGE_NOT_SATISFIABLE, Bytes::new()),
        };
        let mut resp = Response::new(bodies::full(body));
        *resp.status_mut() = status;
        *resp.headers_mut() = entry.headers.clone();
        if part != Part::Whole {
            resp.headers_mut().insert(header::CONTENT_RANGE, range::content_range(part, len));
            let sent = if let Part::Bytes { first, last } = part { last - first + 1 } else { 0 };
            resp.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(sent));
        }
        resp
    };
    response.headers_mut().insert(header::AGE, age);
    let served = Served { response, action: lookup.action(), origin_bytes };
    with_x_cache(served, lookup)
}

fn with_x_cache(mut served: Served, lookup: Lookup) -> Served {
    served.response.headers_mut().insert("x-cache", HeaderValue::from_static(lookup.x_cache()));
    served
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! same_host {
        ($name:ident, $reference:expr, $expect:expr) => {
            #[test]
            fn $name() {
                let base: Uri = "http://example.com:8080/dir/form?x=1".parse().unwrap();
                assert_eq!(same_host_url(&base, $reference).as_deref(), $expect);
            }
        };
    }

    // RFC 9111 §4.4: Location and Content-Location, resolved against the target, on its host.
    same_host!(absolute_path, "/moved", Some("http://example.com:8080/moved"));
    same_host!(relative_path, "page", Some("http://example.com:8080/dir/page"));
    same_host!(absolute_same_host, "http://EXAMPLE.com:8080/a", Some("http://example.com:8080/a"));
    same_host!(other_port_same_host, "http://example.com/a", Some("http://example.com/a"));
    same_host!(other_host, "http://other.example/a", None);
    same_host!(network_path_other_host, "//other.example/a", None);
    same_host!(not_a_url, "http://[::1", None);
}
