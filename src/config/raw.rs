//! The raw stage of `proxy.toml`: [`RawConfig`] and its tables mirror the file exactly
//! (`deny_unknown_fields`, every key defaulted, spans kept on the values checked later), and
//! mean nothing yet. What they mean, and every check on them, is the validated [`super::Config`]'s.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The file as written. Every field has a default, so an empty file is a valid config.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    /// `[log]`.
    pub log: RawLog,
    /// `[[listener]]`.
    pub listener: Vec<RawListener>,
    /// `[upstream]`.
    pub upstream: RawUpstream,
    /// `[limits]`.
    pub limits: RawLimits,
    /// `[filters]`.
    pub filters: RawFilters,
    /// `[profiles.NAME]`.
    pub profiles: BTreeMap<String, Spanned<RawProfile>>,
    /// `[cache]`.
    pub cache: RawCache,
    /// `[intercept]`.
    pub intercept: RawIntercept,
    /// `[[icap]]`.
    pub icap: Vec<RawIcap>,
    /// `[state]`.
    pub state: super::RawState,
    /// `[control]`.
    pub control: super::RawControl,
}

/// `[log]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLog {
    /// Least severe level written.
    pub level: Spanned<String>,
}

impl Default for RawLog {
    fn default() -> Self {
        RawLog { level: Spanned::new(0..0, "info".into()) }
    }
}

/// One `[[listener]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawListener {
    /// `ip:port`.
    pub address: Spanned<String>,
    /// Profile name.
    #[serde(default)]
    pub profile: Option<Spanned<String>>,
    /// CIDR blocks of allowed clients.
    #[serde(default)]
    pub allow: Option<Spanned<Vec<String>>>,
    /// Basic proxy authentication.
    #[serde(default)]
    pub auth: Option<Spanned<RawAuth>>,
    /// `off`, `on-redirect` or `always`: fetch `https://` for a plain-HTTP client.
    #[serde(default)]
    pub upgrade: Option<Spanned<String>>,
    /// The charset of served pages.
    #[serde(default)]
    pub charset: Option<Spanned<String>>,
    /// Served pages keep to HTML 3.2.
    #[serde(default)]
    pub legacy: bool,
    /// Profiles the URL gateway may be asked for besides the listener's own.
    #[serde(default)]
    pub gateway_profiles: Option<Spanned<Vec<String>>>,
    /// Refuse destinations that are not public; unset takes the default for the address.
    #[serde(default)]
    pub deny_private: Option<bool>,
}

impl Default for RawListener {
    /// The listener of a file that has none: the one docs/config.md and proxy.toml document.
    fn default() -> Self {
        RawListener { address: Spanned::new(0..0, DEFAULT_LISTEN.to_string()), profile: None, allow: None, auth: None, upgrade: None, charset: None, legacy: false, gateway_profiles: None, deny_private: None }
    }
}

/// The address of the listener a file without `[[listener]]` gets.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// One `[[icap]]`: an ICAP service (RFC 3507) for a proxy such as Squid.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIcap {
    /// `ip:port`.
    pub address: Spanned<String>,
    /// Profile name.
    #[serde(default)]
    pub profile: Option<Spanned<String>>,
    /// CIDR blocks of allowed ICAP clients.
    #[serde(default)]
    pub allow: Option<Spanned<Vec<String>>>,
}

/// `auth = { user, password }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    /// User name.
    pub user: String,
    /// Password.
    pub password: String,
}

/// `[upstream]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawUpstream {
    /// TCP+TLS connect budget.
    pub connect_timeout_ms: Spanned<u64>,
    /// Request sent → response head budget.
    pub response_timeout_ms: Spanned<u64>,
    /// Longest silence while reading a body.
    pub body_idle_timeout_ms: Spanned<u64>,
    /// Idle pooled connections live this long.
    pub pool_idle_timeout_ms: Spanned<u64>,
    /// Idle pooled connections per origin.
    pub pool_max_idle_per_host: usize,
    /// Extra PEM root files.
    pub extra_root_certificates: Vec<Spanned<String>>,
    /// Ports CONNECT may reach; empty = all.
    pub connect_ports: Spanned<Vec<u16>>,
    /// Send a `Via` header to origins.
    pub send_via: bool,
    /// Destination networks never connected to (CIDRs or addresses).
    pub deny: Spanned<Vec<String>>,
    /// Also refuse every destination that is not a public unicast address, on every listener.
    pub deny_private: bool,
    /// Private networks that listeners refusing private destinations may still reach.
    pub allow_private: Spanned<Vec<String>>,
}

