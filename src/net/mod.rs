//! The network side: listeners, connections, and the steps of one proxied request, in folders
//! along the path a request takes (ARCHITECTURE.md draws it file by file).
//!
//! - [`Proxy`] binds every configured listener and runs their accept loops; [`reload`]: the
//!   running [`State`], replaced whole when the configuration is reloaded through a
//!   [`ProxyHandle`].
//! - [`accept`]: accept and admit. Connections are bounded by a semaphore
//!   (`limits.max_connections`; past it a connection waits briefly, then gets 503) and per
//!   client (`limits.max_connections_per_client`); each gets its own task and an
//!   [`accept::conn::Handler`] that serves its requests one step at a time: the rate, the
//!   target, admission ([`accept::admit`]), then the profile and the exchange.
//! - [`decide`]: the one decision of a request's profile and serving settings, for the
//!   proxy, the gateway and ICAP alike; [`choices`]: each client's choices it reads.
//! - [`exchange`]: the cache step, the response classified and passed through or rewritten
//!   within the rewrite memory budget, image responses, the body types served.
//! - [`upstream`]: the pooled clients and request preparation, a request sent again on a
//!   closed pooled connection, destination rules, HTTPS fetched for plain-HTTP clients.
//! - [`tunnel`]: CONNECT: blind tunnels, and HTTPS interception with leaves from [`crate::tls`].
//! - [`own`]: pith's own pages and error pages: the control page at `http://pith/` and its
//!   bar, PAC, `/metrics` (the one writer of Prometheus text), `/admin`, `/ca`, and the URL
//!   gateway (`/read?url=`) on a listener's own address.
//! - [`observe`]: what the response path reports (the access record, counts per client,
//!   site and request kind), read by the control page and `/metrics`.
//! - [`icap`]: the ICAP service (`[[icap]]`): Squid hands pith responses, pith rewrites them
//!   with the steps of [`exchange::respond`].

pub mod accept;
pub mod choices;
pub mod decide;
pub mod error;
pub mod exchange;
pub mod icap;
pub mod observe;
pub mod own;
pub mod reload;
pub mod tunnel;
pub mod upstream;

use accept::{conn, rate};
use exchange::budget;
use upstream::{forward, upgrade};

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use http::HeaderValue;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::{Config, ListenerConfig};
pub use error::ProxyError;
pub use reload::{ProxyHandle, Reloaded};

/// What every request shares: the configuration and what was built from it. One state serves
/// from one reload to the next; a request keeps the one it started with.
pub struct State {
    /// The running configuration.
    pub config: Arc<Config>,
    /// The pooled upstream clients, one per destination policy.
    pub clients: forward::Clients,
    /// This process's `Via` entry, unique per process so loops through it are recognised.
    pub via: HeaderValue,
    /// The addresses pith listens on, to recognise requests addressed to itself.
    pub own_addrs: Vec<SocketAddr>,
    /// Responses kept for reuse; `None` when `[cache] enabled = false`.
    pub cache: Option<Arc<crate::cache::Cache>>,
    /// Leaf certificates for intercepted hosts; `None` when `[intercept]` intercepts nothing.
    pub certs: Option<Arc<crate::tls::LeafCache>>,
    /// The listeners as they run, in the order of the bound sockets: each one's bound address
    /// with the profile, allow list and credentials now in force.
    pub listeners: Vec<Arc<ListenerConfig>>,
    /// The per-client request rate; `None` when `limits.client_rate` is off.
    pub rate: Option<Arc<rate::RateLimiter>>,
    /// The rewrite memory budget (`limits.rewrite_memory_bytes`).
    pub budget: Arc<budget::Budget>,
    /// Each client's choices; made at start-up and kept across reloads.
    pub control: Arc<choices::Control>,
    /// What was served, as the response path reports it ([`observe`]); made at start-up and
    /// kept across reloads.
    pub observer: Arc<observe::Tally>,
    /// Hosts that redirected to their own HTTPS URL, for `upgrade = "on-redirect"`.
    pub upgraded: Arc<upgrade::Secure>,
}

