//! The local certificate authority: created once in a folder (`certs/` by default), loaded on
//! every start, and used to issue one leaf certificate per intercepted host.
//!
//! The folder holds two files: `ca.pem`, the certificate users install, and `ca-key.pem`, its
//! private key, written with mode 0600 through a temporary file and a rename, so a crash never
//! leaves a half-written key. The key is never logged, printed or served; `Debug` of every type
//! here leaves it out.
//!
//! rcgen cannot read back a certificate's subject without an X.509 parser, so the CA's name
//! is derived from its key (`pith local CA 1a2b3c4d`): loading rebuilds the same issuer name
//! from the key file and checks that the certificate file carries both that name and that key,
//! which catches a certificate and a key from different CAs.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::CaError;

/// The certificate users install, inside the CA folder.
pub const CERT_FILE: &str = "ca.pem";
/// The CA's private key, inside the CA folder (mode 0600).
pub const KEY_FILE: &str = "ca-key.pem";

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// Certificates start a day in the past, so a client whose clock is a little behind still
/// accepts them.
const BACKDATE: Duration = DAY;
/// Leaf lifetime. With the backdating the whole validity is 366 days, inside the 397-day
/// ceiling browsers enforce for server certificates (CA/Browser Forum baseline, Apple).
pub const LEAF_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// The CA itself lives ten years: users install it once.
const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 60 * 60);

/// The local CA: its certificate, and the issuer that signs leaves with its key.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    cert_der: CertificateDer<'static>,
    cert_pem: String,
    cert_path: PathBuf,
}

impl fmt::Debug for Authority {
    // The key stays out of every log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authority").field("cert_path", &self.cert_path).finish_non_exhaustive()
    }
}

/// A leaf certificate and its private key, ready for a rustls server config.
pub struct Leaf {
    /// The DER certificate, signed by the CA.
    pub cert: CertificateDer<'static>,
    /// Its PKCS#8 private key.
    pub key: PrivateKeyDer<'static>,
}

impl fmt::Debug for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leaf").field("cert_bytes", &self.cert.len()).finish_non_exhaustive()
    }
}

impl Authority {
    /// Where the certificate of the CA in `dir` is (whether or not it exists yet).
    pub fn cert_path_in(dir: &Path) -> PathBuf {
        dir.join(CERT_FILE)
    }

    /// Loads the CA in `dir`, creating it when the folder holds neither file. Returns the CA
    /// and whether it was just created. One file without the other is an error: pith never
    /// overwrites a key or a certificate someone may have installed.
    pub fn load_or_create(dir: &Path) -> Result<(Authority, bool), CaError> {
        let (cert, key) = (dir.join(CERT_FILE), dir.join(KEY_FILE));
        match (cert.exists(), key.exists()) {
            (true, true) => Ok((Authority::load(dir)?, false)),
            (false, false) => Ok((Authority::create(dir)?, true)),
            (true, false) => Err(CaError::Incomplete { present: cert, missing: key }),
            (false, true) => Err(CaError::Incomplete { present: key, missing: cert }),
        }
    }

    /// Creates a new CA in `dir` (made with mode 0700 if missing). Fails when either file
    /// already exists.
    pub fn create(dir: &Path) -> Result<Authority, CaError> {
        create_dir(dir)?;
        let key = KeyPair::generate().map_err(|source| CaError::Generate { what: "the CA key".into(), source })?;
        let mut params = ca_params(&key);
        set_validity(&mut params, CA_LIFETIME);
        let cert = params.self_signed(&key).map_err(|source| CaError::Generate { what: "the CA certificate".into(), source })?;
        let cert_path = dir.join(CERT_FILE);
        let cert_pem = cert.pem();
        write_new(&dir.join(KEY_FILE), key.serialize_pem().as_bytes(), 0o600)?;
        write_new(&cert_path, cert_pem.as_bytes(), 0o644)?;
        Ok(Authority { issuer: Issuer::new(params, key), cert_der: cert.der().clone(), cert_pem, cert_path })
    }

    /// Loads the CA in `dir`, checking that the certificate belongs to the key.
    pub fn load(dir: &Path) -> Result<Authority, CaError> {
        let (cert_path, key_path) = (dir.join(CERT_FILE), dir.join(KEY_FILE));
        warn_if_readable_by_others(&key_path);
        let key_pem = read(&key_path)?;
        let key = KeyPair::from_pem(&key_pem).map_err(|source| CaError::Key { path: key_path.clone(), source })?;
        let cert_pem = read(&cert_path)?;
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).map_err(|source| CaError::Pem { path: cert_path.clone(), source })?;
        let name = common_name(&key);
        if !contains(&cert_der, key.public_key_raw()) || !contains(&cert_der, name.as_bytes()) {
            return Err(CaError::Mismatch { cert: cert_path, key: key_path });
        }
        Ok(Authority { issuer: Issuer::new(ca_params(&key), key), cert_der, cert_pem, cert_path })
    }

    /// The CA certificate, PEM: what `pith ca export` prints and `http://pith/ca.pem` serves.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate, DER (the `.crt` form some phones want).
    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    /// The certificate file.
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// Issues a leaf for `name` (a DNS name or an IP address, as the client's SNI or the
    /// CONNECT target gave it), with a fresh P-256 key. Costs a key generation and a
    /// signature, which is why [`super::LeafCache`] keeps the results.
    pub fn issue(&self, name: &str) -> Result<Leaf, CaError> {
        let name = normalize(name);
        let bad_name = |source| CaError::Name { name: name.clone(), source };
        let san = match name.parse::<std::net::IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(name.as_str().try_into().map_err(bad_name)?),
        };
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        // The common name is only a label (clients match on the SAN); X.509 caps it at 64.
        if name.len() <= 64 {
            dn.push(DnType::CommonName, name.as_str());
        }
        params.distinguished_name = dn;
        params.subject_alt_names = vec![san];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        set_validity(&mut params, LEAF_LIFETIME);
        let key = KeyPair::generate().map_err(|source| CaError::Generate { what: format!("a key for {name}"), source })?;
        let cert = params.signed_by(&key, &self.issuer).map_err(bad_name)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok(Leaf { cert: cert.der().clone(), key })
    }
}

