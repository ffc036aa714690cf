//! The URL gateway, for devices that cannot be set to use a proxy: `/read?url=URL` on a
//! listener's own address serves the page at URL through the listener's profile (or one of
//! its `gateway_profiles`, named by `&profile=`), with its links, images and GET forms
//! pointing back through `/read` ([`crate::html::adapt`]). `/read` alone is a box to type an
//! address in.
//!
//! A gateway request is a proxied request in all but its address: it is admitted by the
//! listener's allow list and credentials before it gets here, and goes through the same
//! cache, deny rules (by name and by address), limits, rewrite budget and verified TLS as any
//! other; so it is never an open relay where the proxy is not one. What differs is what is
//! forwarded: the client's request was addressed to pith, so of its headers only those that
//! describe what it accepts go on (never its cookies or credentials for pith), and the
//! origin's response loses what would act on pith's own origin in the browser (cookies, HSTS,
//! its CSP, cross-origin permissions) and gains a policy that lets no script run. A page the
//! profile could not rewrite (larger than `limits.max_rewrite_bytes`, or no room in the
//! rewrite budget) is refused rather than passed through: its links would leave the gateway
//! and its scripts would run on pith's origin.

use std::sync::Arc;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use hyper::body::Incoming;

use crate::net::exchange::bodies::ProxyBody;
use crate::net::observe::{AccessRecord, Action};
use crate::net::error::ProxyError;
use crate::net::exchange::respond::Served;
use crate::net::decide::{decide, Entry};
use crate::net::exchange::cached;
use crate::net::own;
use crate::net::State;
use crate::config::ListenerConfig;
use crate::html::adapt::{gateway_link, GATEWAY_PATH};

/// True when a request for one of pith's own pages is for the gateway.
pub fn is_route(path: &str) -> bool {
    path == GATEWAY_PATH
}

/// What a gateway request asks for, from its query. Public for the fuzz targets.
#[doc(hidden)]
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ask {
    /// The page, as given (`url=`).
    pub url: Option<String>,
    /// The profile (`profile=`).
    pub profile: Option<String>,
    /// Every other field: a GET form's, sent through the gateway, for the target's query.
    pub fields: Vec<(String, String)>,
}

impl Ask {
    /// The fields of a `/read` query: the first `url` and `profile`, and the rest in order.
    pub fn parse(query: &str) -> Ask {
        let mut ask = Ask::default();
        for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*name {
                "url" if ask.url.is_none() => ask.url = Some(value.trim().to_string()),
                "profile" if ask.profile.is_none() => ask.profile = Some(value.into_owned()).filter(|p| !p.is_empty()),
                _ => ask.fields.push((name.into_owned(), value.into_owned())),
            }
        }
        ask
    }
}

/// Serves `/read` on `listener`, filling in the access record as a proxied request does.
/// Returns the response and whether its body is the origin's own bytes streaming through.
pub async fn serve(state: &Arc<State>, listener: &ListenerConfig, req: Request<Incoming>, record: &mut AccessRecord) -> Result<(Response<ProxyBody>, bool), ProxyError> {
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        return Err(ProxyError::BadRequest { reason: format!("the gateway reads pages: {} is not GET or HEAD", req.method()) });
    }
    let ask = Ask::parse(req.uri().query().unwrap_or(""));
    let Some(url) = &ask.url else {
        record.action = Action::Own;
        return Ok((url_box(listener), false));
    };
    let uri = target(url, &ask.fields)?;
    record.url = uri.to_string();
    let (host, port) = host_port(&uri);
    if state.is_self(&host, port) {
        return Err(ProxyError::Loop { target: uri.to_string() });
    }
    let decision = decide(state, Entry::Gateway { listener, asked: ask.profile.as_deref() })?;
    record.profile = decision.profile.name.clone();
    let profile = decision.profile;
    let req = upstream_request(req, uri.clone());
    let target = cached::Target { host: &host, uri: uri.clone(), profile: &profile, deny_private: listener.deny_private, client: Some(record.client.ip()) };
    let mut served = cached::serve(state, target, req).await?;
    finish(&mut served, &uri, ask.profile.as_deref())?;
    record.action = served.action;
    record.origin_bytes = served.origin_bytes;
    Ok((served.response, served.action.streams_origin()))
}

