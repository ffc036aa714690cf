//! Per-client request rate (`limits.client_rate`): a token bucket per client address, so one
//! busy or hostile client on a shared gateway cannot take the proxy from the others.
//!
//! A client may send `burst` requests at once; tokens come back at `per_second`. A request
//! without a token is answered 429 with `Retry-After`. A client is logged once when it goes over
//! the limit and once when it is served again (with the count refused meanwhile), never once per
//! refused request: a flood must not become a flood of log lines.
//!
//! Clients are keyed by address; an IPv6 client by its /64, the block one host usually holds,
//! so that rotating through its own addresses gains nothing. Memory is bounded: at most
//! [`MAX_CLIENTS`] buckets are kept, buckets that have refilled (idle clients, which a fresh
//! bucket would treat the same) are swept first, then the least recently seen.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::config::RateLimit;

/// Most clients tracked at once (about 40 bytes each).
pub const MAX_CLIENTS: usize = 16_384;

/// The limiter of one configuration; kept across a reload that does not change the limit.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
    max_clients: usize,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
    /// Requests refused since the client was last served.
    refused: u64,
}

/// What the limiter says of one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Serve it. `refused_before` counts the requests refused since this client was last
    /// served (non-zero: it was limited until now).
    Allowed {
        /// Requests refused in the run that just ended.
        refused_before: u64,
    },
    /// Refuse it; a token is back after `retry_after`. `first` for the first refusal of a run.
    Refused {
        /// When to try again.
        retry_after: Duration,
        /// True for the first refusal since the client was last served.
        first: bool,
    },
}

impl RateLimiter {
    /// A limiter with every client's bucket full.
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter::with_capacity(limit, MAX_CLIENTS)
    }

    fn with_capacity(limit: RateLimit, max_clients: usize) -> RateLimiter {
        RateLimiter { limit, buckets: Mutex::new(HashMap::new()), max_clients }
    }

    /// The limit this limiter enforces.
    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes a token for a request from `client`, logging when the client goes over the limit
    /// or comes back under it. `Err` holds the `Retry-After` delay.
    pub fn check(&self, client: IpAddr) -> Result<(), Duration> {
        match self.check_at(client, Instant::now()) {
            Verdict::Allowed { refused_before: 0 } => Ok(()),
            Verdict::Allowed { refused_before } => {
                tracing::info!(%client, refused = refused_before, "client back under limits.client_rate");
                Ok(())
            }
            Verdict::Refused { retry_after, first } => {
                if first {
                    let (rate, burst) = (self.limit.per_second, self.limit.burst);
                    tracing::warn!(%client, rate, burst, "client over limits.client_rate: its requests get 429 until it slows down");
                }
                Err(retry_after)
            }
        }
    }

    /// [`RateLimiter::check`] at a given instant, without logging.
    pub fn check_at(&self, client: IpAddr, now: Instant) -> Verdict {
        let key = client_key(client);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if !buckets.contains_key(&key) && buckets.len() >= self.max_clients {
            self.evict(&mut buckets, now);
        }
        let burst = f64::from(self.limit.burst);
        let bucket = buckets.entry(key).or_insert(Bucket { tokens: burst, last: now, refused: 0 });
        bucket.tokens = self.refilled(bucket, now);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            let refused_before = std::mem::take(&mut bucket.refused);
            return Verdict::Allowed { refused_before };
        }
        bucket.refused += 1;
        let wait = (1.0 - bucket.tokens) / f64::from(self.limit.per_second);
        Verdict::Refused { retry_after: Duration::from_secs_f64(wait), first: bucket.refused == 1 }
    }

    /// Clients tracked now.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    fn refilled(&self, bucket: &Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        (bucket.tokens + elapsed * f64::from(self.limit.per_second)).min(f64::from(self.limit.burst))
    }

    /// Makes room for a new client: drops every bucket that has refilled (forgetting it loses
    /// nothing), and when that frees under an eighth of the room, a quarter more, so that a
    /// crowd of active clients costs one sort per quarter of arrivals: the least recently seen
    /// first, clients being refused last (forgetting them would hand them a full bucket).
    fn evict(&self, buckets: &mut HashMap<IpAddr, Bucket>, now: Instant) {
        let burst = f64::from(self.limit.burst);
        buckets.retain(|_, b| b.refused > 0 || self.refilled(b, now) < burst);
        if buckets.len() < self.max_clients - self.max_clients / 8 {
            return;
        }
        let mut seen: Vec<(bool, Instant, IpAddr)> = buckets.iter().map(|(k, b)| (b.refused > 0, b.last, *k)).collect();
        seen.sort_unstable();
        for (_, _, key) in seen.into_iter().take((self.max_clients / 4).max(1)) {
            buckets.remove(&key);
        }
    }
}