impl Default for RawUpstream {
    fn default() -> Self {
        RawUpstream {
            connect_timeout_ms: Spanned::new(0..0, 10_000),
            response_timeout_ms: Spanned::new(0..0, 30_000),
            body_idle_timeout_ms: Spanned::new(0..0, 60_000),
            pool_idle_timeout_ms: Spanned::new(0..0, 90_000),
            pool_max_idle_per_host: 32,
            extra_root_certificates: Vec::new(),
            connect_ports: Spanned::new(0..0, vec![443]),
            send_via: true,
            deny: Spanned::new(0..0, Vec::new()),
            deny_private: false,
            allow_private: Spanned::new(0..0, Vec::new()),
        }
    }
}

/// `[limits]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLimits {
    /// Simultaneous client connections.
    pub max_connections: Spanned<usize>,
    /// Budget for a complete request head; idle keep-alive wait.
    pub header_read_timeout_ms: Spanned<u64>,
    /// Largest request head.
    pub max_header_bytes: Spanned<usize>,
    /// Largest decoded page that is rewritten.
    pub max_rewrite_bytes: Spanned<u64>,
    /// Memory the pages being buffered and rewritten may take at once.
    pub rewrite_memory_bytes: Spanned<u64>,
    /// How long a page waits for room in `rewrite_memory_bytes`.
    pub rewrite_memory_wait_ms: Spanned<u64>,
    /// Most header fields in one request.
    pub max_headers: Spanned<usize>,
    /// Requests per second per client address; 0 = no limit.
    pub client_rate: Spanned<u32>,
    /// Requests a client may send at once before `client_rate` applies; 0 = `client_rate`.
    pub client_burst: Spanned<u32>,
    /// Time given to open connections and tunnels to finish at shutdown.
    pub drain_timeout_ms: Spanned<u64>,
    /// How long a connection past `max_connections` waits for a slot before it gets 503.
    pub connection_wait_ms: Spanned<u64>,
    /// Simultaneous connections from one client address (IPv6: its /64).
    pub max_connections_per_client: Spanned<usize>,
    /// How long a write to a client may make no progress before the connection is closed.
    pub client_write_timeout_ms: Spanned<u64>,
    /// How long a tunnel may carry no bytes either way before it is closed.
    pub tunnel_idle_timeout_ms: Spanned<u64>,
    /// Most pixels an image may have to be decoded for transcoding.
    pub image_max_pixels: Spanned<u64>,
    /// Largest image response read whole for transcoding.
    pub image_max_bytes: Spanned<u64>,
    /// Longest an image waits for a transcoding turn before a placeholder is served.
    pub image_wait_ms: Spanned<u64>,
}

impl Default for RawLimits {
    fn default() -> Self {
        RawLimits {
            max_connections: Spanned::new(0..0, 1024),
            header_read_timeout_ms: Spanned::new(0..0, 15_000),
            max_header_bytes: Spanned::new(0..0, 65_536),
            max_rewrite_bytes: Spanned::new(0..0, 16 << 20),
            rewrite_memory_bytes: Spanned::new(0..0, 256 << 20),
            rewrite_memory_wait_ms: Spanned::new(0..0, 50),
            max_headers: Spanned::new(0..0, DEFAULT_MAX_HEADERS),
            client_rate: Spanned::new(0..0, 0),
            client_burst: Spanned::new(0..0, 0),
            drain_timeout_ms: Spanned::new(0..0, 10_000),
            connection_wait_ms: Spanned::new(0..0, 2_000),
            max_connections_per_client: Spanned::new(0..0, 64),
            client_write_timeout_ms: Spanned::new(0..0, 60_000),
            tunnel_idle_timeout_ms: Spanned::new(0..0, 300_000),
            image_max_pixels: Spanned::new(0..0, 16_000_000),
            image_max_bytes: Spanned::new(0..0, 8 << 20),
            image_wait_ms: Spanned::new(0..0, 5_000),
        }
    }
}

