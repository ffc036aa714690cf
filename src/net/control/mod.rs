//! The control page at `http://pith/` (through the proxy, or on a listener's own address): what
//! pith does for this client, and the client's own choices, which the next requests follow.
//!
//! - **Who**: a client is its proxy-auth user where its listener has `auth`, else its IP
//!   address ([`client_id`]). One client never sees or changes another's choices: every page
//!   and every change is for the client asking.
//! - **Choices** ([`Control`]): a profile among `control.profiles`, per-site switches ("this
//!   host always as the original", "in reading mode"), and one-shot choices made from the bar
//!   on served pages (`/once`). They are kept in the state file ([`crate::state`]) and read
//!   into memory at start-up; the request path looks them up in memory only, and not at all
//!   while nobody has made one ([`Control::profile_for`]).
//! - **Changes** are POSTs of plain forms, with a token per client (an HMAC of the client's id
//!   under a secret kept in the state file) and, when the browser sends one, an `Origin` (or
//!   `Referer`) that is pith itself: a page elsewhere cannot change a client's choices.
//! - **The bar** ([`bar`]): a line atop each rewritten page with links to `/once`, which
//!   redirects back to the same URL after noting that this client's next request for it is
//!   served in the other profile. The page itself stays the same for everyone in its profile,
//!   so it is cached per profile as any page; `/once` only redirects an admitted client to the
//!   URL it named, and fetches nothing itself.
//! - **PAC** ([`pac`]), **metrics** ([`tally`]) and the operators' section (`/admin`).

mod page;
pub mod pac;
pub mod tally;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
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
/// Most one-shot choices of one client waiting to be used.
const MAX_ONCE: usize = 8;
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
    /// One-shot choices from the bar: (URL, profile, until).
    once: Vec<(String, String, Instant)>,
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
        self.profile.is_none() && self.sites.is_empty() && self.once.is_empty()
    }
}

