//! Counting what pith serves: bytes from origins and to clients per client and per site over
//! the last hour (for the control page), and the request counters and histograms of `/metrics`.
//!
//! Every finished request reports once, when its access-log line is written
//! ([`super::super::bodies::AccessRecord::write`]). Memory is bounded: at most [`MAX_KEYS`]
//! clients and as many sites are counted, each in [`BUCKETS`] fixed buckets; past the bound the
//! one seen least recently is dropped.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::net::bodies::AccessRecord;

/// Buckets of each window; with [`BUCKET`] they span an hour.
pub const BUCKETS: usize = 12;
/// Length of one bucket.
pub const BUCKET: Duration = Duration::from_secs(300);
/// Most clients, and most sites, counted at once.
pub const MAX_KEYS: usize = 4096;
/// Most distinct (profile, action, status) series: the profiles and actions are few, but a
/// status is any number an origin sends.
const MAX_SERIES: usize = 2048;

/// Bytes in one window: (bucket number, from origins, to the client) per bucket.
#[derive(Clone, Copy, Default)]
struct Window {
    buckets: [(u64, u64, u64); BUCKETS],
    seen: u64,
}

impl Window {
    fn add(&mut self, now: u64, origin: u64, client: u64) {
        let slot = &mut self.buckets[(now % BUCKETS as u64) as usize];
        if slot.0 != now {
            *slot = (now, 0, 0);
        }
        slot.1 += origin;
        slot.2 += client;
        self.seen = now;
    }

    fn sum(&self, now: u64) -> Bytes {
        let live = self.buckets.iter().filter(|b| b.0 + BUCKETS as u64 > now && b.0 <= now);
        live.fold(Bytes::default(), |acc, b| Bytes { origin: acc.origin + b.1, client: acc.client + b.2 })
    }
}

/// Bytes over the last hour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bytes {
    /// Body bytes read from origins.
    pub origin: u64,
    /// Body bytes sent to the client.
    pub client: u64,
}

/// Windows by key, bounded.
#[derive(Default)]
struct Windows(HashMap<String, Window>);

impl Windows {
    fn add(&mut self, key: &str, now: u64, origin: u64, client: u64) {
        if let Some(w) = self.0.get_mut(key) {
            return w.add(now, origin, client);
        }
        if self.0.len() >= MAX_KEYS {
            if let Some(oldest) = self.0.iter().min_by_key(|(_, w)| w.seen).map(|(k, _)| k.clone()) {
                self.0.remove(&oldest);
            }
        }
        self.0.entry(key.to_string()).or_default().add(now, origin, client);
    }
}

/// Upper bounds (seconds) of the histogram buckets, for request latency and rewrite time.
const BOUNDS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// A Prometheus histogram over [`BOUNDS`].
#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Counts one observation.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = BOUNDS.iter().position(|b| secs <= *b).unwrap_or(BOUNDS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut total = 0;
        for (i, bound) in BOUNDS.iter().enumerate() {
            total += self.counts[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {total}");
        }
        total += self.counts[BOUNDS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {total}");
        let _ = writeln!(out, "{name}_sum {}", self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count {total}");
    }
}

/// The time pages take to rewrite, for every proxy in this process: the rewrite runs where no
/// proxy's state is at hand ([`crate::net::respond`]), and a process exports one such series.
pub fn rewrite_time() -> &'static Histogram {
    static REWRITES: std::sync::OnceLock<Histogram> = std::sync::OnceLock::new();
    REWRITES.get_or_init(Histogram::default)
}

/// Reading pages served with a note that reading mode is unsure of them
/// ([`crate::extract::unsure`]), for every proxy in this process (counted where the page is
/// rewritten, as [`rewrite_time`] is).
pub fn unsure_pages() -> &'static AtomicU64 {
    static UNSURE: AtomicU64 = AtomicU64::new(0);
    &UNSURE
}

/// The counts of one running proxy; it outlives reloads.
pub struct Tally {
    epoch: Instant,
    clients: Mutex<Windows>,
    sites: Mutex<Windows>,
    requests: Mutex<HashMap<(String, &'static str, u16), u64>>,
    origin_bytes: AtomicU64,
    client_bytes: AtomicU64,
    latency: Histogram,
    tunnels: Arc<AtomicUsize>,
    /// The drain's count of open client connections, once the proxy is bound.
    connections: OnceLock<Arc<AtomicUsize>>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            epoch: Instant::now(),
            clients: Mutex::default(),
            sites: Mutex::default(),
            requests: Mutex::default(),
            origin_bytes: AtomicU64::new(0),
            client_bytes: AtomicU64::new(0),
            latency: Histogram::default(),
            tunnels: Arc::default(),
            connections: OnceLock::new(),
        }
    }
}

/// Held while a CONNECT tunnel is open; counts it in `pith_tunnels_open`.
pub struct TunnelOpen(Arc<AtomicUsize>);

impl Drop for TunnelOpen {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Tally {
    fn bucket(&self) -> u64 {
        self.epoch.elapsed().as_secs() / BUCKET.as_secs()
    }

    /// Counts a finished request of `who`, which sent `client_bytes` of body to the client.
    pub fn record(&self, record: &AccessRecord, who: &str, client_bytes: u64) {
        let now = self.bucket();
        self.origin_bytes.fetch_add(record.origin_bytes, Ordering::Relaxed);
        self.client_bytes.fetch_add(client_bytes, Ordering::Relaxed);
        self.latency.observe(record.start.elapsed());
        // pith's own pages are no site's bytes, and no saving or cost of a client's browsing.
        if record.action == crate::net::bodies::Action::Own {
            return self.count(record);
        }
        self.clients.lock().unwrap_or_else(PoisonError::into_inner).add(who, now, record.origin_bytes, client_bytes);
        if let Some(host) = host_of(&record.url) {
            self.sites.lock().unwrap_or_else(PoisonError::into_inner).add(host, now, record.origin_bytes, client_bytes);
        }
        self.count(record);
    }

