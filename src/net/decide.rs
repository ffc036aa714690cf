//! The one decision of which profile serves a request, and with which serving settings.
//!
//! Every way in asks [`decide`]: the proxy (a client on a listener, its one-shot choice or
//! saved per-site switch, and HTTPS fetched for a plain-HTTP client), the URL gateway (the
//! `profile=` parameter among the listener's `gateway_profiles`) and the ICAP service (its
//! own profile). The answer is one [`Decision`] that every later step obeys: the cache keys on
//! its profile, the pipeline runs it, the listener's last pass ([`Adapt`]: links, charset,
//! HTML 3.2) rides inside it, and the proxy fetches the URL it names.

use std::net::IpAddr;
use std::sync::Arc;

use http::Uri;

use crate::net::error::ProxyError;
use crate::net::choices;
use crate::net::upstream::upgrade;
use crate::net::State;
use crate::config::{IcapConfig, ListenerConfig, Upgrade};
use crate::html::adapt::{Adapt, Links};
use crate::profile::Profile;

/// Where a request came in, with what the decision reads of it.
pub enum Entry<'a> {
    /// A proxied request for `uri` (`url` as logged, `host` without brackets) from `client` on
    /// `listener`; `plain` when it came as plain HTTP, not inside an intercepted tunnel.
    Proxy {
        /// The listener it came in on.
        listener: &'a ListenerConfig,
        /// The client's address.
        client: IpAddr,
        /// The target's host.
        host: &'a str,
        /// The target as logged: a one-shot choice is for this URL.
        url: &'a str,
        /// The target.
        uri: &'a Uri,
        /// True for a plain-HTTP request (HTTPS may be fetched in its place).
        plain: bool,
    },
    /// A URL gateway request on `listener`, which named the profile `asked` (`profile=`).
    Gateway {
        /// The listener it came in on.
        listener: &'a ListenerConfig,
        /// The profile named, if any.
        asked: Option<&'a str>,
    },
    /// A response an ICAP client handed to `service`.
    Icap {
        /// The service's settings.
        service: &'a IcapConfig,
    },
}

/// What serves a request.
pub struct Decision {
    /// The profile, with the listener's last pass in it.
    pub profile: Arc<Profile>,
    /// True when the profile is not the listener's own (a client's choice, or the gateway's
    /// `profile=`): its name is what the access log says served the request.
    pub chosen: bool,
    /// For a proxied plain-HTTP request: the `https://` URL fetched in its place.
    pub upgraded: Option<Uri>,
}

/// Decides the profile and serving settings of a request coming in by `entry`. Fails only for
/// a gateway request naming a profile its listener does not offer, or on a `pass` listener.
pub fn decide(state: &State, entry: Entry<'_>) -> Result<Decision, ProxyError> {
    match entry {
        Entry::Proxy { listener, client, host, url, uri, plain } => {
            // The client's own choice, when it made one ([`choices::Control::profile_for`]).
            let who = || choices::client_id(listener, client);
            let chosen = state.control.profile_for(&state.config.control, who, client, host, url);
            let is_chosen = chosen.is_some();
            let base = chosen.unwrap_or_else(|| listener.profile.clone());
            // A plain-HTTP client's page may be fetched over HTTPS, and is served as its listener says.
            let upgraded = if plain { upgrade::target(state, listener, uri) } else { None };
            let profile = served_with(state, listener, &base, plain).unwrap_or(base);
            Ok(Decision { profile, chosen: is_chosen, upgraded })
        }
        Entry::Gateway { listener, asked } => {
            let profile = gateway_choice(listener, asked)?;
            let links = Links::Gateway { profile: asked.map(str::to_owned) };
            let mut profile = profile.clone().with_adapt(Adapt { links, charset: listener.serving.charset, legacy: listener.serving.legacy });
            // The bar's links are for a proxy's clients; a gateway's clients reach pith by address.
            profile.bar = false;
            Ok(Decision { profile: Arc::new(profile), chosen: true, upgraded: None })
        }
        Entry::Icap { service } => Ok(Decision { profile: service.profile.clone(), chosen: false, upgraded: None }),
    }
}

/// The profile the listener serves a proxied page with: `base` (the listener's own, or the
/// client's choice) with the listener's last pass (links down to `http://` for a plain-HTTP
/// client of an upgrading listener, the charset, HTML 3.2); `None` when that pass changes
/// nothing.
fn served_with(state: &State, listener: &ListenerConfig, base: &Profile, plain: bool) -> Option<Arc<Profile>> {
    let serving = &listener.serving;
    let links = if plain && serving.upgrade != Upgrade::Off {
        Links::Downgrade { keep: state.config.intercept.never.clone() }
    } else {
        Links::Kept
    };
    let adapt = Adapt { links, charset: serving.charset, legacy: serving.legacy };
    (!adapt.is_identity()).then(|| Arc::new(base.clone().with_adapt(adapt)))
}

/// The profile `asked` on `listener` through the gateway: its own when none is named, else one
/// of its `gateway_profiles` (or its own, by name).
fn gateway_choice<'a>(listener: &'a ListenerConfig, asked: Option<&str>) -> Result<&'a Profile, ProxyError> {
    let own = &listener.profile;
    let chosen = match asked {
        None => Some(own),
        Some(name) => std::iter::once(own).chain(&listener.serving.gateway).find(|p| p.name == name),
    };
    match chosen {
        Some(p) if !p.is_pass() => Ok(p),
        Some(_) => Err(ProxyError::BadRequest { reason: "this listener's profile is `pass`, which rewrites nothing: its pages would leave the gateway".into() }),
        None => {
            let offered: Vec<&str> = std::iter::once(own).chain(&listener.serving.gateway).map(|p| p.name.as_str()).collect();
            Err(ProxyError::BadRequest { reason: format!("profile {:?} is not offered here; this listener offers {}", asked.unwrap_or(""), offered.join(", ")) })
        }
    }
}
