//! CONNECT: blind tunnels, and HTTPS interception.
//!
//! A blind tunnel is opened before the client is told `200`, so a refused or unreachable
//! origin gets a clear 502/504 instead of a tunnel that dies at once. Bytes are then copied
//! both ways until either side closes.
//!
//! An intercepted CONNECT ([`should_intercept`]: interception is configured and the host is
//! not on the `never` list) is answered `200` at once, and pith looks at what the client sends
//! first:
//! - a TLS handshake record (first byte `0x16`): pith reads the whole ClientHello and judges
//!   its SNI name against the CONNECT host (`judge_sni`): a name on the `never` list gets a
//!   blind tunnel, any other name than the CONNECT host's is refused, since pith connects to
//!   the CONNECT host and issues certificates for it alone. Then it takes the CONNECT host's
//!   certificate from the leaf cache, completes the handshake offering HTTP/2 and HTTP/1.1, and serves the decrypted requests with the same
//!   [`Handler`] as plain HTTP, their URLs rebuilt as `https://` the CONNECT target. The origin
//!   is then reached through the pooled, verifying upstream client, so an unreachable or
//!   untrusted origin is an error page inside the tunnel, where the user sees it.
//! - anything else, or nothing within [`FIRST_BYTES_WAIT`] (a protocol where the server
//!   speaks first): the tunnel is opened and copied blindly, the bytes already read first.
//!   Interception never breaks what it cannot read.
//!
//! Every tunnel, blind or intercepted, is closed when no byte has gone either way on the
//! client's connection for `limits.tunnel_idle_timeout_ms`, and when a write to the client
//! makes no progress for `limits.client_write_timeout_ms` ([`crate::net::accept::downstream`]).
//!
//! A tunnel's task runs in a `tunnel` span carrying the client, the method and the target,
//! as a request's does ([`crate::net::accept::conn`]), so its lines do not repeat them; its access-log
//! line, written when it closes, keeps its own fields.

use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tracing::Instrument;

use crate::net::exchange::bodies::{self, ProxyBody};
use crate::net::accept::conn::{self, Handler};
use crate::net::accept::downstream::{close_when_idle, Downstream};
use crate::net::error::ProxyError;
use crate::net::State;

/// How long an intercepted tunnel waits for the client's first bytes before treating the
/// connection as one where the server speaks first, and copying it blindly. A browser sends
/// its ClientHello right after the `200`; this only has to outlast a slow link's round trip.
pub const FIRST_BYTES_WAIT: Duration = Duration::from_secs(3);

/// The first byte of a TLS handshake record (RFC 8446 §5.1, content type 22).
const TLS_HANDSHAKE: u8 = 0x16;

/// Whether a CONNECT to `host` is intercepted: the CA is loaded and the `[intercept]` policy
/// says so.
pub fn should_intercept(state: &State, host: &str) -> bool {
    state.certs.is_some() && state.config.intercept.should_intercept(host)
}

/// Answers a CONNECT request: a blind tunnel to its authority, or an intercepted one.
pub async fn tunnel(handler: &Handler, req: Request<Incoming>) -> Result<Response<ProxyBody>, ProxyError> {
    let state = handler.state();
    let authority = req.uri().authority().cloned().ok_or_else(|| ProxyError::BadRequest { reason: "CONNECT needs a host:port target".into() })?;
    let port = authority.port_u16().ok_or_else(|| ProxyError::BadRequest { reason: format!("CONNECT target {authority} has no port") })?;
    let ports = &state.config.upstream.connect_ports;
    if !ports.is_empty() && !ports.contains(&port) {
        return Err(ProxyError::PortNotAllowed { port });
    }
    let host = authority.host().trim_matches(|c| c == '[' || c == ']').to_string();
    if state.is_self(&host, port) {
        return Err(ProxyError::Loop { target: authority.to_string() });
    }
    if should_intercept(state, &host) {
        let origin = if port == 443 { authority.host().parse().unwrap_or_else(|_| authority.clone()) } else { authority.clone() };
        spawn_intercept(req, handler.intercepting(origin), host, port);
        return Ok(ok());
    }
    let upstream = open(state, handler.deny_private(), &host, port).await?;
    let ends = Ends { client: handler.client_addr(), target: authority.to_string(), downstream: handler.downstream().clone(), idle: state.config.limits.tunnel_idle_timeout };
    // The tunnel holds the connection's slot: it counts against max_connections until it
    // closes, and shutdown waits for it (then closes it at the drain deadline).
    let guard = handler.guard().clone();
    let (client, target) = (ends.client, ends.target.clone());
    let span = tunnel_span(client, &target);
    let counted = state.observer.tunnel_open();
    let task = async move {
        let _counted = counted;
        let copied = guard.tunnel(async move {
            let Some(downstream) = upgraded(req).await else { return };
            copy(downstream, upstream, &[], ends).await;
        });
        if copied.await.is_none() {
            log_closed_at_deadline(client, &target);
        }
    };
    tokio::spawn(task.instrument(span));
    Ok(ok())
}

