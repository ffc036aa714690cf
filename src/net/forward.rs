//! Forwarding: the pooled upstream client, and turning a client's request into the request
//! sent to the origin.
//!
//! The client keeps connections alive and pooled per origin, speaks HTTP/1.1 or HTTP/2 (by
//! ALPN) to HTTPS origins, and always verifies their certificates against the web PKI roots
//! plus any roots the config adds. There is no switch to turn verification off.

use std::sync::Arc;
use std::time::Duration;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, Uri};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::error::ProxyError;
use crate::config::UpstreamConfig;

/// The pooled client every request to an origin goes through.
pub type UpstreamClient = Client<HttpsConnector<HttpConnector>, Incoming>;

/// Builds the upstream client from the config.
pub fn client(cfg: &UpstreamConfig) -> UpstreamClient {
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
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(cfg.connect_timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(cfg.pool_idle_timeout)
        .pool_max_idle_per_host(cfg.pool_max_idle_per_host)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new())
        .build(https)
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
/// `Upgrade` goes too: pith does not forward protocol switches yet.
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
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
/// `via` is pith's entry, or `None` when the config says not to send one.
pub fn prepare(mut req: Request<Incoming>, uri: Uri, via: Option<&HeaderValue>) -> Result<Request<Incoming>, ProxyError> {
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

/// Sends a request upstream, waiting at most `timeout` for the response head.
pub async fn send(client: &UpstreamClient, req: Request<Incoming>, host: &str, timeout: Duration) -> Result<Response<Incoming>, ProxyError> {
    match tokio::time::timeout(timeout, client.request(req)).await {
        Err(_) => Err(ProxyError::Timeout { host: host.to_string(), what: "send response headers", after: timeout }),
        Ok(Err(e)) if e.is_connect() => Err(ProxyError::Connect { host: host.to_string(), source: Box::new(e) }),
        Ok(Err(e)) => Err(ProxyError::Upstream { host: host.to_string(), source: Box::new(e) }),
        Ok(Ok(resp)) => Ok(resp),
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
    stripped!(upgrade_and_trailer,
        [("upgrade", "websocket"), ("trailer", "x"), ("cookie", "a=b")],
        kept = ["cookie"], gone = ["upgrade", "trailer"]);

    #[test]
    fn via_loop_detection() {
        let ours = HeaderValue::from_static("1.1 pith-1234");
        assert!(has_passed(&headers(&[("via", "1.0 other, 1.1 pith-1234")]), &ours));
        assert!(!has_passed(&headers(&[("via", "1.1 pith-9999")]), &ours));
        assert!(!has_passed(&HeaderMap::new(), &ours));
    }
}
