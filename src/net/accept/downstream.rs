//! The client's connection as pith writes to it: [`ClientIo`] wraps the socket (or, inside an
//! intercepted tunnel, the decrypted TLS stream) that hyper serves, and adds what hyper's server
//! does not have:
//!
//! - a write timeout (`limits.client_write_timeout_ms`): a write that makes no progress for that
//!   long fails, which ends the connection and frees its slot. A client that asks for a large
//!   page and never reads it would otherwise hold its slot for as long as it likes: the origin's
//!   `body_idle_timeout` only watches the origin, and hyper waits on a full socket forever. The
//!   wrapper stays under the connection when hyper hands it over (CONNECT, WebSocket), so
//!   tunnels get the same timeout;
//! - the time of the last byte either way ([`Downstream::idle_for`]), for the tunnel idle
//!   timeout (`limits.tunnel_idle_timeout_ms`, [`close_when_idle`]);
//! - interim responses (1xx) written ahead of the final response ([`Downstream::send_interim`]).
//!   hyper's HTTP/1 server cannot send a 1xx itself (only its own `100 Continue`), so the bytes
//!   go into the connection here, at a point where hyper has no message half written: after a
//!   flush that left nothing behind, and before anything hyper writes next. hyper reads a
//!   request head only once the previous response is written whole, so while a request's
//!   answer is awaited, a completed flush means the connection is between messages. When the
//!   client is not reading (the last write did not complete), a 1xx is dropped, as an
//!   intermediary may: it is advice, and never worth buffering for a client that does not read.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Most interim-response bytes held for a client at once; past it further 1xx are dropped.
const MAX_INTERIM_BYTES: usize = 16 * 1024;

/// The client's stream, shared between hyper (through [`ClientIo`]) and [`Downstream`].
struct Inner<S> {
    io: S,
    /// Interim-response bytes not yet written: they go out before anything hyper writes next.
    interim: Vec<u8>,
    /// True when everything hyper wrote has been flushed whole, so the connection is between
    /// messages; false from hyper's next write until its next completed flush.
    at_boundary: bool,
    /// When a byte last went either way.
    last_activity: Instant,
}

