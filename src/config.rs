//! `proxy.toml`: the raw serde mirror of the file, and the validated [`Config`] that runs.
//!
//! Parsing is two-staged: [`RawConfig`] mirrors the file exactly (`deny_unknown_fields`, every
//! key defaulted), then [`Config::from_toml_str`] resolves addresses, compiles networks and rule
//! files and checks limits. Every error, from either stage, names the file, the line and the
//! key, because an operator editing a config on a gateway has nothing else to go on.
//!
//! The raw mirror is `config/raw.rs`; the checks of `[[listener]]` tables, the open-proxy rule
//! among them, are in `config/listener.rs`.
//!
//! The binary embeds the documented default (`proxy.toml` at the top of the repository) and
//! parses it through the same path; a test asserts it validates.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use toml::Spanned;

use crate::extract::sites::{SiteError, SiteRules};
use crate::ads::AdFilter;
use crate::extract::{Options, PresetName};
use crate::html::rules::{RuleError, RuleSet};
use crate::extract::algorithm::Algorithm;
use crate::images::{Images, Policy};
use crate::profile::{Output, Profile, Reader, Stage2};
use crate::tls::HostList;

mod control;
mod icap;
mod listener;
mod raw;

pub use control::{ControlConfig, RawControl, RawState};
pub use listener::{collides, Serving, Upgrade, MAX_OPEN_V4, MAX_OPEN_V6_SUBNETS};
pub use raw::{
    RawAuth, RawCache, RawConfig, RawFilters, RawIcap, RawIntercept, RawLimits, RawListener, RawLog, RawProfile, RawUpstream,
    DEFAULT_LISTEN, DEFAULT_MAX_HEADERS,
};

/// The documented default configuration, built into the binary.
pub const DEFAULT_TOML: &str = include_str!("../proxy.toml");

/// Name under which [`DEFAULT_TOML`] is reported in errors.
pub const DEFAULT_ORIGIN: &str = "<built-in proxy.toml>";

/// A configuration mistake, located in its file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read the config file: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A key is missing, unknown, of the wrong type or has an invalid value.
    #[error("{origin}:{line}:{column}: key `{key}`: {message}")]
    Invalid {
        /// The file (or [`DEFAULT_ORIGIN`]).
        origin: String,
        /// 1-based line of the offending value.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Dotted key path, e.g. `listener.allow`.
        key: String,
        /// What is wrong, in words.
        message: String,
    },
    /// The site rules (`filters.dir`/sites) are invalid.
    #[error("{origin}:{line}: key `{key}`: {source}")]
    Sites {
        /// The config file that names the folder.
        origin: String,
        /// Line of the naming key.
        line: usize,
        /// The key, `filters.dir`.
        key: String,
        /// The site files' own errors, each with its file and line.
        #[source]
        source: SiteError,
    },
    /// A rule file named by a profile is invalid.
    #[error("{origin}:{line}: key `{key}`: {source}")]
    Rules {
        /// The config file that names the rule file.
        origin: String,
        /// Line of the naming key.
        line: usize,
        /// The key, e.g. `profiles.declutter.rules`.
        key: String,
        /// The rule file's own errors, each with its line.
        #[source]
        source: RuleError,
    },
}

/// The smallest `limits.rewrite_memory_bytes`: below it no page of any size could be rewritten.
const MIN_REWRITE_MEMORY: u64 = 64 << 10;

/// The longest `limits.rewrite_memory_wait_ms`: a page waiting longer would keep its client
/// waiting for no gain; a minute is already far past any client's patience.
const MAX_REWRITE_MEMORY_WAIT_MS: u64 = 60_000;

/// The largest `limits.max_headers`: the parser reserves room for this many per request.
const MAX_MAX_HEADERS: usize = 10_000;

/// The largest `limits.max_connections`: past it the slot semaphore would overflow (and no
/// system gives one process this many descriptors).
const MAX_MAX_CONNECTIONS: usize = 1_000_000;

/// The largest `limits.max_header_bytes`: each connection may buffer this much, and HTTP/2
/// takes it as a 32-bit size.
const MAX_MAX_HEADER_BYTES: usize = 1 << 20;

/// The largest `limits.image_max_pixels`: 256 megapixels decode to 1 GiB of RGBA.
const MAX_IMAGE_PIXELS: u64 = 1 << 28;

/// The largest `limits.image_max_bytes`: an image is held whole while it is transcoded.
const MAX_IMAGE_BYTES: u64 = 1 << 30;

/// The largest `limits.max_rewrite_bytes`: a page is held whole in memory while rewritten.
const MAX_MAX_REWRITE_BYTES: u64 = 1 << 30;

/// The longest time a `*_ms` key may give: one day. Longer is a mistake (a missing unit), and
/// a deadline computed from an unbounded value could overflow.
const MAX_MILLIS: u64 = 86_400_000;

/// The validated configuration the proxy runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// Log level, as an `EnvFilter` directive.
    pub log_level: String,
    /// At least one listener.
    pub listeners: Vec<ListenerConfig>,
    /// Upstream client settings.
    pub upstream: UpstreamConfig,
    /// Resource limits.
    pub limits: Limits,
    /// Every profile by name, `pass` included.
    pub profiles: BTreeMap<String, Arc<Profile>>,
    /// The HTTP cache.
    pub cache: CacheConfig,
    /// HTTPS interception policy and the CA's folder.
    pub intercept: InterceptConfig,
    /// ICAP services (`[[icap]]`), in file order; none by default.
    pub icap: Vec<IcapConfig>,
    /// The control page and the state file (`[control]`, `[state]`).
    pub control: ControlConfig,
}

/// One validated `[[icap]]`: where an ICAP client such as Squid reaches pith, the profile its
/// responses get, and which clients may connect.
#[derive(Debug, Clone)]
pub struct IcapConfig {
    /// Where to bind.
    pub address: SocketAddr,
    /// Profile applied to the responses sent for adaptation.
    pub profile: Arc<Profile>,
    /// Allowed ICAP client networks.
    pub allow: Vec<IpNet>,
}

/// Validated `[intercept]`: which CONNECT targets are decrypted, and where the CA lives.
#[derive(Debug, Clone)]
pub struct InterceptConfig {
    /// Intercept every host not in `never`.
    pub enabled: bool,
    /// The CA folder, resolved against the config file's folder.
    pub ca_dir: PathBuf,
    /// Hosts tunnelled untouched, whatever else says.
    pub never: HostList,
    /// Hosts intercepted even when `enabled` is false.
    pub always: HostList,
    /// Hosts whose leaf certificates are kept in memory.
    pub max_hosts: u64,
}

impl InterceptConfig {
    /// The policy: `never` wins, then `always`, then `enabled`.
    pub fn should_intercept(&self, host: &str) -> bool {
        !self.never.matches(host) && (self.enabled || self.always.matches(host))
    }

    /// True when some host may be intercepted, so the CA is needed.
    pub fn is_active(&self) -> bool {
        self.enabled || !self.always.is_empty()
    }
}

/// Validated `[cache]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    /// Storable responses (rewritten pages and the origin's own) are kept and served again
    /// while HTTP says they are fresh.
    pub enabled: bool,
    /// The `pass` profile's requests use the cache too: a gateway that passes pages through
    /// still saves the bandwidth of every image and script fetched twice.
    pub pass: bool,
    /// Bytes all entries may take together (bodies, headers and keys).
    pub max_bytes: u64,
    /// Bytes one entry may take; a larger response is served but not kept.
    pub max_entry_bytes: u64,
    /// The disk tier, when `cache.disk_dir` names a folder: entries outlive a restart and
    /// outgrow memory.
    pub disk: Option<DiskConfig>,
}

/// Validated `cache.disk_dir` and `cache.disk_max_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskConfig {
    /// The folder, resolved against the config file's; created when missing.
    pub dir: PathBuf,
    /// Bytes the entry files may take together; the least recently used go first past it.
    pub max_bytes: u64,
}