/// `[cache]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawCache {
    /// Keep storable responses in memory.
    pub enabled: bool,
    /// The `pass` profile's requests use the cache too.
    pub pass: bool,
    /// Bytes all entries may take together.
    pub max_bytes: Spanned<u64>,
    /// Bytes one entry may take.
    pub max_entry_bytes: Spanned<u64>,
    /// Folder of the disk tier; empty for none.
    pub disk_dir: Spanned<String>,
    /// Bytes the disk tier's files may take together.
    pub disk_max_bytes: Spanned<u64>,
}

impl Default for RawCache {
    fn default() -> Self {
        RawCache {
            enabled: true,
            pass: true,
            max_bytes: Spanned::new(0..0, 64 << 20),
            max_entry_bytes: Spanned::new(0..0, 1 << 20),
            disk_dir: Spanned::new(0..0, String::new()),
            disk_max_bytes: Spanned::new(0..0, 1 << 30),
        }
    }
}

/// `[intercept]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIntercept {
    /// Intercept every CONNECT not listed in `never`.
    pub enabled: bool,
    /// Folder of the local CA.
    pub ca_dir: Spanned<String>,
    /// Hosts always tunnelled untouched.
    pub never: Spanned<Vec<String>>,
    /// Hosts intercepted even when `enabled` is false.
    pub always: Spanned<Vec<String>>,
    /// Hosts whose leaf certificates are kept in memory.
    pub max_hosts: Spanned<u64>,
}

impl Default for RawIntercept {
    fn default() -> Self {
        RawIntercept {
            enabled: false,
            ca_dir: Spanned::new(0..0, "certs".into()),
            never: Spanned::new(0..0, Vec::new()),
            always: Spanned::new(0..0, Vec::new()),
            max_hosts: Spanned::new(0..0, 1000),
        }
    }
}

/// `[filters]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawFilters {
    /// Folder of rule files; empty = built-in.
    pub dir: Spanned<String>,
    /// EasyList-format list files for the ad remover; empty = the shipped lists.
    pub ad_lists: Vec<Spanned<String>>,
}

impl Default for RawFilters {
    fn default() -> Self {
        RawFilters { dir: Spanned::new(0..0, String::new()), ad_lists: Vec::new() }
    }
}

/// `[profiles.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProfile {
    /// Rule file name without `.rules`.
    pub rules: Spanned<String>,
    /// "html" or "text".
    #[serde(default)]
    pub output: Option<Spanned<String>>,
    /// Stage-2 preset name, or "none" for stage 1 only; default "automatic".
    #[serde(default)]
    pub preset: Option<Spanned<String>>,
    /// Append the "Removed links" section; default: the preset's choice.
    #[serde(default)]
    pub retain_links: Option<bool>,
    /// Link-list threshold override; default: the preset's.
    #[serde(default)]
    pub link_ratio: Option<Spanned<f64>>,
    /// The `lang` of a written page whose language pith cannot tell; unset: none.
    #[serde(default)]
    pub fallback_lang: Option<Spanned<String>>,
    /// Reading mode with this extractor (`pith`, `cetr`, …); unset: no reading mode.
    #[serde(default)]
    pub algorithm: Option<Spanned<String>>,
    /// The bar of "original" and "reading mode" links atop each rewritten page; default true.
    #[serde(default)]
    pub bar: Option<bool>,
    /// What happens to images: "keep", "compress", "placeholder" or "none"; default "keep".
    #[serde(default)]
    pub images: Option<Spanned<String>>,
    /// The widest image served, in pixels; default 800.
    #[serde(default)]
    pub image_max_width: Option<Spanned<u32>>,
    /// WebP and JPEG quality, 1-100; default 60.
    #[serde(default)]
    pub image_quality: Option<Spanned<u8>>,
}

/// The default of `limits.max_headers`: also the HTTP/1 parser's own default, which keeps its
/// header table on the stack (any other value costs a heap allocation per request).
pub const DEFAULT_MAX_HEADERS: usize = 100;
