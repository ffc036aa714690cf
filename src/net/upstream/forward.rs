//! Forwarding: the pooled upstream client, and turning a client's request into the request
//! sent to the origin.
//!
//! The client keeps connections alive and pooled per origin, speaks HTTP/1.1 or HTTP/2 (by
//! ALPN) to HTTPS origins, and always verifies their certificates against the web PKI roots
//! plus any roots the config adds. There is no switch to turn verification off: a certificate
//! that fails is an error naming the problem ([`UpstreamTlsError`]).
//!
//! Protocol switches (WebSocket) are the one exception to "headers are per hop": [`upgrade`]
//! forwards `Connection: upgrade` and `Upgrade`, and when the origin answers `101` it splices
//! the client's connection to the origin's, byte for byte.

use std::error::Error as StdError;
use std::sync::Arc;

use bytes::Bytes;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use hyper::body::Incoming;
use http_body_util::{Either, Empty};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::net::exchange::bodies::{self, ProxyBody};
use crate::net::accept::downstream::{close_when_idle, Downstream};
use crate::net::error::ProxyError;
use crate::net::upstream::pooled::{self, Stamping};
use crate::net::upstream::resolve::{CheckedResolver, DenyRules, ResolveError};
use crate::net::State;
use crate::config::UpstreamConfig;

pub use crate::net::upstream::pooled::{UpstreamBody, UpstreamClient};

/// The pooled upstream clients: one per destination policy, so that a connection opened for
/// a listener that may reach private addresses is never reused by one that may not.
#[derive(Clone)]
pub struct Clients {
    /// For listeners that refuse private destinations.
    pub strict: UpstreamClient,
    /// For listeners that may reach them.
    pub open: UpstreamClient,
}

impl Clients {
    /// Both clients for `cfg`.
    pub fn new(cfg: &UpstreamConfig) -> Clients {
        Clients { strict: client(cfg, true), open: client(cfg, false) }
    }

    /// The client of a listener that refuses private destinations when `deny_private`.
    pub fn get(&self, deny_private: bool) -> &UpstreamClient {
        if deny_private {
            &self.strict
        } else {
            &self.open
        }
    }
}

/// Builds an upstream client from the config, refusing private destinations when
/// `deny_private`.
pub fn client(cfg: &UpstreamConfig, deny_private: bool) -> UpstreamClient {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for cert in &cfg.extra_roots {
        // A root the PKI library cannot use is skipped, like a browser would; config loading
        // already checked that each file holds certificates.
        if let Err(e) = roots.add(cert.clone()) {
            tracing::warn!(error = %e, "an extra root certificate was rejected");
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new_with_resolver(CheckedResolver::new(cfg, deny_private));
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(cfg.connect_timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        // What one origin connection reads ahead of its client: hyper's default lets it grow
        // to 400 KiB, which a client that does not read holds outside the rewrite budget.
        .http1_max_buf_size(64 << 10)
        .pool_idle_timeout(cfg.pool_idle_timeout)
        .pool_max_idle_per_host(cfg.pool_max_idle_per_host)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .build(Stamping(https))
}

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus the
/// proxy's own credentials: none of them may cross the proxy.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

/// Removes hop-by-hop headers, including every header the `Connection` header names.
/// `Upgrade` goes too: only [`upgrade`] forwards a protocol switch, and it sets the headers
/// itself. A message framed by `Transfer-Encoding` loses its `Content-Length` as well: the
/// transfer coding overrides it, and a proxy must remove it (RFC 9112 §6.3). The body is
/// decoded by its chunks, so a `Content-Length` passed on beside it would cut it short.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    if headers.contains_key(header::TRANSFER_ENCODING) {
        headers.remove(header::CONTENT_LENGTH);
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        headers.remove(name);
    }
    headers.remove(header::UPGRADE);
}

/// An interim (1xx) response from an origin, serialised for an HTTP/1.1 client: its status
/// and its end-to-end headers (`Link` for 103 Early Hints).
pub fn interim_head(status: StatusCode, headers: &HeaderMap) -> Vec<u8> {
    let mut headers = headers.clone();
    strip_hop_by_hop(&mut headers);
    crate::icap::head::write_http_response_head(status, &headers)
}

/// Appends pith's `Via` entry to a message's headers.
pub fn add_via(headers: &mut HeaderMap, via: &HeaderValue) {
    headers.append(header::VIA, via.clone());
}

/// True when a `Via` header already carries this proxy's entry: the request has been here.
pub fn has_passed(headers: &HeaderMap, via: &HeaderValue) -> bool {
    let Ok(ours) = via.to_str() else { return false };
    headers
        .get_all(header::VIA)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|entry| entry.trim() == ours)
}

