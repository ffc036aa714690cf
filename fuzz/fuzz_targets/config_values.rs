//! The config's semantic checks: every key of `proxy.toml` with values at and past its limits,
//! as valid TOML, so that the validator (not the TOML parser) is what the input exercises.
//!
//! Input: bytes read three at a time as (key, value, listener): each triple sets one key, from a
//! table of every key in the file, to one value from a pool for that key's kind (zero, bounds
//! and one past them, the largest integers, paths that do not exist, allow lists that cover
//! everyone in pieces, empty passwords...). The first two bytes choose how many `[[listener]]`
//! tables there are (0 to 3) and whether `--listen` overrides the first one's address.
//!
//! Properties:
//! - nothing panics;
//! - a refused config names a line of the input, a non-empty key, and starts `fuzz.toml:LINE:`;
//! - a config that validates is one the server can run with (what `check-config` passes, `serve`
//!   starts with): every listener admits someone, has non-empty credentials if any, and is not
//!   an open proxy (not on loopback and without auth, it admits at most the documented public
//!   space, judged independently here); no two listeners collide on an address; `--listen`
//!   replaced the first listener's address; the timeouts that must not be zero are not, and no
//!   time overflows a deadline; `max_connections` fits the slot semaphore; `max_header_bytes`
//!   fits HTTP/2's 32-bit size; the upstream client builds; `filters.dir`, when set, is a folder.

#![no_main]

use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use pith::addr::public_coverage;
use pith::config::{Config, ConfigError, MAX_OPEN_V4, MAX_OPEN_V6_SUBNETS};

const ORIGIN: &str = "fuzz.toml";

const INTS: &[&str] = &[
    "0", "1", "2", "-1", "100", "1024", "8191", "8192", "65536", "1048577", "86400000", "86400001", "1073741825",
    "4294967295", "4294967296", "9223372036854775807", "18446744073709551615",
];
const BOOLS: &[&str] = &["true", "false"];
const ADDRESSES: &[&str] = &[
    "\"127.0.0.1:0\"", "\"127.0.0.1:8080\"", "\"0.0.0.0:8080\"", "\"[::]:8080\"", "\"[::1]:0\"", "\"192.168.1.5:8080\"",
    "\"localhost:80\"", "\"\"",
];
const NETS: &[&str] = &[
    "[]", "[\"0.0.0.0/0\"]", "[\"0.0.0.0/1\", \"128.0.0.0/1\"]", "[\"10.0.0.0/8\", \"fd00::/8\"]", "[\"::/0\"]",
    "[\"2000::/3\"]", "[\"1.0.0.0/16\", \"2.0.0.0/16\"]", "[\"198.51.0.0/16\", \"2a01:db8::/48\"]", "[\"127.0.0.1\"]",
    "[\"bad\"]", "[\"10.0.0.0/33\"]", "[\"0.0.0.0/1\"]",
];
const AUTHS: &[&str] = &[
    "{ user = \"u\", password = \"p\" }", "{ user = \"u\", password = \"\" }", "{ user = \"\", password = \"p\" }",
    "{ user = \"a:b\", password = \"p\" }",
];
const LEVELS: &[&str] = &["\"info\"", "\"loud\"", "\"trace\""];
const PROFILES: &[&str] = &["\"pass\"", "\"declutter\"", "\"text\"", "\"reader\"", "\"x\"", "\"nope\""];
const PATHS: &[&str] = &["\"\"", "\"nope\"", "\".\"", "\"fuzz_targets\"", "\"Cargo.toml\""];
const PATH_LISTS: &[&str] = &["[]", "[\"nope\"]", "[\"Cargo.toml\"]"];
const PORTS: &[&str] = &["[]", "[443]", "[0]", "[443, 8443]", "[65535]"];
const HOSTS: &[&str] = &["[]", "[\"bank.example\"]", "[\"https://x/\"]", "[\"127.0.0.1\"]"];
const OUTPUTS: &[&str] = &["\"html\"", "\"text\"", "\"pdf\""];
const PRESETS: &[&str] = &["\"automatic\"", "\"none\"", "\"newspaper\"", "\"government\""];
const FLOATS: &[&str] = &["0.25", "-1.0", "nan", "inf", "1000.0", "1001.0"];
const ALGORITHMS: &[&str] = &["\"pith\"", "\"cetr\"", "\"readability\""];
const RULES: &[&str] = &["\"declutter\"", "\"reader\"", "\"nosuch\"", "\"../x\""];