/// One validated listener.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// Where to bind.
    pub address: SocketAddr,
    /// Profile its clients get.
    pub profile: Arc<Profile>,
    /// Allowed client networks.
    pub allow: Vec<IpNet>,
    /// Required credentials, if any.
    pub auth: Option<Credentials>,
    /// How it serves pages: HTTPS for plain-HTTP clients, charset, HTML 3.2, the gateway's
    /// profiles.
    pub serving: Serving,
    /// Its clients are refused destinations that are not public unicast addresses (but those
    /// in `upstream.allow_private`): the listener's `deny_private`, else on when
    /// `upstream.deny_private` is or when the listener's address is not loopback.
    pub deny_private: bool,
}

/// Basic proxy-authentication credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name.
    pub user: String,
    /// Password.
    pub password: String,
}

impl fmt::Debug for Credentials {
    // The password never reaches a log line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials").field("user", &self.user).finish_non_exhaustive()
    }
}

/// Validated `[upstream]`. Comparable, so a reload rebuilds the upstream client (and drops its
/// pooled connections) only when one of these changed.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamConfig {
    /// TCP+TLS connect budget.
    pub connect_timeout: Duration,
    /// Request → response head budget.
    pub response_timeout: Duration,
    /// Longest silence while reading a body.
    pub body_idle_timeout: Duration,
    /// Pooled idle connection lifetime.
    pub pool_idle_timeout: Duration,
    /// Pooled idle connections per origin.
    pub pool_max_idle_per_host: usize,
    /// DER root certificates added to the web PKI roots.
    pub extra_roots: Vec<CertificateDer<'static>>,
    /// Ports CONNECT may reach; empty = all.
    pub connect_ports: Vec<u16>,
    /// Send a `Via` header to origins (loop detection by `Via` needs it).
    pub send_via: bool,
    /// Destination networks refused, checked on every resolved address of a target.
    pub deny: Vec<IpNet>,
    /// Refuse every destination that is not a public unicast address too ([`crate::addr`]), on
    /// every listener (each listener's own setting is [`ListenerConfig::deny_private`]).
    pub deny_private: bool,
    /// Networks a listener that refuses private destinations may still reach (intranet hosts).
    pub allow_private: Vec<IpNet>,
}

/// Validated `[limits]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Simultaneous client connections (an open CONNECT tunnel is one).
    pub max_connections: usize,
    /// Budget for a request head.
    pub header_read_timeout: Duration,
    /// Largest request head.
    pub max_header_bytes: usize,
    /// Largest decoded page rewritten.
    pub max_rewrite_bytes: u64,
    /// Memory the pages being buffered and rewritten may take at once ([`crate::net::exchange::budget`]).
    pub rewrite_memory_bytes: u64,
    /// How long a page waits for room in that budget before it passes through unrewritten.
    pub rewrite_memory_wait: Duration,
    /// Most header fields in one request; more is answered 431.
    pub max_headers: usize,
    /// Per-client request rate, when limited.
    pub client_rate: Option<RateLimit>,
    /// Time open connections and tunnels get to finish at shutdown before they are closed.
    pub drain_timeout: Duration,
    /// How long a connection past `max_connections` waits for a slot before it is answered 503.
    pub connection_wait: Duration,
    /// Simultaneous connections from one client address (IPv6: its /64); past it, 503.
    pub max_connections_per_client: usize,
    /// A write to a client that makes no progress this long closes its connection.
    pub client_write_timeout: Duration,
    /// A tunnel (CONNECT or switched protocol) with no bytes either way this long is closed.
    pub tunnel_idle_timeout: Duration,
    /// An image with more pixels than this (by its header) is never decoded for transcoding.
    pub image_max_pixels: u64,
    /// An image response larger than this passes through untranscoded.
    pub image_max_bytes: u64,
    /// An image that waited this long for a transcoding turn gets a placeholder
    /// ([`crate::net::exchange::images`]).
    pub image_wait: Duration,
}

/// A token bucket per client address: `burst` requests at once, refilled at `per_second`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained requests per second.
    pub per_second: u32,
    /// Requests allowed at once, after a quiet spell.
    pub burst: u32,
}

impl Config {
    /// The built-in default configuration.
    pub fn embedded_default() -> Result<Config, ConfigError> {
        Config::from_toml_str(DEFAULT_TOML, DEFAULT_ORIGIN, None)
    }

    /// Reads and validates a config file. Relative paths inside it resolve against its folder.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::load_listening(path, None)
    }

    /// [`Config::load`] with `listen` (the `--listen` option) replacing the first listener's
    /// address. The override is applied before validation, so every check, the open-proxy
    /// one included, sees the address that will be bound.
    pub fn load_listening(path: &Path, listen: Option<SocketAddr>) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.to_owned(), source })?;
        Config::from_toml_str_listening(&text, &path.display().to_string(), path.parent(), listen)
    }

    /// Parses and validates config text; `origin` names it in errors, `base` resolves
    /// relative paths (the working directory when `None`).
    pub fn from_toml_str(text: &str, origin: &str, base: Option<&Path>) -> Result<Config, ConfigError> {
        Config::from_toml_str_listening(text, origin, base, None)
    }

    /// [`Config::from_toml_str`] with `listen` replacing the first listener's address, as
    /// [`Config::load_listening`].
    pub fn from_toml_str_listening(text: &str, origin: &str, base: Option<&Path>, listen: Option<SocketAddr>) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            if let Some(err) = single_bracket_array(text, origin, e.message()) {
                return err;
            }
            let span = e.span().unwrap_or(0..0);
            invalid(text, origin, span, None, e.message().to_string())
        })?;
        Validator { text, origin, base: base.unwrap_or(Path::new("")), listen }.config(raw)
    }
}

/// Stage two: raw values to checked ones, with the file text at hand for locating errors.
struct Validator<'a> {
    text: &'a str,
    origin: &'a str,
    base: &'a Path,
    /// `--listen`: replaces the first listener's address.
    listen: Option<SocketAddr>,
}

