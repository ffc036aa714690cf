//! The observer of what pith serves: the response path reports here, and the pages that show
//! the counts read from here. Bytes from origins and to clients per client and per site over
//! the last hour (for the control page), and the request counters and histograms `/metrics`
//! shows ([`mod@crate::net::own::metrics`] writes their text).
//!
//! Every finished request reports once, when its access-log line is written
//! ([`AccessRecord::write`]). This module imports nothing of the pages that read
//! it, so the body types that report need not import them either. Memory is bounded: at most [`MAX_KEYS`]
//! clients and as many sites are counted, each in [`BUCKETS`] fixed buckets; past the bound the
//! one seen least recently is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};


/// One access-log line, filled in as the request goes and written when its body ends.
#[derive(Debug, Clone)]
pub struct AccessRecord {
    /// Client address.
    pub client: std::net::SocketAddr,
    /// Request method.
    pub method: http::Method,
    /// Absolute target (query included; credentials never appear in a request target).
    pub url: String,
    /// Response status.
    pub status: u16,
    /// Body bytes read from the origin (before decoding).
    pub origin_bytes: u64,
    /// Profile that served it.
    pub profile: String,
    /// What pith did with the request.
    pub action: Action,
    /// When the request arrived.
    pub start: Instant,
    /// Where the request is counted when its line is written, and as whom
    /// ([`Tally`]).
    pub tally: Option<(Arc<Tally>, String)>,
}

/// What pith did with a request: the access log's `action`. One variant per decision, so
/// that what is logged and what the code branches on (is the body the origin's own bytes?)
/// are the same value; [`Action::as_str`] gives the word the log has always used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Forwarded, the response passed through untouched (not HTML, not to be rewritten).
    Pass,
    /// Forwarded and rewritten (also a cache miss that was then kept).
    Rewrite,
    /// Passed through unrewritten: the page decoded to more than `limits.max_rewrite_bytes`.
    TooLarge,
    /// Passed through unrewritten: the rewrite memory budget had no room for the page.
    OverBudget,
    /// An image that waited past `limits.image_wait_ms` for a transcoding turn: a placeholder
    /// was sent in its place, and nothing is kept.
    Placeholder,
    /// Served from the cache.
    Hit,
    /// Served from the cache after the origin said it had not changed.
    Revalidated,
    /// Served from the cache although stale, as the origin allowed: while it is revalidated in
    /// the background, or because the origin failed (RFC 5861).
    Stale,
    /// One of pith's own pages.
    Own,
    /// CONNECT.
    Tunnel,
    /// A switched protocol, such as WebSocket.
    Upgrade,
    /// Answered with an error page.
    Error,
}

impl Action {
    /// Every action.
    #[cfg(test)]
    const ALL: [Action; 12] = [
        Action::Pass,
        Action::Rewrite,
        Action::TooLarge,
        Action::OverBudget,
        Action::Placeholder,
        Action::Hit,
        Action::Revalidated,
        Action::Stale,
        Action::Own,
        Action::Tunnel,
        Action::Upgrade,
        Action::Error,
    ];

