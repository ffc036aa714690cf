//! Connections per client (`limits.max_connections_per_client`): without a cap, one client on
//! a shared gateway can take every `max_connections` slot and lock everyone else out.
//!
//! Clients are counted by address, an IPv6 client by its /64 as the rate limiter keys them
//! ([`crate::net::accept::rate`]). A connection takes a [`ClientSlot`] when it is accepted and gives it back
//! when it closes, tunnels included (the slot lives in the connection's [`crate::net::accept::drain::Guard`]).
//! A connection past the cap is answered 503 with `Retry-After` at once. A client is logged when
//! it reaches the cap and when it is served again, with the count refused meanwhile, never once
//! per refused connection. Only clients with open connections are tracked, so memory follows
//! `max_connections`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// The open connections of every client; shared by all listeners, kept across reloads.
#[derive(Debug, Default)]
pub struct ClientCounts {
    clients: Mutex<HashMap<IpAddr, Count>>,
}

#[derive(Debug, Default)]
struct Count {
    open: usize,
    /// Connections refused since the client was last admitted.
    refused: u64,
}

/// One open connection of a client; the count goes down when it is dropped.
#[derive(Debug)]
pub struct ClientSlot {
    counts: Arc<ClientCounts>,
    key: IpAddr,
}

impl ClientCounts {
    /// Counts a new connection from `client`, unless it already has `cap` open: then `Err`
    /// holds how many it has.
    pub fn take(self: &Arc<Self>, client: IpAddr, cap: usize) -> Result<ClientSlot, usize> {
        let key = crate::net::accept::rate::client_key(client);
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let count = clients.entry(key).or_default();
        if count.open >= cap {
            count.refused += 1;
            if count.refused == 1 {
                tracing::warn!(%client, open = count.open, "client reached limits.max_connections_per_client; further connections get 503");
            }
            return Err(count.open);
        }
        if count.refused > 0 {
            tracing::info!(%client, refused = count.refused, "client back under limits.max_connections_per_client");
            count.refused = 0;
        }
        count.open += 1;
        Ok(ClientSlot { counts: self.clone(), key })
    }

    /// Connections open now from `client` (its /64 for IPv6).
    pub fn open(&self, client: IpAddr) -> usize {
        let clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        clients.get(&crate::net::accept::rate::client_key(client)).map_or(0, |c| c.open)
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut clients = self.counts.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = clients.get_mut(&self.key) {
            count.open = count.open.saturating_sub(1);
            if count.open == 0 {
                clients.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_client_gets_its_cap_and_no_more_and_others_are_not_affected() {
        let counts = Arc::new(ClientCounts::default());
        let held: Vec<ClientSlot> = (0..3).map(|_| counts.take(ip("10.0.0.1"), 3).expect("under the cap")).collect();
        assert_eq!(counts.take(ip("10.0.0.1"), 3).unwrap_err(), 3);
        assert!(counts.take(ip("10.0.0.2"), 3).is_ok(), "another client has its own count");
        drop(held);
        assert_eq!(counts.open(ip("10.0.0.1")), 0);
        assert!(counts.take(ip("10.0.0.1"), 3).is_ok(), "served again once its connections closed");
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        let counts = Arc::new(ClientCounts::default());
        let _a = counts.take(ip("2001:db8::1"), 2).unwrap();
        let _b = counts.take(ip("2001:db8::2"), 2).unwrap();
        assert!(counts.take(ip("2001:db8::3"), 2).is_err(), "same /64");
        assert!(counts.take(ip("2001:db8:0:1::1"), 2).is_ok(), "another /64");
    }

    #[test]
    fn closed_clients_are_forgotten() {
        let counts = Arc::new(ClientCounts::default());
        drop(counts.take(ip("10.0.0.9"), 1).unwrap());
        assert!(counts.clients.lock().unwrap().is_empty());
    }
}