impl Validator<'_> {
    fn err(&self, span: std::ops::Range<usize>, key: &str, message: impl Into<String>) -> ConfigError {
        invalid(self.text, self.origin, span, Some(key), message.into())
    }

    fn config(&self, raw: RawConfig) -> Result<Config, ConfigError> {
        let log_level = self.log_level(&raw.log.level)?;
        let profiles = self.profiles(&raw.filters, &raw.profiles)?;
        // Every key is optional: a file without [[listener]] gets the documented one.
        let default_listener = [RawListener::default()];
        let raw_listeners = if raw.listener.is_empty() { &default_listener[..] } else { &raw.listener[..] };
        let mut listeners = Vec::new();
        for (i, l) in raw_listeners.iter().enumerate() {
            listeners.push(self.listener(l, &profiles, if i == 0 { self.listen } else { None }, raw.upstream.deny_private)?);
        }
        self.check_distinct(raw_listeners, &listeners)?;
        let icap = self.icap_services(&raw.icap, &profiles, &listeners)?;
        let control = self.control(&raw.state, &raw.control, &profiles)?;
        Ok(Config {
            log_level,
            listeners,
            upstream: self.upstream(&raw.upstream)?,
            limits: self.limits(&raw.limits)?,
            profiles,
            cache: self.cache(&raw.cache)?,
            intercept: self.intercept(&raw.intercept)?,
            icap,
            control,
        })
    }

    fn log_level(&self, level: &Spanned<String>) -> Result<String, ConfigError> {
        match level.get_ref().as_str() {
            l @ ("error" | "warn" | "info" | "debug" | "trace") => Ok(l.to_string()),
            other => Err(self.err(
                level.span(),
                "log.level",
                format!("unknown level {other:?}; use error, warn, info, debug or trace"),
            )),
        }
    }

    fn profiles(
        &self,
        filters: &RawFilters,
        raw: &BTreeMap<String, Spanned<RawProfile>>,
    ) -> Result<BTreeMap<String, Arc<Profile>>, ConfigError> {
        let mut out = BTreeMap::new();
        out.insert("pass".to_string(), Arc::new(Profile::pass()));
        let sites = Arc::new(self.sites(filters)?);
        let ads = self.ad_lists(filters)?;
        // The documented profiles exist even in a config that does not spell them out, so
        // that "every key is optional" holds; a [profiles.NAME] table replaces them.
        for (name, output) in [("declutter", Output::Html), ("text", Output::Text), ("reader", Output::Html)] {
            if !raw.contains_key(name) {
                let rules = self.implicit_rules(filters, name, &format!("profiles.{name}.rules"))?;
                let stage2 = Stage2 { options: Options::default(), sites: Arc::clone(&sites), ads: ads.clone(), images: Images::default() };
                let mut profile = Profile::new(name, Arc::new(rules), output).with_stage2(stage2);
                if name == "reader" {
                    profile = profile.with_reader(Reader::default());
                }
                out.insert(name.to_string(), Arc::new(profile));
            }
        }
        for (name, p) in raw {
            let key = format!("profiles.{name}");
            if name == "pass" {
                return Err(self.err(p.span(), &key, "`pass` is built in and cannot be redefined"));
            }
            let p = p.get_ref();
            let output = match p.output.as_ref().map(|o| o.get_ref().as_str()) {
                None | Some("html") => Output::Html,
                Some("text") => Output::Text,
                Some(other) => {
                    let span = p.output.as_ref().map(Spanned::span).unwrap_or(0..0);
                    return Err(self.err(span, &format!("{key}.output"), format!("unknown output {other:?}; use \"html\" or \"text\"")));
                }
            };
            let rules = self.rules(filters, &p.rules, &format!("{key}.rules"))?;
            let mut profile = Profile::new(name, Arc::new(rules), output);
            profile.bar = p.bar.unwrap_or(true);
            if let Some(options) = self.stage2_options(p, &key)? {
                let images = self.images(p, &key)?;
                profile = profile.with_stage2(Stage2 { options, sites: Arc::clone(&sites), ads: ads.clone(), images });
            }
            if let Some(algorithm) = self.algorithm(p, &key)? {
                profile = profile.with_reader(Reader { algorithm, ..Reader::default() });
            }
            out.insert(name.clone(), Arc::new(profile));
        }
        Ok(out)
    }

    /// A profile's `images`, `image_max_width` and `image_quality` (used with stage 2: the
    /// renderers choose each image's address, and the proxy transcodes).
    fn images(&self, p: &RawProfile, key: &str) -> Result<Images, ConfigError> {
        let mut images = Images::default();
        if let Some(name) = &p.images {
            images.policy = Policy::parse(name.get_ref()).ok_or_else(|| {
                let known: Vec<&str> = Policy::ALL.iter().map(|p| p.as_str()).collect();
                self.err(name.span(), &format!("{key}.images"), format!("unknown images {:?}; use one of {}", name.get_ref(), known.join(", ")))
            })?;
        }
        if let Some(width) = &p.image_max_width {
            if !(16..=16_383).contains(width.get_ref()) {
                return Err(self.err(width.span(), &format!("{key}.image_max_width"), "must be between 16 and 16383 pixels (WebP's largest side)"));
            }
            images.max_width = *width.get_ref();
        }
        if let Some(quality) = &p.image_quality {
            if !(1..=100).contains(quality.get_ref()) {
                return Err(self.err(quality.span(), &format!("{key}.image_quality"), "must be between 1 and 100"));
            }
            images.quality = *quality.get_ref();
        }
        Ok(images)
    }

    /// A profile's stage-2 keys: `None` for `preset = "none"` (stage 1 only).
    fn stage2_options(&self, p: &RawProfile, key: &str) -> Result<Option<Options>, ConfigError> {
        let preset = match &p.preset {
            None => PresetName::Automatic,
            Some(name) => PresetName::parse(name.get_ref()).ok_or_else(|| {
                let known: Vec<&str> = PresetName::ALL.iter().map(|p| p.as_str()).collect();
                self.err(name.span(), &format!("{key}.preset"), format!("unknown preset {:?}; use one of {}", name.get_ref(), known.join(", ")))
            })?,
        };
        if preset == PresetName::None {
            return Ok(None);
        }
        let link_ratio = match &p.link_ratio {
            Some(r) if !(0.0..=1000.0).contains(r.get_ref()) => {
                return Err(self.err(r.span(), &format!("{key}.link_ratio"), "must be between 0 and 1000 (Crunch used 0.25)"));
            }
            r => r.as_ref().map(|r| *r.get_ref()),
        };
        let fallback_lang = match &p.fallback_lang {
            Some(l) if !crate::extract::lang::is_tag(l.get_ref()) => {
                return Err(self.err(l.span(), &format!("{key}.fallback_lang"), format!("{:?} is not a language tag (BCP 47: `en`, `de-CH`, `pt-BR`)", l.get_ref())));
            }
            l => l.as_ref().map(|l| l.get_ref().clone()),
        };
        Ok(Some(Options { preset, retain_links: p.retain_links, link_ratio, fallback_lang }))
    }

    /// The ad lists of `filters.ad_lists`, read and built once for every profile; `None` when
    /// the key is absent, meaning the lists shipped in the binary. Paths are relative to the
    /// config file. A list that cannot be read fails the config, naming it; lines the engine
    /// cannot use are skipped and counted, as browsers skip them.
    fn ad_lists(&self, filters: &RawFilters) -> Result<Option<Arc<AdFilter>>, ConfigError> {
        if filters.ad_lists.is_empty() {
            return Ok(None);
        }
        let mut paths = Vec::with_capacity(filters.ad_lists.len());
        for (i, path) in filters.ad_lists.iter().enumerate() {
            let full = self.base.join(path.get_ref());
            if !full.is_file() {
                let key = format!("filters.ad_lists[{i}]");
                return Err(self.err(path.span(), &key, format!("cannot read filter list {}", full.display())));
            }
            paths.push(full);
        }
        let filter = AdFilter::load(&paths).map_err(|e| self.err(filters.ad_lists[0].span(), "filters.ad_lists", e.to_string()))?;
        Ok(Some(Arc::new(filter)))
    }

    /// The site rules: every `*.rules` file of `filters.dir`/sites when that folder exists,
    /// else the built-in files.
    fn sites(&self, filters: &RawFilters) -> Result<SiteRules, ConfigError> {
        let dir = filters.dir.get_ref();
        if !dir.is_empty() && !self.base.join(dir).is_dir() {
            let full = self.base.join(dir);
            return Err(self.err(filters.dir.span(), "filters.dir", format!("{} is not a folder (leave the key out for the built-in rules)", full.display())));
        }
        let folder = self.base.join(dir).join("sites");
        if dir.is_empty() || !folder.is_dir() {
            return Ok(SiteRules::builtin());
        }
        SiteRules::parse_dir(&folder).map_err(|source| ConfigError::Sites {
            origin: self.origin.to_string(),
            line: line_col(self.text, filters.dir.span().start).0,
            key: "filters.dir".to_string(),
            source,
        })
    }

    /// Rules of a profile the file does not define: `declutter.rules` from `filters.dir` when
    /// it has one, else the built-in file.
    fn implicit_rules(&self, filters: &RawFilters, file: &str, key: &str) -> Result<RuleSet, ConfigError> {
        // `text` uses the declutter rules; `reader` its own.
        let file = if file == "reader" { "reader" } else { "declutter" };
        let name = Spanned::new(0..0, file.to_string());
        let dir = filters.dir.get_ref();
        if !dir.is_empty() && self.base.join(dir).join(format!("{file}.rules")).exists() {
            return self.rules(filters, &name, key);
        }
        RuleSet::builtin(file).ok_or_else(|| self.err(0..0, key, format!("the built-in rule file {file:?} does not parse")))
    }

    /// A profile's `algorithm` key: `None` when unset (no reading mode).
    fn algorithm(&self, p: &RawProfile, key: &str) -> Result<Option<Algorithm>, ConfigError> {
        let Some(name) = &p.algorithm else { return Ok(None) };
        name.get_ref()
            .parse::<Algorithm>()
            .map(Some)
            .map_err(|e| self.err(name.span(), &format!("{key}.algorithm"), e.to_string()))
    }

    fn rules(&self, filters: &RawFilters, name: &Spanned<String>, key: &str) -> Result<RuleSet, ConfigError> {
        let file = name.get_ref();
        if file.is_empty() || file.contains(['/', '\\']) || file.starts_with('.') {
            return Err(self.err(name.span(), key, format!("{file:?} is not a rule file name (a name like \"declutter\", without folder or extension)")));
        }
        let wrap = |source| ConfigError::Rules {
            origin: self.origin.to_string(),
            line: line_col(self.text, name.span().start).0,
            key: key.to_string(),
            source,
        };
        let dir = filters.dir.get_ref();
        if dir.is_empty() {
            return RuleSet::builtin(file).ok_or_else(|| {
                self.err(name.span(), key, format!("no built-in rule file {file:?}; set filters.dir to a folder holding {file}.rules"))
            });
        }
        RuleSet::parse(&self.base.join(dir).join(format!("{file}.rules"))).map_err(wrap)
    }

    fn networks(&self, list: &Spanned<Vec<String>>, key: &str) -> Result<Vec<IpNet>, ConfigError> {
        list.get_ref()
            .iter()
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map(|n| n.trunc())
                    .map_err(|_| self.err(list.span(), key, format!("{s:?} is not a network (e.g. \"192.168.1.0/24\") or an IP address")))
            })
            .collect()
    }

    fn upstream(&self, u: &RawUpstream) -> Result<UpstreamConfig, ConfigError> {
        let mut extra_roots = Vec::new();
        for path in &u.extra_root_certificates {
            let key = "upstream.extra_root_certificates";
            let full = self.base.join(path.get_ref());
            let pem = std::fs::read(&full).map_err(|e| self.err(path.span(), key, format!("cannot read {}: {e}", full.display())))?;
            let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&pem).collect();
            let certs = certs.map_err(|e| self.err(path.span(), key, format!("{}: invalid PEM: {e}", full.display())))?;
            if certs.is_empty() {
                return Err(self.err(path.span(), key, format!("{} holds no PEM certificate", full.display())));
            }
            extra_roots.extend(certs);
        }
        if u.connect_ports.get_ref().contains(&0) {
            return Err(self.err(u.connect_ports.span(), "upstream.connect_ports", "port 0 cannot be connected to; list ports from 1 to 65535 (an empty list allows every port)"));
        }
        Ok(UpstreamConfig {
            connect_timeout: self.millis(&u.connect_timeout_ms, "upstream.connect_timeout_ms", 1)?,
            response_timeout: self.millis(&u.response_timeout_ms, "upstream.response_timeout_ms", 1)?,
            body_idle_timeout: self.millis(&u.body_idle_timeout_ms, "upstream.body_idle_timeout_ms", 1)?,
            // 0 keeps no idle connection, like pool_max_idle_per_host = 0.
            pool_idle_timeout: self.millis(&u.pool_idle_timeout_ms, "upstream.pool_idle_timeout_ms", 0)?,
            pool_max_idle_per_host: u.pool_max_idle_per_host,
            extra_roots,
            connect_ports: u.connect_ports.get_ref().clone(),
            send_via: u.send_via,
            deny: self.networks(&u.deny, "upstream.deny")?,
            deny_private: u.deny_private,
            allow_private: self.networks(&u.allow_private, "upstream.allow_private")?,
        })
    }

    fn limits(&self, l: &RawLimits) -> Result<Limits, ConfigError> {
        if !(1..=MAX_MAX_CONNECTIONS).contains(l.max_connections.get_ref()) {
            return Err(self.err(l.max_connections.span(), "limits.max_connections", format!("must be between 1 and {MAX_MAX_CONNECTIONS}")));
        }
        if !(8192..=MAX_MAX_HEADER_BYTES).contains(l.max_header_bytes.get_ref()) {
            return Err(self.err(l.max_header_bytes.span(), "limits.max_header_bytes", format!("must be between 8192 and {MAX_MAX_HEADER_BYTES}")));
        }
        if !(1..=MAX_MAX_REWRITE_BYTES).contains(l.max_rewrite_bytes.get_ref()) {
            return Err(self.err(l.max_rewrite_bytes.span(), "limits.max_rewrite_bytes", format!("must be between 1 and {MAX_MAX_REWRITE_BYTES} (a page is held whole while it is rewritten)")));
        }
        if !(1..=MAX_MAX_CONNECTIONS).contains(l.max_connections_per_client.get_ref()) {
            return Err(self.err(l.max_connections_per_client.span(), "limits.max_connections_per_client", format!("must be between 1 and {MAX_MAX_CONNECTIONS}")));
        }
        if *l.rewrite_memory_bytes.get_ref() < MIN_REWRITE_MEMORY {
            return Err(self.err(l.rewrite_memory_bytes.span(), "limits.rewrite_memory_bytes", format!("must be at least {MIN_REWRITE_MEMORY}")));
        }
        if *l.rewrite_memory_wait_ms.get_ref() > MAX_REWRITE_MEMORY_WAIT_MS {
            return Err(self.err(l.rewrite_memory_wait_ms.span(), "limits.rewrite_memory_wait_ms", format!("must be at most {MAX_REWRITE_MEMORY_WAIT_MS}")));
        }
        if !(1..=MAX_MAX_HEADERS).contains(l.max_headers.get_ref()) {
            return Err(self.err(l.max_headers.span(), "limits.max_headers", format!("must be between 1 and {MAX_MAX_HEADERS}")));
        }
        Ok(Limits {
            max_connections: *l.max_connections.get_ref(),
            header_read_timeout: self.millis(&l.header_read_timeout_ms, "limits.header_read_timeout_ms", 1)?,
            max_header_bytes: *l.max_header_bytes.get_ref(),
            max_rewrite_bytes: *l.max_rewrite_bytes.get_ref(),
            rewrite_memory_bytes: *l.rewrite_memory_bytes.get_ref(),
            rewrite_memory_wait: Duration::from_millis(*l.rewrite_memory_wait_ms.get_ref()),
            max_headers: *l.max_headers.get_ref(),
            client_rate: self.client_rate(l)?,
            // 0: connections are closed at once at shutdown; a waiting connection gets 503 at once.
            drain_timeout: self.millis(&l.drain_timeout_ms, "limits.drain_timeout_ms", 0)?,
            connection_wait: self.millis(&l.connection_wait_ms, "limits.connection_wait_ms", 0)?,
            max_connections_per_client: *l.max_connections_per_client.get_ref(),
            client_write_timeout: self.millis(&l.client_write_timeout_ms, "limits.client_write_timeout_ms", 1)?,
            tunnel_idle_timeout: self.millis(&l.tunnel_idle_timeout_ms, "limits.tunnel_idle_timeout_ms", 1)?,
            image_max_pixels: self.bounded(&l.image_max_pixels, "limits.image_max_pixels", 1, MAX_IMAGE_PIXELS)?,
            image_max_bytes: self.bounded(&l.image_max_bytes, "limits.image_max_bytes", 1, MAX_IMAGE_BYTES)?,
            image_wait: self.millis(&l.image_wait_ms, "limits.image_wait_ms", 1)?,
        })
    }

    /// A number between `min` and `max`, inclusive.
    fn bounded(&self, value: &Spanned<u64>, key: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
        let n = *value.get_ref();
        if !(min..=max).contains(&n) {
            return Err(self.err(value.span(), key, format!("must be between {min} and {max}")));
        }
        Ok(n)
    }

    /// A time in milliseconds: at least `min` (1 where 0 would time out everything at once) and at
    /// most [`MAX_MILLIS`], so that no deadline computed from it can overflow.
    fn millis(&self, value: &Spanned<u64>, key: &str, min: u64) -> Result<Duration, ConfigError> {
        let ms = *value.get_ref();
        if !(min..=MAX_MILLIS).contains(&ms) {
            let why = if ms < min { "; 0 would time out every wait at once" } else { "" };
            return Err(self.err(value.span(), key, format!("must be between {min} and {MAX_MILLIS} ms (one day){why}")));
        }
        Ok(Duration::from_millis(ms))
    }

    /// `limits.client_rate` and `limits.client_burst`: `None` when the rate is 0 (no limit).
    fn client_rate(&self, l: &RawLimits) -> Result<Option<RateLimit>, ConfigError> {
        let (rate, burst) = (*l.client_rate.get_ref(), *l.client_burst.get_ref());
        if rate == 0 && burst != 0 {
            return Err(self.err(l.client_burst.span(), "limits.client_burst", "has no effect without limits.client_rate; set both, or neither"));
        }
        if rate > 1_000_000 {
            return Err(self.err(l.client_rate.span(), "limits.client_rate", "must be at most 1000000 requests per second (0 turns the limit off)"));
        }
        let burst = if burst == 0 { rate } else { burst };
        Ok((rate > 0).then_some(RateLimit { per_second: rate, burst }))
    }
}