    /// The access log's word for it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Pass => "pass",
            Action::Rewrite => "rewrite",
            Action::TooLarge => "too-large",
            Action::OverBudget => "over-budget",
            Action::Placeholder => "placeholder",
            Action::Hit => "hit",
            Action::Revalidated => "revalidated",
            Action::Stale => "stale",
            Action::Own => "own",
            Action::Tunnel => "tunnel",
            Action::Upgrade => "upgrade",
            Action::Error => "error",
        }
    }

    /// True when the response body is the origin's own bytes streaming through, so every
    /// byte sent is also a byte read from the origin: a pass-through. Rewritten and kept pages
    /// are pith's bytes; pith's own pages, tunnels and upgrades are counted elsewhere or not.
    pub fn streams_origin(self) -> bool {
        matches!(self, Action::Pass | Action::TooLarge | Action::OverBudget)
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a response's body ended: the access log's `outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Sent whole.
    Ok,
    /// The origin's body failed mid-way; the client's response was cut off.
    Aborted,
    /// The client went away first.
    ClientGone,
    /// Cut off at the end of the shutdown drain.
    Shutdown,
}

impl Ending {
    /// The access log's word for it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Ending::Ok => "ok",
            Ending::Aborted => "aborted",
            Ending::ClientGone => "client-gone",
            Ending::Shutdown => "shutdown",
        }
    }

    /// An unfinished body's ending: the drain deadline's, or the client's doing.
    pub fn unfinished(closing: bool) -> Ending {
        if closing {
            Ending::Shutdown
        } else {
            Ending::ClientGone
        }
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AccessRecord {
    /// Writes the line. It is a root event, outside the request's span: an access-log line
    /// stands on its own fields, the same wherever it is written (hyper polls the body
    /// outside any span; a dropped request writes it inside one).
    pub fn write(&self, client_bytes: u64, ending: Ending) {
        if let Some((observer, who)) = &self.tally {
            observer.record(self, who, client_bytes);
        }
        tracing::info!(
            target: "pith::access",
            parent: None,
            client = %self.client,
            method = %self.method,
            url = %self.url,
            status = self.status,
            origin_bytes = self.origin_bytes,
            client_bytes,
            ms = self.start.elapsed().as_millis() as u64,
            profile = %self.profile,
            action = self.action.as_str(),
            outcome = ending.as_str(),
        );
    }
}

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

    /// The cumulative count at each upper bound (seconds; `None` for `+Inf`), and the sum of
    /// the observations in seconds.
    pub fn cumulative(&self) -> (Vec<(Option<f64>, u64)>, f64) {
        let mut total = 0;
        let mut out = Vec::with_capacity(BOUNDS.len() + 1);
        for (i, bound) in BOUNDS.iter().enumerate() {
            total += self.counts[i].load(Ordering::Relaxed);
            out.push((Some(*bound), total));
        }
        total += self.counts[BOUNDS.len()].load(Ordering::Relaxed);
        out.push((None, total));
        (out, self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6)
    }
}

/// The time pages take to rewrite, for every proxy in this process: the rewrite runs where no
/// proxy's state is at hand ([`crate::net::exchange::respond`]), and a process exports one such series.
pub fn rewrite_time() -> &'static Histogram {
    static REWRITES: std::sync::OnceLock<Histogram> = std::sync::OnceLock::new();
    REWRITES.get_or_init(Histogram::default)
}

/// Images that waited for a transcoding turn since start, in this process (the turns are
/// shared by every proxy in it); the image step ([`super::exchange::images`]) counts them.
pub static IMAGE_WAITS: AtomicU64 = AtomicU64::new(0);
/// Images that waited past `limits.image_wait_ms` and were sent a placeholder instead.
pub static IMAGE_PLACEHOLDERS: AtomicU64 = AtomicU64::new(0);

/// Images that waited for a transcoding turn, and those sent a placeholder instead, in this
/// process.
pub fn image_counts() -> (u64, u64) {
    (IMAGE_WAITS.load(Ordering::Relaxed), IMAGE_PLACEHOLDERS.load(Ordering::Relaxed))
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

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tally").finish_non_exhaustive()
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
        if record.action == Action::Own {
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

    /// What `/metrics` shows of these counts, read now.
    pub fn counts(&self) -> Counts<'_> {
        let requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut requests: Vec<_> = requests.into_iter().collect();
        requests.sort();
        Counts {
            requests,
            origin_bytes: self.origin_bytes.load(Ordering::Relaxed),
            client_bytes: self.client_bytes.load(Ordering::Relaxed),
            connections_open: self.connections.get().map_or(0, |c| c.load(Ordering::Relaxed)) as u64,
            tunnels_open: self.tunnels.load(Ordering::Relaxed) as u64,
            latency: &self.latency,
        }
    }
}

/// The counts of a [`Tally`] at one moment, for `/metrics`.
pub struct Counts<'a> {
    /// Requests answered by (profile, action, status), sorted.
    pub requests: Vec<((String, &'static str, u16), u64)>,
    /// Body bytes read from origins.
    pub origin_bytes: u64,
    /// Body bytes sent to clients.
    pub client_bytes: u64,
    /// Client connections open now.
    pub connections_open: u64,
    /// CONNECT tunnels open now.
    pub tunnels_open: u64,
    /// Time from a request's arrival to the end of its response body.
    pub latency: &'a Histogram,
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
    fn every_action_has_a_word_of_its_own() {
        let words: std::collections::HashSet<_> = Action::ALL.into_iter().map(Action::as_str).collect();
        assert_eq!(words.len(), Action::ALL.len());
        for action in Action::ALL {
            assert_eq!(action.to_string(), action.as_str());
        }
    }

    #[test]
    fn only_a_pass_through_streams_the_origins_bytes() {
        let streamed: Vec<_> = Action::ALL.into_iter().filter(|a| a.streams_origin()).map(Action::as_str).collect();
        assert_eq!(streamed, ["pass", "too-large", "over-budget"]);
    }
}
