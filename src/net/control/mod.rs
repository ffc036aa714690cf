//! The control page at `http://pith/` (through the proxy, or on a listener's own address): what
//! pith does for this client, and the client's own choices, which the next requests follow.
//!
//! - **Who**: a client is its proxy-auth user where its listener has `auth`, else its IP
//!   address, an IPv6 one by its /64 as the connection caps count it ([`client_id`]). One
//!   client never sees or changes another's choices: every page and every change is for the
//!   client asking. One-shot choices belong to the device (its address, grouped the same way)
//!   even under `auth`: two devices of one user do not spend each other's.
//! - **Choices** ([`Control`]): a profile among `control.profiles`, per-site switches ("this
//!   host always as the original", "in reading mode"), and one-shot choices made from the bar
//!   on served pages (`/once`). They are kept in the state file ([`crate::state`]) and read
//!   into memory at start-up; the request path looks them up in memory only, and not at all
//!   while nobody has made one ([`Control::profile_for`]).
//! - **Changes** are POSTs of plain forms, with a token per client (an HMAC of the client's id
//!   under a secret kept in the state file) and, when the browser sends one, an `Origin` (or
//!   `Referer`) that is pith itself: a page elsewhere cannot change a client's choices.
//! - **The bar** ([`bar`]): a line atop each rewritten page with links to `/once`, which
//!   redirects back to the same URL after noting that this device's next request for it is
//!   served in the other profile. Each link carries a signature over (URL, profile) made with
//!   pith's secret, the same for every client, so the page stays the same for everyone in its
//!   profile and is cached per profile as any page. `/once` without a valid signature records
//!   nothing and redirects nowhere: it shows a page with one button, a form POST with the
//!   client's token, so it is neither an open redirect nor a change made by a plain GET.
//! - **Bounds** ([`Onces`], [`MAX_CLIENTS`]): saved choices (profile, site switches) are kept
//!   for at most [`MAX_CLIENTS`] identities with at most [`MAX_SITES`] switches each, and are
//!   never evicted by other clients' traffic: a new identity past the cap browses in its
//!   listener's profile and is told why it cannot save. One-shot choices live apart, at most
//!   [`MAX_ONCE`] per device and [`MAX_ONCE_DEVICES`] devices, keyed by a digest of the URL;
//!   expired ones are swept by time, and past the cap the device whose one-shots are oldest
//!   is evicted. Worst case in memory: about 10,000 × (200 switches of a 253-byte host) for
//!   saved choices (≈ 600 MB only if every identity fills every switch; the file holds the
//!   same), and 4096 × 8 × 64 B ≈ 2 MiB for one-shots, whatever the traffic.
//! - **PAC** ([`pac`]), **metrics** ([`tally`]) and the operators' section (`/admin`).

mod page;
pub mod pac;
pub mod tally;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::bodies::{self, ProxyBody};
use super::{own, State};
use crate::config::{ControlConfig, Credentials, ListenerConfig};
use crate::pipeline::Profile;
use crate::state::{Snapshot, StateError, Store};

/// Most clients with choices held at once; a new client past it is told so.
pub const MAX_CLIENTS: usize = 10_000;
/// Most per-site switches of one client.
pub const MAX_SITES: usize = 200;
/// Most one-shot choices of one device waiting to be used.
pub const MAX_ONCE: usize = 8;
/// Most devices with one-shot choices waiting at once.
pub const MAX_ONCE_DEVICES: usize = 4096;
/// How often expired one-shot choices are swept, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(30);
/// How long a one-shot choice waits for its request.
const ONCE_FOR: Duration = Duration::from_secs(120);
/// The largest form body read.
const MAX_FORM_BYTES: usize = 8 * 1024;
/// The longest URL `/once` takes.
const MAX_URL: usize = 4096;

/// What one client chose.
#[derive(Debug, Default, Clone)]
struct Prefs {
    /// Its profile; `None`: the listener's.
    profile: Option<String>,
    /// Host → profile name.
    sites: BTreeMap<String, String>,
}

impl Prefs {
    /// The profile name chosen for `host`: the switch of the most specific name that has one
    /// (a switch for `example.com` covers `www.example.com`), else the client's own.
    fn chosen(&self, host: &str) -> Option<&String> {
        if self.sites.is_empty() {
            return self.profile.as_ref();
        }
        crate::host::find_by_suffix(host, |h| self.sites.get(h)).or(self.profile.as_ref())
    }

    fn is_empty(&self) -> bool {
        self.profile.is_none() && self.sites.is_empty()
    }
}

/// One one-shot choice: a digest of its URL, the profile, and until when it waits.
#[derive(Debug, Clone)]
struct Once {
    url: [u8; 16],
    profile: String,
    until: Instant,
}

/// The one-shot choices of every device, bounded ([`MAX_ONCE`], [`MAX_ONCE_DEVICES`]) and
/// swept by time.
#[derive(Debug)]
pub struct Onces {
    devices: HashMap<IpAddr, Vec<Once>>,
    swept: Instant,
    /// Devices evicted to make room, since start.
    evicted: u64,
}