fn ok() -> Response<ProxyBody> {
    let mut resp = Response::new(bodies::full(bytes::Bytes::new()));
    *resp.status_mut() = StatusCode::OK;
    resp
}

/// Opens the TCP connection to a tunnel's target within the connect budget. The target is
/// resolved and checked against the deny rules first, and only the checked addresses are
/// connected to ([`resolve`](crate::net::upstream::resolve)).
async fn open(state: &State, deny_private: bool, host: &str, port: u16) -> Result<TcpStream, ProxyError> {
    let budget = state.config.upstream.connect_timeout;
    let checked = async {
        let addrs = crate::net::upstream::resolve::resolve(host, port, crate::net::upstream::resolve::DenyRules::new(&state.config.upstream, deny_private))
            .await
            .map_err(|source| ProxyError::Destination { source })?;
        TcpStream::connect(&addrs[..]).await.map_err(|e| ProxyError::Connect { host: host.to_string(), source: Box::new(e) })
    };
    let stream = match tokio::time::timeout(budget, checked).await {
        Err(_) => return Err(ProxyError::Timeout { host: host.to_string(), what: "accept a connection", after: budget }),
        Ok(Err(e)) => return Err(e),
        Ok(Ok(stream)) => stream,
    };
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// The span of a tunnel's task: what a CONNECT request's span carries, for the task that
/// outlives the request.
fn tunnel_span(client: std::net::SocketAddr, target: &str) -> tracing::Span {
    tracing::info_span!("tunnel", %client, method = %http::Method::CONNECT, %target)
}

/// Waits for hyper to hand over the client's connection.
async fn upgraded(req: Request<Incoming>) -> Option<TokioIo<hyper::upgrade::Upgraded>> {
    match hyper::upgrade::on(req).await {
        Ok(u) => Some(TokioIo::new(u)),
        Err(e) => {
            tracing::warn!(error = %e, "CONNECT upgrade failed");
            None
        }
    }
}

/// Who a tunnel connects, for its log line and its idle timeout.
struct Ends {
    client: std::net::SocketAddr,
    target: String,
    /// The client's raw connection, whose idle time closes the tunnel.
    downstream: Downstream,
    /// `limits.tunnel_idle_timeout`.
    idle: Duration,
}

/// Copies both ways, after sending `first` (bytes already read from the client) upstream, until
/// either side closes, a write to the client stalls (`limits.client_write_timeout_ms`) or no
/// byte has gone either way for `limits.tunnel_idle_timeout_ms`.
async fn copy<D>(mut downstream: D, mut upstream: TcpStream, first: &[u8], ends: Ends)
where
    D: AsyncRead + AsyncWrite + Unpin,
{
    let (start, client, target) = (Instant::now(), ends.client, &ends.target);
    if let Err(e) = upstream.write_all(first).await {
        tracing::debug!(error = %e, "tunnel ended with an error");
        return;
    }
    let copied = close_when_idle(&ends.downstream, ends.idle, tokio::io::copy_bidirectional(&mut downstream, &mut upstream)).await;
    let ms = start.elapsed().as_millis() as u64;
    match copied {
        Some(Ok((up, down))) => tracing::info!(target: "pith::access", parent: None, %client, method = "CONNECT", url = %target, client_to_origin = up + first.len() as u64, origin_to_client = down, ms, outcome = Closed::Ok.as_str(), "tunnel closed"),
        Some(Err(e)) => tracing::info!(target: "pith::access", parent: None, %client, method = "CONNECT", url = %target, ms, outcome = Closed::Error.as_str(), error = %e, "tunnel closed"),
        None => tracing::info!(target: "pith::access", parent: None, %client, method = "CONNECT", url = %target, ms, outcome = Closed::Idle.as_str(), "tunnel closed: no byte either way for {} ms (limits.tunnel_idle_timeout_ms)", ends.idle.as_millis()),
    }
}

/// How a tunnel closed: the access log's `outcome` for a CONNECT, as [`Ending`] is for a
/// response.
///
/// [`Ending`]: crate::net::observe::Ending
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    /// Either side closed it.
    Ok,
    /// Copying failed (a reset, a stalled write to the client).
    Error,
    /// No byte went either way for `limits.tunnel_idle_timeout_ms`.
    Idle,
    /// Still open at the end of the shutdown drain, which closed it.
    Shutdown,
}