impl Validator<'_> {
    fn cache(&self, c: &RawCache) -> Result<CacheConfig, ConfigError> {
        let (max_bytes, max_entry_bytes) = (*c.max_bytes.get_ref(), *c.max_entry_bytes.get_ref());
        if c.enabled && max_bytes == 0 {
            return Err(self.err(c.max_bytes.span(), "cache.max_bytes", "must be at least 1 while the cache is enabled (or set enabled = false)"));
        }
        if max_entry_bytes == 0 || max_entry_bytes > u64::from(u32::MAX) {
            return Err(self.err(c.max_entry_bytes.span(), "cache.max_entry_bytes", format!("must be between 1 and {}", u32::MAX)));
        }
        if c.enabled && max_entry_bytes > max_bytes {
            return Err(self.err(c.max_entry_bytes.span(), "cache.max_entry_bytes", format!("{max_entry_bytes} is more than cache.max_bytes ({max_bytes})")));
        }
        Ok(CacheConfig { enabled: c.enabled, pass: c.pass, max_bytes, max_entry_bytes, disk: self.disk(c, max_entry_bytes)? })
    }

    /// The disk tier's folder and bound. A folder that cannot be opened at start-up is the
    /// proxy's to report (it then runs from memory alone); here only what the file itself gets
    /// wrong is refused: a bound that holds no entry, a path that is a file.
    fn disk(&self, c: &RawCache, max_entry_bytes: u64) -> Result<Option<DiskConfig>, ConfigError> {
        let dir = c.disk_dir.get_ref().trim();
        if dir.is_empty() {
            return Ok(None);
        }
        let max_bytes = *c.disk_max_bytes.get_ref();
        if max_bytes < max_entry_bytes {
            return Err(self.err(c.disk_max_bytes.span(), "cache.disk_max_bytes", format!("{max_bytes} holds no entry of cache.max_entry_bytes ({max_entry_bytes})")));
        }
        let dir = self.base.join(dir);
        if dir.exists() && !dir.is_dir() {
            return Err(self.err(c.disk_dir.span(), "cache.disk_dir", format!("{} is not a folder", dir.display())));
        }
        Ok(Some(DiskConfig { dir, max_bytes }))
    }
}