impl Onces {
    fn new() -> Onces {
        Onces { devices: HashMap::new(), swept: Instant::now(), evicted: 0 }
    }

    /// Drops every expired one-shot, at most once per [`SWEEP_EVERY`] unless `force`.
    fn sweep(&mut self, now: Instant, force: bool) {
        if !force && now.duration_since(self.swept) < SWEEP_EVERY {
            return;
        }
        self.swept = now;
        self.devices.retain(|_, list| {
            list.retain(|o| o.until > now);
            !list.is_empty()
        });
    }

    /// Notes that `device`'s next request for the URL of digest `url` is served in `profile`.
    /// Past [`MAX_ONCE_DEVICES`], expired one-shots are swept, then the device whose newest
    /// one-shot is oldest makes room.
    fn insert(&mut self, device: IpAddr, url: [u8; 16], profile: &str, now: Instant) {
        self.sweep(now, false);
        if !self.devices.contains_key(&device) && self.devices.len() >= MAX_ONCE_DEVICES {
            self.sweep(now, true);
            if self.devices.len() >= MAX_ONCE_DEVICES {
                let oldest = self.devices.iter().min_by_key(|(_, l)| l.iter().map(|o| o.until).max()).map(|(d, _)| *d);
                if let Some(d) = oldest {
                    self.devices.remove(&d);
                    self.evicted += 1;
                }
            }
        }
        let list = self.devices.entry(device).or_default();
        list.retain(|o| o.until > now && o.url != url);
        if list.len() >= MAX_ONCE {
            list.remove(0);
        }
        list.push(Once { url, profile: profile.to_string(), until: now + ONCE_FOR });
    }

    /// The profile of `device`'s one-shot choice for the URL of digest `url`, used up.
    fn take(&mut self, device: IpAddr, url: [u8; 16], now: Instant) -> Option<String> {
        self.sweep(now, false);
        let list = self.devices.get_mut(&device)?;
        list.retain(|o| o.until > now);
        let taken = list.iter().position(|o| o.url == url).map(|i| list.remove(i).profile);
        if list.is_empty() {
            self.devices.remove(&device);
        }
        taken
    }

    /// One-shot choices waiting now (expired ones not yet swept included).
    fn waiting(&self) -> usize {
        self.devices.values().map(Vec::len).sum()
    }
}

/// The digest a one-shot choice keeps of its URL: 16 bytes whatever the URL's length.
fn url_digest(url: &str) -> [u8; 16] {
    let d = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&d.as_ref()[..16]);
    out
}

/// The device a request came from, as one-shot choices are kept: its address, an IPv6 one
/// by its /64.
pub fn device(ip: IpAddr) -> IpAddr {
    super::rate::client_key(ip)
}

/// Every client's choices, the state file they are kept in, and the counts of what was served.
/// Made once at start-up and kept across reloads.
pub struct Control {
    store: Store,
    prefs: RwLock<HashMap<String, Prefs>>,
    /// False while no client has any choice: the request path then skips the lookup.
    any: AtomicBool,
    /// One-shot choices, per device.
    onces: Mutex<Onces>,
    /// True once a one-shot choice was made: until then the request path skips that lookup.
    any_once: AtomicBool,
    /// Serialises changes, so the file and the memory agree on the order they were made in.
    writing: tokio::sync::Mutex<()>,
    key: ring::hmac::Key,
    /// What was served, for the page and `/metrics`.
    pub tally: tally::Tally,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").field("state_file", &self.store.path()).field("any", &self.any).finish_non_exhaustive()
    }
}

/// A reason a change was refused, shown to the client.
struct Refused(StatusCode, String);

impl Refused {
    /// The page that tells the client.
    fn page(self) -> Response<ProxyBody> {
        let title = format!("{} {}", self.0.as_u16(), self.0.canonical_reason().unwrap_or(""));
        own::page(self.0, &title, &format!("<p>{}</p><p><a href=\"/\">pith</a></p>", own::escape(&self.1)))
    }
}

impl Control {
    /// Opens the state file of `cfg` (or none) and reads the choices in it.
    pub fn open(cfg: &ControlConfig) -> Result<Control, StateError> {
        let (store, snapshot) = match &cfg.state_path {
            Some(path) => Store::open(path)?,
            None => (Store::in_memory(), Snapshot::default()),
        };
        let secret = if snapshot.secret.len() >= 32 {
            snapshot.secret.clone()
        } else {
            let fresh = new_secret();
            store.set_secret(&fresh)?;
            fresh
        };
        let mut prefs: HashMap<String, Prefs> = HashMap::new();
        for (client, profile) in snapshot.profiles {
            prefs.entry(client).or_default().profile = Some(profile);
        }
        for ((client, host), switch) in snapshot.sites {
            prefs.entry(client).or_default().sites.insert(host, switch);
        }
        if let Some(path) = store.path() {
            tracing::info!(path = %path.display(), clients = prefs.len(), "state file opened");
        }
        Ok(Control {
            store,
            any: AtomicBool::new(!prefs.is_empty()),
            prefs: RwLock::new(prefs),
            onces: Mutex::new(Onces::new()),
            any_once: AtomicBool::new(false),
            writing: tokio::sync::Mutex::new(()),
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
            tally: tally::Tally::default(),
        })
    }