impl Closed {
    /// The access log's word for it.
    const fn as_str(self) -> &'static str {
        match self {
            Closed::Ok => "ok",
            Closed::Error => "error",
            Closed::Idle => "idle",
            Closed::Shutdown => "shutdown",
        }
    }
}

/// Runs [`intercept`] on its own task. A plain function, not inline in [`tunnel`]: the task
/// serves requests through the handler whose future contains `tunnel`'s, and proving that
/// task `Send` inside `tunnel` itself would be a cycle for the compiler.
fn spawn_intercept(req: Request<Incoming>, handler: Handler, host: String, port: u16) {
    let guard = handler.guard().clone();
    let (client, target) = (handler.client_addr(), format!("{host}:{port}"));
    let span = tunnel_span(client, &req.uri().to_string());
    let counted = handler.state().observer.tunnel_open();
    let task = async move {
        let _counted = counted;
        if guard.tunnel(intercept(req, handler, host, port)).await.is_none() {
            log_closed_at_deadline(client, &target);
        }
    };
    tokio::spawn(task.instrument(span));
}

/// The access-log line of a tunnel still open at the drain deadline, which closed it.
fn log_closed_at_deadline(client: std::net::SocketAddr, target: &str) {
    tracing::info!(target: "pith::access", parent: None, %client, method = "CONNECT", url = %target, outcome = Closed::Shutdown.as_str(), "tunnel closed at the end of the shutdown drain");
}

/// An intercepted tunnel: TLS is terminated and served, anything else is copied blindly.
async fn intercept(req: Request<Incoming>, handler: Handler, host: String, port: u16) {
    let Some(authority) = req.uri().authority().cloned() else { return };
    let Some(mut downstream) = upgraded(req).await else { return };
    let mut first = [0u8; 2048];
    let read = match tokio::time::timeout(FIRST_BYTES_WAIT, downstream.read(&mut first)).await {
        Ok(Ok(0)) | Ok(Err(_)) => return,
        Ok(Ok(n)) => n,
        Err(_elapsed) => 0,
    };
    let ends = Ends { client: handler.client_addr(), target: authority.to_string(), downstream: handler.downstream().clone(), idle: handler.state().config.limits.tunnel_idle_timeout };
    if read > 0 && first[0] == TLS_HANDSHAKE {
        let budget = handler.state().config.limits.header_read_timeout;
        let Some(hello) = read_client_hello(&mut downstream, first[..read].to_vec(), budget).await else {
            return tracing::debug!("no complete TLS ClientHello");
        };
        match judge_sni(&handler.state().config.intercept, &host, hello.sni.as_deref()) {
            Sni::Terminate => {
                let io = Prefixed { prefix: hello.bytes.into(), inner: downstream };
                return terminate(io, handler, &host).await;
            }
            Sni::Never(sni) => {
                tracing::info!(sni, "the ClientHello names a host on intercept.never: tunnelled untouched");
                return blind((handler.state(), handler.deny_private()), downstream, &host, port, &hello.bytes, ends).await;
            }
            Sni::Mismatch(sni) => {
                return tracing::warn!(sni, "refused a TLS handshake whose SNI names another host than the CONNECT; pith issues certificates for the CONNECT host only");
            }
        }
    }
    blind((handler.state(), handler.deny_private()), downstream, &host, port, &first[..read], ends).await;
}

