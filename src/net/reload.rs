//! Reloading the configuration while serving: the running [`State`] is replaced whole, and
//! every request takes the one current at its start, so a request sees one configuration from
//! its first step to its last and a connection is never dropped by a reload.
//!
//! What a new configuration brings:
//! - at once, for the next request: profiles and rules, allow lists and credentials, deny
//!   rules, interception policy, limits (`max_connections` is resized in place), the log level
//!   (applied by the binary);
//! - for the next connection: the request-head limits and timeouts, set when it is accepted;
//! - rebuilt only when their settings changed: the upstream client (pooled connections are
//!   kept otherwise), the local CA and its leaf certificates, the rate limiter's buckets;
//! - always rebuilt: the HTTP cache. Its keys carry a hash of each profile taken
//!   when the cache is made, so a cache carried over would key a changed profile by its old
//!   hash and serve pages rewritten by the old rules;
//! - never without a restart: listener addresses, and listeners added or removed. The
//!   listeners keep their sockets; each takes the new settings of the listener at the same
//!   place in the file, and the difference is logged and reported ([`Reloaded`]).
//!
//! Reading and validating the file is the caller's job (the binary does it on SIGHUP): a file
//! that does not validate never reaches [`ProxyHandle::reload`], so the running one stays.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use http::HeaderValue;
use tokio::sync::Semaphore;

use crate::net::accept::drain::Drain;
use crate::net::accept::per_client::ClientCounts;
use crate::net::accept::rate::RateLimiter;
use crate::net::upstream::forward;
use crate::net::load_certs;
use crate::net::StartError;
use crate::net::State;
use crate::config::Config;

/// What a running proxy shares with its handles and connections: the current state, and the
/// parts that outlive every state.
pub(super) struct Live {
    current: RwLock<Arc<State>>,
    /// Listener addresses as configured (port 0 before binding), to tell a changed address
    /// from the same one.
    configured: Vec<SocketAddr>,
    /// The `max_connections` permits.
    pub(super) limit: Arc<Semaphore>,
    /// Connection slots and shutdown phases.
    pub(super) drain: Drain,
    /// Open connections per client, for `limits.max_connections_per_client`.
    pub(super) clients: Arc<ClientCounts>,
    /// Serialises reloads; holds the `max_connections` last applied.
    reloading: Mutex<usize>,
}

impl Live {
    /// Wraps the first state.
    pub(super) fn new(state: State, configured: Vec<SocketAddr>) -> Live {
        let max = state.config.limits.max_connections;
        Live {
            current: RwLock::new(Arc::new(state)),
            configured,
            limit: Arc::new(Semaphore::new(max)),
            drain: Drain::default(),
            clients: Arc::default(),
            reloading: Mutex::new(max),
        }
    }

    /// The state a request or connection starting now uses.
    pub(super) fn current(&self) -> Arc<State> {
        // A writer only swaps an `Arc`: a poisoned lock still holds a whole state.
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn replace(&self, state: State) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(state);
    }
}

/// A handle on a running (or about to run) [`crate::net::Proxy`]: reload its configuration, look at
/// what it serves. Cheap to clone.
#[derive(Clone)]
pub struct ProxyHandle {
    pub(super) live: Arc<Live>,
}

/// What a reload could not apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Changes that take a restart, in words (e.g. a listener's new address); empty when the
    /// whole new configuration is in force.
    pub needs_restart: Vec<String>,
}

