//! Pooled upstream connections that the origin has closed. Origins close idle keep-alive
//! connections sooner than pith's `upstream.pool_idle_timeout_ms` (node after 5 s), and a close
//! can cross the next request on the wire: the request then fails on a connection that was
//! fine when it was taken from the pool. A browser sends such a request again on a fresh
//! connection when it can; so does pith ([`send_again_if_stale`]).
//!
//! To know whether a failed request went out on a pooled connection, the upstream connector
//! stamps every connection with when it was opened ([`Stamping`]); the request captures the
//! connection it was sent on, and one opened before the request was sent came from the pool.
//!
//! The connector also notes the local address of every connection it has open
//! ([`is_own_connection`]): a request that arrives on one of them was sent by pith to itself,
//! by whatever name or address led there, and is refused as a loop, whether or not pith sends
//! `Via` (`upstream.send_via`).

use bytes::Bytes;
use http::{HeaderMap, Request, Response, Uri};
use http_body_util::{Either, Empty};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::{capture_connection, Connected, Connection, HttpConnector};
use hyper_util::client::legacy::Client;

use crate::net::upstream::resolve::CheckedResolver;

/// The pooled client every request to an origin goes through ([`crate::net::upstream::forward::client`]
/// builds it). It resolves names with the deny rules checked ([`CheckedResolver`]), and stamps
/// each connection with when it was opened ([`Stamping`]) so that a failure on a pooled
/// connection can be told from one on a new one.
pub type UpstreamClient = Client<Stamping<HttpsConnector<HttpConnector<CheckedResolver>>>, UpstreamBody>;

/// A request body sent upstream: the client's own, or an empty one for a request sent again.
pub type UpstreamBody = Either<Incoming, Empty<Bytes>>;

/// Most times a request is sent again because the pooled connection it went out on had been
/// closed by the origin. Each failure takes its dead connection out of the pool, so a second
/// attempt usually gets a fresh one; a few more cover a pool holding several dead connections.
const MAX_STALE_RETRIES: usize = 3;

/// Sends `req`. When it fails on a connection taken from the pool, in the way a connection the
/// origin closed while it sat idle fails (closed or reset before any response), and the request
/// can be sent again without the client's help (an idempotent method, no body), it is sent
/// again, as browsers do; a failure on a new connection is final.
pub(in crate::net) async fn send_again_if_stale(client: &UpstreamClient, req: Request<Incoming>, host: &str) -> Result<Response<Incoming>, LegacyError> {
    let (parts, body) = req.into_parts();
    let again = is_replayable(&parts.method, &body).then(|| Head::of(&parts));
    let mut req = Request::from_parts(parts, Either::Left(body));
    for _ in 0..MAX_STALE_RETRIES {
        let Some(head) = &again else { break };
        let captured = capture_connection(&mut req);
        let sent_at = std::time::Instant::now();
        let err = match client.request(req).await {
            Ok(resp) => return Ok(resp),
            Err(err) => err,
        };
        let reused = captured.connection_metadata().as_ref().is_some_and(|c| opened_before(c, sent_at));
        if !reused || !is_dead_connection(&err) {
            return Err(err);
        }
        tracing::debug!(%host, error = %crate::net::error::describe(&err), "a pooled connection was closed by the origin; sending the request again");
        req = head.request();
    }
    client.request(req).await
}

type LegacyError = hyper_util::client::legacy::Error;

/// Methods a proxy may send twice (RFC 9110 §9.2.2), when they carry no body: nothing the
/// client sent has been consumed by the first attempt.
fn is_replayable(method: &http::Method, body: &Incoming) -> bool {
    use http::Method as M;
    [M::GET, M::HEAD, M::OPTIONS, M::TRACE, M::PUT, M::DELETE].contains(method) && http_body::Body::is_end_stream(body)
}

