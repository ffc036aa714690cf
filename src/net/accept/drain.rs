//! Connection slots and draining: what every client connection and every tunnel holds while it
//! is open, so that it counts against `limits.max_connections` and shutdown can wait for it.
//!
//! A connection takes a `max_connections` permit before it is accepted, and the permit lives in
//! a [`Guard`]. The guard is cloned into whatever outlives the HTTP exchange that started it: a
//! CONNECT tunnel (blind or intercepted) and a switched WebSocket connection run on their own
//! tasks after hyper has handed the client's connection over, and they keep the permit until
//! they close. Without that, an open tunnel would count as no connection at all.
//!
//! Shutdown goes in two phases ([`Drain::shutdown`]): first every HTTP connection is asked to
//! finish the request in flight and close (hyper's graceful shutdown), and tunnels are left to
//! finish on their own; when `limits.drain_timeout` has passed, whatever is still open is
//! closed. This module owns the phases and the counting; the accept loop and the handlers
//! decide what to guard.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::server::graceful::GracefulConnection;
use tokio::sync::{watch, OwnedSemaphorePermit};

use crate::net::accept::per_client::ClientSlot;

/// How long shutdown waits, after closing what outlived the drain deadline, for those tasks to
/// notice and end. Each only has to drop its sockets.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Where shutdown is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Normal service.
    Serving,
    /// No new connections; open ones are finishing.
    Draining,
    /// The deadline passed: close everything still open.
    Closing,
}

/// The shutdown side: tells guards the phase and counts the connections they hold.
pub struct Drain {
    phase: watch::Sender<Phase>,
    open: Arc<AtomicUsize>,
}

impl Default for Drain {
    fn default() -> Self {
        Drain { phase: watch::channel(Phase::Serving).0, open: Arc::new(AtomicUsize::new(0)) }
    }
}

impl Drain {
    /// The guard of a newly accepted connection, holding its `max_connections` permit and its
    /// place in its client's count (`limits.max_connections_per_client`).
    pub fn guard(&self, permit: OwnedSemaphorePermit, client: Option<ClientSlot>) -> Guard {
        self.open.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot { _permit: permit, _client: client, open: self.open.clone() });
        Guard { phase: self.phase.subscribe(), _slot: slot }
    }

    /// The count behind [`Drain::open_connections`], for `/metrics`.
    pub fn counter(&self) -> Arc<AtomicUsize> {
        self.open.clone()
    }

    /// Client connections open now, counting a connection whose tunnel is still open.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Asks every guarded connection and tunnel to finish, waits up to `deadline` for them,
    /// then closes what is left. Returns how many connections were still open at the deadline.
    pub async fn shutdown(&self, deadline: Duration) -> usize {
        self.phase.send_replace(Phase::Draining);
        if tokio::time::timeout(deadline, self.phase.closed()).await.is_ok() {
            return 0;
        }
        let left = self.open_connections();
        self.phase.send_replace(Phase::Closing);
        let _ = tokio::time::timeout(CLOSE_WAIT, self.phase.closed()).await;
        left
    }
}

/// One connection's `max_connections` permit, shared by its guards; the connection counts as
/// open until the last of them is gone.
struct Slot {
    _permit: OwnedSemaphorePermit,
    _client: Option<ClientSlot>,
    open: Arc<AtomicUsize>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Held by everything serving one client connection: its HTTP exchange, and any tunnel that
/// outlives it. Shutdown waits until every guard is dropped.
#[derive(Clone)]
pub struct Guard {
    phase: watch::Receiver<Phase>,
    _slot: Arc<Slot>,
}

impl Guard {
    /// Drives a hyper connection: when draining starts it is asked to finish the request in
    /// flight and close; at the deadline it is dropped, which closes it. `None` when it was
    /// closed that way.
    pub async fn serve<C: GracefulConnection>(mut self, conn: C) -> Option<C::Output> {
        tokio::pin!(conn);
        tokio::select! {
            out = conn.as_mut() => return Some(out),
            () = reached(&mut self.phase, Phase::Draining) => {}
        }
        conn.as_mut().graceful_shutdown();
        tokio::select! {
            out = conn => Some(out),
            () = reached(&mut self.phase, Phase::Closing) => None,
        }
    }

    /// True once the drain deadline has passed and what is still open is being closed.
    pub fn is_closing(&self) -> bool {
        *self.phase.borrow() >= Phase::Closing
    }

    /// Runs a tunnel (a byte copy, or an intercepted TLS session) until it ends on its own or
    /// the drain deadline passes. A blind tunnel has no request boundaries to stop at, so it
    /// is left alone while draining and only closed at the deadline. `None` when closed so.
    pub async fn tunnel<F: Future>(mut self, tunnel: F) -> Option<F::Output> {
        tokio::select! {
            out = tunnel => Some(out),
            () = reached(&mut self.phase, Phase::Closing) => None,
        }
    }
}

/// Completes once shutdown has reached `phase`. Never completes if the [`Drain`] is gone: it
/// lives as long as the proxy, and a proxy dropped without shutting down closes nothing.
async fn reached(rx: &mut watch::Receiver<Phase>, phase: Phase) {
    if rx.wait_for(|p| *p >= phase).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    fn permit(sem: &Arc<Semaphore>) -> OwnedSemaphorePermit {
        sem.clone().try_acquire_owned().expect("a free permit")
    }

    #[tokio::test]
    async fn a_tunnel_keeps_its_connection_counted_and_its_permit_taken() {
        let (drain, sem) = (Drain::default(), Arc::new(Semaphore::new(1)));
        let guard = drain.guard(permit(&sem), None);
        let tunnel = guard.clone();
        drop(guard);
        assert_eq!((drain.open_connections(), sem.available_permits()), (1, 0), "the tunnel's clone holds the slot");
        drop(tunnel);
        assert_eq!((drain.open_connections(), sem.available_permits()), (0, 1));
    }

    #[tokio::test]
    async fn shutdown_lets_tunnels_finish_within_the_deadline() {
        let (drain, sem) = (Drain::default(), Arc::new(Semaphore::new(1)));
        let (finish_tx, finish_rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(drain.guard(permit(&sem), None).tunnel(async move { finish_rx.await.is_ok() }));
        let shutdown = drain.shutdown(Duration::from_secs(60));
        tokio::pin!(shutdown);
        tokio::select! {
            _ = &mut shutdown => panic!("shutdown must wait for the open tunnel"),
            _ = tokio::task::yield_now() => {}
        }
        finish_tx.send(()).unwrap();
        assert_eq!(shutdown.await, 0, "nothing was left open at the deadline");
        assert_eq!(task.await.unwrap(), Some(true), "the tunnel ended on its own");
    }

    #[tokio::test]
    async fn shutdown_closes_tunnels_still_open_at_the_deadline() {
        let (drain, sem) = (Drain::default(), Arc::new(Semaphore::new(2)));
        let forever = tokio::spawn(drain.guard(permit(&sem), None).tunnel(std::future::pending::<()>()));
        // A short real deadline: the tunnel never ends, so only the deadline can close it.
        assert_eq!(drain.shutdown(Duration::from_millis(20)).await, 1);
        assert_eq!(forever.await.unwrap(), None, "closed, not finished");
        assert_eq!((drain.open_connections(), sem.available_permits()), (0, 2));
    }
}
