//! Destination deny rules: which addresses pith refuses to connect to, and name resolution
//! that checks every address it returns.
//!
//! A gateway exposed to a LAN forwards for whoever may use it; without these rules a client
//! could ask it for `http://192.168.1.1/` or `http://169.254.169.254/` and reach the operator's
//! own network. The rules are checked on the resolved addresses, never on the name (a public
//! name may point at a private address), and every address of a name is checked: one denied
//! address refuses the whole target, so the outcome does not depend on which address a
//! connection attempt happens to pick. The addresses checked are the ones connected to,
//! so a name that resolves differently a moment later (DNS rebinding) cannot slip through.
//!
//! The upstream client resolves names through [`CheckedResolver`], so a plain or intercepted
//! HTTPS request is resolved once, by the connector, and connected only to checked addresses.
//! The connector never resolves an IP-address target; the forward step checks those itself.
//!
//! This module owns the matching and the checked lookup; the config only holds the lists, and
//! [`crate::addr`] says which addresses are not public (what `deny_private` refuses).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::client::legacy::connect::dns::Name;
use ipnet::IpNet;

use crate::addr::{self, NotPublic};
use crate::config::UpstreamConfig;

/// Why a destination was refused: the config rule that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyRule {
    /// A network listed in `upstream.deny`.
    Listed(IpNet),
    /// An address that is not public unicast, refused by `upstream.deny_private`.
    Private(NotPublic),
}

impl std::fmt::Display for DenyRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DenyRule::Listed(net) => write!(f, "upstream.deny ({net})"),
            DenyRule::Private(class) => write!(f, "upstream.deny_private ({class})"),
        }
    }
}

/// The deny rules of one config, borrowed from it: built per connection attempt at no cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyRules<'a> {
    listed: &'a [IpNet],
    private: bool,
    allowed: &'a [IpNet],
}

impl<'a> DenyRules<'a> {
    /// The rules `cfg` asks for, for a listener that refuses private destinations when
    /// `deny_private` ([`crate::config::ListenerConfig::deny_private`]).
    pub fn new(cfg: &'a UpstreamConfig, deny_private: bool) -> DenyRules<'a> {
        DenyRules { listed: &cfg.deny, private: deny_private, allowed: &cfg.allow_private }
    }

    /// True when no address is ever refused.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty() && !self.private
    }

    /// The rule refusing `ip`, if any. A listed network also refuses the IPv6 addresses that
    /// embed one of its IPv4 addresses (IPv4-mapped, NAT64, 6to4, Teredo): they lead there.
    /// `deny_private` refuses every address that is not public unicast ([`addr::classify`]),
    /// but those in `upstream.allow_private` (an IPv4-mapped address by its IPv4 one).
    pub fn denies(&self, ip: IpAddr) -> Option<DenyRule> {
        let embedded = match ip {
            IpAddr::V6(v6) => addr::embedded_v4(v6).map(|(_, addrs)| addrs).unwrap_or_default(),
            IpAddr::V4(_) => [None, None],
        };
        let reached = std::iter::once(ip).chain(embedded.into_iter().flatten().map(IpAddr::V4));
        for ip in reached {
            if let Some(net) = self.listed.iter().find(|n| n.contains(&ip)) {
                return Some(DenyRule::Listed(*net));
            }
        }
        if !self.private || self.allowed.iter().any(|n| n.contains(&ip) || n.contains(&ip.to_canonical())) {
            return None;
        }
        addr::classify(ip).map(DenyRule::Private)
    }
}

/// A target that cannot be connected to.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The name did not resolve.
    #[error("cannot resolve {host}")]
    Lookup {
        /// The host name.
        host: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// The name resolved to no address at all.
    #[error("{host} has no address")]
    NoAddress {
        /// The host name.
        host: String,
    },
    /// The name did not resolve within the connect budget.
    #[error("cannot resolve {host} within {} ms", .after.as_millis())]
    Timeout {
        /// The host name.
        host: String,
        /// The budget (`upstream.connect_timeout_ms`).
        after: Duration,
    },
    /// One of the target's addresses is refused by a rule.
    #[error("{host} resolves to {addr}, which this proxy does not connect to: {rule}")]
    Denied {
        /// The host as requested.
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// The rule that refused it.
        rule: Box<DenyRule>,
    },
}