/// What a request is sent again with: its head, and an empty body.
struct Head {
    method: http::Method,
    uri: Uri,
    version: http::Version,
    headers: HeaderMap,
    extensions: http::Extensions,
}

impl Head {
    fn of(parts: &http::request::Parts) -> Head {
        Head { method: parts.method.clone(), uri: parts.uri.clone(), version: parts.version, headers: parts.headers.clone(), extensions: parts.extensions.clone() }
    }

    fn request(&self) -> Request<UpstreamBody> {
        let mut req = Request::new(Either::Right(Empty::new()));
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.version_mut() = self.version;
        *req.headers_mut() = self.headers.clone();
        *req.extensions_mut() = self.extensions.clone();
        req
    }
}

/// True when the connection a request failed on was opened before the request was sent: it
/// came from the pool.
fn opened_before(connected: &Connected, sent_at: std::time::Instant) -> bool {
    let mut extensions = http::Extensions::new();
    connected.get_extras(&mut extensions);
    extensions.get::<Opened>().is_some_and(|opened| opened.0 < sent_at)
}

/// The failures of a connection the origin had closed: closed or reset before a response came.
fn is_dead_connection(err: &LegacyError) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    let hyper_says = crate::net::error::find::<hyper::Error>(err).is_some_and(|h| h.is_incomplete_message() || h.is_canceled() || h.is_closed());
    hyper_says || crate::net::error::find::<std::io::Error>(err).is_some_and(|io| matches!(io.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof))
}

/// The local addresses of the connections to origins pith has open: a client connection from
/// one of them is pith itself.
static OPEN: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<std::net::SocketAddr>>> = std::sync::LazyLock::new(Default::default);

/// True when `peer`, a client's address, is the local end of a connection pith opened to an
/// origin: the request came from pith itself, round a loop.
pub fn is_own_connection(peer: std::net::SocketAddr) -> bool {
    OPEN.lock().is_ok_and(|open| open.contains(&canonical(peer)))
}

/// An address with an IPv4-mapped IPv6 address as its IPv4 one, as a dual-stack listener may
/// report its peer.
fn canonical(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    std::net::SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// A local address noted in [`OPEN`] while its connection lives.
struct Noted(Option<std::net::SocketAddr>);

impl Noted {
    fn of(connected: &Connected) -> Noted {
        let mut extensions = http::Extensions::new();
        connected.get_extras(&mut extensions);
        let local = extensions.get::<hyper_util::client::legacy::connect::HttpInfo>().map(|info| canonical(info.local_addr()));
        if let (Some(addr), Ok(mut open)) = (local, OPEN.lock()) {
            open.insert(addr);
        }
        Noted(local)
    }
}

impl Drop for Noted {
    fn drop(&mut self) {
        if let (Some(addr), Ok(mut open)) = (self.0, OPEN.lock()) {
            open.remove(&addr);
        }
    }
}

/// When a connection to an origin was opened, carried in its [`Connected`] info.
#[derive(Debug, Clone, Copy)]
struct Opened(std::time::Instant);

/// The upstream connector, with each connection stamped with when it was opened.
#[derive(Clone)]
pub struct Stamping<C>(pub C);

impl<C> tower_service::Service<Uri> for Stamping<C>
where
    C: tower_service::Service<Uri>,
    C::Response: Connection,
    C::Future: Send + 'static,
{
    type Response = Stamped<C::Response>;
    type Error = C::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.0.call(uri);
        Box::pin(async move {
            connecting.await.map(|io| {
                let noted = Noted::of(&io.connected());
                Stamped { io, opened: Opened(std::time::Instant::now()), _noted: noted }
            })
        })
    }
}

/// A connection to an origin and when it was opened.
pub struct Stamped<T> {
    io: T,
    opened: Opened,
    _noted: Noted,
}

impl<T: Connection> Connection for Stamped<T> {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.opened)
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for Stamped<T> {
    fn poll_read(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: hyper::rt::ReadBufCursor<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for Stamped<T> {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}
