//! The cache, forward and respond steps of a request, in that order.
//!
//! A request the cache may answer ([`crate::cache::is_candidate`]: a GET, not a range, for a
//! profile other than `pass`) is looked up first. A fresh page is served from memory
//! (`X-Cache: HIT`); a stale one is revalidated with the origin's validators, and a 304 serves
//! the kept page again without rewriting it (`X-Cache: REVALIDATED`); otherwise the page is
//! fetched and rewritten (`X-Cache: MISS`) and kept when HTTP allows it.
//!
//! Concurrent misses for one key run one fetch ([`Cache::get_or_fill`]). The fill future
//! takes the request of the client whose call runs it from a shared slot: the client whose
//! request is still in its slot afterwards was a waiter. A waiter gets the stored page; when
//! the fill kept nothing (a private page, an error, a stream passed through), the waiter
//! looks up once more (the origin's `Vary` is known by then) and otherwise forwards its own
//! request, so nothing meant for one client reaches another.
//!
//! Everything else (the `pass` profile, other methods, ranges, the cache switched off)
//! goes straight to the origin as before.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use hyper::body::Incoming;

use super::bodies;
use super::error::ProxyError;
use super::forward;
use super::respond::{self, Exchange, Outcome, Served};
use super::State;
use crate::body as codec;
use crate::cache::{self, Ask, Cache, Entry, Freshness, Key};
use crate::pipeline::Profile;

/// Where a request goes, for the steps after admission.
pub struct Target<'a> {
    /// The origin's host, for errors.
    pub host: &'a str,
    /// The absolute URL.
    pub uri: Uri,
    /// The profile serving the client.
    pub profile: &'a Profile,
}

/// Serves a request that is not for pith itself: from the cache when it can, else from the
/// origin.
pub async fn serve(state: &State, target: Target<'_>, req: Request<Incoming>) -> Result<Served, ProxyError> {
    let Some(cache) = state.cache.as_ref().filter(|_| !target.profile.is_pass() && cache::is_candidate(req.method(), req.headers())) else {
        return forward_and_respond(state, &target, req).await;
    };
    let ask = ask(&req, &target.uri);
    let coding = codec::choose_encoding(req.headers().get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()));
    let mut req = req;
    // Twice at most: a waiter whose fill kept nothing looks again once, with the Vary names
    // the fill learnt.
    for _ in 0..2 {
        let key = cache.key(&ask, target.profile, coding);
        req = match lookup(state, cache, &target, &ask, key, req).await? {
            Looked::Served(served) => return Ok(served),
            Looked::Again(req) => req,
        };
    }
    Ok(with_x_cache(forward_and_respond(state, &target, req).await?, "MISS"))
}

enum Looked {
    Served(Served),
    /// A fill by another request kept nothing; this request is still to be sent.
    Again(Request<Incoming>),
}

/// One look at the cache under `key`: a fresh entry, or a (re)validating fill.
async fn lookup(state: &State, cache: &Cache, target: &Target<'_>, ask: &Ask, key: Key, req: Request<Incoming>) -> Result<Looked, ProxyError> {
    let mut stale = None;
    if let Some(entry) = cache.get(&key).await {
        match entry.freshness(ask, SystemTime::now()) {
            Freshness::Fresh { .. } => {
                cache.count_hit();
                return Ok(Looked::Served(from_entry(&entry, "HIT", "hit", 0, req.headers())));
            }
            Freshness::Stale { conditions } => stale = Some((entry, conditions)),
        }
    }
    // A client revalidating its own copy is answered by the origin, unless a fresh page is
    // kept; so is a URL whose last response could not be kept.
    if cache::is_conditional(req.headers()) || (stale.is_none() && cache.is_pass(&key)) {
        return Ok(Looked::Served(with_x_cache(forward_and_respond(state, target, req).await?, "MISS")));
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
        (Ok(entry), Slot::Ran { revalidated, origin_bytes }) => {
            let (x_cache, action) = if revalidated { ("REVALIDATED", "revalidated") } else { ("MISS", "rewrite") };
            Ok(Looked::Served(from_entry(&entry, x_cache, action, origin_bytes, &client_headers)))
        }
        (Ok(entry), _) => {
            cache.count_hit();
            Ok(Looked::Served(from_entry(&entry, "HIT", "hit", 0, &client_headers)))
        }
        (Err(unstored), Slot::Waiting(req)) => {
            drop(unstored);
            Ok(Looked::Again(*req))
        }
        (Err(unstored), _) => match lock(&unstored.0).take() {
            Some(result) => result.map(|served| Looked::Served(with_x_cache(served, "MISS"))),
            None => Err(ProxyError::Internal { what: "a cache fill's response was taken twice".to_string() }),
        },
    }
}

/// Where the request of the client calling [`Cache::get_or_fill`] waits: taken by the fill
/// when this client's future is the one that runs.
enum Slot {
    Waiting(Box<Request<Incoming>>),
    Ran { revalidated: bool, origin_bytes: u64 },
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
    cache: &'a Cache,
    target: &'a Target<'a>,
    ask: &'a Ask,
    key: Key,
    slot: Arc<Mutex<Slot>>,
    stale: Option<Stale>,
}

