//! HTTPS for plain-HTTP clients (`upgrade` of a listener): a device that speaks no current
//! TLS asks pith for `http://host/path`, and pith fetches `https://host/path` over verified
//! TLS in its place (`always`, or `on-redirect` once the host has redirected to its own HTTPS
//! URL), then serves the page over the plain hop with its `https://` links, form actions and
//! redirects turned back to `http://` ([`crate::html::adapt::Links::Downgrade`]), so the
//! device stays on plain HTTP through pith. `Strict-Transport-Security` and the CSP's
//! `upgrade-insecure-requests` are dropped: either would send the device to HTTPS it cannot
//! speak. Hosts in `intercept.never` (banks, health) are never fetched in place of what was
//! asked, and links to them stay `https://`.
//!
//! The listener's own serving settings (charset, HTML 3.2) ride on the same last pass, which
//! [`crate::net::decide`] puts in the profile every proxied page of a listener is served with.
//!
//! `on-redirect` answers the origin's redirect itself with the `http://` URL again, and
//! remembers the host ([`Secure`], bounded, a day each): the device follows the redirect to the
//! same address, which pith now fetches over HTTPS. That costs the device one round trip per
//! host, and spares pith a second request it would have to make up without the client's body.

use std::time::Duration;

use http::header::{self, HeaderValue};
use http::uri::{Authority, Scheme};
use http::{Response, Uri};

use crate::net::exchange::bodies::ProxyBody;
use crate::net::State;
use crate::config::{ListenerConfig, Upgrade};
use crate::html::adapt::Links;

/// The hosts that redirected a plain request to their own HTTPS URL, as the device will ask
/// for them next (`host`, or `host:port` for another port than 443).
pub struct Secure {
    hosts: moka::sync::Cache<String, ()>,
}

/// Most hosts remembered; the least recently used go first.
const MAX_HOSTS: u64 = 10_000;

/// How long a host is remembered.
const REMEMBERED: Duration = Duration::from_secs(24 * 3600);

impl Default for Secure {
    fn default() -> Self {
        Secure { hosts: moka::sync::Cache::builder().max_capacity(MAX_HOSTS).time_to_live(REMEMBERED).build() }
    }
}

impl Secure {
    fn knows(&self, authority: &Authority) -> bool {
        self.hosts.contains_key(&authority.as_str().to_ascii_lowercase())
    }

    fn learn(&self, authority: &Authority) {
        self.hosts.insert(authority.as_str().to_ascii_lowercase(), ());
    }
}

/// The URL to fetch for a plain-HTTP client's `uri` on `listener`: its `https://` twin when
/// the listener upgrades it, else `None`.
pub fn target(state: &State, listener: &ListenerConfig, uri: &Uri) -> Option<Uri> {
    if uri.scheme() != Some(&Scheme::HTTP) {
        return None;
    }
    let authority = uri.authority()?;
    let wanted = match listener.serving.upgrade {
        Upgrade::Off => false,
        Upgrade::Always => true,
        Upgrade::OnRedirect => state.upgraded.knows(authority),
    };
    if !wanted || state.config.intercept.never.matches(authority.host()) {
        return None;
    }
    https_twin(uri)
}

/// `uri` with the `https` scheme; an explicit port 80 goes (HTTPS's is 443), any other stays.
fn https_twin(uri: &Uri) -> Option<Uri> {
    let authority = uri.authority()?;
    let authority = match authority.port_u16() {
        Some(80) => authority.host().parse::<Authority>().ok()?,
        _ => authority.clone(),
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    Uri::builder().scheme(Scheme::HTTPS).authority(authority).path_and_query(path).build().ok()
}

/// The response to a plain-HTTP client's `asked` request on an upgrading listener: HSTS and
/// `upgrade-insecure-requests` dropped, an `https://` redirect turned back to `http://`; with
/// `on-redirect`, a host that redirected `asked` to its own HTTPS URL is remembered.
pub fn finish(state: &State, listener: &ListenerConfig, asked: &Uri, response: &mut Response<ProxyBody>) {
    if listener.serving.upgrade == Upgrade::Off {
        return;
    }
    let never = &state.config.intercept.never;
    let headers = response.headers_mut();
    headers.remove(header::STRICT_TRANSPORT_SECURITY);
    for name in [header::CONTENT_SECURITY_POLICY, header::CONTENT_SECURITY_POLICY_REPORT_ONLY] {
        let policies: Vec<String> = headers.get_all(&name).iter().filter_map(|v| v.to_str().ok()).map(without_upgrades).collect();
        headers.remove(&name);
        for p in policies.into_iter().filter(|p| !p.is_empty()) {
            if let Ok(v) = HeaderValue::from_str(&p) {
                headers.append(&name, v);
            }
        }
    }
    let Some(location) = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned) else { return };
    let Some(down) = (Links::Downgrade { keep: never.clone() }).route(None, &location) else { return };
    if listener.serving.upgrade == Upgrade::OnRedirect && asked.scheme() == Some(&Scheme::HTTP) {
        // The device follows the redirect to `down`: that address is fetched over HTTPS next.
        let to: Option<Uri> = down.parse().ok();
        let same_host = to.as_ref().and_then(Uri::host).zip(asked.host()).is_some_and(|(t, a)| t.eq_ignore_ascii_case(a));
        if let Some(authority) = to.as_ref().and_then(Uri::authority).filter(|_| same_host) {
            state.upgraded.learn(authority);
        }
    }
    if let Ok(v) = HeaderValue::from_str(&down) {
        headers.insert(header::LOCATION, v);
    }
}

/// A CSP without the directives that move a page's requests to HTTPS.
fn without_upgrades(policy: &str) -> String {
    policy
        .split(';')
        .map(str::trim)
        .filter(|d| {
            let name = d.split_whitespace().next().unwrap_or("");
            !name.eq_ignore_ascii_case("upgrade-insecure-requests") && !name.eq_ignore_ascii_case("block-all-mixed-content")
        })
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! twin {
        ($name:ident, $uri:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!(https_twin(&$uri.parse().unwrap()).map(|u| u.to_string()).as_deref(), Some($expect));
            }
        };
    }

    twin!(default_port, "http://a.example/x?y=1", "https://a.example/x?y=1");
    twin!(explicit_80_goes, "http://a.example:80/", "https://a.example/");
    twin!(other_port_stays, "http://localhost:8443/p", "https://localhost:8443/p");

    #[test]
    fn policies_lose_their_upgrades_only() {
        assert_eq!(without_upgrades("default-src 'self'; upgrade-insecure-requests; img-src *"), "default-src 'self'; img-src *");
        assert_eq!(without_upgrades("upgrade-insecure-requests"), "");
        assert_eq!(without_upgrades("block-all-mixed-content;script-src 'none'"), "script-src 'none'");
    }

    #[test]
    fn hosts_are_remembered_case_blind() {
        let secure = Secure::default();
        let a: Authority = "Shop.Example:80".parse().unwrap();
        assert!(!secure.knows(&a));
        secure.learn(&a);
        assert!(secure.knows(&"shop.example:80".parse().unwrap()));
        assert!(!secure.knows(&"shop.example".parse().unwrap()));
    }
}