impl Validator<'_> {
    fn intercept(&self, i: &RawIntercept) -> Result<InterceptConfig, ConfigError> {
        let hosts = |list: &Spanned<Vec<String>>, key: &str| {
            HostList::new(list.get_ref()).map_err(|e| self.err(list.span(), key, e.to_string()))
        };
        let (never, always) = (hosts(&i.never, "intercept.never")?, hosts(&i.always, "intercept.always")?);
        if i.ca_dir.get_ref().trim().is_empty() {
            return Err(self.err(i.ca_dir.span(), "intercept.ca_dir", "must name a folder (default \"certs\")"));
        }
        if *i.max_hosts.get_ref() == 0 {
            return Err(self.err(i.max_hosts.span(), "intercept.max_hosts", "must be at least 1"));
        }
        let ca_dir = self.base.join(i.ca_dir.get_ref());
        // A missing folder is created on first use; something else in its place never works.
        if ca_dir.exists() && !ca_dir.is_dir() {
            return Err(self.err(i.ca_dir.span(), "intercept.ca_dir", format!("{} exists and is not a folder", ca_dir.display())));
        }
        Ok(InterceptConfig { enabled: i.enabled, ca_dir, never, always, max_hosts: *i.max_hosts.get_ref() })
    }
}


/// Builds a located error. When `key` is unknown (serde's own errors), it is recovered from
/// the text: the `[table]` above the span plus the `key =` on the span's line.
fn invalid(text: &str, origin: &str, span: std::ops::Range<usize>, key: Option<&str>, message: String) -> ConfigError {
    let (line, column) = line_col(text, span.start);
    let key = key.map(str::to_string).unwrap_or_else(|| key_at(text, span.start));
    ConfigError::Invalid { origin: origin.to_string(), line, column, key, message: message.trim().to_string() }
}

/// The keys of `proxy.toml` that are arrays of tables, written `[[name]]`.
const ARRAY_TABLES: [&str; 2] = ["listener", "icap"];