/// Turns a client's absolute-form request into the request for the origin.
/// `via` is pith's entry, or `None` when the config says not to send one. A width hint pith
/// wrote into an image address ([`crate::images::page::WIDTH_PARAMETER`]) is taken off: the
/// origin gets the address its page named.
pub fn prepare<B>(mut req: Request<B>, uri: Uri, via: Option<&HeaderValue>) -> Result<Request<B>, ProxyError> {
    let uri = without_width_hint(uri);
    let authority = uri.authority().ok_or_else(|| ProxyError::BadRequest { reason: "the request target has no host".into() })?;
    let host = HeaderValue::from_str(authority.as_str())
        .map_err(|_| ProxyError::BadRequest { reason: format!("invalid host {authority}") })?;
    let headers = req.headers_mut();
    strip_hop_by_hop(headers);
    // The target's authority wins over any Host the client sent (RFC 9112 §3.2.2).
    headers.insert(header::HOST, host);
    if let Some(via) = via {
        add_via(headers, via);
    }
    *req.uri_mut() = uri;
    *req.version_mut() = http::Version::HTTP_11;
    Ok(req)
}

/// `uri` without the width hint its query ends with, if any.
fn without_width_hint(uri: Uri) -> Uri {
    use crate::images::page::{without_width, WIDTH_PARAMETER};
    if !uri.query().is_some_and(|q| q.contains(WIDTH_PARAMETER)) {
        return uri;
    }
    without_width(&uri.to_string()).and_then(|(_, plain)| plain.parse().ok()).unwrap_or(uri)
}

/// Sends a request upstream through the client for `deny_private`, waiting at most
/// `cfg.response_timeout` for the response head. A target named by address is checked against
/// the deny rules here; a name is checked by the client's resolver on the addresses it
/// resolves to, the only lookup it gets.
pub async fn send(clients: &Clients, deny_private: bool, req: Request<Incoming>, host: &str, cfg: &UpstreamConfig) -> Result<Response<Incoming>, ProxyError> {
    check_address(req.uri(), cfg, deny_private)?;
    let client = clients.get(deny_private);
    let timeout = cfg.response_timeout;
    sent(host, timeout, tokio::time::timeout(timeout, pooled::send_again_if_stale(client, req, host)).await)
}

/// Sends a request head without a body, as [`send`] does (deny rules, timeout, errors): a
/// request pith makes again itself, such as a cache fill whose revalidation came back with
/// another representation's validator.
pub async fn send_bodiless(clients: &Clients, deny_private: bool, req: Request<()>, host: &str, cfg: &UpstreamConfig) -> Result<Response<Incoming>, ProxyError> {
    check_address(req.uri(), cfg, deny_private)?;
    let client = clients.get(deny_private);
    let timeout = cfg.response_timeout;
    let req = req.map(|()| Either::Right(Empty::new()));
    sent(host, timeout, tokio::time::timeout(timeout, client.request(req)).await)
}

