//! `/metrics`: every counter pith exports, in the Prometheus text format. The one place that
//! writes that text: the cache's counters ([`crate::cache::Snapshot`]), the observer's request
//! counters and histograms ([`crate::net::observe`]), the control page's choices and the image
//! turns. The modules that count know nothing of the format; this one knows nothing of how they
//! count.

use std::fmt::Write;

use crate::net::observe::{self, Histogram, Tally};
use crate::cache::Snapshot;

/// The whole `/metrics` text: the cache's counters, the observer's, then the gauges and
/// counters given in `more` (name, kind, help, value).
pub fn render(cache: Option<&Snapshot>, tally: &Tally, more: &[(&str, &str, &str, u64)]) -> String {
    let mut text = cache_text(cache);
    text.push_str(&tally_text(tally));
    for (name, kind, help, value) in more {
        text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
    }
    text
}

/// The cache's counters; `None` when the cache is off.
pub fn cache_text(snapshot: Option<&Snapshot>) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
    };
    metric("pith_cache_enabled", "gauge", "1 when the HTTP cache is on.", u64::from(snapshot.is_some()));
    let s = snapshot.copied().unwrap_or(Snapshot { hits: 0, misses: 0, revalidations: 0, stores: 0, evictions: 0, entries: 0, bytes: 0, max_bytes: 0, disk: None });
    metric("pith_cache_hits_total", "counter", "Requests answered from a kept response without asking the origin.", s.hits);
    metric("pith_cache_misses_total", "counter", "Cacheable requests that needed the origin's whole response.", s.misses);
    metric("pith_cache_revalidations_total", "counter", "Kept responses the origin confirmed with 304 Not Modified.", s.revalidations);
    metric("pith_cache_stores_total", "counter", "Responses stored: rewritten pages and the origin's own responses streamed through whole.", s.stores);
    metric("pith_cache_evictions_total", "counter", "Kept responses dropped to stay within cache.max_bytes.", s.evictions);
    metric("pith_cache_entries", "gauge", "Responses kept now.", s.entries);
    metric("pith_cache_bytes", "gauge", "Bytes kept now.", s.bytes);
    metric("pith_cache_max_bytes", "gauge", "The bound on pith_cache_bytes (cache.max_bytes).", s.max_bytes);
    let d = s.disk.unwrap_or_default();
    metric("pith_cache_disk_enabled", "gauge", "1 when the cache has a disk tier (cache.disk_dir) in use.", u64::from(s.disk.is_some()));
    metric("pith_cache_disk_hits_total", "counter", "Memory misses answered from the disk tier (and promoted to memory).", d.hits);
    metric("pith_cache_disk_writes_total", "counter", "Entries written to the disk tier.", d.writes);
    metric("pith_cache_disk_skipped_total", "counter", "Entries not written to disk because the writes waiting held their bound.", d.skipped);
    metric("pith_cache_disk_errors_total", "counter", "Disk entries dropped as torn, corrupt or unreadable, and writes that failed.", d.errors);
    metric("pith_cache_disk_evictions_total", "counter", "Disk entries removed to stay within cache.disk_max_bytes.", d.evictions);
    metric("pith_cache_disk_entries", "gauge", "Entries on disk now.", d.entries);
    metric("pith_cache_disk_bytes", "gauge", "Bytes of the disk tier's files now.", d.bytes);
    metric("pith_cache_disk_max_bytes", "gauge", "The bound on pith_cache_disk_bytes (cache.disk_max_bytes).", d.max_bytes);
    out
}

/// The observer's counts: requests by profile, action and status, bytes, open connections and
/// tunnels, and the request and rewrite time histograms.
fn tally_text(tally: &Tally) -> String {
    let counts = tally.counts();
    let mut out = String::new();
    let _ = writeln!(out, "# HELP pith_requests_total Requests answered, by the profile that served them, what pith did and the status.\n# TYPE pith_requests_total counter");
    for ((profile, action, status), n) in counts.requests {
        let _ = writeln!(out, "pith_requests_total{{profile=\"{}\",action=\"{action}\",status=\"{status}\"}} {n}", label(&profile));
    }
    let mut counter = |name: &str, kind: &str, help: &str, value: u64| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
    };
    counter("pith_origin_bytes_total", "counter", "Body bytes read from origins.", counts.origin_bytes);
    counter("pith_client_bytes_total", "counter", "Body bytes sent to clients.", counts.client_bytes);
    counter("pith_connections_open", "gauge", "Client connections open now (one whose tunnel is open included).", counts.connections_open);
    counter("pith_tunnels_open", "gauge", "CONNECT tunnels open now, blind or intercepted.", counts.tunnels_open);
    counter("pith_reader_unsure_total", "counter", "Reading pages served saying reading mode is not sure it kept the right part of the page (every proxy of this process).", observe::unsure_pages().load(std::sync::atomic::Ordering::Relaxed));
    histogram(&mut out, "pith_request_seconds", "Time from a request's arrival to the end of its response body.", counts.latency);
    histogram(&mut out, "pith_rewrite_seconds", "Time the pipeline took to rewrite a page (every proxy of this process).", observe::rewrite_time());
    out
}

/// A histogram's lines: its cumulative buckets, sum and count.
fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    let (buckets, sum) = h.cumulative();
    let mut total = 0;
    for (bound, count) in buckets {
        total = count;
        let le = bound.map_or_else(|| "+Inf".to_string(), |b| b.to_string());
        let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {count}");
    }
    let _ = writeln!(out, "{name}_sum {sum}");
    let _ = writeln!(out, "{name}_count {total}");
}

/// A label value as the text format wants it: backslash, quote and line break escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn metrics_text_names_every_counter() {
        let s = Snapshot { hits: 3, misses: 2, revalidations: 1, stores: 2, evictions: 0, entries: 2, bytes: 900, max_bytes: 1000, disk: None };
        let text = cache_text(Some(&s));
        for line in ["pith_cache_enabled 1", "pith_cache_hits_total 3", "pith_cache_misses_total 2", "pith_cache_revalidations_total 1", "pith_cache_bytes 900", "pith_cache_entries 2", "pith_cache_evictions_total 0"] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert!(cache_text(None).contains("pith_cache_enabled 0"));
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(20));
        let mut out = String::new();
        histogram(&mut out, "x", "help", &h);
        assert!(out.contains("x_bucket{le=\"0.005\"} 1\n") && out.contains("x_bucket{le=\"+Inf\"} 2\n") && out.contains("x_count 2\n"), "{out}");
    }
}
