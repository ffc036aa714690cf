//! The leaf cache: one rustls server config per intercepted host name, issued by the local CA
//! on first use and kept in a bounded moka cache, so a repeat CONNECT to a host costs a
//! lookup, not a key generation and a signature.
//!
//! Concurrent first CONNECTs to the same host share one issuance (`try_get_with`). Entries
//! expire long before their certificates do, so a long-running proxy never serves an expired
//! leaf. All configs share one session store, so a returning client resumes its TLS session
//! instead of doing a full handshake; rustls only resumes a session for the name it was made
//! for.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ServerSessionMemoryCache, StoresServerSessions};
use rustls::ServerConfig;

use super::ca::{normalize, Authority, Leaf};
use super::CaError;

/// How long a host's config is kept: far inside the leaf lifetime ([`super::LEAF_LIFETIME`]).
const ENTRY_LIFETIME: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// TLS sessions remembered for resumption, across all hosts.
const SESSIONS: usize = 4096;

/// Server configs for intercepted hosts, by name.
pub struct LeafCache {
    ca: Arc<Authority>,
    configs: moka::future::Cache<String, Arc<ServerConfig>>,
    provider: Arc<CryptoProvider>,
    sessions: Arc<dyn StoresServerSessions>,
    issued: AtomicU64,
}

impl std::fmt::Debug for LeafCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafCache").field("ca", &self.ca).field("hosts", &self.configs.entry_count()).finish_non_exhaustive()
    }
}

impl LeafCache {
    /// A cache of at most `capacity` hosts for leaves issued by `ca`.
    pub fn new(ca: Arc<Authority>, capacity: u64) -> LeafCache {
        LeafCache {
            ca,
            configs: moka::future::Cache::builder().max_capacity(capacity).time_to_live(ENTRY_LIFETIME).build(),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
            sessions: ServerSessionMemoryCache::new(SESSIONS),
            issued: AtomicU64::new(0),
        }
    }

    /// The CA the leaves chain to.
    pub fn authority(&self) -> &Authority {
        &self.ca
    }

    /// The server config for `name` (the client's SNI, or the CONNECT host when it sent
    /// none), issuing its leaf on first use. ALPN offers HTTP/2 and HTTP/1.1.
    ///
    /// The error is shared with every caller that waited on the same failed issuance.
    pub async fn server_config(&self, name: &str) -> Result<Arc<ServerConfig>, Arc<CaError>> {
        let name = normalize(name);
        self.configs
            .try_get_with(name.clone(), async {
                let leaf = self.ca.issue(&name)?;
                self.issued.fetch_add(1, Ordering::Relaxed);
                self.build(&name, leaf).map(Arc::new)
            })
            .await
    }

    fn build(&self, name: &str, leaf: Leaf) -> Result<ServerConfig, CaError> {
        let config_error = |source| CaError::Config { name: name.to_string(), source };
        let mut config = ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(config_error)?
            .with_no_client_auth()
            .with_single_cert(vec![leaf.cert], leaf.key)
            .map_err(config_error)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        config.session_storage = self.sessions.clone();
        Ok(config)
    }

    /// Leaves issued since start: the number of key generations interception has cost.
    pub fn issued(&self) -> u64 {
        self.issued.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_repeat_lookup_issues_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LeafCache::new(Arc::new(Authority::create(dir.path()).unwrap()), 16);
        let first = cache.server_config("Shop.Example").await.unwrap();
        let again = cache.server_config("shop.example.").await.unwrap();
        assert!(Arc::ptr_eq(&first, &again), "one config per host, whatever the spelling");
        assert_eq!(cache.issued(), 1);
        cache.server_config("other.example").await.unwrap();
        assert_eq!(cache.issued(), 2);
        assert_eq!(first.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }

    #[tokio::test]
    async fn concurrent_first_lookups_share_one_issuance() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(LeafCache::new(Arc::new(Authority::create(dir.path()).unwrap()), 16));
        let lookups = (0..8).map(|_| {
            let cache = cache.clone();
            tokio::spawn(async move { cache.server_config("busy.example").await.map(|_| ()) })
        });
        for lookup in lookups.collect::<Vec<_>>() {
            lookup.await.unwrap().unwrap();
        }
        assert_eq!(cache.issued(), 1);
    }

    #[tokio::test]
    async fn a_name_that_cannot_be_certified_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let cache = LeafCache::new(Arc::new(Authority::create(dir.path()).unwrap()), 16);
        let err = cache.server_config("bücher.example").await.expect_err("non-ASCII names are refused");
        assert!(err.to_string().contains("bücher.example"), "{err}");
        assert_eq!(cache.issued(), 0);
    }
}
