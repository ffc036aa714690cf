//! The response body types the proxy serves, and the wrappers that watch them.
//!
//! - [`ProxyBody`]: what every response carries, boxed so that a passed-through origin body,
//!   a rewritten page and an error page share one type.
//! - [`Replay`]: the bytes already read from an origin, then the rest of its body. Used when
//!   pith read part of a page intending to rewrite it and then decided not to (too large):
//!   the client still gets every byte, in order, with the origin's framing.
//! - [`IdleTimeout`]: fails the body when the origin is silent too long, so a stalled origin
//!   aborts the client's response instead of holding it forever.
//! - [`Logged`]: counts bytes to the client and writes the access-log line when the body ends
//!   or is dropped, so the line reports what was really sent, and how it ended (`ok`,
//!   `aborted`, `client-gone`, `shutdown`).
//!
//! An error from the origin's body is returned from `poll_frame` unchanged: hyper then aborts
//! the client's response (no terminating chunk, or a short Content-Length), so a cut-short page
//! never ends cleanly.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use tokio::time::Sleep;

use crate::net::accept::drain::Guard;
use crate::net::observe::{AccessRecord, Ending};

/// The error a served body can fail with.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The origin's body failed (reset, bad chunking, short Content-Length).
    #[error("origin body failed: {0}")]
    Origin(#[from] hyper::Error),
    /// The origin sent nothing for too long.
    #[error("origin body stalled for {} ms", .0.as_millis())]
    Idle(Duration),
}

/// The body of every response pith serves.
pub type ProxyBody = UnsyncBoxBody<Bytes, BodyError>;

/// A complete body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed_unsync()
}

/// An origin body, streamed with an idle timeout.
pub fn stream(body: Incoming, idle: Duration) -> ProxyBody {
    IdleTimeout::new(body, idle).boxed_unsync()
}

pin_project! {
    /// Fails with [`BodyError::Idle`] when the inner body yields nothing for `idle`.
    pub struct IdleTimeout<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Sleep,
        idle: Duration,
    }
}

impl<B> IdleTimeout<B> {
    /// Wraps `inner`; the clock starts now.
    pub fn new(inner: B, idle: Duration) -> Self {
        IdleTimeout { inner, sleep: tokio::time::sleep(idle), idle }
    }
}

impl<B: Body<Data = Bytes, Error = hyper::Error>> Body for IdleTimeout<B> {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.project();
        match this.inner.poll_frame(cx) {
            Poll::Ready(frame) => {
                let deadline = tokio::time::Instant::now() + *this.idle;
                this.sleep.reset(deadline);
                Poll::Ready(frame.map(|f| f.map_err(BodyError::Origin)))
            }
            Poll::Pending => {
                ready!(this.sleep.poll(cx));
                Poll::Ready(Some(Err(BodyError::Idle(*this.idle))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project! {
    /// Chunks already read, then the rest of the body they came from.
    pub struct Replay<B> {
        read: VecDeque<Bytes>,
        #[pin]
        rest: B,
    }
}

impl<B> Replay<B> {
    /// Serves `read` first, then `rest`.
    pub fn new(read: Vec<Bytes>, rest: B) -> Self {
        Replay { read: read.into(), rest }
    }
}

impl<B: Body<Data = Bytes>> Body for Replay<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        if let Some(chunk) = this.read.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        this.rest.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_empty() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let buffered: u64 = self.read.iter().map(|b| b.len() as u64).sum();
        let rest = self.rest.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower() + buffered);
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + buffered);
        }
        hint
    }
}

pin_project! {
    /// Counts body bytes to the client; logs the [`AccessRecord`] once, when the body
    /// completes, fails or is dropped (client gone).
    pub struct Logged<B> {
        #[pin]
        inner: B,
        record: Option<AccessRecord>,
        sent: u64,
        counts_origin: bool,
        ended: bool,
        // The connection's slot, to tell a response cut by the drain deadline from one whose
        // client left.
        slot: Option<Guard>,
    }
    impl<B> PinnedDrop for Logged<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(record) = this.record.take() {
                let ending = if *this.ended { Ending::Ok } else { Ending::unfinished(this.slot.as_ref().is_some_and(Guard::is_closing)) };
                record.write(*this.sent, ending);
            }
        }
    }
}

impl<B: Body> Logged<B> {
    /// Wraps `inner`. With `counts_origin`, every byte sent is also a byte from the origin
    /// (a pass-through).
    pub fn new(inner: B, record: AccessRecord, counts_origin: bool) -> Self {
        // hyper never polls a body that is empty from the start (HEAD, 204, 304): such a
        // response is complete as soon as its head is written.
        let ended = inner.is_end_stream();
        Logged { inner, record: Some(record), sent: 0, counts_origin, ended, slot: None }
    }

    /// Logs a body dropped unfinished at the drain deadline of `slot`'s connection as
    /// `shutdown`, not `client-gone`.
    pub fn with_slot(mut self, slot: Guard) -> Self {
        self.slot = Some(slot);
        self
    }
}

impl<B: Body<Data = Bytes>> Body for Logged<B>
where
    B::Error: std::fmt::Display,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                let n = f.data_ref().map_or(0, |d| d.len() as u64);
                *this.sent += n;
                if let (true, Some(r)) = (*this.counts_origin, this.record.as_mut()) {
                    r.origin_bytes += n;
                }
                // hyper stops polling a body that says it has ended.
                *this.ended = this.inner.is_end_stream();
            }
            Some(Err(e)) => {
                if let Some(mut r) = this.record.take() {
                    if *this.counts_origin {
                        r.origin_bytes = *this.sent;
                    }
                    tracing::warn!(url = %r.url, error = %e, "response aborted");
                    r.write(*this.sent, Ending::Aborted);
                }
            }
            None => *this.ended = true,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
