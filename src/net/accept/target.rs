//! The request target: from what a client sent to the absolute URL pith fetches.
//!
//! A proxy gets its target in three forms: absolute-form (`GET http://host/path`), authority
//! form for CONNECT (`CONNECT host:443`), and origin-form inside a decrypted tunnel, where the
//! CONNECT named the host. Userinfo (`http://user:pw@host/`) is removed from every form before
//! anything else sees the target: it is not part of the target (RFC 9110 §4.2.4 deprecates it;
//! a client that sends it is mistaken or hiding the real host), so it is never forwarded, in
//! `Host` or anywhere else, and never logged.

use http::uri::{Authority, Uri};

use crate::net::error::ProxyError;

/// A request target pith cannot fetch: answered 400 Bad Request with this reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadTarget(pub String);

impl From<BadTarget> for ProxyError {
    fn from(e: BadTarget) -> ProxyError {
        ProxyError::BadRequest { reason: e.0 }
    }
}

/// `uri` without userinfo: `Ok(None)` when it has none (the common case costs no copy).
///
/// An authority with an `@` whose remainder is no authority (`http://[@:]:8080/`) is refused:
/// the part before the `@` may be a secret, so the target is neither kept nor logged as sent.
pub fn without_userinfo(uri: &Uri) -> Result<Option<Uri>, BadTarget> {
    let Some(authority) = uri.authority() else { return Ok(None) };
    let Some((_, host_port)) = authority.as_str().rsplit_once('@') else { return Ok(None) };
    let malformed = || BadTarget("the request target's authority is malformed".into());
    let mut parts = uri.clone().into_parts();
    parts.authority = Some(host_port.parse::<Authority>().map_err(|_| malformed())?);
    Uri::from_parts(parts).map(Some).map_err(|_| malformed())
}

/// The absolute target of a request from outside a tunnel; `None` for an origin-form request,
/// which was sent to pith itself (a browser visiting the proxy's address).
pub fn absolute(uri: &Uri) -> Result<Option<Uri>, BadTarget> {
    if uri.authority().is_none() {
        return Ok(None);
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) || uri.host().is_none_or(str::is_empty) {
        return Err(BadTarget("the request target has no host".into()));
    }
    match uri.scheme_str() {
        Some("http") | Some("https") => Ok(Some(uri.clone())),
        Some(other) => Err(BadTarget(format!("pith forwards http and https URLs, not {other}:"))),
        None => Err(BadTarget(format!("{uri} is not an absolute URL"))),
    }
}

/// The absolute `https://` URL of a request inside a decrypted tunnel to `origin`. The
/// tunnel's target wins over any authority the request names: the client's certificate check
/// was for that host alone.
pub fn in_tunnel(origin: &Authority, uri: &Uri) -> Result<Uri, BadTarget> {
    let path = match uri.path_and_query() {
        None => "/",
        Some(p) if p.as_str().starts_with('/') => p.as_str(),
        // `OPTIONS *` (asterisk-form) appended to the authority would change it: `host:443*`.
        Some(p) => return Err(BadTarget(format!("{p} is not a path; a request inside a tunnel names a path on its host"))),
    };
    format!("https://{origin}{path}").parse().map_err(|_| BadTarget(format!("invalid request target {path}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! stripped {
        ($name:ident, $in:expr, $out:expr) => {
            #[test]
            fn $name() {
                let uri: Uri = $in.parse().unwrap();
                let expect: Option<&str> = $out;
                assert_eq!(without_userinfo(&uri).unwrap().map(|u| u.to_string()).as_deref(), expect);
            }
        };
    }

    stripped!(user_and_password, "http://user:pw@example.com/a?b", Some("http://example.com/a?b"));
    stripped!(user_only, "https://user@example.com:8443/", Some("https://example.com:8443/"));
    stripped!(two_at_signs, "http://a@b@example.com/", Some("http://example.com/"));
    stripped!(connect_target, "user:pw@example.com:443", Some("example.com:443"));
    stripped!(ipv6_host, "http://u:p@[::1]:8080/", Some("http://[::1]:8080/"));
    stripped!(none_to_strip, "http://example.com/", None);
    stripped!(origin_form, "/path?q=a@b", None);

    #[test]
    fn an_at_sign_without_an_authority_after_it_is_refused() {
        // Found by the `head` fuzz target: the `@` sits inside an IPv6 literal's brackets.
        for target in ["http://[@:]:8080/", "[@:]:8080"] {
            let uri: Uri = target.parse().unwrap();
            assert!(without_userinfo(&uri).is_err(), "{target}");
        }
    }

    #[test]
    fn targets_are_absolute_http_urls_with_a_host() {
        assert_eq!(absolute(&"/".parse().unwrap()).unwrap(), None);
        let uri: Uri = "http://example.com/x".parse().unwrap();
        assert_eq!(absolute(&uri).unwrap(), Some(uri));
        assert!(absolute(&"ftp://example.com/".parse().unwrap()).is_err());
        assert!(absolute(&"http://u@example.com/".parse().unwrap()).is_err(), "userinfo is stripped before, never passed on");
    }

    #[test]
    fn a_tunnel_request_goes_to_the_tunnel_target() {
        let origin: Authority = "example.com:8443".parse().unwrap();
        let uri = in_tunnel(&origin, &"https://other.example/p?q".parse().unwrap()).unwrap();
        assert_eq!(uri.to_string(), "https://example.com:8443/p?q");
        assert!(in_tunnel(&origin, &"*".parse().unwrap()).is_err(), "asterisk-form would extend the authority");
    }
}