/// Lower case, without IPv6 brackets or a trailing dot: one name per host in the cache.
pub fn normalize(name: &str) -> String {
    let name = name.trim_matches(|c| c == '[' || c == ']');
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// The CA's subject, derived from its key so that loading can rebuild it (see the module doc).
fn ca_params(key: &KeyPair) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name(key));
    dn.push(DnType::OrganizationName, "pith");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params
}

/// `pith local CA` and a short FNV-1a digest of the public key, so that two installations'
/// CAs have different names in a trust store.
fn common_name(key: &KeyPair) -> String {
    let digest = key.public_key_raw().iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3));
    format!("pith local CA {:08x}", digest >> 32)
}

fn set_validity(params: &mut CertificateParams, lifetime: Duration) {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let now = rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(since_epoch.as_secs());
    params.not_before = now - BACKDATE;
    params.not_after = now + lifetime;
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn read(path: &Path) -> Result<String, CaError> {
    std::fs::read_to_string(path).map_err(|source| CaError::Io { path: path.to_owned(), source })
}

fn create_dir(dir: &Path) -> Result<(), CaError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| CaError::Io { path: dir.to_owned(), source })
}

/// Writes a file that must not exist yet, with `mode`, through a temporary file renamed into
/// place, so the final name only ever holds complete contents.
fn write_new(path: &Path, contents: &[u8], mode: u32) -> Result<(), CaError> {
    let io = |source| CaError::Io { path: path.to_owned(), source };
    if path.exists() {
        return Err(io(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "refusing to overwrite an existing CA file")));
    }
    let tmp = path.with_extension("pem.tmp");
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp).map_err(io)?;
    file.write_all(contents).and_then(|()| file.sync_all()).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// A key others can read is no longer secret; say so (without touching the key).
fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(path = %path.display(), "the CA key is readable by other users; run chmod 600 on it");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Verifies `leaf` for `name` the way a client trusting only `ca` would.
    fn verify(ca: &Authority, leaf: &Leaf, name: &str) -> Result<(), rustls::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.cert_der().clone())?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        let server_name = rustls::pki_types::ServerName::try_from(name.to_string()).map_err(|e| rustls::Error::General(e.to_string()))?;
        let now = rustls::pki_types::UnixTime::now();
        rustls::client::danger::ServerCertVerifier::verify_server_cert(&*verifier, &leaf.cert, &[], &server_name, &[], now).map(|_| ())
    }

    #[test]
    fn leaves_verify_for_names_and_addresses_only() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Authority::create(dir.path()).unwrap();
        for name in ["example.com", "WWW.Example.COM.", "127.0.0.1", "[::1]"] {
            let leaf = ca.issue(name).unwrap();
            verify(&ca, &leaf, &normalize(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let leaf = ca.issue("example.com").unwrap();
        assert!(verify(&ca, &leaf, "other.example").is_err(), "a leaf covers its own name only");
        let ip = ca.issue("10.1.2.3").unwrap();
        assert!(verify(&ca, &ip, "10.1.2.4").is_err());
    }

    #[test]
    fn key_file_is_private_and_reload_keeps_issuing_trusted_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let created = Authority::create(dir.path()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "the key file is mode 0600");
        }
        let (loaded, fresh) = Authority::load_or_create(dir.path()).unwrap();
        assert!(!fresh, "an existing CA is loaded, not replaced");
        assert_eq!(loaded.cert_der(), created.cert_der());
        // A leaf from the reloaded CA chains to the certificate users installed.
        verify(&created, &loaded.issue("reloaded.test").unwrap(), "reloaded.test").unwrap();
        assert!(!format!("{loaded:?}").contains("PRIVATE"), "Debug leaves the key out");
        assert!(!loaded.cert_pem().contains("PRIVATE"));
    }

    #[test]
    fn mismatched_or_missing_files_are_refused() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        Authority::create(a.path()).unwrap();
        Authority::create(b.path()).unwrap();
        std::fs::copy(b.path().join(CERT_FILE), a.path().join(CERT_FILE)).unwrap();
        assert!(matches!(Authority::load(a.path()), Err(CaError::Mismatch { .. })));
        std::fs::remove_file(b.path().join(CERT_FILE)).unwrap();
        assert!(matches!(Authority::load_or_create(b.path()), Err(CaError::Incomplete { .. })));
        assert!(b.path().join(KEY_FILE).exists(), "the lone key is left alone");
        assert!(Authority::create(a.path()).is_err(), "create never overwrites");
    }

    #[test]
    fn leaf_validity_is_within_browser_limits() {
        let dir = tempfile::tempdir().unwrap();
        let ca = Authority::create(dir.path()).unwrap();
        let mut params = CertificateParams::default();
        set_validity(&mut params, LEAF_LIFETIME);
        let days = (params.not_after - params.not_before).whole_days();
        assert!((1..=397).contains(&days), "{days} days");
        assert!(params.not_before < rcgen::date_time_ymd(1970, 1, 1) + SystemTime::now().duration_since(UNIX_EPOCH).unwrap());
        assert!(ca.issue("bücher.example").is_err(), "a non-ASCII name must come punycoded");
    }
}
