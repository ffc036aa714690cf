//! `[[icap]]` validation: the address, profile and allow list of each ICAP service, checked
//! the way `[[listener]]` is (`config/listener.rs`).
//!
//! An ICAP service has no credentials (RFC 3507 leaves authentication to the proxy in front),
//! so its allow list is its only guard: one off loopback must name its clients, and may not
//! admit more public address space than a listener without `auth` may. Each page an ICAP
//! client sends costs a rewrite, so an open service is a free CPU for anyone.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use super::listener::{collides, MAX_OPEN_V4, MAX_OPEN_V6_SUBNETS};
use super::{ConfigError, IcapConfig, ListenerConfig, RawIcap, Validator};
use crate::profile::{Profile, Stage2};

impl Validator<'_> {
    /// Every `[[icap]]`, none colliding with a listener or with another.
    pub(super) fn icap_services(&self, raw: &[RawIcap], profiles: &BTreeMap<String, Arc<Profile>>, listeners: &[ListenerConfig]) -> Result<Vec<IcapConfig>, ConfigError> {
        let mut services: Vec<IcapConfig> = Vec::new();
        for r in raw {
            let service = self.icap(r, profiles)?;
            let taken = listeners.iter().map(|l| (l.address, "listener")).chain(services.iter().map(|s| (s.address, "ICAP service")));
            for (other, what) in taken {
                if collides(service.address, other) {
                    return Err(self.err(r.address.span(), "icap.address", format!("{} collides with the {what} on {other}: both cannot bind", service.address)));
                }
            }
            services.push(service);
        }
        Ok(services)
    }

    fn icap(&self, r: &RawIcap, profiles: &BTreeMap<String, Arc<Profile>>) -> Result<IcapConfig, ConfigError> {
        let address: SocketAddr = r.address.get_ref().parse().map_err(|_| {
            self.err(r.address.span(), "icap.address", format!("{:?} is not an IP:port address (e.g. \"127.0.0.1:1344\")", r.address.get_ref()))
        })?;
        let profile = self.profile_named(r.profile.as_ref(), "icap.profile", profiles)?;
        let allow = match &r.allow {
            None if address.ip().is_loopback() => vec!["127.0.0.0/8".parse().expect("literal"), "::1/128".parse().expect("literal")],
            None => {
                return Err(self.err(r.address.span(), "icap.allow", format!("the ICAP service on {address} is off loopback: list the proxies that may use it in `allow`")));
            }
            Some(list) if list.get_ref().is_empty() => {
                return Err(self.err(list.span(), "icap.allow", "an empty list admits no ICAP client; list the proxies' networks (leave the key out for loopback only)"));
            }
            Some(list) => self.networks(list, "icap.allow")?,
        };
        let covered = crate::addr::public_coverage(&allow);
        if !address.ip().is_loopback() && (covered.v4_addresses > MAX_OPEN_V4 || covered.v6_subnets > MAX_OPEN_V6_SUBNETS) {
            let span = r.allow.as_ref().map_or(r.address.span(), |a| a.span());
            return Err(self.err(
                span,
                "icap.allow",
                format!("the ICAP service on {address} admits {} public IPv4 addresses and {} public IPv6 /64s: list the proxies that use it, at most a /16 (IPv6: a /48)", covered.v4_addresses, covered.v6_subnets),
            ));
        }
        Ok(IcapConfig { address, profile: without_width_hints(profile), allow })
    }
}

/// `profile` for the ICAP service: its pages name images by the origin's own addresses, since
/// the ICAP client, not pith, fetches them and would pass a width hint on to the origin.
fn without_width_hints(profile: Arc<Profile>) -> Arc<Profile> {
    let Some(stage2) = profile.stage2.as_ref().filter(|s| s.images.width_hints) else { return profile };
    let mut stage2 = Stage2::clone(stage2);
    stage2.images.width_hints = false;
    let mut icap = Profile::clone(&profile);
    icap.stage2 = Some(Arc::new(stage2));
    Arc::new(icap)
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn parse(text: &str) -> Result<Config, String> {
        Config::from_toml_str(text, "test.toml", None).map_err(|e| e.to_string())
    }

    macro_rules! refused {
        ($name:ident, $text:expr, $needle:expr) => {
            #[test]
            fn $name() {
                let err = parse($text).unwrap_err();
                assert!(err.contains($needle), "{err}");
            }
        };
    }

    #[test]
    fn loopback_service_defaults() {
        let c = parse("[[icap]]\naddress = \"127.0.0.1:1344\"\n").unwrap();
        assert_eq!(c.icap.len(), 1);
        assert_eq!(c.icap[0].profile.name, "declutter");
        assert!(!c.icap[0].profile.images().width_hints, "the ICAP client fetches the images: no hints");
        assert_eq!(c.icap[0].allow.len(), 2);
        let c = parse("[[icap]]\naddress = \"0.0.0.0:1344\"\nallow = [\"10.0.0.0/8\"]\nprofile = \"pass\"\n").unwrap();
        assert_eq!((c.icap[0].profile.name.as_str(), c.icap[0].allow.len()), ("pass", 1));
        assert!(parse("").unwrap().icap.is_empty(), "no ICAP service unless asked");
    }

    refused!(off_loopback_needs_allow, "[[icap]]\naddress = \"0.0.0.0:1344\"\n", "icap.allow");
    refused!(empty_allow, "[[icap]]\naddress = \"127.0.0.1:1344\"\nallow = []\n", "icap.allow");
    refused!(open_to_everyone, "[[icap]]\naddress = \"0.0.0.0:1344\"\nallow = [\"0.0.0.0/0\"]\n", "icap.allow");
    refused!(bad_address, "[[icap]]\naddress = \"localhost:1344\"\n", "icap.address");
    refused!(bad_network, "[[icap]]\naddress = \"127.0.0.1:1344\"\nallow = [\"squid\"]\n", "icap.allow");
    refused!(unknown_profile, "[[icap]]\naddress = \"127.0.0.1:1344\"\nprofile = \"nope\"\n", "icap.profile");
    refused!(unknown_key, "[[icap]]\naddress = \"127.0.0.1:1344\"\nport = 1\n", "port");
    refused!(same_as_listener, "[[listener]]\naddress = \"127.0.0.1:1344\"\n[[icap]]\naddress = \"127.0.0.1:1344\"\n", "collides");
    refused!(two_on_one_port, "[[icap]]\naddress = \"127.0.0.1:1344\"\n[[icap]]\naddress = \"0.0.0.0:1344\"\nallow = [\"10.0.0.0/8\"]\n", "collides");
}