/// Opens the tunnel's target and copies both ways, `first` (bytes already read) sent first.
async fn blind<D>((state, deny_private): (&State, bool), downstream: D, host: &str, port: u16, first: &[u8], ends: Ends)
where
    D: AsyncRead + AsyncWrite + Unpin,
{
    match open(state, deny_private, host, port).await {
        Ok(upstream) => copy(downstream, upstream, first, ends).await,
        Err(e) => tracing::warn!(reason = %e.reason(), "tunnel for non-TLS bytes failed"),
    }
}

/// What an intercepted tunnel does with a ClientHello, by its SNI name.
#[derive(Debug, PartialEq, Eq)]
enum Sni<'a> {
    /// No SNI, or the CONNECT host's own name: decrypt with a leaf for the CONNECT host.
    Terminate,
    /// The SNI names a host on `intercept.never`: copy blindly, as for a `never` CONNECT.
    Never(&'a str),
    /// The SNI names another host than the CONNECT: refuse the handshake.
    Mismatch(&'a str),
}

/// Judges a ClientHello's SNI against the CONNECT host. pith connects to the CONNECT host, so
/// a leaf for any other name would vouch for a host pith never talks to (and the `never` list
/// was only checked on the CONNECT host): a different name is refused, and a name on the
/// `never` list gets the blind tunnel its CONNECT would have got.
fn judge_sni<'a>(policy: &crate::config::InterceptConfig, connect_host: &str, sni: Option<&'a str>) -> Sni<'a> {
    let Some(sni) = sni else { return Sni::Terminate };
    if policy.never.matches(sni) {
        return Sni::Never(sni);
    }
    let bare = |h: &str| h.trim_matches(|c| c == '[' || c == ']').trim_end_matches('.').to_ascii_lowercase();
    if bare(sni) == bare(connect_host) {
        Sni::Terminate
    } else {
        Sni::Mismatch(sni)
    }
}

/// The most ClientHello bytes read before giving up: a hello is a few KiB at most (post-quantum
/// key shares included); more is not a browser.
const MAX_CLIENT_HELLO: usize = 64 * 1024;

/// A ClientHello read whole, and its SNI name.
struct ClientHello {
    /// Every byte read from the client so far, to be replayed to whoever handles it next.
    bytes: Vec<u8>,
    sni: Option<String>,
}

/// Reads from `io` (after `bytes`, already read) until a whole ClientHello has arrived, within
/// `budget`. The bytes are kept, so the handshake (or a blind tunnel) can start from them.
async fn read_client_hello<S: AsyncRead + Unpin>(io: &mut S, mut bytes: Vec<u8>, budget: Duration) -> Option<ClientHello> {
    let deadline = tokio::time::Instant::now() + budget;
    let mut acceptor = rustls::server::Acceptor::default();
    let mut fed = 0;
    loop {
        let mut unread = &bytes[fed..];
        while !unread.is_empty() {
            acceptor.read_tls(&mut unread).ok()?;
        }
        fed = bytes.len();
        if let Some(accepted) = acceptor.accept().ok()? {
            let sni = accepted.client_hello().server_name().map(str::to_string);
            return Some(ClientHello { bytes, sni });
        }
        if bytes.len() >= MAX_CLIENT_HELLO {
            return None;
        }
        let mut more = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, io.read(&mut more)).await.ok()?.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&more[..n]);
    }
}