impl ProxyHandle {
    /// Puts `config` in force for every request from now on. Requests already running finish
    /// with the configuration they started with. Fails, keeping the running configuration,
    /// only when the new one needs a local CA that cannot be loaded or created.
    pub fn reload(&self, config: Config) -> Result<Reloaded, StartError> {
        let mut applied_max = self.live.reloading.lock().unwrap_or_else(PoisonError::into_inner);
        let old = self.live.current();
        let mut needs_restart = restart_notes(&self.live.configured, &config);
        if old.config.control.state_path != config.control.state_path {
            needs_restart.push("state.path: a new state file takes a restart; choices are still kept in the old one".to_string());
        }
        let state = State::assemble(config, old.via.clone(), old.own_addrs.clone(), Some(&old))?;
        let max = state.config.limits.max_connections;
        resize(&self.live.limit, *applied_max, max);
        *applied_max = max;
        let cache = if state.cache.is_some() { "emptied" } else { "off" };
        self.live.replace(state);
        tracing::info!(cache, "configuration reloaded; requests from now on use it");
        for note in &needs_restart {
            tracing::warn!("{note}");
        }
        Ok(Reloaded { needs_restart })
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.live.current().config.clone()
    }

    /// Client connections open now; one whose CONNECT tunnel is open counts until the tunnel
    /// closes.
    pub fn open_connections(&self) -> usize {
        self.live.drain.open_connections()
    }
}

/// What `config` asks for that the bound listeners cannot do without a restart.
fn restart_notes(configured: &[SocketAddr], config: &Config) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, was) in configured.iter().enumerate() {
        match config.listeners.get(i) {
            Some(l) if l.address != *was => notes.push(format!("listener {}: the address {} (now {was}) takes a restart; its other settings are in force", i + 1, l.address)),
            Some(_) => {}
            None => notes.push(format!("listener {} ({was}) was removed from the file: it keeps serving with its old settings until a restart", i + 1)),
        }
    }
    for (i, l) in config.listeners.iter().enumerate().skip(configured.len()) {
        notes.push(format!("listener {} ({}) is new: it takes a restart to listen", i + 1, l.address));
    }
    notes
}

/// Resizes the `max_connections` permits from `from` to `to`. Growing adds permits at once;
/// shrinking takes the free ones at once and the rest as connections close, so no open
/// connection is cut and no new one is accepted until the count is under the new limit.
fn resize(limit: &Arc<Semaphore>, from: usize, to: usize) {
    if to >= from {
        limit.add_permits(to - from);
        return;
    }
    let owed = (from - to) - limit.forget_permits(from - to);
    if owed == 0 {
        return;
    }
    let (limit, owed) = (limit.clone(), u32::try_from(owed).unwrap_or(u32::MAX));
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async move {
                // The semaphore is never closed, so the acquire only waits.
                if let Ok(permits) = limit.acquire_many_owned(owed).await {
                    permits.forget();
                }
            });
        }
        Err(_) => tracing::warn!(owed, "max_connections lowered outside the runtime; the limit applies once a restart"),
    }
}