/// Every key of the file: its table (`listener` for `[[listener]]`), name and value pool.
const KEYS: &[(&str, &str, &[&str])] = &[
    ("log", "level", LEVELS),
    ("listener", "address", ADDRESSES),
    ("listener", "profile", PROFILES),
    ("listener", "allow", NETS),
    ("listener", "auth", AUTHS),
    ("upstream", "connect_timeout_ms", INTS),
    ("upstream", "response_timeout_ms", INTS),
    ("upstream", "body_idle_timeout_ms", INTS),
    ("upstream", "pool_idle_timeout_ms", INTS),
    ("upstream", "pool_max_idle_per_host", INTS),
    ("upstream", "extra_root_certificates", PATH_LISTS),
    ("upstream", "connect_ports", PORTS),
    ("upstream", "send_via", BOOLS),
    ("upstream", "deny", NETS),
    ("upstream", "deny_private", BOOLS),
    ("limits", "max_connections", INTS),
    ("limits", "header_read_timeout_ms", INTS),
    ("limits", "max_header_bytes", INTS),
    ("limits", "max_rewrite_bytes", INTS),
    ("limits", "max_headers", INTS),
    ("limits", "client_rate", INTS),
    ("limits", "client_burst", INTS),
    ("limits", "drain_timeout_ms", INTS),
    ("limits", "connection_wait_ms", INTS),
    ("limits", "max_connections_per_client", INTS),
    ("limits", "client_write_timeout_ms", INTS),
    ("limits", "tunnel_idle_timeout_ms", INTS),
    ("limits", "rewrite_memory_bytes", INTS),
    ("limits", "rewrite_memory_wait_ms", INTS),
    ("filters", "dir", PATHS),
    ("filters", "ad_lists", PATH_LISTS),
    ("profiles.x", "rules", RULES),
    ("profiles.x", "output", OUTPUTS),
    ("profiles.x", "preset", PRESETS),
    ("profiles.x", "retain_links", BOOLS),
    ("profiles.x", "link_ratio", FLOATS),
    ("profiles.x", "algorithm", ALGORITHMS),
    ("cache", "enabled", BOOLS),
    ("cache", "max_bytes", INTS),
    ("cache", "max_entry_bytes", INTS),
    ("intercept", "enabled", BOOLS),
    ("intercept", "ca_dir", PATHS),
    ("intercept", "never", HOSTS),
    ("intercept", "always", HOSTS),
    ("intercept", "max_hosts", INTS),
];

const LISTEN: &[Option<&str>] = &[None, Some("0.0.0.0:3128"), Some("127.0.0.1:0"), Some("[::]:3128")];

/// The config text the input describes, and its `--listen`.
fn generate(data: &[u8]) -> (String, Option<SocketAddr>) {
    let (head, triples) = data.split_at(data.len().min(2));
    let listeners = head.first().map_or(1, |b| usize::from(b % 4));
    let listen = head.get(1).and_then(|b| LISTEN[usize::from(*b) % LISTEN.len()]).map(|a| a.parse().expect("literal"));
    let mut tables: BTreeMap<&str, BTreeMap<&str, &str>> = BTreeMap::new();
    let mut each: Vec<BTreeMap<&str, &str>> = vec![BTreeMap::new(); listeners];
    for t in triples.chunks_exact(3) {
        let (table, key, pool) = KEYS[usize::from(t[0]) % KEYS.len()];
        let value = pool[usize::from(t[1]) % pool.len()];
        if table == "listener" {
            if let Some(l) = each.get_mut(usize::from(t[2]) % listeners.max(1)) {
                l.insert(key, value);
            }
        } else {
            tables.entry(table).or_default().insert(key, value);
        }
    }
    let mut text = String::new();
    for (table, keys) in &tables {
        let _ = writeln!(text, "[{table}]");
        for (key, value) in keys {
            let _ = writeln!(text, "{key} = {value}");
        }
    }
    for mut keys in each {
        keys.entry("address").or_insert("\"127.0.0.1:0\"");
        text.push_str("[[listener]]\n");
        for (key, value) in keys {
            let _ = writeln!(text, "{key} = {value}");
        }
    }
    (text, listen)
}