    fn count(&self, record: &AccessRecord) {
        let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (record.profile.clone(), record.action.as_str(), record.status);
        if requests.len() < MAX_SERIES || requests.contains_key(&key) {
            *requests.entry(key).or_insert(0) += 1;
        }
    }

    /// `who`'s bytes over the last hour.
    pub fn client(&self, who: &str) -> Bytes {
        let now = self.bucket();
        self.clients.lock().unwrap_or_else(PoisonError::into_inner).0.get(who).map(|w| w.sum(now)).unwrap_or_default()
    }

    /// `host`'s bytes over the last hour, every client together.
    pub fn site(&self, host: &str) -> Bytes {
        let now = self.bucket();
        self.sites.lock().unwrap_or_else(PoisonError::into_inner).0.get(host).map(|w| w.sum(now)).unwrap_or_default()
    }

    /// The `n` sites that sent the most bytes over the last hour, every client together, most
    /// first: for the operators' section only (a client's page shows its own counts alone).
    pub fn top_sites(&self, n: usize) -> Vec<(String, Bytes)> {
        let now = self.bucket();
        let sites = self.sites.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<(String, Bytes)> = sites.0.iter().map(|(k, w)| (k.clone(), w.sum(now))).filter(|(_, b)| b.origin + b.client > 0).collect();
        drop(sites);
        all.sort_by(|a, b| b.1.origin.cmp(&a.1.origin).then_with(|| a.0.cmp(&b.0)));
        all.truncate(n);
        all
    }

    /// Counts a tunnel open until the returned guard drops.
    pub fn tunnel_open(&self) -> TunnelOpen {
        self.tunnels.fetch_add(1, Ordering::Relaxed);
        TunnelOpen(self.tunnels.clone())
    }

    /// Reads the open client connections from `count` (the drain's).
    pub fn watch_connections(&self, count: Arc<AtomicUsize>) {
        let _ = self.connections.set(count);
    }

    /// The Prometheus text of these counts.
    pub fn render(&self) -> String {
        let open = self.connections.get().map_or(0, |c| c.load(Ordering::Relaxed));
        let mut out = String::new();
        let _ = writeln!(out, "# HELP pith_requests_total Requests answered, by the profile that served them, what pith did and the status.\n# TYPE pith_requests_total counter");
        let requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut series: Vec<_> = requests.into_iter().collect();
        series.sort();
        for ((profile, action, status), n) in series {
            let _ = writeln!(out, "pith_requests_total{{profile=\"{}\",action=\"{action}\",status=\"{status}\"}} {n}", label(&profile));
        }
        let mut counter = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        counter("pith_origin_bytes_total", "counter", "Body bytes read from origins.", self.origin_bytes.load(Ordering::Relaxed));
        counter("pith_client_bytes_total", "counter", "Body bytes sent to clients.", self.client_bytes.load(Ordering::Relaxed));
        counter("pith_connections_open", "gauge", "Client connections open now (one whose tunnel is open included).", open as u64);
        counter("pith_tunnels_open", "gauge", "CONNECT tunnels open now, blind or intercepted.", self.tunnels.load(Ordering::Relaxed) as u64);
        counter("pith_reader_unsure_total", "counter", "Reading pages served saying reading mode is not sure it kept the right part of the page (every proxy of this process).", unsure_pages().load(Ordering::Relaxed));
        self.latency.render(&mut out, "pith_request_seconds", "Time from a request's arrival to the end of its response body.");
        rewrite_time().render(&mut out, "pith_rewrite_seconds", "Time the pipeline took to rewrite a page (every proxy of this process).");
        out
    }
}

/// A label value as the text format wants it: backslash, quote and line break escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The host of an absolute URL as the access log writes it, without port or brackets.
fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') { v6.split(']').next()? } else { authority.split(':').next()? };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_forget_what_is_older_than_an_hour() {
        let mut w = Window::default();
        w.add(0, 10, 5);
        w.add(3, 1, 1);
        assert_eq!(w.sum(3), Bytes { origin: 11, client: 6 });
        assert_eq!(w.sum(BUCKETS as u64 + 1), Bytes { origin: 1, client: 1 }, "bucket 0 has left the window");
        w.add(BUCKETS as u64, 7, 7);
        assert_eq!(w.sum(BUCKETS as u64), Bytes { origin: 8, client: 8 }, "its slot was reused");
    }

    #[test]
    fn windows_are_bounded() {
        let mut ws = Windows::default();
        for i in 0..MAX_KEYS + 10 {
            ws.add(&format!("k{i}"), i as u64, 1, 1);
        }
        assert_eq!(ws.0.len(), MAX_KEYS);
        assert!(!ws.0.contains_key("k0") && ws.0.contains_key(&format!("k{}", MAX_KEYS + 9)));
    }

    #[test]
    fn hosts_of_logged_urls() {
        assert_eq!(host_of("http://a.example:8080/x?y"), Some("a.example"));
        assert_eq!(host_of("https://[::1]:443/"), Some("::1"));
        assert_eq!(host_of("(malformed authority)"), None);
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(20));
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert!(out.contains("x_bucket{le=\"0.005\"} 1\n") && out.contains("x_bucket{le=\"+Inf\"} 2\n") && out.contains("x_count 2\n"), "{out}");
    }
}