/// What a send's outcome means for the client.
fn sent(host: &str, timeout: std::time::Duration, outcome: Result<Result<Response<Incoming>, hyper_util::client::legacy::Error>, tokio::time::error::Elapsed>) -> Result<Response<Incoming>, ProxyError> {
    match outcome {
        Err(_) => Err(ProxyError::Timeout { host: host.to_string(), what: "send response headers", after: timeout }),
        Ok(Err(e)) if e.is_connect() => Err(connect_error(host, e)),
        Ok(Err(e)) if is_client_body_error(&e) => Err(ProxyError::ClientBody { source: Box::new(e) }),
        Ok(Err(e)) => Err(ProxyError::Upstream { host: host.to_string(), source: Box::new(e) }),
        Ok(Ok(resp)) => Ok(resp),
    }
}

/// True when sending failed because the client's request body did (bad chunking, cut short):
/// hyper reports an error of the body it was sending as a user error whose cause is that
/// body's own error, here the client connection's.
fn is_client_body_error(e: &hyper_util::client::legacy::Error) -> bool {
    crate::net::error::find::<hyper::Error>(e).is_some_and(|h| h.is_user() && h.source().is_some_and(|cause| cause.is::<hyper::Error>()))
}

/// The deny rules on a target given as an IP address, which the connector connects to
/// without asking its resolver.
fn check_address(uri: &Uri, cfg: &UpstreamConfig, deny_private: bool) -> Result<(), ProxyError> {
    let rules = DenyRules::new(cfg, deny_private);
    let host = uri.host().unwrap_or_default().trim_matches(|c| c == '[' || c == ']');
    let Ok(ip) = host.parse::<std::net::IpAddr>() else { return Ok(()) };
    crate::net::upstream::resolve::check(host, &[std::net::SocketAddr::new(ip, 0)], rules).map_err(|source| ProxyError::Destination { source })
}

/// What a failed connection attempt means for the client: a refused destination (403) or a
/// lookup out of time (504) found by the resolver, an untrusted certificate, or another
/// connect failure.
fn connect_error(host: &str, e: hyper_util::client::legacy::Error) -> ProxyError {
    match crate::net::error::find::<ResolveError>(&e) {
        Some(ResolveError::Denied { host, addr, rule }) => {
            return ProxyError::Destination { source: ResolveError::Denied { host: host.clone(), addr: *addr, rule: rule.clone() } };
        }
        Some(ResolveError::Timeout { after, .. }) => return ProxyError::Timeout { host: host.to_string(), what: "resolve", after: *after },
        _ => {}
    }
    match find_tls_error(&e) {
        Some(tls) => ProxyError::Connect { host: host.to_string(), source: Box::new(UpstreamTlsError { host: host.to_string(), source: tls.clone() }) },
        None => ProxyError::Connect { host: host.to_string(), source: Box::new(e) },
    }
}

/// The origin's TLS failed: most often its certificate did not verify. The message says what
/// was wrong with it, in words a user can act on.
#[derive(Debug, thiserror::Error)]
#[error("{}", explain(host, source))]
pub struct UpstreamTlsError {
    /// The origin's host.
    pub host: String,
    /// rustls's verdict.
    #[source]
    pub source: rustls::Error,
}

fn explain(host: &str, err: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let why = match err {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => "it is not signed by an authority pith trusts (self-signed, or a private CA missing from upstream.extra_root_certificates)",
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => "it has expired",
        rustls::Error::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => "it is not valid yet",
        rustls::Error::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => "it was issued for another name",
        rustls::Error::InvalidCertificate(C::Revoked) => "it has been revoked",
        rustls::Error::InvalidCertificate(C::BadSignature | C::BadEncoding) => "it is malformed or badly signed",
        rustls::Error::InvalidCertificate(_) => "it failed verification",
        _ => return format!("the TLS handshake with {host} failed: {err}"),
    };
    format!("the certificate of {host} is not trusted: {why} ({err}); pith never connects to a site it cannot verify")
}

/// The rustls error inside a connect failure. tokio-rustls wraps it in an `io::Error` and
/// the HTTPS connector wraps that in another; an `io::Error`'s `source()` skips the error it
/// wraps, so each one is opened with `get_ref` as well as followed by `source()`.
fn find_tls_error<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(wrapped) => Some(wrapped as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    None
}