    /// The profile chosen for `url` on `host` when it differs from the listener's: `device`'s
    /// one-shot choice for this URL (used up), else `who`'s (made only when someone has a
    /// saved choice) switch for the host, else its own profile. `None` costs two atomic loads
    /// while nobody has chosen anything, and a map lookup otherwise.
    pub fn profile_for(&self, cfg: &ControlConfig, who: impl FnOnce() -> String, device: IpAddr, host: &str, url: &str) -> Option<Arc<Profile>> {
        if !cfg.choices {
            return None;
        }
        if self.any_once.load(Ordering::Relaxed) {
            let once = self.onces.lock().unwrap_or_else(PoisonError::into_inner).take(self::device(device), url_digest(url), Instant::now());
            if let Some(profile) = once.and_then(|n| cfg.offered(&n).cloned()) {
                return Some(profile);
            }
        }
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let prefs = self.prefs.read().unwrap_or_else(PoisonError::into_inner);
        prefs.get(&who())?.chosen(host).and_then(|n| cfg.offered(n)).cloned()
    }

    /// The signature the bar's `/once` links carry for (`url`, `profile`): the same for every
    /// client, made with pith's secret.
    fn once_signature(&self, url: &str, profile: &str) -> String {
        let tag = ring::hmac::sign(&self.key, format!("once\n{profile}\n{url}").as_bytes());
        tag.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    fn once_signature_matches(&self, url: &str, profile: &str, sent: &str) -> bool {
        let want = self.once_signature(url, profile);
        want.len() == sent.len() && want.bytes().zip(sent.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }

    /// Clients with saved choices, devices with one-shots, one-shots waiting, devices evicted.
    pub fn counts(&self) -> (usize, usize, usize, u64) {
        let saved = self.prefs.read().unwrap_or_else(PoisonError::into_inner).len();
        let onces = self.onces.lock().unwrap_or_else(PoisonError::into_inner);
        (saved, onces.devices.len(), onces.waiting(), onces.evicted)
    }

    /// `who`'s choices, for its page.
    fn prefs_of(&self, who: &str) -> Prefs {
        self.prefs.read().unwrap_or_else(PoisonError::into_inner).get(who).cloned().unwrap_or_default()
    }

    /// Applies `change` to `who`'s choices after `persist` has written it to the file.
    async fn change(
        self: &Arc<Self>,
        who: &str,
        persist: impl FnOnce(&Store) -> Result<(), StateError> + Send + 'static,
        change: impl FnOnce(&mut Prefs) -> Result<(), Refused>,
    ) -> Result<(), Refused> {
        let _turn = self.writing.lock().await;
        let mut next = self.prefs_of(who);
        change(&mut next)?;
        {
            let prefs = self.prefs.read().unwrap_or_else(PoisonError::into_inner);
            if !prefs.contains_key(who) && prefs.len() >= MAX_CLIENTS && !next.is_empty() {
                return Err(Refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("pith holds the saved choices of {MAX_CLIENTS} clients already, and never drops one client's to make room for another's: this device browses in its listener's profile. The bar's links still work; ask the operator to make room."),
                ));
            }
        }
        let this = self.clone();
        let written = tokio::task::spawn_blocking(move || persist(&this.store)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "a choice could not be written to the state file");
                return Err(Refused(StatusCode::INTERNAL_SERVER_ERROR, "pith could not save this choice; the operator will find why in its log".into()));
            }
            Err(join) => return Err(Refused(StatusCode::INTERNAL_SERVER_ERROR, format!("saving failed: {join}"))),
        }
        let mut prefs = self.prefs.write().unwrap_or_else(PoisonError::into_inner);
        if next.is_empty() {
            prefs.remove(who);
        } else {
            prefs.insert(who.to_string(), next);
            self.any.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The token `who`'s forms carry. Public for the fuzz targets.
    #[doc(hidden)]
    pub fn token(&self, who: &str) -> String {
        let tag = ring::hmac::sign(&self.key, who.as_bytes());
        tag.as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    fn token_matches(&self, who: &str, sent: &str) -> bool {
        let want = self.token(who);
        want.len() == sent.len() && want.bytes().zip(sent.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

/// 32 random bytes from the system, for the token key.
fn new_secret() -> Vec<u8> {
    let mut secret = vec![0u8; 32];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret).is_err() {
        // No system randomness: a digest of what differs between runs, so tokens still differ
        // per installation; logged, since a guessable key weakens the tokens.
        tracing::warn!("no system randomness for the control page's token key; using a weaker one");
        let seed = format!("{:?}{}{:p}", std::time::SystemTime::now(), std::process::id(), &secret);
        secret = ring::digest::digest(&ring::digest::SHA256, seed.as_bytes()).as_ref().to_vec();
    }
    secret
}

/// A client's id: `user:NAME` when its listener has `auth` (the request was admitted with
/// those credentials), else `ip:ADDRESS` (an IPv4 client on an IPv6 socket as IPv4; an IPv6
/// client by its /64, `ip:NETWORK/64`, as the connection caps count it).
pub fn client_id(listener: &ListenerConfig, ip: IpAddr) -> String {
    match &listener.auth {
        Some(creds) => format!("user:{}", creds.user),
        None => match device(ip) {
            v4 @ IpAddr::V4(_) => format!("ip:{v4}"),
            v6 => format!("ip:{v6}/64"),
        },
    }
}

/// A request to pith itself, as the control page needs it.
pub struct Asked<'a> {
    /// The state in force.
    pub state: &'a Arc<State>,
    /// The listener it came in on.
    pub listener: &'a ListenerConfig,
    /// The client's address.
    pub client: IpAddr,
}

/// Serves a request addressed to pith: the control page's routes, and [`own::serve_own`] for
/// every other path.
pub async fn serve(asked: Asked<'_>, req: Request<Incoming>, uri: &http::Uri) -> Response<ProxyBody>
{
    let state = asked.state;
    let cfg = &state.config.control;
    let who = client_id(asked.listener, asked.client);
    let path = uri.path();
    match (req.method().clone(), path) {
        (Method::GET | Method::HEAD, "/") => page::home(state, asked.listener, &pac::proxy_address(asked.listener, req.headers()), &who, &state.control.prefs_of(&who), &state.control.token(&who)),
        (Method::GET | Method::HEAD, "/proxy.pac" | "/wpad.dat") => pac::serve(state, asked.listener, req.headers()),
        (Method::GET | Method::HEAD, "/metrics") => metrics(state).await,
        (Method::GET | Method::HEAD, "/once") => once(state, asked.client, &who, uri.query().unwrap_or("")),
        (Method::POST, "/once") => match check_post(state, &who, req).await {
            Ok(form) => once_confirmed(state, asked.client, &form),
            Err(Refused(status, why)) => own::page(status, "Not changed", &format!("<p>{}</p><p><a href=\"/\">Back to pith</a></p>", own::escape(&why))),
        },
        (Method::POST, "/choose" | "/site") => {
            let refused = match check_post(state, &who, req).await {
                Ok(form) if path == "/choose" => choose(state, &who, cfg, &form).await.err(),
                Ok(form) => switch(state, &who, cfg, &form).await.err(),
                Err(refused) => Some(refused),
            };
            match refused {
                None => see_other("/"),
                Some(Refused(status, why)) => own::page(status, "Not changed", &format!("<p>{}</p><p><a href=\"/\">Back to pith</a></p>", own::escape(&why))),
            }
        }
        (_, "/admin" | "/admin/purge") => admin(state, req, path).await,
        (_, "/" | "/proxy.pac" | "/wpad.dat" | "/once" | "/choose" | "/site") => {
            let mut resp = own::page(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed", "<p>Use the forms on <a href=\"/\">pith's page</a>.</p>");
            let allow = match path {
                "/choose" | "/site" => "POST",
                "/once" => "GET, HEAD, POST",
                _ => "GET, HEAD",
            };
            resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
            resp
        }
        _ => own::serve_own(state, path).await,
    }
}

/// A 303 to `location` (a path of pith's own, or the URL `/once` was given).
fn see_other(location: &str) -> Response<ProxyBody> {
    let mut resp = Response::new(bodies::full(Bytes::new()));
    *resp.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `/metrics`: the cache's counters and the tally's.
async fn metrics(state: &State) -> Response<ProxyBody> {
    let snapshot = match &state.cache {
        Some(cache) => Some(cache.snapshot().await),
        None => None,
    };
    let mut text = crate::cache::render_metrics(snapshot.as_ref());
    text.push_str(&state.control.tally.render());
    let (saved, devices, waiting, evicted) = state.control.counts();
    for (name, kind, help, value) in [
        ("pith_choices_clients", "gauge", "Clients with saved choices (a profile or site switches); at most 10000.", saved as u64),
        ("pith_once_devices", "gauge", "Devices with one-shot choices waiting; at most 4096.", devices as u64),
        ("pith_once_waiting", "gauge", "One-shot choices waiting to be used.", waiting as u64),
        ("pith_once_evicted_total", "counter", "Devices whose one-shot choices were dropped to make room for another's.", evicted),
        ("pith_image_waits_total", "counter", "Images that waited for a transcoding turn (turns go to clients in turn).", super::images::counts().0),
        ("pith_image_placeholders_total", "counter", "Images that waited past limits.image_wait_ms and were sent a placeholder.", super::images::counts().1),
    ] {
        text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
    }
    let mut resp = Response::new(bodies::full(text));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// A one-shot choice asked for: the profile offered and the URL, checked.
struct OnceAsked {
    profile: Arc<Profile>,
    url: String,
}

/// The profile and URL of a `/once` query or form, checked: an offered profile, an absolute
/// http(s) URL of at most [`MAX_URL`] bytes.
fn once_asked(cfg: &ControlConfig, profile: Option<&str>, url: Option<&str>) -> Result<OnceAsked, Refused> {
    let bad = |why: &str| Refused(StatusCode::BAD_REQUEST, why.to_string());
    if !cfg.choices {
        return Err(Refused(StatusCode::FORBIDDEN, "Choices are off: this proxy serves every page in its listener's profile.".into()));
    }
    let Some(profile) = profile.and_then(|p| cfg.offered(p)) else { return Err(bad("No profile offered here by that name.")) };
    let Some(url) = url.filter(|u| u.len() <= MAX_URL).and_then(|u| u.parse::<http::Uri>().ok()) else { return Err(bad("The url is missing, too long or not a URL.")) };
    let web = matches!(url.scheme_str(), Some("http" | "https")) && url.host().is_some_and(|h| !h.is_empty());
    if !web {
        return Err(bad("Only http and https URLs can be served once in another profile."));
    }
    Ok(OnceAsked { profile: profile.clone(), url: url.to_string() })
}

/// `/once?profile=P&url=U&sig=S`: with the signature the bar's link carries, `client`'s device's
/// next request for `U` is served in `P`, and the answer redirects to `U`. Without a valid
/// one, nothing is noted: a page asks, with one button that posts the choice with the
/// client's token ([`once_confirmed`]).
fn once(state: &State, client: IpAddr, who: &str, query: &str) -> Response<ProxyBody> {
    let mut profile = None;
    let mut url = None;
    let mut sig = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "profile" => profile = Some(v.into_owned()),
            "url" => url = Some(v.into_owned()),
            "sig" => sig = Some(v.into_owned()),
            _ => {}
        }
    }
    let asked = match once_asked(&state.config.control, profile.as_deref(), url.as_deref()) {
        Ok(asked) => asked,
        Err(refused) => return refused.page(),
    };
    // Signed over the URL as the bar wrote it (the one the page was served for).
    let given = url.as_deref().unwrap_or_default();
    if sig.is_some_and(|s| state.control.once_signature_matches(given, &asked.profile.name, &s)) {
        return note_once(state, client, &asked);
    }
    let body = format!(
        "<p>Serve <a href=\"{url}\">{shown}</a> once in the <b>{profile}</b> profile?</p>\
         <form method=\"post\" action=\"/once\"><input type=\"hidden\" name=\"token\" value=\"{token}\">\
         <input type=\"hidden\" name=\"profile\" value=\"{profile}\"><input type=\"hidden\" name=\"url\" value=\"{url}\">\
         <button type=\"submit\">Serve it once</button></form><p><a href=\"/\">pith</a></p>",
        url = own::escape(&asked.url),
        shown = own::escape(&asked.url),
        profile = own::escape(&asked.profile.name),
        token = state.control.token(who),
    );
    own::page(StatusCode::OK, "Serve this page once?", &body)
}

/// `POST /once`, its token and origin checked: the one-shot choice noted, then a redirect.
fn once_confirmed(state: &State, client: IpAddr, form: &HashMap<String, String>) -> Response<ProxyBody> {
    match once_asked(&state.config.control, form.get("profile").map(String::as_str), form.get("url").map(String::as_str)) {
        Ok(asked) => note_once(state, client, &asked),
        Err(refused) => refused.page(),
    }
}

/// Notes a one-shot choice for `client`'s device and redirects to its URL.
fn note_once(state: &State, client: IpAddr, asked: &OnceAsked) -> Response<ProxyBody> {
    let mut onces = state.control.onces.lock().unwrap_or_else(PoisonError::into_inner);
    onces.insert(device(client), url_digest(&asked.url), &asked.profile.name, Instant::now());
    state.control.any_once.store(true, Ordering::Relaxed);
    drop(onces);
    see_other(&asked.url)
}

/// The form of a POST that passed the checks: an allowed origin, a form body, `who`'s token.
async fn check_post(state: &State, who: &str, req: Request<Incoming>) -> Result<HashMap<String, String>, Refused>
{
    if !state.config.control.choices {
        return Err(Refused(StatusCode::FORBIDDEN, "Choices are off on this proxy.".into()));
    }
    same_origin(state, req.headers())?;
    let is_form = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|t| t.trim().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return Err(Refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Send the form as the page does (application/x-www-form-urlencoded).".into()));
    }
    tokened_form(state, who, req, "This form is out of date or was not sent from pith's page; load the page again.").await
}

/// The fields of a form POST (at most [`MAX_FORM_BYTES`]), when it carries `who`'s token;
/// `stale` is what the client is told when it does not.
async fn tokened_form(state: &State, who: &str, req: Request<Incoming>, stale: &str) -> Result<HashMap<String, String>, Refused> {
    let body = http_body_util::Limited::new(req.into_body(), MAX_FORM_BYTES)
        .collect()
        .await
        .map_err(|e| Refused(StatusCode::BAD_REQUEST, format!("The form could not be read: {e}")))?
        .to_bytes();
    state.control.tokened_fields(who, &body).ok_or_else(|| Refused(StatusCode::FORBIDDEN, stale.to_string()))
}

impl Control {
    /// The fields of the form `body` (`application/x-www-form-urlencoded`; a name given twice
    /// keeps its last value), when its `token` is `who`'s. Public for the fuzz targets.
    #[doc(hidden)]
    pub fn tokened_fields(&self, who: &str, body: &[u8]) -> Option<HashMap<String, String>> {
        let form: HashMap<String, String> = url::form_urlencoded::parse(body).into_owned().collect();
        form.get("token").is_some_and(|t| self.token_matches(who, t)).then_some(form)
    }
}

/// Refuses a POST whose `Origin` (or, without one, `Referer`) is not pith itself. A request
/// with neither (some text browsers send none) relies on its token alone.
fn same_origin(state: &State, headers: &HeaderMap) -> Result<(), Refused> {
    let named = headers.get(header::ORIGIN).or_else(|| headers.get(header::REFERER));
    let Some(value) = named else { return Ok(()) };
    let uri = value.to_str().ok().and_then(|v| v.parse::<http::Uri>().ok());
    let is_self = uri.as_ref().and_then(|u| {
        let port = u.port_u16().unwrap_or(if u.scheme_str() == Some("https") { 443 } else { 80 });
        u.host().map(|h| state.is_self(h.trim_matches(|c| c == '[' || c == ']'), port))
    });
    match is_self {
        Some(true) => Ok(()),
        _ => Err(Refused(StatusCode::FORBIDDEN, "Changes are taken only from pith's own page.".into())),
    }
}

async fn choose(state: &State, who: &str, cfg: &ControlConfig, form: &HashMap<String, String>) -> Result<(), Refused> {
    let choice = match form.get("profile").map(String::as_str) {
        None | Some("") => None,
        Some(name) => Some(cfg.offered(name).ok_or_else(|| Refused(StatusCode::BAD_REQUEST, format!("No profile {name:?} is offered here.")))?.name.clone()),
    };
    let (id, stored) = (who.to_string(), choice.clone());
    state.control.change(who, move |s| s.set_profile(&id, stored.as_deref()), |p| {
        p.profile = choice;
        Ok(())
    }).await
}

async fn switch(state: &State, who: &str, cfg: &ControlConfig, form: &HashMap<String, String>) -> Result<(), Refused> {
    let given = form.get("host").map(|h| h.trim()).unwrap_or_default();
    // A URL pasted whole names its host.
    let from_url = given.contains("://").then(|| given.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_string))).flatten();
    let host = crate::host::normalise(from_url.as_deref().unwrap_or(given)).trim_matches(|c| c == '[' || c == ']').to_string();
    let is_name = host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b));
    if host.is_empty() || host.len() > 253 || !(is_name || host.parse::<IpAddr>().is_ok()) {
        return Err(Refused(StatusCode::BAD_REQUEST, "Give the site as a host name, such as example.com.".into()));
    }
    let mode = match form.get("mode").map(String::as_str) {
        None | Some("") => None,
        Some(name) => Some(cfg.offered(name).ok_or_else(|| Refused(StatusCode::BAD_REQUEST, format!("No profile {name:?} is offered here.")))?.name.clone()),
    };
    let (id, h, stored) = (who.to_string(), host.clone(), mode.clone());
    state.control.change(who, move |s| s.set_site(&id, &h, stored.as_deref()), |p| {
        match mode {
            Some(m) => {
                if !p.sites.contains_key(&host) && p.sites.len() >= MAX_SITES {
                    return Err(Refused(StatusCode::BAD_REQUEST, format!("At most {MAX_SITES} sites can have a switch; remove one first.")));
                }
                p.sites.insert(host, m);
            }
            None => {
                p.sites.remove(&host);
            }
        }
        Ok(())
    }).await
}

