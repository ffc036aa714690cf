//! Admission: who may use a listener. Checked before anything else is done for a request.
//!
//! A client must come from a network in the listener's `allow` list and, when the listener
//! has `auth`, present matching Basic credentials in `Proxy-Authorization`. Failures are
//! logged by the caller with the client's address, never with the credentials sent.

use std::net::IpAddr;

use base64::Engine;
use http::HeaderMap;
use ipnet::IpNet;

use crate::net::error::ProxyError;
use crate::config::{Credentials, ListenerConfig};

/// Decides whether a request from `client` with `headers` may be served.
pub fn admit(listener: &ListenerConfig, client: IpAddr, headers: &HeaderMap) -> Result<(), ProxyError> {
    if !is_allowed(&listener.allow, client) {
        return Err(ProxyError::Forbidden { client });
    }
    match &listener.auth {
        None => Ok(()),
        Some(creds) if is_authorized(creds, headers) => Ok(()),
        Some(_) => Err(ProxyError::AuthRequired),
    }
}

/// True when `client` is in one of `allow`'s networks. IPv4 clients reaching an IPv6
/// socket appear as `::ffff:a.b.c.d` and are matched as the IPv4 address they are.
pub fn is_allowed(allow: &[IpNet], client: IpAddr) -> bool {
    let client = match client {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(client, IpAddr::V4),
        v4 => v4,
    };
    allow.iter().any(|net| net.contains(&client))
}

/// True when `Proxy-Authorization` carries `creds` as Basic credentials. Compared in
/// constant time so that timing does not reveal how much of a guess was right.
fn is_authorized(creds: &Credentials, headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(http::header::PROXY_AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, token)) = value.trim().split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return false;
    }
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(token.trim()) else {
        return false;
    };
    let expected = format!("{}:{}", creds.user, creds.password);
    constant_time_eq(&decoded, expected.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    macro_rules! allowed {
        ($name:ident, $nets:expr, $client:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!(is_allowed(&nets($nets), $client.parse().unwrap()), $expect);
            }
        };
    }

    allowed!(loopback_v4, &["127.0.0.0/8"], "127.0.0.1", true);
    allowed!(loopback_v6, &["::1/128"], "::1", true);
    allowed!(lan_outside, &["127.0.0.0/8", "::1/128"], "192.168.1.5", false);
    allowed!(lan_inside, &["192.168.1.0/24"], "192.168.1.5", true);
    allowed!(mapped_v4, &["10.0.0.0/8"], "::ffff:10.1.2.3", true);
    allowed!(empty_list, &[], "127.0.0.1", false);

    fn listener(auth: Option<(&str, &str)>) -> ListenerConfig {
        ListenerConfig {
            address: "127.0.0.1:0".parse().unwrap(),
            profile: std::sync::Arc::new(crate::profile::Profile::pass()),
            allow: nets(&["127.0.0.0/8"]),
            auth: auth.map(|(u, p)| Credentials { user: u.into(), password: p.into() }),
            serving: Default::default(),
            deny_private: false,
        }
    }

    fn with_auth(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::PROXY_AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[test]
    fn basic_auth() {
        let l = listener(Some(("reader", "s3cret")));
        let local: IpAddr = "127.0.0.1".parse().unwrap();
        let good = base64::engine::general_purpose::STANDARD.encode("reader:s3cret");
        assert!(admit(&l, local, &with_auth(&format!("Basic {good}"))).is_ok());
        assert!(admit(&l, local, &with_auth(&format!("basic  {good}"))).is_ok());
        let bad = base64::engine::general_purpose::STANDARD.encode("reader:wrong");
        assert!(matches!(admit(&l, local, &with_auth(&format!("Basic {bad}"))), Err(ProxyError::AuthRequired)));
        assert!(matches!(admit(&l, local, &with_auth("Bearer x")), Err(ProxyError::AuthRequired)));
        assert!(matches!(admit(&l, local, &HeaderMap::new()), Err(ProxyError::AuthRequired)));
        let far: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(matches!(admit(&l, far, &with_auth(&format!("Basic {good}"))), Err(ProxyError::Forbidden { .. })));
    }

    #[test]
    fn no_auth_configured() {
        assert!(admit(&listener(None), "127.0.0.1".parse().unwrap(), &HeaderMap::new()).is_ok());
    }
}