impl State {
    /// True when `host:port` is this proxy: its name `pith`, or one of its listening
    /// addresses. A wildcard listener answers on every address of the machine: loopback, the
    /// unspecified address, and any address this machine holds ([`is_local_address`]), asked
    /// only when the port is one pith listens on. A name that leads back here another way is
    /// caught when its request arrives ([`upstream::pooled::is_own_connection`]).
    pub fn is_self(&self, host: &str, port: u16) -> bool {
        is_own(host, port, &self.own_addrs)
    }
}

/// [`State::is_self`] for the listening addresses `own_addrs`. Public for the fuzz targets.
#[doc(hidden)]
pub fn is_own(host: &str, port: u16, own_addrs: &[SocketAddr]) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.eq_ignore_ascii_case("pith") {
        return true;
    }
    let ip = if host.eq_ignore_ascii_case("localhost") { Some(std::net::Ipv4Addr::LOCALHOST.into()) } else { host.parse().ok() };
    let Some(ip) = ip else { return false };
    let ip: std::net::IpAddr = ip;
    let ip = ip.to_canonical();
    own_addrs.iter().any(|a| {
        a.port() == port && (a.ip() == ip || (a.ip().is_unspecified() && (ip.is_loopback() || ip.is_unspecified() || is_local_address(ip))))
    })
}

/// True when `ip` is one of this machine's own addresses: binding a socket to it succeeds
/// (the kernel refuses an address no interface holds). No packet is sent.
pub fn is_local_address(ip: std::net::IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

impl State {
}

/// Failures to start, or to put a reloaded configuration in force.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A listener could not bind.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The local CA for HTTPS interception could not be loaded or created.
    #[error("HTTPS interception: the CA in {}: {source}", .dir.display())]
    Ca {
        /// The CA folder.
        dir: std::path::PathBuf,
        /// Why.
        #[source]
        source: crate::tls::CaError,
    },
    /// The state file (`state.path`) cannot be used.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

/// The bound proxy, ready to run.
pub struct Proxy {
    live: Arc<reload::Live>,
    sockets: Vec<TcpListener>,
    /// The `[[icap]]` sockets, in config order.
    icap: Vec<(TcpListener, Arc<crate::config::IcapConfig>)>,
    icap_counters: Arc<icap::Counters>,
}

impl Proxy {
    /// Binds every listener of `config`. Port 0 picks a free port; see [`Proxy::local_addrs`].
    pub async fn bind(config: Config) -> Result<Proxy, StartError> {
        let mut sockets = Vec::new();
        let mut own_addrs = Vec::new();
        for l in &config.listeners {
            let socket = TcpListener::bind(l.address).await.map_err(|source| StartError::Bind { address: l.address, source })?;
            let local = socket.local_addr().map_err(|source| StartError::Bind { address: l.address, source })?;
            own_addrs.push(local);
            sockets.push(socket);
        }
        let mut icap = Vec::new();
        for s in &config.icap {
            let socket = TcpListener::bind(s.address).await.map_err(|source| StartError::Bind { address: s.address, source })?;
            let address = socket.local_addr().map_err(|source| StartError::Bind { address: s.address, source })?;
            icap.push((socket, Arc::new(crate::config::IcapConfig { address, ..s.clone() })));
        }
        let configured = config.listeners.iter().map(|l| l.address).collect();
        let via = HeaderValue::from_str(&format!("1.1 pith-{:08x}", process_token())).expect("ASCII text is a valid header value");
        let state = State::assemble(config, via, own_addrs, None)?;
        let live = Arc::new(reload::Live::new(state, configured));
        live.current().observer.watch_connections(live.drain.counter());
        Ok(Proxy { live, sockets, icap, icap_counters: Arc::default() })
    }

    /// The addresses the ICAP services (`[[icap]]`) actually bound, in config order.
    pub fn icap_addrs(&self) -> Vec<SocketAddr> {
        self.icap.iter().map(|(_, s)| s.address).collect()
    }

    /// What the ICAP services have answered so far.
    pub fn icap_counters(&self) -> Arc<icap::Counters> {
        self.icap_counters.clone()
    }

    /// The addresses actually bound, in config order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.live.current().own_addrs.clone()
    }

    /// A handle to reload the configuration of this proxy while it runs.
    pub fn handle(&self) -> ProxyHandle {
        ProxyHandle { live: self.live.clone() }
    }

    /// Serves until `shutdown` completes, then stops accepting and gives open connections
    /// and tunnels `limits.drain_timeout` (of the configuration then in force) to finish.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut loops = Vec::new();
        for (index, socket) in self.sockets.into_iter().enumerate() {
            let state = self.live.current();
            if let Some(l) = state.listeners.get(index) {
                let private = if l.deny_private { "refused" } else { "reachable" };
                tracing::info!(address = %l.address, profile = %l.profile.name, private_destinations = %private, "listening");
                if l.address.ip().is_unspecified() && l.allow.iter().all(|net| net.addr().to_canonical().is_loopback()) {
                    tracing::warn!(address = %l.address, "this listener answers on every address of the machine, but its allow list admits loopback clients only: every other machine is refused. List the LAN's networks in `allow`, or listen on 127.0.0.1");
                }
            }
            let acceptor = conn::Acceptor { socket, index, live: self.live.clone(), stop: stop_rx.clone() };
            loops.push(tokio::spawn(acceptor.run()));
        }
        for (index, (socket, bound)) in self.icap.into_iter().enumerate() {
            tracing::info!(address = %bound.address, profile = %bound.profile.name, "ICAP service listening");
            let acceptor = icap::Acceptor { socket, index, bound, live: self.live.clone(), stop: stop_rx.clone(), counters: self.icap_counters.clone() };
            loops.push(tokio::spawn(acceptor.run()));
        }
        shutdown.await;
        let deadline = self.live.current().config.limits.drain_timeout;
        tracing::info!(open = self.live.drain.open_connections(), "shutting down: no new connections; draining for up to {} ms", deadline.as_millis());
        let _ = stop_tx.send(true);
        for l in loops {
            let _ = l.await;
        }
        let left = self.live.drain.shutdown(deadline).await;
        if left > 0 {
            tracing::warn!(left, "connections or tunnels still open after {} ms were closed", deadline.as_millis());
        }
    }
}