/// The bar atop a page rewritten in `profile` at `url`: links that serve the same URL once as
/// the original and in reading mode (or de-cluttered, on a reading page), and one to the
/// control page; on a page fetched over HTTPS for a plain-HTTP client, a word that the hop to
/// pith is unencrypted. `None` when the profile has no bar or choices are off.
pub fn bar(control: &Control, cfg: &ControlConfig, profile: &Profile, url: &str) -> Option<String> {
    if !cfg.choices || !profile.bar || profile.is_pass() || url.len() > MAX_URL {
        return None;
    }
    let encoded: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
    let mut links = Vec::new();
    if let Some(pass) = cfg.offered("pass") {
        links.push((pass.name.clone(), "original"));
    }
    if profile.reader.is_some() {
        if let Some(plain) = declutter_profile(cfg) {
            links.push((plain.name.clone(), "de-cluttered"));
        }
    } else if let Some(reader) = cfg.offered.iter().find(|p| p.reader.is_some()) {
        links.push((reader.name.clone(), "reading mode"));
    }
    // The page's font and colours, as the text below; English and left to right whatever the
    // page is. Four items for a screen reader: a skip link past the bar and the three links.
    // The declutter and reading stylesheets make each link a target of at least 24×24 CSS px
    // (WCAG 2.2) and draw the line between two, rather than a word read aloud
    // (`crate::render::bar_style!`).
    let mut html = String::from("<nav aria-label=\"pith\" lang=\"en\" dir=\"ltr\">");
    // Spaces between the links, for a page without pith's stylesheet (a stage-1 page).
    html.push_str("<a href=\"#pith-content\">pith: skip to content</a> ");
    for (name, label) in links {
        let sig = control.once_signature(url, &name);
        html.push_str(&format!("<a href=\"http://pith/once?profile={}&amp;url={encoded}&amp;sig={sig}\">{label}</a> ", own::escape(&name)));
    }
    html.push_str("<a href=\"http://pith/\">settings</a>");
    // A plain-HTTP client of a listener that fetches HTTPS for it: the page came over TLS, but
    // the last hop did not, and no padlock will say so.
    if profile.adapt.as_ref().is_some_and(|a| matches!(a.links, crate::html::adapt::Links::Downgrade { .. })) {
        html.push_str(" <span>unencrypted between this device and pith</span>");
    }
    html.push_str("</nav><span id=\"pith-content\" tabindex=\"-1\"></span>");
    Some(html)
}