fn assert_located(text: &str, err: &ConfigError) {
    let line = match err {
        ConfigError::Invalid { line, key, .. } => {
            assert!(!key.is_empty(), "an error names its key: {err}");
            *line
        }
        ConfigError::Sites { line, .. } | ConfigError::Rules { line, .. } => *line,
        ConfigError::Io { .. } => panic!("from_toml_str reads no config file: {err}"),
    };
    let lines = text.split('\n').count();
    assert!((1..=lines).contains(&line), "error names line {line} of a {lines}-line input: {err}\n{text}");
    assert!(err.to_string().starts_with(&format!("{ORIGIN}:{line}:")), "unlocated: {err}");
}

fn assert_runnable(config: &Config, listen: Option<SocketAddr>, text: &str) {
    if let Some(listen) = listen {
        assert_eq!(config.listeners[0].address, listen, "--listen replaces the first address");
    }
    for (i, l) in config.listeners.iter().enumerate() {
        assert!(!l.allow.is_empty(), "listener {i} admits nobody:\n{text}");
        if let Some(c) = &l.auth {
            assert!(!c.user.is_empty() && !c.password.is_empty() && !c.user.contains(':'), "listener {i}: weak credentials:\n{text}");
        }
        let covered = public_coverage(&l.allow);
        let open = covered.v4_addresses > MAX_OPEN_V4 || covered.v6_subnets > MAX_OPEN_V6_SUBNETS;
        assert!(!open || l.auth.is_some() || l.address.ip().is_loopback(), "listener {} is an open proxy ({covered:?}):\n{text}", l.address);
        for m in &config.listeners[..i] {
            let (a, b) = (l.address, m.address);
            let wildcard = |w: SocketAddr, o: SocketAddr| w.ip().is_unspecified() && (w.is_ipv6() || o.is_ipv4());
            let overlap = a.ip() == b.ip() || wildcard(a, b) || wildcard(b, a);
            assert!(a.port() == 0 || a.port() != b.port() || !overlap, "{a} and {b} cannot both bind:\n{text}");
        }
    }
    let (u, l) = (&config.upstream, &config.limits);
    for (name, d) in [("connect", u.connect_timeout), ("response", u.response_timeout), ("body idle", u.body_idle_timeout), ("header read", l.header_read_timeout), ("client write", l.client_write_timeout), ("tunnel idle", l.tunnel_idle_timeout), ("image wait", l.image_wait)] {
        assert!(!d.is_zero(), "a zero {name} timeout would fail every request:\n{text}");
    }
    let now = Instant::now();
    for d in [u.connect_timeout, u.response_timeout, u.body_idle_timeout, u.pool_idle_timeout, l.header_read_timeout, l.drain_timeout, l.connection_wait, l.client_write_timeout, l.tunnel_idle_timeout, l.rewrite_memory_wait, l.image_wait] {
        assert!(d <= Duration::from_secs(86_400) && now.checked_add(d).is_some(), "{d:?} overflows a deadline:\n{text}");
    }
    assert!((1..=tokio::sync::Semaphore::MAX_PERMITS).contains(&l.max_connections), "{} slots:\n{text}", l.max_connections);
    assert!(l.max_connections_per_client >= 1, "a per-client cap of 0 admits no one:\n{text}");
    assert!(u32::try_from(l.max_header_bytes).is_ok() && l.max_header_bytes >= 8192, "{} header bytes:\n{text}", l.max_header_bytes);
    assert!(!u.connect_ports.contains(&0), "port 0:\n{text}");
    if let Some(dir) = text.lines().find_map(|line| line.strip_prefix("dir = \"")) {
        let dir = dir.trim_end_matches('"');
        assert!(dir.is_empty() || Path::new(dir).is_dir(), "filters.dir {dir:?} is no folder:\n{text}");
    }
    drop(pith::net::upstream::forward::Clients::new(u));
}

fuzz_target!(|data: &[u8]| {
    let (text, listen) = generate(data);
    match Config::from_toml_str_listening(&text, ORIGIN, None, listen) {
        Ok(config) => assert_runnable(&config, listen, &text),
        Err(err) => assert_located(&text, &err),
    }
});