impl Fill<'_> {
    async fn run(self) -> Result<Arc<Entry>, Unstored> {
        let taken = std::mem::replace(&mut *lock(&self.slot), Slot::Ran { revalidated: false, origin_bytes: 0 });
        let Slot::Waiting(req) = taken else {
            return Err(Unstored::new(Err(ProxyError::Internal { what: "a cache fill ran without its request".to_string() })));
        };
        let mut req = *req;
        if let Some((_, conditions)) = &self.stale {
            for (name, value) in conditions {
                req.headers_mut().insert(name.clone(), value.clone());
            }
        }
        let accept_encoding = req.headers().get(header::ACCEPT_ENCODING).cloned();
        let resp = match send(self.state, self.target, req).await {
            Ok(resp) => resp,
            Err(e) => return Err(Unstored::new(Err(e))),
        };
        if resp.status() == StatusCode::NOT_MODIFIED {
            if let Some((entry, _)) = &self.stale {
                return self.refresh(entry, resp.headers());
            }
        }
        self.cache.count_miss();
        let (status, origin_headers) = (resp.status(), resp.headers().clone());
        let url = self.target.uri.to_string();
        let ex = Exchange { method: &self.ask.method, host: self.target.host, url: &url, accept_encoding, profile: self.target.profile };
        let page = match respond::respond_outcome(self.state, &ex, resp).await {
            Ok(Outcome::Rewritten(page)) => page,
            Ok(Outcome::Passed(served)) => {
                // A page passed for want of memory is rewritten (and kept) next time.
                if served.action != respond::OVER_BUDGET {
                    self.cache.note_pass(&self.key);
                }
                return Err(Unstored::new(Ok(served)));
            }
            Err(e) => return Err(Unstored::new(Err(e))),
        };
        self.set_ran(false, page.origin_bytes);
        self.keep(status, &origin_headers, page).await
    }

    fn set_ran(&self, revalidated: bool, origin_bytes: u64) {
        *lock(&self.slot) = Slot::Ran { revalidated, origin_bytes };
    }

    /// A 304 to the revalidation: the kept page again, with refreshed freshness.
    fn refresh(&self, entry: &Entry, not_modified: &HeaderMap) -> Result<Arc<Entry>, Unstored> {
        match entry.refreshed(self.ask, not_modified, SystemTime::now()) {
            Ok(entry) => {
                self.cache.count_revalidation();
                self.set_ran(true, 0);
                self.cache.note_stored(&self.key, &entry);
                Ok(Arc::new(entry))
            }
            Err(e) => Err(Unstored::new(Err(ProxyError::Upstream { host: self.target.host.to_string(), source: Box::new(e) }))),
        }
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
        Err(Unstored::new(Ok(from_entry(&entry, "MISS", "rewrite", page.origin_bytes, &self.ask.headers))))
    }
}

/// The request as the cache sees it: the client's headers as they will be forwarded.
fn ask(req: &Request<Incoming>, uri: &Uri) -> Ask {
    let mut headers = req.headers().clone();
    forward::strip_hop_by_hop(&mut headers);
    if let Some(host) = uri.authority().and_then(|a| HeaderValue::from_str(a.as_str()).ok()) {
        headers.insert(header::HOST, host);
    }
    Ask { method: req.method().clone(), uri: uri.clone(), headers }
}

/// Prepares and sends a request upstream.
async fn send(state: &State, target: &Target<'_>, req: Request<Incoming>) -> Result<Response<Incoming>, ProxyError> {
    let via = state.config.upstream.send_via.then_some(&state.via);
    let req = forward::prepare(req, target.uri.clone(), via)?;
    forward::send(&state.client, req, target.host, &state.config.upstream).await
}

/// The uncached path: forward, then classify and rewrite or pass through.
async fn forward_and_respond(state: &State, target: &Target<'_>, req: Request<Incoming>) -> Result<Served, ProxyError> {
    let method = req.method().clone();
    let accept_encoding = req.headers().get(header::ACCEPT_ENCODING).cloned();
    let url = target.uri.to_string();
    let resp = send(state, target, req).await?;
    let ex = Exchange { method: &method, host: target.host, url: &url, accept_encoding, profile: target.profile };
    respond::respond(state, &ex, resp).await
}

/// A kept page for one client: 304 when the client's own validators match it, else the
/// page, with `Age` and `X-Cache`.
fn from_entry(entry: &Entry, x_cache: &'static str, action: &'static str, origin_bytes: u64, request: &HeaderMap) -> Served {
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
        let mut resp = Response::new(bodies::full(entry.body.clone()));
        *resp.status_mut() = entry.status;
        *resp.headers_mut() = entry.headers.clone();
        resp
    };
    response.headers_mut().insert(header::AGE, age);
    let served = Served { response, action, origin_bytes };
    with_x_cache(served, x_cache)
}

fn with_x_cache(mut served: Served, x_cache: &'static str) -> Served {
    served.response.headers_mut().insert("x-cache", HeaderValue::from_static(x_cache));
    served
}