/// Loads (on first use, creates) the local CA when interception is configured, and says
/// once where its certificate is and how to trust it.
fn load_certs(cfg: &crate::config::InterceptConfig) -> Result<Option<Arc<crate::tls::LeafCache>>, StartError> {
    if !cfg.is_active() {
        return Ok(None);
    }
    let (ca, created) = crate::tls::Authority::load_or_create(&cfg.ca_dir).map_err(|source| StartError::Ca { dir: cfg.ca_dir.clone(), source })?;
    let cert = ca.cert_path().display().to_string();
    if created {
        tracing::info!(%cert, "created a local CA for HTTPS interception");
    }
    tracing::info!("{}", crate::tls::trust_hint(ca.cert_path()));
    Ok(Some(Arc::new(crate::tls::LeafCache::new(Arc::new(ca), cfg.max_hosts))))
}

/// A per-process token for the `Via` entry: time and process id mixed, no randomness crate
/// needed; it only has to differ between pith processes that might be chained.
fn process_token() -> u32 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
    (mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pith's own name is its own with or without the root's trailing dot, as `localhost` is.
    #[test]
    fn own_names_are_own_with_a_trailing_dot() {
        let own: Vec<SocketAddr> = vec!["127.0.0.1:8080".parse().unwrap()];
        for host in ["pith", "PITH", "pith.", "Pith.", "localhost", "localhost.", "127.0.0.1", "::ffff:127.0.0.1"] {
            assert!(is_own(host, 8080, &own), "{host}");
        }
        assert!(is_own("pith.", 80, &own), "the name is pith's on any port");
        for (host, port) in [("localhost", 80), ("pith.example", 8080), ("pith..", 8080), ("127.0.0.2", 8080)] {
            assert!(!is_own(host, port, &own), "{host}:{port}");
        }
    }
}