/// True when a request asks to switch protocols (`Connection: upgrade` with an `Upgrade`
/// header), as a WebSocket handshake does.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    let names_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    names_upgrade && headers.contains_key(header::UPGRADE)
}

/// Forwards a protocol-switch request. When the origin answers `101 Switching Protocols`,
/// the client gets the `101` and both connections are spliced once each side has switched;
/// any other answer is passed through as it is.
/// The switched connections hold `guard`, the client connection's slot, until they close, and
/// are closed when `downstream` carries no byte for `limits.tunnel_idle_timeout_ms`.
pub async fn upgrade(state: &State, deny_private: bool, mut req: Request<Incoming>, uri: Uri, host: &str, (guard, downstream): (crate::net::accept::drain::Guard, Downstream)) -> Result<Response<ProxyBody>, ProxyError> {
    let protocol = req.headers().get(header::UPGRADE).cloned().ok_or_else(|| ProxyError::BadRequest { reason: "Upgrade header missing".into() })?;
    let switched_client = hyper::upgrade::on(&mut req);
    let via = state.config.upstream.send_via.then_some(&state.via);
    let mut req = prepare(req, uri, via)?;
    req.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    req.headers_mut().insert(header::UPGRADE, protocol);
    let mut resp = send(&state.clients, deny_private, req, host, &state.config.upstream).await?;
    let switched = resp.status() == StatusCode::SWITCHING_PROTOCOLS;
    let upstream = switched.then(|| hyper::upgrade::on(&mut resp));
    let (mut parts, body) = resp.into_parts();
    let protocol = parts.headers.get(header::UPGRADE).cloned();
    strip_hop_by_hop(&mut parts.headers);
    add_via(&mut parts.headers, &state.via);
    let (Some(upstream), Some(protocol)) = (upstream, protocol) else {
        return Ok(Response::from_parts(parts, bodies::stream(body, state.config.upstream.body_idle_timeout)));
    };
    parts.headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    parts.headers.insert(header::UPGRADE, protocol);
    let idle = state.config.limits.tunnel_idle_timeout;
    let host = host.to_string();
    tokio::spawn(guard.tunnel(async move {
        if close_when_idle(&downstream, idle, splice(switched_client, upstream, &host)).await.is_none() {
            tracing::debug!(%host, "switched connection closed: no byte either way for {} ms (limits.tunnel_idle_timeout_ms)", idle.as_millis());
        }
    }));
    Ok(Response::from_parts(parts, bodies::full(Bytes::new())))
}