/// Completes the TLS handshake with a leaf for the CONNECT host (the SNI was judged already),
/// then serves the decrypted connection.
async fn terminate<I>(io: I, handler: Handler, host: &str)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let state = handler.state();
    let Some(certs) = state.certs.clone() else { return };
    let budget = state.config.limits.header_read_timeout;
    let acceptor = tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), io);
    let start = match tokio::time::timeout(budget, acceptor).await {
        Ok(Ok(start)) => start,
        Ok(Err(e)) => return tracing::debug!(error = %e, "not a TLS ClientHello"),
        Err(_) => return tracing::debug!("no ClientHello in time"),
    };
    let config = match certs.server_config(host).await {
        Ok(config) => config,
        Err(e) => return tracing::warn!(error = %e, "cannot issue a certificate"),
    };
    let tls = match tokio::time::timeout(budget, start.into_stream(config)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            return tracing::warn!(error = %e, "TLS handshake with the client failed; does it trust pith's CA? (http://pith/ca)");
        }
        Err(_) => return tracing::debug!("TLS handshake with the client timed out"),
    };
    let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let (downstream, idle) = (handler.downstream().clone(), state.config.limits.tunnel_idle_timeout);
    if close_when_idle(&downstream, idle, conn::serve_intercepted(tls, handler, http2)).await.is_none() {
        tracing::debug!("intercepted tunnel closed: no byte either way for {} ms (limits.tunnel_idle_timeout_ms)", idle.as_millis());
    }
}

/// A stream whose first reads return bytes already taken from it (the peeked ClientHello).
struct Prefixed<S> {
    prefix: bytes::Bytes,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.prefix.is_empty() {
            return std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let n = this.prefix.len().min(buf.remaining());
        buf.put_slice(&this.prefix.split_to(n));
        std::task::Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(never: &[&str]) -> crate::config::InterceptConfig {
        let never: Vec<String> = never.iter().map(|h| format!("{h:?}")).collect();
        let text = format!("[intercept]\nenabled = true\nnever = [{}]\n", never.join(", "));
        crate::config::Config::from_toml_str(&text, "t", None).expect("a valid config").intercept
    }

    macro_rules! sni {
        ($name:ident, never = $never:expr, connect = $host:expr, sni = $sni:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!(judge_sni(&policy(&$never), $host, $sni), $expect);
            }
        };
    }

    sni!(no_sni_is_the_connect_host, never = [], connect = "news.example", sni = None, Sni::Terminate);
    sni!(same_name, never = [], connect = "news.example", sni = Some("news.example"), Sni::Terminate);
    sni!(same_name_other_case_and_dot, never = [], connect = "News.Example", sni = Some("news.example."), Sni::Terminate);
    sni!(other_name, never = [], connect = "news.example", sni = Some("bank.example"), Sni::Mismatch("bank.example"));
    sni!(name_for_an_address, never = [], connect = "192.0.2.1", sni = Some("news.example"), Sni::Mismatch("news.example"));
    sni!(never_name, never = ["bank.example"], connect = "news.example", sni = Some("www.bank.example"), Sni::Never("www.bank.example"));

    #[tokio::test]
    async fn a_client_hello_split_over_reads_is_read_whole_and_kept() {
        let hello = client_hello_bytes("split.example");
        let (mut near, mut far) = tokio::io::duplex(64 * 1024);
        let (head, rest) = hello.split_at(10);
        let rest = rest.to_vec();
        tokio::spawn(async move {
            far.write_all(&rest).await.unwrap();
            std::future::pending::<()>().await;
        });
        let read = read_client_hello(&mut near, head.to_vec(), Duration::from_secs(20)).await.expect("a whole hello");
        assert_eq!((read.sni.as_deref(), read.bytes), (Some("split.example"), hello));
    }

    /// The first flight of a real rustls client naming `sni`.
    fn client_hello_bytes(sni: &str) -> Vec<u8> {
        let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(sni.to_string()).unwrap();
        let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        out
    }

    #[tokio::test]
    async fn prefixed_replays_then_reads_on_and_writes_through() {
        let (near, mut far) = tokio::io::duplex(64);
        let mut io = Prefixed { prefix: bytes::Bytes::from_static(b"\x16peeked"), inner: near };
        far.write_all(b" rest").await.unwrap();
        drop(far.shutdown().await);
        let mut small = [0u8; 3];
        io.read_exact(&mut small).await.unwrap();
        assert_eq!(&small, b"\x16pe", "a short read takes part of the prefix");
        let mut rest = Vec::new();
        io.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"eked rest");
        let (near, mut far) = tokio::io::duplex(64);
        let mut io = Prefixed { prefix: bytes::Bytes::new(), inner: near };
        io.write_all(b"to the client").await.unwrap();
        let mut back = [0u8; 13];
        far.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"to the client");
    }
}
