//! A client's request head as pith reads it: the bytes parsed by the parser hyper uses
//! (httparse, with hyper's default limit of 100 header fields), then pith's own steps over the
//! parsed head, in the order a connection runs them: userinfo removed, admission by Basic
//! credentials, the target made absolute (or rebuilt inside a tunnel), the protocol-switch and
//! loop checks, and the request prepared for the origin.
//!
//! Input: the raw bytes of a request head (the seeds are real heads with CRLF line ends).
//!
//! Properties:
//! - arbitrary bytes never panic;
//! - no userinfo survives: the URL pith logs, the target it fetches and the Host it sends have
//!   no `@` in their authority (a target whose userinfo cannot be cut off is refused);
//! - an absolute target is `http` or `https` with a non-empty host; inside a tunnel, the target
//!   is the tunnel's authority whatever the request names;
//! - a CONNECT target that pith would open has a host and no userinfo;
//! - the prepared request carries `Host` equal to the target's authority, HTTP/1.1, no
//!   hop-by-hop header, none of the headers its `Connection` header named (but `Host` and
//!   `Via`, which pith sets itself), and no `Upgrade`;
//! - admission with credentials passes only when `Proxy-Authorization` is Basic with exactly
//!   those credentials.

#![no_main]

use std::sync::{Arc, LazyLock};

use base64::Engine;
use http::header::{self, HeaderName, HeaderValue};
use http::uri::Authority;
use http::{Method, Request, Uri, Version};
use libfuzzer_sys::fuzz_target;
use pith::config::{Credentials, ListenerConfig};
use pith::net::accept::{admit, target};
use pith::net::upstream::forward;
use pith::profile::Profile;

const USER: &str = "fuzz";
const PASSWORD: &str = "s3cret";

static LISTENER: LazyLock<ListenerConfig> = LazyLock::new(|| ListenerConfig {
    address: "127.0.0.1:8080".parse().expect("literal"),
    profile: Arc::new(Profile::pass()),
    allow: vec!["127.0.0.0/8".parse().expect("literal")],
    auth: Some(Credentials { user: USER.into(), password: PASSWORD.into() }),
    serving: Default::default(),
    deny_private: false,
});

static VIA: HeaderValue = HeaderValue::from_static("1.1 pith-fuzz");

/// The head as hyper would hand it to pith, or `None` where hyper answers 400 itself.
fn parse(data: &[u8]) -> Option<Request<()>> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut parsed = httparse::Request::new(&mut headers);
    let httparse::Status::Complete(_) = parsed.parse(data).ok()? else { return None };
    let mut req = Request::builder()
        .method(Method::from_bytes(parsed.method?.as_bytes()).ok()?)
        .uri(Uri::try_from(parsed.path?).ok()?)
        .version(Version::HTTP_11)
        .body(())
        .ok()?;
    for h in parsed.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        req.headers_mut().append(name, HeaderValue::from_bytes(h.value).ok()?);
    }
    Some(req)
}

fn has_userinfo(uri: &Uri) -> bool {
    uri.authority().is_some_and(|a| a.as_str().contains('@'))
}

/// What the Proxy-Authorization header carries as Basic credentials, decoded.
fn basic_credentials(req: &Request<()>) -> Option<Vec<u8>> {
    let value = req.headers().get(header::PROXY_AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(token.trim()).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some(mut req) = parse(data) else { return };
    match target::without_userinfo(req.uri()) {
        Ok(Some(uri)) => *req.uri_mut() = uri,
        Ok(None) => {}
        // Refused with 400 and logged without the authority.
        Err(_) => return,
    }
    assert!(!has_userinfo(req.uri()), "the logged URL keeps userinfo: {}", req.uri());

    let admitted = admit::admit(&LISTENER, "127.0.0.1".parse().expect("literal"), req.headers()).is_ok();
    if admitted {
        let sent = basic_credentials(&req);
        assert_eq!(sent.as_deref(), Some(format!("{USER}:{PASSWORD}").as_bytes()), "admitted without the credentials");
    }
    forward::is_upgrade(req.headers());
    forward::has_passed(req.headers(), &VIA);

    let origin: Authority = "tunnel.example:8443".parse().expect("literal");
    if let Ok(inside) = target::in_tunnel(&origin, req.uri()) {
        assert_eq!(inside.authority(), Some(&origin), "a tunnel request left its tunnel: {inside}");
        assert_eq!(inside.scheme_str(), Some("https"));
    }

    if req.method() == Method::CONNECT {
        if let Some(authority) = req.uri().authority() {
            assert!(!authority.as_str().contains('@'), "CONNECT to {authority}");
        }
        return;
    }
    let Ok(Some(absolute)) = target::absolute(req.uri()) else { return };
    assert!(matches!(absolute.scheme_str(), Some("http" | "https")), "{absolute}");
    assert!(absolute.host().is_some_and(|h| !h.is_empty()) && !has_userinfo(&absolute), "{absolute}");

    let named: Vec<HeaderName> = req
        .headers()
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        // pith sets these two itself after stripping.
        .filter(|n| *n != header::HOST && *n != header::VIA)
        .collect();
    let Ok(prepared) = forward::prepare(req, absolute.clone(), Some(&VIA)) else { return };
    let authority = absolute.authority().expect("an absolute target has an authority").as_str();
    assert_eq!(prepared.headers().get(header::HOST).map(HeaderValue::as_bytes), Some(authority.as_bytes()), "Host for {absolute}");
    assert_eq!(prepared.version(), Version::HTTP_11);
    let hop_by_hop = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade"];
    for name in hop_by_hop.iter().map(|n| HeaderName::from_static(n)).chain(named) {
        assert!(!prepared.headers().contains_key(&name), "{name} crossed the proxy");
    }
});