/// Resolves `host:port` and checks every address against `rules`. Returns the addresses to
/// connect to: only these, so the check and the connection see the same answer.
pub async fn resolve(host: &str, port: u16, rules: DenyRules<'_>) -> Result<Vec<SocketAddr>, ResolveError> {
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|source| ResolveError::Lookup { host: host.to_string(), source })?
            .collect(),
    };
    check(host, &addrs, rules)?;
    if addrs.is_empty() {
        return Err(ResolveError::NoAddress { host: host.to_string() });
    }
    Ok(addrs)
}

/// Refuses the target when any of its addresses is denied.
pub fn check(host: &str, addrs: &[SocketAddr], rules: DenyRules<'_>) -> Result<(), ResolveError> {
    for addr in addrs {
        if let Some(rule) = rules.denies(addr.ip()) {
            return Err(ResolveError::Denied { host: host.to_string(), addr: addr.ip(), rule: Box::new(rule) });
        }
    }
    Ok(())
}

/// The upstream client's resolver: [`resolve`] with the deny rules of one config, bounded by
/// its connect budget. Owns its rules, since the connector outlives any borrow of the config.
#[derive(Debug, Clone)]
pub struct CheckedResolver {
    listed: Arc<[IpNet]>,
    private: bool,
    allowed: Arc<[IpNet]>,
    budget: Duration,
}

impl CheckedResolver {
    /// The resolver for `cfg`'s deny rules and connect budget, refusing private destinations
    /// when `deny_private`.
    pub fn new(cfg: &UpstreamConfig, deny_private: bool) -> CheckedResolver {
        CheckedResolver { listed: cfg.deny.clone().into(), private: deny_private, allowed: cfg.allow_private.clone().into(), budget: cfg.connect_timeout }
    }
}