/// The profile the bar offers for "de-cluttered" on a reading page.
fn declutter_profile(cfg: &ControlConfig) -> Option<&Arc<Profile>> {
    cfg.offered.iter().find(|p| p.reader.is_none() && !p.is_pass() && p.output == crate::pipeline::Output::Html)
}

/// The bar's signed one-shot link serving `url` de-cluttered, for a reading page in `profile`
/// that is unsure of its content ([`crate::extract::unsure`]); `None` where the bar has none.
pub fn declutter_link(control: &Control, cfg: &ControlConfig, profile: &Profile, url: &str) -> Option<String> {
    if !cfg.choices || !profile.bar || profile.reader.is_none() || url.len() > MAX_URL {
        return None;
    }
    let plain = declutter_profile(cfg)?;
    let encoded: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
    let sig = control.once_signature(url, &plain.name);
    let name: String = url::form_urlencoded::byte_serialize(plain.name.as_bytes()).collect();
    Some(format!("http://pith/once?profile={name}&url={encoded}&sig={sig}"))
}

/// Puts `bar` right after the page's `<body>` tag (or its `</head>`); a page with neither is
/// left as it is.
pub fn insert_bar(page: &mut Vec<u8>, bar: &[u8]) {
    let lower: Vec<u8> = page.iter().take(64 * 1024).map(u8::to_ascii_lowercase).collect();
    let body = memchr::memmem::find_iter(&lower, b"<body").find(|&i| lower.get(i + 5).is_some_and(|c| *c == b'>' || c.is_ascii_whitespace() || *c == b'/'));
    let at = match body {
        Some(i) => memchr::memchr(b'>', &lower[i..]).map(|end| i + end + 1),
        None => memchr::memmem::find(&lower, b"</head>").map(|i| i + "</head>".len()),
    };
    if let Some(at) = at {
        page.splice(at..at, bar.iter().copied());
    }
}

