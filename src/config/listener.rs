//! `[[listener]]` validation: the address (and `--listen`), profile, allow list and
//! credentials of each listener, the open-proxy rule, and listeners that cannot all bind; and
//! how a listener serves pages ([`Serving`]: HTTPS for plain-HTTP clients, charset, HTML 3.2,
//! the URL gateway's profiles), with the rule that keeps `upgrade` to a LAN.
//!
//! A part of [`Validator`] of its own because these are the checks that decide whether a
//! gateway is safe to expose: they are kept together, next to the rule they enforce.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use ipnet::IpNet;
use toml::Spanned;

use super::{ConfigError, Credentials, ListenerConfig, RawAuth, RawListener, Validator};
use crate::html::translit::OutCharset;
use crate::profile::Profile;

/// `upgrade`: when a plain-HTTP client's `http://` request is fetched over HTTPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Upgrade {
    /// Never: `http://` is fetched as asked.
    #[default]
    Off,
    /// For a host that redirected an `http://` request to its own `https://` URL: the
    /// redirect is answered with the `http://` URL again, and that host is fetched over HTTPS
    /// from then on.
    OnRedirect,
    /// Every host (but those in `intercept.never`).
    Always,
}

/// How a listener serves pages, beyond its profile.
#[derive(Debug, Clone, Default)]
pub struct Serving {
    /// When `http://` requests are fetched over HTTPS.
    pub upgrade: Upgrade,
    /// The charset pages are written in.
    pub charset: OutCharset,
    /// Pages keep to HTML 3.2's elements and attributes.
    pub legacy: bool,
    /// The profiles `/read?profile=` may name besides the listener's own.
    pub gateway: Vec<Arc<Profile>>,
}

/// True when listeners on `a` and `b` cannot both bind. A wildcard address takes its port on
/// every address of its family, and `[::]` on IPv4 too (sockets are dual-stack by default);
/// port 0 picks a free port each time and never collides.
pub fn collides(a: SocketAddr, b: SocketAddr) -> bool {
    let covers = |w: SocketAddr, o: SocketAddr| w.ip().is_unspecified() && (w.is_ipv6() || o.is_ipv4());
    a.port() != 0 && a.port() == b.port() && (a.ip() == b.ip() || covers(a, b) || covers(b, a))
}

/// Whether a listener refuses private destinations: its own `deny_private` when it sets one,
/// else yes when `upstream.deny_private` says so or when it listens off loopback (a wildcard
/// address included): a LAN's clients must not reach the gateway's own network unless the
/// listener says `deny_private = false` in so many words.
pub fn deny_private(own: Option<bool>, upstream: bool, address: SocketAddr) -> bool {
    own.unwrap_or(upstream || !address.ip().is_loopback())
}

/// Most public IPv4 addresses a listener without `auth`, reachable from other machines, may
/// admit: a /16, more than one site or office needs. Past it pith would serve strangers.
pub const MAX_OPEN_V4: u64 = 1 << 16;

/// Most public IPv6 /64 networks such a listener may admit: a /48, one site's allocation.
pub const MAX_OPEN_V6_SUBNETS: u64 = 1 << 16;