impl tower_service::Service<Name> for CheckedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = ResolveError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, ResolveError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ResolveError>> {
        Poll::Ready(Ok(()))
    }

    /// Resolves with port 0: the connector puts the URL's port on every address.
    fn call(&mut self, name: Name) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let rules = DenyRules { listed: &this.listed, private: this.private, allowed: &this.allowed };
            match tokio::time::timeout(this.budget, resolve(name.as_str(), 0, rules)).await {
                Ok(addrs) => addrs.map(Vec::into_iter),
                Err(_) => Err(ResolveError::Timeout { host: name.as_str().to_string(), after: this.budget }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(listed: &[&str], private: bool) -> DenyRules<'static> {
        let listed: Vec<IpNet> = listed.iter().map(|n| n.parse().unwrap()).collect();
        DenyRules { listed: Vec::leak(listed), private, allowed: &[] }
    }

    macro_rules! denies {
        ($name:ident, $listed:expr, private = $private:expr, $ip:expr, $expect:expr) => {
            #[test]
            fn $name() {
                let got = rules(&$listed, $private).denies($ip.parse().unwrap()).map(|r| r.to_string());
                let expect: Option<&str> = $expect;
                match (got.as_deref(), expect) {
                    (None, None) => {}
                    (Some(got), Some(want)) => assert!(got.starts_with(want), "{} refused by {got:?}, expected {want:?}", $ip),
                    (got, want) => panic!("{} refused by {got:?}, expected {want:?}", $ip),
                }
            }
        };
    }

    denies!(nothing_by_default, [], private = false, "10.0.0.1", None);
    denies!(rfc1918, [], private = true, "192.168.1.1", Some("upstream.deny_private (192.168.0.0/16 private-use)"));
    denies!(loopback, [], private = true, "127.0.0.1", Some("upstream.deny_private (127.0.0.0/8 loopback)"));
    denies!(metadata_link_local, [], private = true, "169.254.169.254", Some("upstream.deny_private (169.254.0.0/16 link-local"));
    denies!(cgnat, [], private = true, "100.64.1.2", Some("upstream.deny_private (100.64.0.0/10"));
    denies!(cgnat_edge_is_public, [], private = true, "100.128.0.1", None);
    denies!(unique_local_v6, [], private = true, "fd12::1", Some("upstream.deny_private (fc00::/7 unique-local)"));
    denies!(link_local_v6, [], private = true, "fe80::1", Some("upstream.deny_private (fe80::/10 link-local)"));
    denies!(loopback_v6, [], private = true, "::1", Some("upstream.deny_private (::1/128 loopback)"));
    denies!(unspecified_v6, [], private = true, "::", Some("upstream.deny_private (::/128 unspecified"));
    denies!(unspecified_v4, [], private = true, "0.0.0.0", Some("upstream.deny_private (0.0.0.0/8"));
    denies!(ipv4_compatible, [], private = true, "::7f00:1", Some("upstream.deny_private (::/96 IPv4-compatible"));
    denies!(mapped_v4_is_checked_as_v4, [], private = true, "::ffff:10.1.2.3", Some("upstream.deny_private (10.0.0.0/8 private-use, embedded in ::ffff:0.0.0.0/96"));
    denies!(six_to_four_embedding_loopback, [], private = true, "2002:7f00:1::1", Some("upstream.deny_private (127.0.0.0/8 loopback, embedded in 2002::/16 6to4)"));
    denies!(multicast, [], private = true, "224.0.0.1", Some("upstream.deny_private (224.0.0.0/4 multicast)"));
    denies!(public_passes, [], private = true, "93.184.216.34", None);
    denies!(public_v6_passes, [], private = true, "2606:2800:220:1::1", None);
    denies!(listed_network, ["203.0.113.0/24"], private = false, "203.0.113.9", Some("upstream.deny (203.0.113.0/24)"));
    denies!(listed_through_nat64, ["203.0.113.0/24"], private = false, "64:ff9b::203.0.113.9", Some("upstream.deny (203.0.113.0/24)"));
    denies!(listed_through_mapped, ["198.51.100.7/32"], private = false, "::ffff:198.51.100.7", Some("upstream.deny (198.51.100.7/32)"));
    denies!(listed_wins_over_private, ["10.0.0.0/16"], private = true, "10.0.0.5", Some("upstream.deny (10.0.0.0/16)"));
    #[test]
    fn allow_private_lets_its_networks_through_but_not_a_listed_one() {
        let allowed: Vec<IpNet> = vec!["10.1.2.0/24".parse().unwrap()];
        let rules = DenyRules { listed: &[], private: true, allowed: Vec::leak(allowed) };
        assert_eq!(rules.denies("10.1.2.7".parse().unwrap()), None);
        assert_eq!(rules.denies("::ffff:10.1.2.7".parse().unwrap()), None);
        assert!(rules.denies("10.1.3.7".parse().unwrap()).is_some());
        let listed = DenyRules { listed: Vec::leak(vec!["10.1.2.7/32".parse().unwrap()]), ..rules };
        assert!(listed.denies("10.1.2.7".parse().unwrap()).is_some(), "upstream.deny wins");
    }

    denies!(listed_outside, ["203.0.113.0/24"], private = false, "203.0.114.1", None);

    #[test]
    fn one_denied_address_refuses_the_target() {
        let addrs: Vec<SocketAddr> = vec!["93.184.216.34:80".parse().unwrap(), "10.0.0.1:80".parse().unwrap()];
        let err = check("mixed.example", &addrs, rules(&[], true)).unwrap_err();
        assert!(matches!(err, ResolveError::Denied { addr, .. } if addr == "10.0.0.1".parse::<IpAddr>().unwrap()), "{err}");
        assert!(err.to_string().contains("upstream.deny_private"), "{err}");
    }

    #[tokio::test]
    async fn literal_addresses_are_checked_without_a_lookup() {
        let err = resolve("127.0.0.1", 80, rules(&[], true)).await.unwrap_err();
        assert!(matches!(err, ResolveError::Denied { .. }), "{err}");
        assert_eq!(resolve("127.0.0.1", 80, DenyRules::default()).await.unwrap(), vec!["127.0.0.1:80".parse().unwrap()]);
    }

    #[tokio::test]
    async fn names_are_checked_on_what_they_resolve_to() {
        let err = resolve("localhost", 8080, rules(&[], true)).await.unwrap_err();
        assert!(matches!(err, ResolveError::Denied { ref host, .. } if host == "localhost"), "{err}");
    }

    #[tokio::test]
    async fn the_connector_resolver_checks_what_it_resolves() {
        use std::str::FromStr;
        use tower_service::Service;
        let mut cfg = crate::config::Config::from_toml_str("[[listener]]\naddress = \"127.0.0.1:1\"\n", "t", None).unwrap().upstream;
        let name = Name::from_str("localhost").unwrap();
        let addrs: Vec<SocketAddr> = CheckedResolver::new(&cfg, false).call(name.clone()).await.expect("no rules: resolved").collect();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 0), "{addrs:?}");
        let err = CheckedResolver::new(&cfg, true).call(name.clone()).await.expect_err("loopback is private");
        assert!(matches!(err, ResolveError::Denied { ref host, .. } if host == "localhost"), "{err}");
        cfg.allow_private = vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        assert!(CheckedResolver::new(&cfg, true).call(name).await.is_ok(), "upstream.allow_private lets loopback through");
    }
}