/// The operators' section: nothing of it without `control.admin`'s credentials.
async fn admin(state: &State, req: Request<Incoming>, path: &str) -> Response<ProxyBody>
{
    let Some(creds) = &state.config.control.admin else {
        return own::page(StatusCode::NOT_FOUND, "404 Not Found", "<p>This proxy has no operators' section (<code>control.admin</code>).</p>");
    };
    if !admin_authorized(creds, req.headers()) {
        let mut resp = own::page(StatusCode::UNAUTHORIZED, "401 Unauthorized", "<p>The operators' section needs the operator's user name and password.</p>");
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"pith operators\", charset=\"UTF-8\""));
        return resp;
    }
    let who = format!("admin:{}", creds.user);
    match (req.method().clone(), path) {
        (Method::GET | Method::HEAD, "/admin") => page::admin(state, &state.control.token(&who), None),
        (Method::POST, "/admin/purge") => {
            let form = match check_admin_post(state, &who, req).await {
                Ok(form) => form,
                Err(Refused(status, why)) => return own::page(status, "Not done", &format!("<p>{}</p>", own::escape(&why))),
            };
            let url = form.get("url").map(|u| u.trim().to_string()).unwrap_or_default();
            let host = crate::host::normalise(form.get("host").map_or("", String::as_str)).into_owned();
            let done = match (&state.cache, url.parse::<http::Uri>()) {
                (None, _) => "The cache is off: there is nothing to purge.".to_string(),
                (Some(cache), _) if url.is_empty() && !host.is_empty() && host.len() <= 253 && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b)) => {
                    cache.purge_host(&host);
                    tracing::info!(%host, "cache entries purged by an operator");
                    format!("Purged everything kept from {host}, in every profile.")
                }
                (Some(cache), Ok(uri)) if uri.scheme().is_some() && uri.host().is_some() => {
                    cache.invalidate_uri(&uri.to_string());
                    tracing::info!(url = %uri, "cache entries purged by an operator");
                    format!("Purged what was kept for {uri}, in every profile.")
                }
                _ => "Give an absolute URL, such as https://example.com/page, or a host name.".to_string(),
            };
            page::admin(state, &state.control.token(&who), Some(&done))
        }
        _ => own::page(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed", "<p><a href=\"/admin\">The operators' section</a></p>"),
    }
}