/// The bucket a client draws from: its IPv4 address (also when it arrives as an IPv4-mapped
/// IPv6 address), or its IPv6 /64.
pub(in crate::net) fn client_key(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(_) => client,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// The `Retry-After` value for a delay: whole seconds, rounded up, at least 1.
pub fn retry_after_secs(delay: Duration) -> u64 {
    let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(per_second: u32, burst: u32) -> RateLimiter {
        RateLimiter::new(RateLimit { per_second, burst })
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_burst_is_served_then_refused_until_a_token_returns() {
        let l = limiter(2, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(l.check_at(ip("10.0.0.1"), t0), Verdict::Allowed { refused_before: 0 });
        }
        assert_eq!(l.check_at(ip("10.0.0.1"), t0), Verdict::Refused { retry_after: Duration::from_millis(500), first: true });
        let again = l.check_at(ip("10.0.0.1"), t0 + Duration::from_millis(100));
        // 0.1 s at 2 per second brought back a fifth of a token: 0.4 s to go.
        assert!(matches!(again, Verdict::Refused { first: false, retry_after } if retry_after.as_millis().abs_diff(400) <= 1), "{again:?}");
        assert_eq!(l.check_at(ip("10.0.0.2"), t0), Verdict::Allowed { refused_before: 0 }, "another client has its own bucket");
        assert_eq!(l.check_at(ip("10.0.0.1"), t0 + Duration::from_millis(600)), Verdict::Allowed { refused_before: 2 }, "served again, with the count refused");
        assert!(matches!(l.check_at(ip("10.0.0.1"), t0 + Duration::from_millis(600)), Verdict::Refused { first: true, .. }), "a new run logs again");
    }

    #[test]
    fn a_quiet_client_refills_to_the_burst_and_no_further() {
        let l = limiter(10, 2);
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(3600);
        let served = (0..5).filter(|_| matches!(l.check_at(ip("10.0.0.1"), later), Verdict::Allowed { .. })).count();
        assert_eq!(served, 2);
    }

    #[test]
    fn ipv6_clients_share_their_64_and_mapped_ipv4_is_ipv4() {
        assert_eq!(client_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(client_key(ip("2001:db8:1:2:bbbb::9")), client_key(ip("2001:db8:1:2::5")));
        assert_ne!(client_key(ip("2001:db8:1:3::1")), client_key(ip("2001:db8:1:2::1")));
        assert_eq!(client_key(ip("::ffff:10.1.2.3")), ip("10.1.2.3"));
        let l = limiter(1, 1);
        let t0 = Instant::now();
        assert!(matches!(l.check_at(ip("2001:db8::1"), t0), Verdict::Allowed { .. }));
        assert!(matches!(l.check_at(ip("2001:db8::2"), t0), Verdict::Refused { .. }), "same /64, same bucket");
    }

    #[test]
    fn memory_is_bounded_and_idle_clients_go_first() {
        let l = RateLimiter::with_capacity(RateLimit { per_second: 1, burst: 1 }, 64);
        let t0 = Instant::now();
        // A limited client stays tracked while idle ones are swept.
        assert!(matches!(l.check_at(ip("10.9.9.9"), t0), Verdict::Allowed { .. }));
        assert!(matches!(l.check_at(ip("10.9.9.9"), t0), Verdict::Refused { .. }));
        for i in 0..1000u32 {
            let client = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            l.check_at(client, t0 + Duration::from_millis(u64::from(i)));
            assert!(l.tracked() <= 64, "{} clients tracked", l.tracked());
        }
        let later = t0 + Duration::from_millis(10);
        assert!(matches!(l.check_at(ip("10.9.9.9"), later), Verdict::Refused { first: false, .. }), "the limited client was kept, not given a fresh bucket");
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
    }
}