/// Copies bytes both ways between the switched client and origin connections until either
/// side closes.
async fn splice(downstream: hyper::upgrade::OnUpgrade, upstream: hyper::upgrade::OnUpgrade, host: &str) {
    let (down, up) = tokio::join!(downstream, upstream);
    let (Ok(down), Ok(up)) = (down, up) else {
        tracing::debug!(%host, "a protocol switch did not complete on both sides");
        return;
    };
    let (mut down, mut up) = (TokioIo::new(down), TokioIo::new(up));
    match tokio::io::copy_bidirectional(&mut down, &mut up).await {
        Ok((sent, received)) => tracing::debug!(%host, sent, received, "switched connection closed"),
        Err(e) => tracing::debug!(%host, error = %e, "switched connection ended with an error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    macro_rules! stripped {
        ($name:ident, [$($in:expr),*], kept = [$($kept:expr),*], gone = [$($gone:expr),*]) => {
            #[test]
            fn $name() {
                let mut h = headers(&[$($in),*]);
                strip_hop_by_hop(&mut h);
                $(assert!(h.contains_key($kept), "{} should be kept", $kept);)*
                $(assert!(!h.contains_key($gone), "{} should be stripped", $gone);)*
            }
        };
    }

    stripped!(standard_hop_by_hop,
        [("connection", "keep-alive"), ("keep-alive", "timeout=5"), ("te", "trailers"), ("accept", "*/*"), ("transfer-encoding", "chunked")],
        kept = ["accept"], gone = ["connection", "keep-alive", "te", "transfer-encoding"]);
    stripped!(named_by_connection,
        [("connection", "x-secret, close"), ("x-secret", "1"), ("x-public", "2")],
        kept = ["x-public"], gone = ["x-secret", "connection"]);
    stripped!(proxy_credentials,
        [("proxy-authorization", "Basic abc"), ("proxy-connection", "keep-alive"), ("authorization", "Bearer t")],
        kept = ["authorization"], gone = ["proxy-authorization", "proxy-connection"]);
    stripped!(length_beside_a_transfer_coding,
        [("transfer-encoding", "chunked"), ("content-length", "5"), ("content-type", "text/plain")],
        kept = ["content-type"], gone = ["transfer-encoding", "content-length"]);
    stripped!(length_alone_is_kept,
        [("content-length", "5")],
        kept = ["content-length"], gone = []);
    #[test]
    fn an_interim_head_keeps_its_hints_and_drops_hop_by_hop_fields() {
        let h = headers(&[("link", "</a.css>; rel=preload"), ("connection", "x-hop"), ("x-hop", "1")]);
        let head = String::from_utf8(interim_head(StatusCode::from_u16(103).unwrap(), &h)).unwrap();
        assert_eq!(head, "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n");
    }

    stripped!(upgrade_and_trailer,
        [("upgrade", "websocket"), ("trailer", "x"), ("cookie", "a=b")],
        kept = ["cookie"], gone = ["upgrade", "trailer"]);

    macro_rules! upgrade {
        ($name:ident, [$($in:expr),*], $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!(is_upgrade(&headers(&[$($in),*])), $expect);
            }
        };
    }

    upgrade!(websocket, [("connection", "Upgrade"), ("upgrade", "websocket")], true);
    upgrade!(listed_with_keep_alive, [("connection", "keep-alive, upgrade"), ("upgrade", "websocket")], true);
    upgrade!(no_connection_token, [("upgrade", "websocket")], false);
    upgrade!(no_upgrade_header, [("connection", "upgrade")], false);

    #[test]
    fn tls_errors_are_found_inside_io_errors_and_named() {
        let cert = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::other(std::io::Error::new(std::io::ErrorKind::InvalidData, cert.clone()));
        assert_eq!(find_tls_error(&io), Some(&cert), "found through two io::Error layers, as the connector nests them");
        let shown = UpstreamTlsError { host: "self-signed.test".into(), source: cert }.to_string();
        assert!(shown.contains("certificate of self-signed.test is not trusted") && shown.contains("UnknownIssuer"), "{shown}");
        let plain = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(find_tls_error(&plain), None);
    }

    #[test]
    fn the_width_hint_never_reaches_the_origin() {
        let req = Request::get("http://e.example/a.jpg?x=1&pith-width=192").body(()).unwrap();
        let uri: Uri = "http://e.example/a.jpg?x=1&pith-width=192".parse().unwrap();
        assert_eq!(prepare(req, uri, None).unwrap().uri(), "http://e.example/a.jpg?x=1");
        let uri: Uri = "http://e.example/a.jpg?pith-width=192".parse().unwrap();
        assert_eq!(without_width_hint(uri), "http://e.example/a.jpg");
        let uri: Uri = "http://e.example/a.jpg?pith-width=big".parse().unwrap();
        assert_eq!(without_width_hint(uri.clone()), uri, "not pith's hint: left as it is");
    }

    #[test]
    fn via_loop_detection() {
        let ours = HeaderValue::from_static("1.1 pith-1234");
        assert!(has_passed(&headers(&[("via", "1.0 other, 1.1 pith-1234")]), &ours));
        assert!(!has_passed(&headers(&[("via", "1.1 pith-9999")]), &ours));
        assert!(!has_passed(&HeaderMap::new(), &ours));
    }
}