async fn check_admin_post(state: &State, who: &str, req: Request<Incoming>) -> Result<HashMap<String, String>, Refused>
{
    same_origin(state, req.headers())?;
    tokened_form(state, who, req, "This form is out of date or was not sent from pith's page.").await
}

/// True when `Authorization` carries the operators' Basic credentials (compared in constant time).
fn admin_authorized(creds: &Credentials, headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else { return false };
    let Some((scheme, token)) = value.trim().split_once(' ') else { return false };
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(token.trim()) else { return false };
    let expected = format!("{}:{}", creds.user, creds.password);
    decoded.len() == expected.len() && decoded.iter().zip(expected.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_goes_after_the_body_tag() {
        let mut page = b"<html><head><title>t</title></head><BODY class=x><p>hi</p></body></html>".to_vec();
        insert_bar(&mut page, b"<nav>B</nav>");
        assert_eq!(String::from_utf8(page).unwrap(), "<html><head><title>t</title></head><BODY class=x><nav>B</nav><p>hi</p></body></html>");
        let mut headless = b"<p>no body</p>".to_vec();
        insert_bar(&mut headless, b"<nav>B</nav>");
        assert_eq!(headless, b"<p>no body</p>");
        let mut bodyless = b"<head></head><p>x</p>".to_vec();
        insert_bar(&mut bodyless, b"<nav>B</nav>");
        assert_eq!(bodyless, b"<head></head><nav>B</nav><p>x</p>");
    }

    #[test]
    fn clients_are_told_apart_by_address_without_auth() {
        let l = crate::config::Config::from_toml_str("", "t", None).unwrap().listeners[0].clone();
        assert_eq!(client_id(&l, "127.0.0.2".parse().unwrap()), "ip:127.0.0.2");
        assert_eq!(client_id(&l, "::ffff:127.0.0.2".parse().unwrap()), "ip:127.0.0.2");
        assert_eq!(client_id(&l, "2001:db8:1:2:aaaa::1".parse().unwrap()), "ip:2001:db8:1:2::/64", "grouped as the connection caps are");
        assert_eq!(client_id(&l, "2001:db8:1:2:bbbb::9".parse().unwrap()), "ip:2001:db8:1:2::/64");
    }

    /// Expired one-shots are reclaimed by time, whoever comes back; past the cap of devices
    /// the oldest go; a device's own cap holds.
    #[test]
    fn one_shots_are_bounded_and_swept_by_time() {
        let mut onces = Onces::new();
        let t0 = Instant::now();
        let dev = |i: u32| IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
        for i in 0..100 {
            onces.insert(dev(i), url_digest("http://a.example/"), "pass", t0);
        }
        assert_eq!(onces.devices.len(), 100);
        // Past their window, a sweep on the next use reclaims them.
        onces.insert(dev(1000), url_digest("http://b.example/"), "pass", t0 + ONCE_FOR + SWEEP_EVERY);
        assert_eq!(onces.devices.len(), 1, "expired one-shots swept by time");
        // The cap of devices: the oldest make room, counted.
        let t1 = t0 + ONCE_FOR * 3;
        for i in 0..(MAX_ONCE_DEVICES as u32 + 10) {
            onces.insert(dev(i), url_digest("http://c.example/"), "pass", t1 + Duration::from_millis(u64::from(i)));
        }
        assert_eq!(onces.devices.len(), MAX_ONCE_DEVICES);
        assert!(onces.evicted >= 10);
        assert!(!onces.devices.contains_key(&dev(0)), "the oldest went");
        // One device's cap.
        for i in 0..20 {
            onces.insert(dev(7), url_digest(&format!("http://d.example/{i}")), "pass", t1);
        }
        assert_eq!(onces.devices[&dev(7)].len(), MAX_ONCE);
        assert_eq!(onces.take(dev(7), url_digest("http://d.example/19"), t1).as_deref(), Some("pass"));
        assert_eq!(onces.take(dev(7), url_digest("http://d.example/19"), t1), None, "used up");
    }
}