impl Validator<'_> {
    /// The profile a listener's or an ICAP service's `profile` key names (`key` is its name in
    /// messages): `declutter` when the key is left out (`pass` if declutter was removed), an
    /// error naming the defined profiles when it names none of them.
    pub(super) fn profile_named(&self, name: Option<&Spanned<String>>, key: &str, profiles: &BTreeMap<String, Arc<Profile>>) -> Result<Arc<Profile>, ConfigError> {
        match name {
            None => Ok(profiles.get("declutter").or_else(|| profiles.get("pass")).cloned().expect("`pass` is always defined")),
            Some(p) => profiles.get(p.get_ref()).cloned().ok_or_else(|| {
                let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
                self.err(p.span(), key, format!("unknown profile {:?}; defined: {}", p.get_ref(), known.join(", ")))
            }),
        }
    }

    /// One `[[listener]]`; `listen` (from `--listen`) replaces its address before any check.
    /// `upstream_denies` is `upstream.deny_private`.
    pub(super) fn listener(&self, l: &RawListener, profiles: &BTreeMap<String, Arc<Profile>>, listen: Option<SocketAddr>, upstream_denies: bool) -> Result<ListenerConfig, ConfigError> {
        let address: SocketAddr = match listen {
            Some(address) => address,
            None => l.address.get_ref().parse().map_err(|_| {
                self.err(l.address.span(), "listener.address", format!("{:?} is not an IP:port address (e.g. \"127.0.0.1:8080\" or \"[::1]:8080\")", l.address.get_ref()))
            })?,
        };
        let profile = self.profile_named(l.profile.as_ref(), "listener.profile", profiles)?;
        let allow = match &l.allow {
            None => vec!["127.0.0.0/8".parse().expect("literal"), "::1/128".parse().expect("literal")],
            Some(list) if list.get_ref().is_empty() => {
                return Err(self.err(list.span(), "listener.allow", "an empty list admits no client; list the client networks (leave the key out for loopback only)"));
            }
            Some(list) => self.networks(list, "listener.allow")?,
        };
        let auth = match &l.auth {
            None => None,
            Some(a) => Some(self.credentials(a)?),
        };
        self.check_not_open(address, &allow, auth.is_some(), l, listen.is_some())?;
        let serving = self.serving(l, address, auth.is_some(), profiles)?;
        let deny_private = deny_private(l.deny_private, upstream_denies, address);
        Ok(ListenerConfig { address, profile, allow, auth, serving, deny_private })
    }

    /// `upgrade`, `charset`, `legacy` and `gateway_profiles`. A listener that fetches HTTPS
    /// for plain-HTTP clients sends what the origin encrypted over an unencrypted hop: off
    /// loopback it must say who may use it (`allow` or `auth`), as a LAN's listener does.
    fn serving(&self, l: &RawListener, address: SocketAddr, auth: bool, profiles: &BTreeMap<String, Arc<Profile>>) -> Result<Serving, ConfigError> {
        let upgrade = match &l.upgrade {
            None => Upgrade::Off,
            Some(u) => match u.get_ref().as_str() {
                "off" => Upgrade::Off,
                "on-redirect" => Upgrade::OnRedirect,
                "always" => Upgrade::Always,
                other => return Err(self.err(u.span(), "listener.upgrade", format!("{other:?} is not one of \"off\", \"on-redirect\", \"always\""))),
            },
        };
        if upgrade != Upgrade::Off && !address.ip().is_loopback() && l.allow.is_none() && !auth {
            let span = l.upgrade.as_ref().map_or(0..0, Spanned::span);
            return Err(self.err(
                span,
                "listener.upgrade",
                format!("the listener on {address} would fetch HTTPS pages for plain-HTTP clients and send them unencrypted to other machines; list the client networks in `allow`, or set `auth`"),
            ));
        }
        let charset = match &l.charset {
            None => OutCharset::Utf8,
            Some(c) => OutCharset::from_name(c.get_ref())
                .ok_or_else(|| self.err(c.span(), "listener.charset", format!("{:?} is not one of {}", c.get_ref(), OutCharset::NAMES.join(", "))))?,
        };
        let mut gateway = Vec::new();
        for name in l.gateway_profiles.as_ref().map(|g| g.get_ref().as_slice()).unwrap_or_default() {
            let span = l.gateway_profiles.as_ref().map_or(0..0, Spanned::span);
            let profile = profiles.get(name).ok_or_else(|| self.err(span.clone(), "listener.gateway_profiles", format!("unknown profile {name:?}")))?;
            if profile.is_pass() {
                return Err(self.err(span, "listener.gateway_profiles", "`pass` rewrites nothing, so its links would leave the gateway"));
            }
            gateway.push(profile.clone());
        }
        Ok(Serving { upgrade, charset, legacy: l.legacy, gateway })
    }

    /// `listener.auth`: a user name and a password that are not empty. An empty password is
    /// no protection: anyone who knows the user name (often in a client's settings) is in.
    pub(super) fn credentials(&self, a: &Spanned<RawAuth>) -> Result<Credentials, ConfigError> {
        let RawAuth { user, password } = a.get_ref();
        if user.is_empty() || user.contains(':') {
            return Err(self.err(a.span(), "listener.auth.user", "the user name must be non-empty and contain no ':'"));
        }
        if password.is_empty() {
            return Err(self.err(a.span(), "listener.auth.password", "must not be empty: an empty password lets anyone in"));
        }
        Ok(Credentials { user: user.clone(), password: password.clone() })
    }

    /// Refuses a configuration that would make an open proxy: a listener reachable from other
    /// machines (not on loopback), without credentials, whose allow list admits more public
    /// address space than one organisation holds ([`MAX_OPEN_V4`], [`MAX_OPEN_V6_SUBNETS`]).
    /// Judged by what the list covers together, so `0.0.0.0/1` plus `128.0.0.0/1` counts as
    /// everyone, as `0.0.0.0/0` does; private networks are not counted. `listen` says the
    /// address came from `--listen`.
    fn check_not_open(&self, address: SocketAddr, allow: &[IpNet], auth: bool, l: &RawListener, listen: bool) -> Result<(), ConfigError> {
        if auth || address.ip().is_loopback() {
            return Ok(());
        }
        let covered = crate::addr::public_coverage(allow);
        if covered.v4_addresses <= MAX_OPEN_V4 && covered.v6_subnets <= MAX_OPEN_V6_SUBNETS {
            return Ok(());
        }
        let span = l.allow.as_ref().map(Spanned::span).unwrap_or(l.address.span());
        let from = if listen { " (from --listen)" } else { "" };
        Err(self.err(
            span,
            "listener.allow",
            format!(
                "the listener on {address}{from} admits {} public IPv4 addresses and {} public IPv6 /64 networks without `auth`: that is an open proxy. \
                 Without auth, a listener not on loopback may admit at most {MAX_OPEN_V4} public IPv4 addresses (a /16) and {MAX_OPEN_V6_SUBNETS} IPv6 /64s (a /48); \
                 list your own networks, or set auth",
                covered.v4_addresses, covered.v6_subnets
            ),
        ))
    }

    /// Refuses two listeners on one address: the second could never bind ([`collides`]).
    pub(super) fn check_distinct(&self, raw: &[RawListener], listeners: &[ListenerConfig]) -> Result<(), ConfigError> {
        for (i, a) in listeners.iter().enumerate() {
            for b in &listeners[..i] {
                let (x, y) = (a.address, b.address);
                if collides(x, y) {
                    let span = raw.get(i).map_or(0..0, |l| l.address.span());
                    return Err(self.err(span, "listener.address", format!("{x} collides with the listener on {y}: both cannot bind; give each listener its own port")));
                }
            }
        }
        Ok(())
    }
}