impl State {
    /// The state for `config`, reusing what `prev` built for settings that did not change.
    pub(super) fn assemble(config: Config, via: HeaderValue, own_addrs: Vec<SocketAddr>, prev: Option<&State>) -> Result<State, StartError> {
        let listeners = own_addrs
            .iter()
            .enumerate()
            .filter_map(|(i, addr)| match config.listeners.get(i) {
                Some(l) => Some(Arc::new(crate::config::ListenerConfig { address: *addr, ..l.clone() })),
                None => prev.and_then(|p| p.listeners.get(i).cloned()),
            })
            .collect();
        let clients = match prev {
            Some(p) if p.config.upstream == config.upstream => p.clients.clone(),
            _ => forward::Clients::new(&config.upstream),
        };
        // Parse the shipped ad lists now (about 0.2 s) rather than inside the first request.
        if config.profiles.values().any(|p| p.stage2.as_ref().is_some_and(|s| s.ads.is_none())) {
            let filter = crate::ads::AdFilter::builtin();
            tracing::debug!(rules = filter.rule_count(), "ad lists loaded");
        }
        let certs = match prev {
            Some(p) if p.certs.is_some() && same_ca(&p.config, &config) => p.certs.clone(),
            _ => load_certs(&config.intercept)?,
        };
        let rate = config.limits.client_rate.map(|limit| match prev.and_then(|p| p.rate.clone()) {
            Some(kept) if kept.limit() == limit => kept,
            _ => Arc::new(RateLimiter::new(limit)),
        });
        // The disk tier, when its folder and bound stay, is kept: listing it again would race
        // the old cache's writes still in flight.
        let cache = config.cache.enabled.then(|| match prev.and_then(|p| p.cache.as_ref()) {
            Some(old) => Arc::new(crate::cache::Cache::reconfigured(&config.cache, &config.profiles, old)),
            None => Arc::new(crate::cache::Cache::new(&config.cache, &config.profiles)),
        });
        // Kept while its settings stay: pages being rewritten hold parts of it.
        let (memory, wait) = (config.limits.rewrite_memory_bytes, config.limits.rewrite_memory_wait);
        let budget = match prev {
            Some(p) if p.config.limits.rewrite_memory_bytes == memory && p.config.limits.rewrite_memory_wait == wait => p.budget.clone(),
            _ => Arc::new(crate::net::exchange::budget::Budget::new(memory, wait)),
        };
        // The choices and counts outlive every state; a new `state.path` takes a restart.
        let control = match prev {
            Some(p) => p.control.clone(),
            None => Arc::new(crate::net::choices::Control::open(&config.control)?),
        };
        let observer = prev.map_or_else(Default::default, |p| p.observer.clone());
        let upgraded = prev.map_or_else(Default::default, |p| p.upgraded.clone());
        Ok(State { config: Arc::new(config), clients, via, own_addrs, cache, certs, listeners, rate, budget, control, observer, upgraded })
    }
}

/// True when both configurations intercept with the same CA and certificate budget.
fn same_ca(a: &Config, b: &Config) -> bool {
    b.intercept.is_active() && a.intercept.ca_dir == b.intercept.ca_dir && a.intercept.max_hosts == b.intercept.max_hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(listeners: &[&str]) -> Config {
        let text: String = listeners.iter().map(|a| format!("[[listener]]\naddress = \"{a}\"\n")).collect();
        Config::from_toml_str(&text, "test.toml", None).unwrap()
    }

    #[test]
    fn listener_changes_that_take_a_restart_are_named() {
        let bound: Vec<SocketAddr> = vec!["127.0.0.1:8080".parse().unwrap(), "127.0.0.1:8081".parse().unwrap()];
        assert!(restart_notes(&bound, &config(&["127.0.0.1:8080", "127.0.0.1:8081"])).is_empty());
        let moved = restart_notes(&bound, &config(&["127.0.0.1:8080", "127.0.0.1:9999"]));
        assert_eq!(moved.len(), 1);
        assert!(moved[0].contains("listener 2") && moved[0].contains("127.0.0.1:9999"), "{moved:?}");
        let removed = restart_notes(&bound, &config(&["127.0.0.1:8080"]));
        assert!(removed.len() == 1 && removed[0].contains("removed"), "{removed:?}");
        let added = restart_notes(&bound, &config(&["127.0.0.1:8080", "127.0.0.1:8081", "127.0.0.1:8082"]));
        assert!(added.len() == 1 && added[0].contains("new") && added[0].contains("8082"), "{added:?}");
    }

    #[tokio::test]
    async fn max_connections_grows_at_once_and_shrinks_as_connections_close() {
        let limit = Arc::new(Semaphore::new(4));
        let held = limit.clone().acquire_many_owned(3).await.unwrap();
        resize(&limit, 4, 6);
        assert_eq!(limit.available_permits(), 3);
        resize(&limit, 6, 2);
        assert_eq!(limit.available_permits(), 0, "the free permits are taken at once");
        drop(held);
        // The remaining one is taken as the held permits come back.
        for _ in 0..100 {
            if limit.available_permits() == 2 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(limit.available_permits(), 2, "three connections closed, one still owed: two free of the new two");
    }
}
