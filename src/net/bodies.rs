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
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use tokio::time::Sleep;

use super::drain::Guard;

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
    /// ([`super::observe`]).
    pub tally: Option<(std::sync::Arc<super::control::Control>, String)>,
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
        if let Some((control, who)) = &self.tally {
            control.tally.record(self, who, client_bytes);
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

#[cfg(test)]
mod tests {
    use super::*;

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