/// The host (without brackets) and port of a target, as the loop check sees them. Public for
/// the fuzz targets.
#[doc(hidden)]
pub fn host_port(uri: &Uri) -> (String, u16) {
    let host = uri.host().unwrap_or_default().trim_matches(|c| c == '[' || c == ']').to_string();
    let port = uri.port_u16().unwrap_or(if uri.scheme() == Some(&http::uri::Scheme::HTTPS) { 443 } else { 80 });
    (host, port)
}

/// The absolute URL a gateway request names, with a form's `fields` added to its query. An
/// address typed without a scheme is taken as `http://`; only HTTP(S) URLs with a host and
/// without credentials are fetched. Public for the fuzz targets.
#[doc(hidden)]
pub fn target(given: &str, fields: &[(String, String)]) -> Result<Uri, ProxyError> {
    let bad = |why: &str| ProxyError::BadRequest { reason: format!("the gateway cannot read {given:?}: {why}") };
    let with_scheme = if given.contains("://") { given.to_string() } else { format!("http://{given}") };
    let mut url = url::Url::parse(&with_scheme).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("only http and https addresses are read"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("an address with credentials in it is not fetched"));
    }
    url.set_fragment(None);
    if !fields.is_empty() {
        let mut query = url.query_pairs_mut();
        for (name, value) in fields {
            query.append_pair(name, value);
        }
    }
    url.as_str().parse().map_err(|_| bad("it is not a valid request target"))
}

/// The client's headers that say what it accepts: the rest were meant for pith (cookies,
/// credentials, the gateway's own validators) and never reach the origin.
const FORWARDED: [HeaderName; 6] =
    [header::ACCEPT, header::ACCEPT_LANGUAGE, header::ACCEPT_ENCODING, header::USER_AGENT, header::CACHE_CONTROL, header::PRAGMA];

fn upstream_request(req: Request<Incoming>, uri: Uri) -> Request<Incoming> {
    let (mut parts, body) = req.into_parts();
    let mut headers = HeaderMap::new();
    for name in FORWARDED {
        for value in parts.headers.get_all(&name) {
            headers.append(name.clone(), value.clone());
        }
    }
    parts.headers = headers;
    parts.uri = uri;
    Request::from_parts(parts, body)
}

/// The origin's headers a gateway response keeps; the others act on pith's origin in the
/// browser (`Set-Cookie`, `Strict-Transport-Security`, CORS, `Clear-Site-Data`, the page's
/// CSP) or describe a connection.
const KEPT: [HeaderName; 15] = [
    header::CONTENT_TYPE,
    header::CONTENT_LENGTH,
    header::CONTENT_ENCODING,
    header::CONTENT_LANGUAGE,
    header::CACHE_CONTROL,
    header::EXPIRES,
    header::LAST_MODIFIED,
    header::ETAG,
    header::VARY,
    header::DATE,
    header::AGE,
    header::VIA,
    header::RETRY_AFTER,
    HeaderName::from_static("x-pith"),
    HeaderName::from_static("x-pith-fallback"),
];

/// The policy of every gateway response: no script, plug-in or frame runs on pith's origin,
/// and the page cannot move its links elsewhere with `<base>`.
const POLICY: &str = "script-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'self'";

