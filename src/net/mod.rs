//! The network side: listeners, connections, and the steps of one proxied request.
//!
//! - [`Proxy`] binds every configured listener and runs their accept loops. Connections are
//!   bounded by a semaphore (`limits.max_connections`); each gets its own task and a
//!   [`conn::Handler`] that serves its requests one step at a time.
//! - [`admit`]: allow list and proxy authentication.
//! - [`forward`]: the pooled upstream client and request preparation.
//! - [`cached`]: the cache step (lookup, single fill, revalidation), then forward and respond.
//! - [`respond`]: classify a response, then pass it through or rewrite it.
//! - [`connect`]: CONNECT: blind tunnels, and HTTPS interception with leaves from [`crate::tls`].
//! - [`own`]: pith's own pages and error pages.
//! - [`bodies`]: the body types served and the wrappers that time and log them.

pub mod admit;
pub mod bodies;
pub mod cached;
pub mod conn;
pub mod connect;
pub mod error;
pub mod forward;
pub mod own;
pub mod resolve;
pub mod respond;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::config::{Config, ListenerConfig};
pub use error::ProxyError;

/// How long in-flight requests may take to finish once shutdown starts.
const DRAIN_DEADLINE: Duration = Duration::from_secs(10);

/// What every connection shares: the config, the upstream client and pith's identity.
pub struct State {
    /// The running configuration.
    pub config: Arc<Config>,
    /// The pooled upstream client.
    pub client: forward::UpstreamClient,
    /// This process's `Via` entry, unique per process so loops through it are recognised.
    pub via: HeaderValue,
    /// The addresses pith listens on, to recognise requests addressed to itself.
    pub own_addrs: Vec<SocketAddr>,
    /// Rewritten pages kept for reuse; `None` when `[cache] enabled = false`.
    pub cache: Option<crate::cache::Cache>,
    /// Leaf certificates for intercepted hosts; `None` when `[intercept]` intercepts nothing.
    pub certs: Option<Arc<crate::tls::LeafCache>>,
}

impl State {
    /// True when `host:port` is this proxy: its name `pith`, or one of its listening
    /// addresses (including loopback names for a wildcard listener).
    pub fn is_self(&self, host: &str, port: u16) -> bool {
        if host.eq_ignore_ascii_case("pith") {
            return true;
        }
        let ip = if host.eq_ignore_ascii_case("localhost") { Some(std::net::Ipv4Addr::LOCALHOST.into()) } else { host.parse().ok() };
        let Some(ip) = ip else { return false };
        let ip: std::net::IpAddr = ip;
        self.own_addrs.iter().any(|a| {
            a.port() == port && (a.ip() == ip || (a.ip().is_unspecified() && (ip.is_loopback() || ip.is_unspecified())))
        })
    }
}

/// Startup failures.
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
}

/// The bound proxy, ready to run.
pub struct Proxy {
    state: Arc<State>,
    listeners: Vec<(TcpListener, Arc<ListenerConfig>)>,
}

impl Proxy {
    /// Binds every listener of `config`. Port 0 picks a free port; see [`Proxy::local_addrs`].
    pub async fn bind(config: Config) -> Result<Proxy, StartError> {
        let mut listeners = Vec::new();
        let mut own_addrs = Vec::new();
        for l in &config.listeners {
            let socket = TcpListener::bind(l.address).await.map_err(|source| StartError::Bind { address: l.address, source })?;
            let local = socket.local_addr().map_err(|source| StartError::Bind { address: l.address, source })?;
            own_addrs.push(local);
            let mut l = l.clone();
            l.address = local;
            listeners.push((socket, Arc::new(l)));
        }
        let client = forward::client(&config.upstream);
        // Parse the shipped ad lists now (about 0.2 s) rather than inside the first request.
        if config.profiles.values().any(|p| p.stage2.as_ref().is_some_and(|s| s.ads.is_none())) {
            let filter = crate::html::ads::AdFilter::builtin();
            tracing::debug!(rules = filter.rule_count(), "ad lists loaded");
        }
        let via = HeaderValue::from_str(&format!("1.1 pith-{:08x}", process_token())).expect("ASCII text is a valid header value");
        let cache = config.cache.enabled.then(|| crate::cache::Cache::new(&config.cache, &config.profiles));
        let certs = load_certs(&config.intercept)?;
        let state = Arc::new(State { config: Arc::new(config), client, via, own_addrs, cache, certs });
        Ok(Proxy { state, listeners })
    }

    /// The addresses actually bound, in config order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.state.own_addrs.clone()
    }

    /// Serves until `shutdown` completes, then stops accepting and gives in-flight requests
    /// a deadline to finish.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let limit = Arc::new(Semaphore::new(self.state.config.limits.max_connections));
        let graceful = Arc::new(hyper_util::server::graceful::GracefulShutdown::new());
        let mut loops = Vec::new();
        for (socket, listener) in self.listeners {
            tracing::info!(address = %listener.address, profile = %listener.profile.name, "listening");
            let acceptor = conn::Acceptor { socket, listener, state: self.state.clone(), limit: limit.clone(), graceful: graceful.clone(), stop: stop_rx.clone() };
            loops.push(tokio::spawn(acceptor.run()));
        }
        shutdown.await;
        tracing::info!("shutting down: no new connections; draining");
        let _ = stop_tx.send(true);
        for l in loops {
            let _ = l.await;
        }
        let graceful = Arc::try_unwrap(graceful).unwrap_or_else(|_| hyper_util::server::graceful::GracefulShutdown::new());
        if tokio::time::timeout(DRAIN_DEADLINE, graceful.shutdown()).await.is_err() {
            tracing::warn!("some connections did not finish within {} s", DRAIN_DEADLINE.as_secs());
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