impl<S: AsyncWrite + Unpin> Inner<S> {
    /// Writes out the held interim bytes; `Ready(Ok)` once none are left.
    fn poll_interim(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.interim.is_empty() {
            match Pin::new(&mut self.io).poll_write(cx, &self.interim) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.interim.drain(..n);
                    self.last_activity = Instant::now();
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// What the rest of pith holds of a client connection: its idle time, and a way to send it an
/// interim response. Cheap to clone.
#[derive(Clone)]
pub struct Downstream(Arc<dyn Shared>);

/// [`Downstream`]'s view of an [`Inner`], whatever its stream type.
trait Shared: Send + Sync {
    fn idle_for(&self) -> Duration;
    fn send_interim(&self, bytes: &[u8]) -> bool;
}

impl<S: AsyncWrite + Unpin + Send> Shared for Mutex<Inner<S>> {
    fn idle_for(&self) -> Duration {
        lock(self).last_activity.elapsed()
    }

    fn send_interim(&self, bytes: &[u8]) -> bool {
        let mut inner = lock(self);
        if !inner.at_boundary || inner.interim.len() + bytes.len() > MAX_INTERIM_BYTES {
            return false;
        }
        inner.interim.extend_from_slice(bytes);
        // Out now if the socket takes it; what it does not take goes before hyper's next write.
        // No task waits on this attempt: hyper's next write registers its own waker.
        let _ = inner.poll_interim(&mut Context::from_waker(Waker::noop()));
        true
    }
}

impl Downstream {
    /// How long since a byte went either way on the client's connection.
    pub fn idle_for(&self) -> Duration {
        self.0.idle_for()
    }

    /// Writes an interim response (a whole serialised 1xx head) to the client ahead of the final
    /// response. False when it was dropped: the connection was not between messages (the client
    /// is not reading what it was sent), or too much is already waiting.
    pub fn send_interim(&self, bytes: &[u8]) -> bool {
        self.0.send_interim(bytes)
    }
}

fn lock<S>(m: &Mutex<Inner<S>>) -> MutexGuard<'_, Inner<S>> {
    // Nothing panics while holding the lock with the stream half updated; the data stays usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A client stream with a write timeout, activity tracking and interim responses.
pub struct ClientIo<S> {
    shared: Arc<Mutex<Inner<S>>>,
    /// `None`: writes may wait forever (for the decrypted stream inside a tunnel, whose raw
    /// socket has its own [`ClientIo`] with the timeout).
    write_timeout: Option<Duration>,
    /// Running while a write is waiting on the client; reset by progress.
    stall: Option<Pin<Box<Sleep>>>,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> ClientIo<S> {
    /// Wraps `io`; returns it with the handle the handlers keep.
    pub fn new(io: S, write_timeout: Option<Duration>) -> (ClientIo<S>, Downstream) {
        let inner = Inner { io, interim: Vec::new(), at_boundary: true, last_activity: Instant::now() };
        let shared = Arc::new(Mutex::new(inner));
        let handle = Downstream(shared.clone());
        (ClientIo { shared, write_timeout, stall: None }, handle)
    }
}

/// A write is waiting on the client: fails once it has waited `limit` in all without progress.
fn stalled<T>(stall: &mut Option<Pin<Box<Sleep>>>, limit: Option<Duration>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
    let Some(limit) = limit else { return Poll::Pending };
    let timer = stall.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
    match timer.as_mut().poll(cx) {
        Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing for {} ms (limits.client_write_timeout_ms)", limit.as_millis()),
        ))),
        Poll::Pending => Poll::Pending,
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ClientIo<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut inner = lock(&self.shared);
        let before = buf.filled().len();
        let polled = Pin::new(&mut inner.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            inner.last_activity = Instant::now();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> ClientIo<S> {
    /// One write by hyper: held interim bytes first, then `write` on the stream.
    fn poll_write_with(&mut self, cx: &mut Context<'_>, write: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        let mut inner = lock(&self.shared);
        inner.at_boundary = false;
        match inner.poll_interim(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return stalled(&mut self.stall, self.write_timeout, cx),
        }
        match write(Pin::new(&mut inner.io), cx) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.stall = None;
                    inner.last_activity = Instant::now();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => stalled(&mut self.stall, self.write_timeout, cx),
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ClientIo<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_with(cx, |io, cx| io.poll_write(cx, buf))
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_with(cx, |io, cx| io.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        lock(&self.shared).io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut inner = lock(&this.shared);
        let flushed = match inner.poll_interim(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut inner.io).poll_flush(cx),
            other => other,
        };
        match flushed {
            Poll::Ready(Ok(())) => {
                inner.at_boundary = true;
                this.stall = None;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => stalled(&mut this.stall, this.write_timeout, cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut inner = lock(&this.shared);
        match Pin::new(&mut inner.io).poll_shutdown(cx) {
            Poll::Pending => stalled(&mut this.stall, this.write_timeout, cx),
            done => done,
        }
    }
}

/// Runs `tunnel` until it ends, or until no byte has gone either way on the client's connection
/// for `idle` (`limits.tunnel_idle_timeout_ms`). `None` when it was closed for being idle.
pub async fn close_when_idle<F: Future>(downstream: &Downstream, idle: Duration, tunnel: F) -> Option<F::Output> {
    let watch = async {
        loop {
            let quiet = downstream.idle_for();
            if quiet >= idle {
                return;
            }
            tokio::time::sleep(idle - quiet).await;
        }
    };
    tokio::select! {
        // A tunnel that has ended is reported as ended, even past the idle time.
        biased;
        out = tunnel => Some(out),
        () = watch => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_write_the_client_never_reads_fails_after_the_timeout() {
        let (near, _far) = tokio::io::duplex(16);
        let (mut io, _handle) = ClientIo::new(near, Some(Duration::from_millis(50)));
        let err = io.write_all(&[b'x'; 64]).await.expect_err("the client never reads");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn a_slow_reader_that_keeps_reading_is_not_cut() {
        let (near, mut far) = tokio::io::duplex(16);
        let (mut io, _handle) = ClientIo::new(near, Some(Duration::from_millis(500)));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 8];
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                match far.read(&mut buf).await {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        });
        io.write_all(&[b'y'; 100]).await.expect("every write progresses within the timeout");
        io.shutdown().await.unwrap();
        assert_eq!(reader.await.unwrap().len(), 100);
    }

    #[tokio::test]
    async fn interim_bytes_go_out_between_messages_and_before_the_next_write() {
        let (near, mut far) = tokio::io::duplex(1024);
        let (mut io, handle) = ClientIo::new(near, None);
        assert!(handle.send_interim(b"HTTP/1.1 103 Early Hints\r\n\r\n"), "a fresh connection is between messages");
        io.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        assert!(!handle.send_interim(b"HTTP/1.1 102 Processing\r\n\r\n"), "never inside a message");
        io.flush().await.unwrap();
        drop((io, handle));
        let mut all = String::new();
        far.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\n");
    }

    #[tokio::test]
    async fn interim_bytes_the_socket_cannot_take_wait_for_the_next_write() {
        let (near, mut far) = tokio::io::duplex(4);
        let (mut io, handle) = ClientIo::new(near, None);
        assert!(handle.send_interim(b"HTTP/1.1 103 Early Hints\r\n\r\n"));
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            far.read_to_end(&mut all).await.map(|_| all)
        });
        io.write_all(b"final").await.unwrap();
        io.shutdown().await.unwrap();
        drop((io, handle));
        assert_eq!(reader.await.unwrap().unwrap(), b"HTTP/1.1 103 Early Hints\r\n\r\nfinal");
    }

    #[tokio::test]
    async fn an_idle_tunnel_is_closed_and_a_busy_one_is_not() {
        let (near, _far) = tokio::io::duplex(64);
        let (_io, handle) = ClientIo::new(near, None);
        let closed = close_when_idle(&handle, Duration::from_millis(50), std::future::pending::<()>()).await;
        assert_eq!(closed, None);
        let done = close_when_idle(&handle, Duration::from_millis(50), async { 7 }).await;
        assert_eq!(done, Some(7));
    }
}