/// The error for `[listener]` (or `[icap]`) written where `[[listener]]` is meant: serde's own
/// words ("invalid type: map, expected a sequence") say nothing of the brackets, so the error
/// names the header's line and says what to write. `None` for any other parse error.
fn single_bracket_array(text: &str, origin: &str, message: &str) -> Option<ConfigError> {
    if !message.contains("expected a sequence") {
        return None;
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let header = line.split('#').next().unwrap_or("").trim();
        let name = header.strip_prefix('[').and_then(|h| h.strip_suffix(']')).map(str::trim);
        if let Some(name) = name.filter(|n| !header.starts_with("[[") && ARRAY_TABLES.contains(n)) {
            let column = line.len() - line.trim_start().len();
            let message = format!("{message}; `[{name}]` opens one table, but {name} is a list of tables: write `[[{name}]]` (two brackets each side), once per {name}");
            return Some(invalid(text, origin, offset + column..offset + column, Some(name), message));
        }
        offset += line.len();
    }
    None
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The dotted key an offset belongs to, e.g. `upstream.connect_timeout_ms`.
fn key_at(text: &str, offset: usize) -> String {
    let before = &text[..floor_char_boundary(text, offset)];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
    let line = &text[line_start..line_end];
    // An empty name (`= 1`, `[]`) is no name: the message would read "key ``".
    let local = line
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty());
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_string())
        .filter(|t| !t.is_empty());
    let header = line.trim();
    let named = header.trim_matches(|c| c == '[' || c == ']').trim();
    match (table, local) {
        _ if header.starts_with('[') && !named.is_empty() => named.to_string(),
        (Some(t), Some(k)) => format!("{t}.{k}"),
        (None, Some(k)) => k,
        (Some(t), None) => t,
        (None, None) => "(top level)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str(text, "test.toml", None)
    }

    fn error_of(text: &str) -> String {
        parse(text).expect_err("config should be rejected").to_string()
    }

    #[test]
    fn embedded_default_validates() {
        let c = Config::embedded_default().expect("the built-in proxy.toml is valid");
        assert_eq!(c.listeners.len(), 1);
        assert_eq!(c.listeners[0].address, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.listeners[0].profile.name, "declutter");
        assert!(c.profiles.contains_key("pass") && c.profiles.contains_key("text"));
        assert_eq!(c.limits.max_rewrite_bytes, 16 << 20);
        assert_eq!((c.limits.rewrite_memory_bytes, c.limits.rewrite_memory_wait), (256 << 20, Duration::from_millis(50)));
        assert_eq!(c.upstream.connect_ports, vec![443]);
        assert!(c.upstream.deny.is_empty() && !c.upstream.deny_private, "no destination is refused by default");
        assert_eq!(c.cache, CacheConfig { enabled: true, pass: true, max_bytes: 64 << 20, max_entry_bytes: 1 << 20, disk: None });
        assert_eq!((c.limits.max_headers, c.limits.client_rate, c.limits.drain_timeout), (DEFAULT_MAX_HEADERS, None, Duration::from_secs(10)));
        assert_eq!(
            (c.limits.max_connections_per_client, c.limits.client_write_timeout, c.limits.tunnel_idle_timeout),
            (64, Duration::from_secs(60), Duration::from_secs(300))
        );
    }

    #[test]
    fn client_rate_and_header_count_are_parsed() {
        let listener = "[[listener]]\naddress = \"127.0.0.1:1\"\n";
        let c = parse(&format!("[limits]\nclient_rate = 5\nclient_burst = 20\nmax_headers = 40\ndrain_timeout_ms = 250\n{listener}")).unwrap();
        assert_eq!(c.limits.client_rate, Some(RateLimit { per_second: 5, burst: 20 }));
        assert_eq!((c.limits.max_headers, c.limits.drain_timeout), (40, Duration::from_millis(250)));
        let c = parse(&format!("[limits]\nclient_rate = 5\n{listener}")).unwrap();
        assert_eq!(c.limits.client_rate, Some(RateLimit { per_second: 5, burst: 5 }), "the burst defaults to one second's worth");
    }

    #[test]
    fn listener_defaults_to_loopback_allow_list() {
        let c = parse("[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n").unwrap();
        let allow = &c.listeners[0].allow;
        assert!(allow.iter().any(|n| n.contains(&"127.0.0.1".parse::<IpAddr>().unwrap())));
        assert!(!allow.iter().any(|n| n.contains(&"10.0.0.1".parse::<IpAddr>().unwrap())));
    }

    macro_rules! rejected {
        ($name:ident, $text:expr, $($needle:expr),+) => {
            #[test]
            fn $name() {
                let err = error_of($text);
                $(assert!(err.contains($needle), "{err:?} should contain {:?}", $needle);)+
            }
        };
    }

    rejected!(
        unknown_key_named,
        "[upstream]\nconect_timeout_ms = 5\n",
        "test.toml:2:",
        "upstream.conect_timeout_ms",
        "unknown field"
    );
    rejected!(
        wrong_type_named,
        "[limits]\n\nmax_connections = \"many\"\n",
        "test.toml:3:",
        "limits.max_connections"
    );
    rejected!(
        bad_address,
        "[[listener]]\naddress = \"localhost\"\n",
        "test.toml:2:",
        "listener.address"
    );
    rejected!(
        nameless_key_located,
        "# a comment\n= \"value\"\n",
        "test.toml:2:",
        "key `(top level)`"
    );
    rejected!(
        nameless_table_located,
        "[log]\n[]\n",
        "test.toml:2:",
        "key `log`"
    );
    rejected!(
        bad_network,
        "[[listener]]\naddress = \"127.0.0.1:1\"\nallow = [\"10.0.0.0/33\"]\n",
        "test.toml:3:",
        "listener.allow"
    );
    rejected!(bad_deny_network, "[upstream]\ndeny = [\"10.0.0.0/8\", \"nonsense\"]\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "upstream.deny", "nonsense");

    #[test]
    fn deny_rules_are_parsed() {
        let c = parse("[upstream]\ndeny = [\"203.0.113.0/24\", \"198.51.100.7\"]\ndeny_private = true\n[[listener]]\naddress = \"127.0.0.1:1\"\n").unwrap();
        assert_eq!(c.upstream.deny, vec!["203.0.113.0/24".parse::<IpNet>().unwrap(), "198.51.100.7/32".parse().unwrap()]);
        assert!(c.upstream.deny_private);
    }
    rejected!(zero_headers, "[limits]\nmax_headers = 0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.max_headers");
    rejected!(too_many_headers_allowed, "[limits]\nmax_headers = 100000\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.max_headers", "10000");
    rejected!(tiny_rewrite_memory, "[limits]\nrewrite_memory_bytes = 1000\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.rewrite_memory_bytes", "65536");
    rejected!(endless_rewrite_memory_wait, "[limits]\nrewrite_memory_wait_ms = 100000000\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.rewrite_memory_wait_ms", "60000");
    rejected!(burst_without_rate, "[limits]\nclient_burst = 10\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.client_burst", "client_rate");
    rejected!(negative_rate, "[limits]\nclient_rate = -1\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.client_rate");
    rejected!(zero_per_client, "[limits]\nmax_connections_per_client = 0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.max_connections_per_client");
    rejected!(zero_client_write_timeout, "[limits]\nclient_write_timeout_ms = 0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.client_write_timeout_ms");
    rejected!(zero_tunnel_idle_timeout, "[limits]\ntunnel_idle_timeout_ms = 0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "limits.tunnel_idle_timeout_ms");
    rejected!(unknown_profile, "[[listener]]\naddress = \"127.0.0.1:1\"\nprofile = \"nope\"\n", "test.toml:3:", "unknown profile");
    rejected!(open_proxy, "[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"0.0.0.0/0\"]\n", "test.toml:3:", "listener.allow", "open proxy");
    rejected!(open_proxy_in_halves, "[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"0.0.0.0/1\", \"128.0.0.0/1\"]\n", "test.toml:3:", "open proxy");
    rejected!(open_proxy_half_the_internet, "[[listener]]\naddress = \"192.168.1.5:8080\"\nallow = [\"0.0.0.0/1\"]\n", "open proxy");
    rejected!(open_proxy_v6, "[[listener]]\naddress = \"[::]:8080\"\nallow = [\"2000::/3\"]\n", "open proxy");
    rejected!(open_proxy_many_small_blocks, "[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"1.0.0.0/16\", \"2.0.0.0/16\"]\n", "open proxy", "131072 public IPv4");
    rejected!(empty_password, "[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"0.0.0.0/0\"]\nauth = { user = \"u\", password = \"\" }\n", "test.toml:4:", "listener.auth.password");
    rejected!(empty_user, "[[listener]]\naddress = \"127.0.0.1:8080\"\nauth = { user = \"\", password = \"p\" }\n", "test.toml:3:", "listener.auth.user");
    rejected!(empty_allow, "[[listener]]\naddress = \"127.0.0.1:8080\"\nallow = []\n", "test.toml:3:", "listener.allow", "admits no client");
    rejected!(two_listeners_one_address, "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[listener]]\naddress = \"127.0.0.1:8080\"\n", "test.toml:4:", "listener.address", "collides");
    #[test]
    fn listeners_collide_on_one_address_or_under_a_wildcard() {
        let c = |a: &str, b: &str| collides(a.parse().unwrap(), b.parse().unwrap());
        assert!(c("127.0.0.1:80", "127.0.0.1:80") && c("0.0.0.0:80", "10.0.0.1:80") && c("[::]:80", "127.0.0.1:80") && c("[::]:80", "0.0.0.0:80"));
        assert!(!c("0.0.0.0:80", "[::1]:80"), "an IPv4 wildcard leaves IPv6 free");
        assert!(!c("127.0.0.1:80", "[::1]:80") && !c("127.0.0.1:80", "127.0.0.1:81") && !c("127.0.0.1:0", "127.0.0.1:0"));
    }

    rejected!(wildcard_and_loopback_one_port, "[[listener]]\naddress = \"127.0.0.1:8080\"\n[[listener]]\naddress = \"[::]:8080\"\nallow = [\"::1\"]\n", "test.toml:4:", "collides");

    const L: &str = "[[listener]]\naddress = \"127.0.0.1:1\"\n";

    /// Every bounded key refused at both ends of its range (and past its type), at its line.
    #[test]
    fn every_bounded_key_is_checked_at_its_limits() {
        let cases: &[(&str, &str, &str)] = &[
            ("upstream", "connect_timeout_ms", "0"),
            ("upstream", "connect_timeout_ms", "86400001"),
            ("upstream", "response_timeout_ms", "0"),
            ("upstream", "response_timeout_ms", "18446744073709551615"),
            ("upstream", "body_idle_timeout_ms", "0"),
            ("upstream", "pool_idle_timeout_ms", "86400001"),
            ("upstream", "connect_ports", "[443, 0]"),
            ("limits", "max_connections", "0"),
            ("limits", "max_connections", "18446744073709551615"),
            ("limits", "max_connections", "1000001"),
            ("limits", "header_read_timeout_ms", "0"),
            ("limits", "header_read_timeout_ms", "86400001"),
            ("limits", "max_header_bytes", "8191"),
            ("limits", "max_header_bytes", "4294967296"),
            ("limits", "max_rewrite_bytes", "0"),
            ("limits", "max_rewrite_bytes", "1073741825"),
            ("limits", "drain_timeout_ms", "86400001"),
            ("limits", "connection_wait_ms", "18446744073709551615"),
            ("limits", "max_headers", "0"),
            ("limits", "image_max_pixels", "0"),
            ("limits", "image_max_bytes", "1073741825"),
            ("limits", "client_rate", "1000001"),
            ("cache", "max_entry_bytes", "0"),
            ("cache", "max_entry_bytes", "4294967296"),
            ("intercept", "max_hosts", "0"),
        ];
        for (table, key, value) in cases {
            let err = error_of(&format!("[{table}]\n{key} = {value}\n{L}"));
            assert!(err.starts_with("test.toml:2:") && err.contains(&format!("`{table}.{key}`")), "{table}.{key} = {value}: {err}");
        }
        let ok = parse(&format!("[upstream]\npool_idle_timeout_ms = 0\n[limits]\ndrain_timeout_ms = 0\nconnection_wait_ms = 0\nmax_connections = 1000000\n{L}"));
        assert!(ok.is_ok(), "0 has a meaning for these: {:?}", ok.err());
    }

    rejected!(filters_dir_missing, &format!("[filters]\ndir = \"nope\"\n{L}"), "test.toml:2:", "filters.dir", "nope is not a folder");
    rejected!(ca_dir_a_file, &format!("[intercept]\nca_dir = \"Cargo.toml\"\n{L}"), "test.toml:2:", "intercept.ca_dir", "not a folder");

    #[test]
    fn the_open_proxy_rule_judges_public_coverage() {
        let ok = |text: &str| parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        ok("[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"10.0.0.0/8\", \"172.16.0.0/12\", \"192.168.0.0/16\", \"fd00::/8\", \"100.64.0.0/10\"]\n");
        ok("[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"198.51.0.0/16\", \"2a01:db8:1::/48\"]\n");
        ok("[[listener]]\naddress = \"127.0.0.1:8080\"\nallow = [\"0.0.0.0/0\", \"::/0\"]\n");
        ok("[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"0.0.0.0/0\"]\nauth = { user = \"u\", password = \"p\" }\n");
    }

    #[test]
    fn listen_overrides_the_first_listener_before_the_checks() {
        let text = "[[listener]]\naddress = \"127.0.0.1:8080\"\nallow = [\"0.0.0.0/0\", \"::/0\"]\n";
        assert!(parse(text).is_ok(), "on loopback, allowing everyone is harmless");
        let err = Config::from_toml_str_listening(text, "test.toml", None, Some("0.0.0.0:3128".parse().unwrap())).expect_err("open once --listen says 0.0.0.0");
        let shown = err.to_string();
        assert!(shown.contains("test.toml:3:") && shown.contains("0.0.0.0:3128 (from --listen)") && shown.contains("open proxy"), "{shown}");
        let c = Config::from_toml_str_listening("[[listener]]\naddress = \"127.0.0.1:8080\"\n", "t", None, Some("0.0.0.0:3128".parse().unwrap())).unwrap();
        assert_eq!(c.listeners[0].address, "0.0.0.0:3128".parse().unwrap());
    }

    #[test]
    fn a_file_without_listeners_gets_the_documented_one() {
        let c = parse("[log]\nlevel = \"info\"\n").expect("every key is optional");
        assert_eq!(c.listeners.len(), 1);
        assert_eq!(c.listeners[0].address, DEFAULT_LISTEN.parse().unwrap());
        assert_eq!(c.listeners[0].profile.name, "declutter");
        assert!(parse("").is_ok(), "an empty file is a valid config");
    }
    rejected!(bad_level, "[log]\nlevel = \"loud\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "log.level");
    rejected!(pass_redefined, "[profiles.pass]\nrules = \"declutter\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "profiles.pass");
    rejected!(bad_output, "[profiles.x]\nrules = \"declutter\"\noutput = \"pdf\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "profiles.x.output");
    rejected!(missing_rules, "[profiles.x]\nrules = \"nosuch\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "profiles.x.rules");
    rejected!(bad_toml, "[[listener]\naddress = 1\n", "test.toml:1:");
    rejected!(unknown_preset, "[profiles.x]\nrules = \"declutter\"\npreset = \"newspaper\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "profiles.x.preset", "text-heavy");
    rejected!(bad_link_ratio, "[profiles.x]\nrules = \"declutter\"\n\nlink_ratio = -1.0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:4:", "profiles.x.link_ratio");
    rejected!(cache_without_room, "[cache]\nenabled = true\nmax_bytes = 0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "cache.max_bytes");
    rejected!(cache_entry_over_total, "[cache]\nmax_bytes = 1000\nmax_entry_bytes = 2000\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "cache.max_entry_bytes");
    rejected!(cache_disk_without_room, "[cache]\ndisk_dir = \"cache\"\ndisk_max_bytes = 1000\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "cache.disk_max_bytes");
    rejected!(cache_disk_dir_is_a_file, "[cache]\ndisk_dir = \"/dev/null\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "cache.disk_dir");
    rejected!(cache_unknown_key, "[cache]\nsize = 1\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "cache.size");
    rejected!(intercept_bad_host, "[intercept]\nenabled = true\nnever = [\"https://bank.example/\"]\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "intercept.never", "bank.example");
    rejected!(intercept_empty_ca_dir, "[intercept]\nca_dir = \"\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "intercept.ca_dir");
    rejected!(intercept_unknown_key, "[intercept]\nenable = true\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:2:", "intercept.enable");
    rejected!(unknown_algorithm, "[profiles.x]\nrules = \"declutter\"\n\nalgorithm = \"readability\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:4:", "profiles.x.algorithm", "unknown algorithm \"readability\"; known: crunch");
    rejected!(images_unknown, "[profiles.x]\nrules = \"declutter\"\nimages = \"tiny\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "profiles.x.images");
    rejected!(image_quality_zero, "[profiles.x]\nrules = \"declutter\"\nimage_quality = 0\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "profiles.x.image_quality");
    rejected!(image_max_width_huge, "[profiles.x]\nrules = \"declutter\"\nimage_max_width = 20000\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "profiles.x.image_max_width");

    #[test]
    fn image_keys_are_read() {
        let c = parse("[profiles.gateway]\nrules = \"declutter\"\nimages = \"compress\"\nimage_max_width = 640\nimage_quality = 50\n[limits]\nimage_max_pixels = 1000\n[[listener]]\naddress = \"127.0.0.1:1\"\n").expect("valid");
        let images = c.profiles["gateway"].images();
        assert_eq!(images, Images { policy: Policy::Compress, max_width: 640, quality: 50, width_hints: true });
        assert_eq!(c.limits.image_max_pixels, 1000);
        assert_eq!(c.profiles["declutter"].images(), Images::default(), "keep unless asked");
    }

    rejected!(fallback_lang_not_a_tag, "[profiles.x]\nrules = \"declutter\"\nfallback_lang = \"english please\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "fallback_lang");
    rejected!(
        single_bracket_listener_gets_a_hint,
        "[log]\nlevel = \"info\"\n\n[listener]\naddress = \"127.0.0.1:1\"\n",
        "test.toml:4:1: key `listener`",
        "write `[[listener]]`"
    );
    rejected!(single_bracket_icap_gets_a_hint, "  [icap] # Squid\naddress = \"127.0.0.1:1\"\n", "test.toml:1:3: key `icap`", "write `[[icap]]`");
    rejected!(retain_links_not_bool, "[profiles.x]\nrules = \"declutter\"\nretain_links = \"yes\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n", "test.toml:3:", "retain_links");

    #[test]
    fn reading_profiles_carry_their_algorithm() {
        let c = parse(concat!(
            "[profiles.quick]\nrules = \"reader\"\nalgorithm = \"cetr\"\n",
            "[[listener]]\naddress = \"127.0.0.1:1\"\nprofile = \"reader\"\n"
        ))
        .unwrap();
        let reader = c.profiles["reader"].reader.as_ref().expect("the built-in reader profile");
        assert_eq!(reader.algorithm, Algorithm::Pith);
        assert!(c.profiles["reader"].stage2.is_some(), "its fallback is the declutter page");
        assert_eq!(c.listeners[0].profile.name, "reader");
        assert_eq!(c.profiles["quick"].reader.as_ref().map(|r| r.algorithm), Some(Algorithm::Cetr));
        assert!(c.profiles["declutter"].reader.is_none() && c.profiles["text"].reader.is_none());
        assert!(RuleSet::builtin("reader").is_some_and(|r| !r.is_empty()));
    }

    #[test]
    fn profiles_carry_stage2_settings() {
        let c = parse(concat!(
            "[profiles.light]\nrules = \"declutter\"\npreset = \"none\"\n",
            "[profiles.gov]\nrules = \"declutter\"\npreset = \"government\"\nretain_links = false\nlink_ratio = 0.5\n",
            "[profiles.plain]\nrules = \"declutter\"\n",
            "[[listener]]\naddress = \"127.0.0.1:1\"\n"
        ))
        .unwrap();
        assert!(c.profiles["light"].stage2.is_none());
        let gov = &c.profiles["gov"].stage2.as_ref().expect("stage 2").options;
        assert_eq!((gov.preset, gov.retain_links, gov.link_ratio), (PresetName::Government, Some(false), Some(0.5)));
        let plain = &c.profiles["plain"].stage2.as_ref().expect("stage 2").options;
        assert_eq!(*plain, Options::default());
        assert!(c.profiles["declutter"].stage2.is_some() && c.profiles["text"].stage2.is_some());
        assert!(c.profiles["pass"].stage2.is_none());
    }

    #[test]
    fn site_rules_from_a_folder_report_their_own_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sites")).unwrap();
        std::fs::write(dir.path().join("sites/x.rules"), "site e.example\npreset newspaper\n").unwrap();
        std::fs::write(dir.path().join("declutter.rules"), "remove script\n").unwrap();
        let text = format!("[filters]\ndir = {:?}\n[[listener]]\naddress = \"127.0.0.1:1\"\n", dir.path().display().to_string());
        let err = parse(&text).expect_err("bad site file");
        let shown = format!("{err}: {}", std::error::Error::source(&err).map(|s| s.to_string()).unwrap_or_default());
        assert!(shown.contains("test.toml:2") && shown.contains("filters.dir"), "{shown}");
        assert!(shown.contains("x.rules:2"), "{shown}");
    }

    #[test]
    fn ad_lists_replace_the_shipped_ones_and_a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), "||ads.mine.example^\n").unwrap();
        let list = dir.path().join("mine.txt").display().to_string();
        let text = format!("[filters]\nad_lists = [{list:?}]\n[[listener]]\naddress = \"127.0.0.1:1\"\n");
        let c = parse(&text).expect("a readable list");
        let ads = c.profiles["declutter"].stage2.as_ref().and_then(|s| s.ads.clone()).expect("configured lists");
        assert!(ads.is_blocked("https://ads.mine.example/x", "https://page.example/", crate::ads::RequestKind::Link));
        assert!(!ads.is_blocked("https://ad.doubleclick.net/x", "https://page.example/", crate::ads::RequestKind::Link));

        let text = "[[listener]]\naddress = \"127.0.0.1:1\"\n[filters]\nad_lists = [\"nowhere.txt\"]\n";
        let err = parse(text).expect_err("a missing list");
        let shown = err.to_string();
        assert!(shown.contains("test.toml:4") && shown.contains("filters.ad_lists[0]") && shown.contains("nowhere.txt"), "{shown}");
        assert!(parse("[[listener]]\naddress = \"127.0.0.1:1\"\n").unwrap().profiles["declutter"].stage2.as_ref().unwrap().ads.is_none());
    }

    #[test]
    fn documented_profiles_exist_without_being_spelled_out() {
        let c = parse("[[listener]]\naddress = \"127.0.0.1:0\"\n").unwrap();
        assert_eq!(c.listeners[0].profile.name, "declutter");
        assert!(!c.listeners[0].profile.rules.is_empty());
        assert_eq!(c.profiles["text"].output, Output::Text);
    }

    #[test]
    fn lan_listener_with_allow_list_is_fine() {
        let c = parse("[[listener]]\naddress = \"0.0.0.0:8080\"\nallow = [\"192.168.1.0/24\", \"10.1.2.3\"]\n").unwrap();
        assert_eq!(c.listeners[0].allow.len(), 2);
    }

    #[test]
    fn intercept_policy_never_wins_then_always_then_enabled() {
        let dir = "[[listener]]\naddress = \"127.0.0.1:1\"\n";
        let off = parse(&format!("[intercept]\nalways = [\"news.example\"]\nnever = [\"bank.news.example\"]\n{dir}")).unwrap().intercept;
        assert!(off.is_active() && off.should_intercept("www.news.example"));
        assert!(!off.should_intercept("bank.news.example") && !off.should_intercept("other.example"));
        let on = parse(&format!("[intercept]\nenabled = true\nnever = [\"bank.example\"]\n{dir}")).unwrap().intercept;
        assert!(on.should_intercept("other.example") && !on.should_intercept("www.bank.example"));
        let default = parse(dir).unwrap().intercept;
        assert!(!default.is_active() && !default.should_intercept("any.example"));
        assert_eq!(default.ca_dir, PathBuf::from("certs"));
    }

    #[test]
    fn credentials_never_debug_print_the_password() {
        let c = Credentials { user: "u".into(), password: "secret".into() };
        assert!(!format!("{c:?}").contains("secret"));
    }

    #[test]
    fn rule_files_from_a_folder_report_their_own_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.rules"), "remove script\nfrobnicate x\n").unwrap();
        let text = format!(
            "[filters]\ndir = {:?}\n[profiles.mine]\nrules = \"mine\"\n[[listener]]\naddress = \"127.0.0.1:1\"\nprofile = \"mine\"\n",
            dir.path().display().to_string()
        );
        let err = parse(&text).expect_err("bad rule file");
        let shown = format!("{err}: {}", std::error::Error::source(&err).map(|s| s.to_string()).unwrap_or_default());
        assert!(shown.contains("test.toml:4"), "{shown}");
        assert!(shown.contains(":2"), "{shown}");
    }
}
