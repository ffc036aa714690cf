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
//! - **Bounds** ([`crate::net::choices::Onces`], [`crate::net::choices::MAX_CLIENTS`]): saved choices (profile, site switches) are kept
//!   for at most [`crate::net::choices::MAX_CLIENTS`] identities with at most [`crate::net::choices::MAX_SITES`] switches each, and are
//!   never evicted by other clients' traffic: a new identity past the cap browses in its
//!   listener's profile and is told why it cannot save. One-shot choices live apart, at most
//!   [`crate::net::choices::MAX_ONCE`] per device and [`crate::net::choices::MAX_ONCE_DEVICES`] devices, keyed by a digest of the URL;
//!   expired ones are swept by time, and past the cap the device whose one-shots are oldest
//!   is evicted. Worst case in memory: about 10,000 × (200 switches of a 253-byte host) for
//!   saved choices (≈ 600 MB only if every identity fills every switch; the file holds the
//!   same), and 4096 × 8 × 64 B ≈ 2 MiB for one-shots, whatever the traffic.
//! - **PAC** ([`pac`]), **metrics** ([`crate::net::observe`]) and the operators' section (`/admin`).

use super::{page, pac};

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use base64::Engine;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::net::exchange::bodies::{self, ProxyBody};
use crate::net::own;
use crate::net::State;
use crate::config::{ControlConfig, Credentials, ListenerConfig};

use crate::profile::Profile;
use crate::net::choices::{client_id, device, url_digest, Control, Refused, MAX_SITES};


impl Refused {
    /// The page that tells the client.
    fn page(self) -> Response<ProxyBody> {
        let title = format!("{} {}", self.0.as_u16(), self.0.canonical_reason().unwrap_or(""));
        own::page(self.0, &title, &format!("<p>{}</p><p><a href=\"/\">pith</a></p>", own::escape(&self.1)))
    }
}

/// The largest form body read.
const MAX_FORM_BYTES: usize = 8 * 1024;
/// The longest URL `/once` takes.
const MAX_URL: usize = 4096;

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

/// `/metrics`: the cache's counters, the observer's, and the choices and image turns.
async fn metrics(state: &State) -> Response<ProxyBody> {
    let snapshot = match &state.cache {
        Some(cache) => Some(cache.snapshot().await),
        None => None,
    };
    let (saved, devices, waiting, evicted) = state.control.counts();
    let (image_waits, placeholders) = crate::net::observe::image_counts();
    let text = crate::net::own::metrics::render(snapshot.as_ref(), &state.observer, &[
        ("pith_choices_clients", "gauge", "Clients with saved choices (a profile or site switches); at most 10000.", saved as u64),
        ("pith_once_devices", "gauge", "Devices with one-shot choices waiting; at most 4096.", devices as u64),
        ("pith_once_waiting", "gauge", "One-shot choices waiting to be used.", waiting as u64),
        ("pith_once_evicted_total", "counter", "Devices whose one-shot choices were dropped to make room for another's.", evicted),
        ("pith_image_waits_total", "counter", "Images that waited for a transcoding turn (turns go to clients in turn).", image_waits),
        ("pith_image_placeholders_total", "counter", "Images that waited past limits.image_wait_ms and were sent a placeholder.", placeholders),
    ]);
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
    cfg.offered.iter().find(|p| p.reader.is_none() && !p.is_pass() && p.output == crate::profile::Output::Html)
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


}