/// A gateway response made safe to serve from pith's origin: an unrewritten page refused, a
/// redirect routed through the gateway, the origin's other headers filtered ([`KEPT`]).
fn finish(served: &mut Served, target: &Uri, profile: Option<&str>) -> Result<(), ProxyError> {
    let headers = served.response.headers();
    let rewritten = is_rewritten(headers);
    if is_html(headers) && !rewritten {
        return Err(ProxyError::NotRewritten { url: target.to_string() });
    }
    let location = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()).and_then(|l| {
        let base = url::Url::parse(&target.to_string()).ok()?;
        let mut to = base.join(l.trim()).ok()?;
        to.set_fragment(None);
        HeaderValue::from_str(&gateway_link(to.as_str(), profile, None)).ok()
    });
    let mut kept = HeaderMap::new();
    for name in KEPT.iter().chain([&HeaderName::from_static("x-cache")]) {
        for value in headers.get_all(name) {
            kept.append(name.clone(), value.clone());
        }
    }
    if let Some(location) = location {
        kept.insert(header::LOCATION, location);
    }
    if !rewritten && !kept.contains_key(header::CONTENT_TYPE) {
        // Not HTML by sniffing (or pith would have rewritten it): not to be sniffed as HTML
        // by the browser either.
        kept.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    }
    kept.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    kept.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    kept.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    *served.response.headers_mut() = kept;
    Ok(())
}

/// True when the response says it is HTML.
fn is_html(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|ct| {
        let essence = ct.split(';').next().unwrap_or("").trim();
        essence.eq_ignore_ascii_case("text/html") || essence.eq_ignore_ascii_case("application/xhtml+xml")
    })
}

/// True when pith rewrote the page: its `x-pith` summary names the profile that did.
fn is_rewritten(headers: &HeaderMap) -> bool {
    headers.get("x-pith").and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("profile=") && !v.contains("not-rewritten"))
}

/// `/read` without an address: a box to type one in, and the profiles offered.
pub fn url_box(listener: &ListenerConfig) -> Response<ProxyBody> {
    own::page(StatusCode::OK, "Read a page through pith", &own::box_html(Some(listener)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_are_parsed() {
        let ask = Ask::parse("url=https%3A%2F%2Fa.example%2Fs&profile=reader&q=two+words&url=second");
        assert_eq!(ask.url.as_deref(), Some("https://a.example/s"));
        assert_eq!(ask.profile.as_deref(), Some("reader"));
        assert_eq!(ask.fields, vec![("q".to_string(), "two words".to_string()), ("url".to_string(), "second".to_string())]);
        assert_eq!(Ask::parse(""), Ask::default());
    }

    macro_rules! targets {
        ($name:ident, $given:expr, $fields:expr, $expect:expr) => {
            #[test]
            fn $name() {
                let fields: Vec<(String, String)> = $fields.iter().map(|(a, b): &(&str, &str)| (a.to_string(), b.to_string())).collect();
                let got = target($given, &fields).map(|u| u.to_string()).map_err(|e| e.to_string());
                match $expect {
                    Ok(want) => assert_eq!(got.as_deref(), Ok(want)),
                    Err(part) => assert!(got.as_ref().is_err_and(|e: &String| e.contains(part)), "{got:?}"),
                }
            }
        };
    }

    targets!(https_kept, "https://a.example/x?y=1#frag", [], Ok::<&str, &str>("https://a.example/x?y=1"));
    targets!(no_scheme_is_http, "a.example/x", [], Ok::<&str, &str>("http://a.example/x"));
    targets!(form_fields_join_the_query, "http://a.example/s", [("q", "a b")], Ok::<&str, &str>("http://a.example/s?q=a+b"));
    targets!(ftp_refused, "ftp://a.example/", [], Err::<&str, &str>("only http and https"));
    targets!(file_refused, "file:///etc/passwd", [], Err::<&str, &str>("only http and https"));
    targets!(credentials_refused, "http://u:p@a.example/", [], Err::<&str, &str>("credentials"));

    #[test]
    fn only_rewritten_pages_count_as_rewritten() {
        let mut h = HeaderMap::new();
        assert!(!is_html(&h), "no type: sniffed by pith, which rewrites what it finds is HTML");
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("Text/HTML; charset=utf-8"));
        assert!(is_html(&h));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
        assert!(!is_html(&h));
        h.insert("x-pith", HeaderValue::from_static("profile=declutter; not-rewritten=over-budget"));
        assert!(!is_rewritten(&h));
        h.insert("x-pith", HeaderValue::from_static("profile=declutter; removed-elements=3"));
        assert!(is_rewritten(&h));
    }
}
