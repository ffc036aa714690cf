//! HTTPS interception's certificates: the local CA ([`Authority`]), the per-host leaf cache
//! ([`LeafCache`]) and the host lists of the interception policy ([`HostList`]).
//!
//! This module owns key material and rustls server configs; it knows nothing of HTTP,
//! sockets or the request path. `net::connect` decides whether a CONNECT is intercepted, asks
//! [`LeafCache::server_config`] for the host's config and terminates TLS with it.

mod ca;
mod hosts;
mod leaf;

use std::path::{Path, PathBuf};

pub use ca::{Authority, Leaf, CERT_FILE, KEY_FILE, LEAF_LIFETIME};
pub use hosts::{HostList, HostPatternError};
pub use leaf::LeafCache;

/// What can go wrong with the local CA or a leaf it issues.
#[derive(Debug, thiserror::Error)]
pub enum CaError {
    /// A CA file or folder could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Key or certificate generation failed.
    #[error("cannot generate {what}: {source}")]
    Generate {
        /// What was being generated.
        what: String,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
    /// The key file does not hold a usable PKCS#8 private key.
    #[error("{}: not a usable private key: {source}", .path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why (never the key itself).
        #[source]
        source: rcgen::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error("{}: not a PEM certificate: {source}", .path.display())]
    Pem {
        /// The certificate file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate and the key belong to different CAs.
    #[error("{} is not the certificate of {}; restore the matching pair, or move both away and run `pith ca init`", .cert.display(), .key.display())]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// Only one of the two CA files exists.
    #[error("{} exists but {} does not; restore it, or move {} away to create a new CA", .present.display(), .missing.display(), .present.display())]
    Incomplete {
        /// The file that exists.
        present: PathBuf,
        /// The file that is missing.
        missing: PathBuf,
    },
    /// No certificate can be issued for this host name.
    #[error("cannot issue a certificate for {name:?}: {source}")]
    Name {
        /// The name, as the client sent it.
        name: String,
        /// Why.
        #[source]
        source: rcgen::Error,
    },
    /// rustls refused the issued certificate.
    #[error("cannot build a TLS config for {name:?}: {source}")]
    Config {
        /// The host name.
        name: String,
        /// Why.
        #[source]
        source: rustls::Error,
    },
}

/// How to trust the CA, in a few lines: what `pith serve` logs once and `pith ca init`
/// prints. The page at `http://pith/ca` has the per-platform steps.
pub fn trust_hint(cert: &Path) -> String {
    format!(
        "HTTPS interception uses the local CA certificate {}. Install it as a trusted authority \
         in each client (browse to http://pith/ca through the proxy for steps per browser and \
         system), or for curl pass --cacert {}.",
        cert.display(),
        cert.display()
    )
}