/// Every client's choices, the state file they are kept in, and the counts of what was served.
/// Made once at start-up and kept across reloads.
pub struct Control {
    store: Store,
    prefs: RwLock<HashMap<String, Prefs>>,
    /// False while no client has any choice: the request path then skips the lookup.
    any: AtomicBool,
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
            writing: tokio::sync::Mutex::new(()),
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
            tally: tally::Tally::default(),
        })
    }

    /// The profile `who` (made only when someone has a choice) has chosen for `url` on `host`,
    /// when it differs from its listener's: a one-shot choice for this URL (used up), else a
    /// switch for the host, else its own profile. `None` costs one atomic load while nobody
    /// has chosen anything, and a map lookup otherwise.
    pub fn profile_for(&self, cfg: &ControlConfig, who: impl FnOnce() -> String, host: &str, url: &str) -> Option<Arc<Profile>> {
        if !cfg.choices || !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let who = who();
        {
            let prefs = self.prefs.read().unwrap_or_else(PoisonError::into_inner);
            let p = prefs.get(&who)?;
            if p.once.is_empty() {
                return p.chosen(host).and_then(|n| cfg.offered(n)).cloned();
            }
        }
        let mut prefs = self.prefs.write().unwrap_or_else(PoisonError::into_inner);
        let p = prefs.get_mut(&who)?;
        let now = Instant::now();
        p.once.retain(|o| o.2 > now);
        let once = p.once.iter().position(|o| o.0 == url).map(|i| p.once.remove(i).1);
        let name = once.as_ref().or_else(|| p.chosen(host));
        let chosen = name.and_then(|n| cfg.offered(n)).cloned();
        if p.is_empty() {
            prefs.remove(&who);
        }
        chosen
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
            if !prefs.contains_key(who) && prefs.len() >= MAX_CLIENTS {
                return Err(Refused(StatusCode::SERVICE_UNAVAILABLE, format!("pith holds the choices of {MAX_CLIENTS} clients already; ask the operator")));
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

    /// The token `who`'s forms carry.
    fn token(&self, who: &str) -> String {
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
/// those credentials), else `ip:ADDRESS` (an IPv4 client on an IPv6 socket as IPv4).
pub fn client_id(listener: &ListenerConfig, ip: IpAddr) -> String {
    match &listener.auth {
        Some(creds) => format!("user:{}", creds.user),
        None => {
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
                v4 => v4,
            };
            format!("ip:{ip}")
        }
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
        (Method::GET | Method::HEAD, "/once") => once(state, &who, uri.query().unwrap_or("")),
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
            resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static(if matches!(path, "/choose" | "/site") { "POST" } else { "GET, HEAD" }));
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
    let mut resp = Response::new(bodies::full(text));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `/once?profile=P&url=U`: `who`'s next request for `U` is served in `P`; answered with a
/// redirect to `U`.
fn once(state: &State, who: &str, query: &str) -> Response<ProxyBody> {
    let cfg = &state.config.control;
    let mut profile = None;
    let mut url = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "profile" => profile = Some(v.into_owned()),
            "url" => url = Some(v.into_owned()),
            _ => {}
        }
    }
    let bad = |why: &str| own::page(StatusCode::BAD_REQUEST, "400 Bad Request", &format!("<p>{}</p><p><a href=\"/\">pith</a></p>", own::escape(why)));
    if !cfg.choices {
        return own::page(StatusCode::FORBIDDEN, "Choices are off", "<p>This proxy serves every page in its listener's profile.</p>");
    }
    let Some(profile) = profile.as_deref().and_then(|p| cfg.offered(p)) else { return bad("No profile offered here by that name.") };
    let Some(url) = url.filter(|u| u.len() <= MAX_URL).and_then(|u| u.parse::<http::Uri>().ok()) else { return bad("The url is missing, too long or not a URL.") };
    let web = matches!(url.scheme_str(), Some("http" | "https")) && url.host().is_some_and(|h| !h.is_empty());
    if !web {
        return bad("Only http and https URLs can be served once in another profile.");
    }
    let target = url.to_string();
    {
        let mut prefs = state.control.prefs.write().unwrap_or_else(PoisonError::into_inner);
        if !prefs.contains_key(who) && prefs.len() >= MAX_CLIENTS {
            return own::page(StatusCode::SERVICE_UNAVAILABLE, "503 Service Unavailable", "<p>pith holds too many choices now; try again later.</p>");
        }
        let p = prefs.entry(who.to_string()).or_default();
        let now = Instant::now();
        p.once.retain(|o| o.2 > now && o.0 != target);
        if p.once.len() >= MAX_ONCE {
            p.once.remove(0);
        }
        p.once.push((target.clone(), profile.name.clone(), now + ONCE_FOR));
        state.control.any.store(true, Ordering::Relaxed);
    }
    see_other(&target)
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
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    if !form.get("token").is_some_and(|t| state.control.token_matches(who, t)) {
        return Err(Refused(StatusCode::FORBIDDEN, stale.to_string()));
    }
    Ok(form)
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
pub fn bar(cfg: &ControlConfig, profile: &Profile, url: &str) -> Option<String> {
    if !cfg.choices || !profile.bar || profile.is_pass() || url.len() > MAX_URL {
        return None;
    }
    let encoded: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
    let mut links = Vec::new();
    if let Some(pass) = cfg.offered("pass") {
        links.push((pass.name.clone(), "original"));
    }
    if profile.reader.is_some() {
        if let Some(plain) = cfg.offered.iter().find(|p| p.reader.is_none() && !p.is_pass() && p.output == crate::pipeline::Output::Html) {
            links.push((plain.name.clone(), "de-cluttered"));
        }
    } else if let Some(reader) = cfg.offered.iter().find(|p| p.reader.is_some()) {
        links.push((reader.name.clone(), "reading mode"));
    }
    // No style of its own: the page's (or pith's reading stylesheet) sets it as the text below.
    let mut html = String::from("<nav aria-label=\"pith\">pith: ");
    for (name, label) in links {
        html.push_str(&format!("<a href=\"http://pith/once?profile={}&amp;url={encoded}\">{label}</a> · ", own::escape(&name)));
    }
    html.push_str("<a href=\"http://pith/\">settings</a>");
    // A plain-HTTP client of a listener that fetches HTTPS for it: the page came over TLS, but
    // the last hop did not, and no padlock will say so.
    if profile.adapt.as_ref().is_some_and(|a| matches!(a.links, crate::html::adapt::Links::Downgrade { .. })) {
        html.push_str(" · unencrypted between this device and pith");
    }
    html.push_str("</nav>");
    Some(html)
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
    }
}
