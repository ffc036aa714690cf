//! Connections: the accept loop of a listener, and the per-connection handler whose
//! `Handler::serve` runs the steps of a request in order: admit, target, own page or loop
//! check, then cache, forward and respond ([`cached::serve`]).
//!
//! Each request runs in a `request` span carrying its client, method and target, so the
//! lines logged while it is served name them without repeating them by hand; the access-log
//! line keeps its own fields ([`AccessRecord::write`]).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Method, Request, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::Instrument;

use crate::net::exchange::bodies::{Logged, ProxyBody};
use crate::net::observe::{AccessRecord, Action, Ending};
use crate::net::accept::downstream::{ClientIo, Downstream};
use crate::net::accept::drain::Guard;
use crate::net::accept::per_client::ClientSlot;
use crate::net::error::ProxyError;
use crate::net::reload::Live;
use crate::net::decide::{decide, Decision, Entry};
use crate::net::accept::admit;
use crate::net::exchange::cached;
use crate::net::tunnel as connect;
use crate::net::own::control;
use crate::net::upstream::forward;
use crate::net::own::read as gateway;
use crate::net::own;
use crate::net::accept::target;
use crate::net::upstream::upgrade;
use crate::net::State;
use crate::config::{Limits, ListenerConfig, DEFAULT_MAX_HEADERS};

/// One listener's accept loop.
pub(in crate::net) struct Acceptor {
    pub socket: TcpListener,
    /// The listener's place in the config, which picks its settings from each state.
    pub index: usize,
    pub live: Arc<Live>,
    pub stop: watch::Receiver<bool>,
}

/// Connections past `max_connections` that a listener holds while they wait for a slot; more
/// stay in the kernel's listen queue, so a flood costs at most this many descriptors.
const MAX_WAITING: usize = 64;

impl Acceptor {
    /// Accepts until told to stop. A connection from a client that already has
    /// `limits.max_connections_per_client` open is answered 503 with Retry-After at once
    /// ([`crate::net::accept::per_client`]). Otherwise it takes a `max_connections` permit if one is free; otherwise it waits `limits.connection_wait` for one (the semaphore
    /// hands freed permits to waiters in turn) and then gets a clean 503 with Retry-After
    /// rather than hanging. At most [`MAX_WAITING`] wait at a time: the loop takes a waiting
    /// place before it accepts, so past that clients stay in the kernel's listen queue and a
    /// flood cannot exhaust file descriptors. Accept errors (e.g. out of descriptors) back off
    /// instead of spinning.
    pub async fn run(mut self) {
        let mut backoff = Duration::from_millis(5);
        let waiting = Arc::new(tokio::sync::Semaphore::new(MAX_WAITING));
        loop {
            let place = tokio::select! {
                w = waiting.clone().acquire_owned() => w.expect("the waiting semaphore is never closed"),
                _ = self.stop.changed() => return,
            };
            let accepted = tokio::select! {
                a = self.socket.accept() => a,
                _ = self.stop.changed() => return,
            };
            match accepted {
                Ok((stream, client)) => {
                    backoff = Duration::from_millis(5);
                    let cap = self.live.current().config.limits.max_connections_per_client;
                    let Ok(counted) = self.live.clients.take(client.ip(), cap) else {
                        tokio::spawn(refuse(stream, place, PER_CLIENT_REFUSAL));
                        continue;
                    };
                    match self.live.limit.clone().try_acquire_owned() {
                        Ok(permit) => {
                            drop(place);
                            spawn_connection(&self.live, self.index, stream, client, (permit, counted));
                        }
                        Err(_) => {
                            let (live, index) = (self.live.clone(), self.index);
                            tokio::spawn(wait_for_slot(live, index, stream, client, counted, place));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; backing off {} ms", backoff.as_millis());
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

/// What an accepted connection holds: its `max_connections` permit and its place in its
/// client's count.
type Slots = (tokio::sync::OwnedSemaphorePermit, ClientSlot);

fn spawn_connection(live: &Arc<Live>, index: usize, stream: tokio::net::TcpStream, client: SocketAddr, (permit, counted): Slots) {
    let guard = live.drain.guard(permit, Some(counted));
    tokio::spawn(serve_connection(live.clone(), index, stream, client, guard));
}

/// A connection accepted past `max_connections`: served if a slot frees within
/// `limits.connection_wait`, else answered 503 with Retry-After and closed.
async fn wait_for_slot(live: Arc<Live>, index: usize, stream: tokio::net::TcpStream, client: SocketAddr, counted: ClientSlot, place: tokio::sync::OwnedSemaphorePermit) {
    let wait = live.current().config.limits.connection_wait;
    match tokio::time::timeout(wait, live.limit.clone().acquire_owned()).await {
        Ok(Ok(permit)) => {
            drop(place);
            spawn_connection(&live, index, stream, client, (permit, counted));
        }
        _ => {
            tracing::debug!(%client, "refused a connection: {} connections open for {} ms", live.drain.open_connections(), wait.as_millis());
            drop(counted);
            refuse(stream, place, "pith is serving as many connections as it is allowed to; try again shortly.\n").await;
        }
    }
}

/// The page for a connection past `limits.max_connections_per_client`.
const PER_CLIENT_REFUSAL: &str = "pith is serving as many connections from your address as it allows (limits.max_connections_per_client); close some, or try again shortly.\n";

/// Answers a connection that will not be served 503 with Retry-After, and closes it. It keeps
/// its waiting `place` until done, so refusals in a flood are bounded like waiting connections.
async fn refuse(mut stream: tokio::net::TcpStream, place: tokio::sync::OwnedSemaphorePermit, body: &str) {
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    use tokio::io::AsyncWriteExt;
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(head.as_bytes())).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.shutdown()).await;
    drop(place);
}

/// A server for one client connection with the HTTP/1.1 settings every client gets:
/// keep-alive, and the request head's read timeout (slowloris), size and header count limits.
/// Past either limit hyper answers 431 and closes the connection; a malformed head gets 400.
fn client_builder(limits: &Limits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    let mut http1 = builder.http1();
    http1
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192));
    // The parser's own default keeps its header table on the stack; only another value is set.
    if limits.max_headers != DEFAULT_MAX_HEADERS {
        http1.max_headers(limits.max_headers);
    }
    builder
}

async fn serve_connection(live: Arc<Live>, index: usize, stream: tokio::net::TcpStream, client: SocketAddr, guard: Guard) {
    let _ = stream.set_nodelay(true);
    let limits = live.current().config.limits.clone();
    // hyper's head timer starts with the first byte, so a client that connects and sends
    // nothing would hold its connection slot forever: it gets the same time to start as to
    // finish its head.
    let wait = limits.header_read_timeout;
    if tokio::time::timeout(wait, stream.peek(&mut [0u8; 1])).await.is_err() {
        tracing::debug!(%client, "closed a connection that sent nothing for {} ms", wait.as_millis());
        return;
    }
    let (io, downstream) = ClientIo::new(stream, Some(limits.client_write_timeout));
    let handler = Handler::new(live, index, client, guard.clone(), downstream);
    let builder = client_builder(&limits).http1_only();
    let service = service_fn(move |req| handler.clone().handle(req));
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    match guard.serve(conn).await {
        Some(Err(e)) => tracing::debug!(%client, error = %e, "connection ended with an error"),
        Some(Ok(())) => {}
        None => tracing::debug!(%client, "connection closed at the end of the shutdown drain"),
    }
}

/// Serves a decrypted, intercepted connection with `handler` (made by
/// [`Handler::intercepting`]): HTTP/1.1 or HTTP/2, whichever the client chose by ALPN
/// (`http2`), with upgrades so WebSockets work inside the tunnel too. Interim responses reach
/// HTTP/1.1 clients only: hyper's HTTP/2 server has no way to send one.
pub(in crate::net) async fn serve_intercepted<I>(io: I, handler: Handler, http2: bool)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // The tunnel's raw connection has the write timeout; this layer only carries 1xx.
    let (io, decrypted) = ClientIo::new(io, None);
    let handler = Handler { interim: (!http2).then_some(decrypted), ..handler };
    let limits = &handler.state.config.limits;
    let mut builder = client_builder(limits);
    // HTTP/2 has no idle timeout of its own: pings find clients that vanished.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .max_header_list_size(limits.max_header_bytes.max(8192) as u32);
    let (client, guard) = (handler.client, handler.guard.clone());
    let service = service_fn(move |req| handler.clone().handle(req));
    if let Some(Err(e)) = guard.serve(builder.serve_connection_with_upgrades(TokioIo::new(io), service)).await {
        tracing::debug!(%client, error = %e, "intercepted connection ended with an error");
    }
}

/// Serves the requests of one client connection.
#[derive(Clone)]
pub struct Handler {
    live: Arc<Live>,
    /// The state of the request being served (for a connection, the one it started with).
    state: Arc<State>,
    /// The listener's place among the bound sockets.
    index: usize,
    /// Its settings in `state`.
    listener: Arc<ListenerConfig>,
    client: SocketAddr,
    /// For a decrypted CONNECT tunnel: its target. Requests inside carry origin-form URLs
    /// and are rebuilt as `https://` this authority; they were admitted with the CONNECT.
    intercepted: Option<http::uri::Authority>,
    /// The connection's slot, for tunnels that outlive the exchange.
    guard: Guard,
    /// The client's raw connection: how long it has been idle, for tunnels.
    downstream: Downstream,
    /// Where interim (1xx) responses to this handler's requests go: its HTTP/1.1 stream; `None`
    /// for HTTP/2.
    interim: Option<Downstream>,
}

impl Handler {
    fn new(live: Arc<Live>, index: usize, client: SocketAddr, guard: Guard, downstream: Downstream) -> Handler {
        let state = live.current();
        let listener = listener_of(&state, index);
        Handler { live, state, index, listener, client, intercepted: None, guard, interim: Some(downstream.clone()), downstream }
    }

    /// This handler with the state in force now, for a request starting now.
    fn refreshed(mut self) -> Handler {
        self.state = self.live.current();
        self.listener = listener_of(&self.state, self.index);
        self
    }

    /// What every connection shares.
    pub(in crate::net) fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Whether this handler's listener refuses private destinations.
    pub(in crate::net) fn deny_private(&self) -> bool {
        self.listener.deny_private
    }

    /// The client's address.
    pub(in crate::net) fn client_addr(&self) -> SocketAddr {
        self.client
    }

    /// The slot of this handler's client connection: a tunnel holds a clone while it is open.
    pub(in crate::net) fn guard(&self) -> &Guard {
        &self.guard
    }

    /// The client's raw connection, whose idle time closes an idle tunnel.
    pub(in crate::net) fn downstream(&self) -> &Downstream {
        &self.downstream
    }

    /// A handler for the decrypted requests of a tunnel to `origin`, same client and listener.
    pub(in crate::net) fn intercepting(&self, origin: http::uri::Authority) -> Handler {
        Handler { intercepted: Some(origin), ..self.clone() }
    }

    /// Serves one request; every failure becomes an error page, never a dropped connection.
    async fn handle(self, mut req: Request<Incoming>) -> Result<Response<ProxyBody>, Infallible> {
        let this = self.refreshed();
        // A target whose userinfo cannot be cut off is refused, and logged without its authority.
        let malformed = match target::without_userinfo(req.uri()) {
            Ok(Some(uri)) => {
                *req.uri_mut() = uri;
                None
            }
            Ok(None) => None,
            Err(bad) => Some(bad),
        };
        if let Err(refused) = this.check_rate() {
            // Counted by the limiter and logged once per run of refusals, not per request.
            return Ok(own::error_page(&refused));
        }
        let record = AccessRecord {
            client: this.client,
            method: req.method().clone(),
            url: if malformed.is_some() { "(malformed authority)".into() } else { req.uri().to_string() },
            status: 0,
            origin_bytes: 0,
            profile: this.listener.profile.name.clone(),
            action: Action::Pass,
            start: Instant::now(),
            tally: Some((this.state.observer.clone(), crate::net::choices::client_id(&this.listener, this.client.ip()))),
        };
        let span = request_span(&this, &req, &record.url);
        let mut pending = Unanswered { record: Some(record), guard: &this.guard };
        let served = match malformed {
            Some(bad) => Err(bad.into()),
            None => this.serve(req, pending.record()).instrument(span.clone()).await,
        };
        let mut record = pending.answered();
        let (response, counts_origin) = match served {
            Ok(pair) => pair,
            Err(err) => {
                span.in_scope(|| log_failure(&err));
                record.action = Action::Error;
                (own::error_page(&err), false)
            }
        };
        record.status = response.status().as_u16();
        let (parts, body) = response.into_parts();
        let body = Logged::new(body, record, counts_origin).with_slot(this.guard.clone()).boxed_unsync();
        Ok(Response::from_parts(parts, body))
    }

    /// The steps of a request. Returns the response and whether its body is the origin's
    /// own bytes streaming through (so they count as origin bytes in the log).
    async fn serve(&self, req: Request<Incoming>, record: &mut AccessRecord) -> Result<(Response<ProxyBody>, bool), ProxyError> {
        // HTTP/1 heads are counted by the parser; this catches HTTP/2 inside a tunnel.
        let max_headers = self.state.config.limits.max_headers;
        if req.headers().len() > max_headers {
            return Err(ProxyError::TooManyHeaders { count: req.headers().len(), max: max_headers });
        }
        if crate::net::upstream::pooled::is_own_connection(self.client) {
            return Err(ProxyError::Loop { target: record.url.clone() });
        }
        let target = match &self.intercepted {
            Some(origin) => Some(inside_tunnel(origin, &req, record)?),
            None => {
                admit::admit(&self.listener, self.client.ip(), req.headers())?;
                if req.method() == Method::CONNECT {
                    record.action = Action::Tunnel;
                    return Ok((connect::tunnel(self, req).await?, false));
                }
                target::absolute(req.uri())?
            }
        };
        let Some(uri) = target else {
            if gateway::is_route(req.uri().path()) {
                return gateway::serve(&self.state, &self.listener, req, record).await;
            }
            record.action = Action::Own;
            let uri = req.uri().clone();
            return Ok((control::serve(self.asked(), req, &uri).await, false));
        };
        let host = uri.host().unwrap_or_default().trim_matches(|c| c == '[' || c == ']').to_string();
        let port = uri.port_u16().unwrap_or(if uri.scheme() == Some(&http::uri::Scheme::HTTPS) { 443 } else { 80 });
        if self.state.is_self(&host, port) {
            if gateway::is_route(uri.path()) {
                return gateway::serve(&self.state, &self.listener, req, record).await;
            }
            record.action = Action::Own;
            return Ok((control::serve(self.asked(), req, &uri).await, false));
        }
        if forward::has_passed(req.headers(), &self.state.via) {
            return Err(ProxyError::Loop { target: uri.to_string() });
        }
        let req = self.forward_interim(req);
        if forward::is_upgrade(req.headers()) {
            record.action = Action::Upgrade;
            return Ok((forward::upgrade(&self.state, self.listener.deny_private, req, uri, &host, (self.guard.clone(), self.downstream.clone())).await?, false));
        }
        let plain = self.intercepted.is_none();
        let entry = Entry::Proxy { listener: &self.listener, client: self.client.ip(), host: &host, url: &record.url, uri: &uri, plain };
        let Decision { profile, chosen, upgraded } = decide(&self.state, entry)?;
        if chosen {
            record.profile.clone_from(&profile.name);
        }
        let asked = uri.clone();
        let uri = upgraded.unwrap_or(uri);
        let target = cached::Target { host: &host, uri, profile: &profile, deny_private: self.listener.deny_private, client: Some(self.client.ip()) };
        let mut served = cached::serve(&self.state, target, req).await?;
        if plain {
            upgrade::finish(&self.state, &self.listener, &asked, &mut served.response);
        }
        record.action = served.action;
        record.origin_bytes = served.origin_bytes;
        Ok((served.response, record.action.streams_origin()))
    }
}

impl Handler {
    /// Arranges for the origin's interim responses (102, 103 Early Hints...) to `req` to reach
    /// the client ahead of the final one, as a proxy must (RFC 9110 §15.2), when the client
    /// speaks HTTP/1.1: never to an HTTP/1.0 client, which does not know them, and not over
    /// HTTP/2, where hyper's server cannot send them. `100 Continue` is left out: hyper's server
    /// sends its own when pith reads the request body.
    fn forward_interim(&self, mut req: Request<Incoming>) -> Request<Incoming> {
        let Some(sink) = self.interim.clone().filter(|_| req.version() == http::Version::HTTP_11) else { return req };
        let client = self.client;
        hyper::ext::on_informational(&mut req, move |interim| {
            let status = interim.status();
            if status == http::StatusCode::CONTINUE {
                return;
            }
            if !sink.send_interim(&forward::interim_head(status, interim.headers())) {
                tracing::debug!(%client, %status, "interim response dropped: the client has not read what it was sent");
            }
        });
        req
    }

    /// What the control page needs of this request's client.
    fn asked(&self) -> control::Asked<'_> {
        control::Asked { state: &self.state, listener: &self.listener, client: self.client.ip() }
    }

    /// Takes a token from the client's bucket when `limits.client_rate` is set.
    fn check_rate(&self) -> Result<(), ProxyError> {
        let Some(rate) = &self.state.rate else { return Ok(()) };
        rate.check(self.client.ip()).map_err(|retry_after| ProxyError::RateLimited { client: self.client.ip(), retry_after })
    }
}

/// The access record of a request whose response is not ready yet. When the client goes away
/// or the shutdown drain ends, hyper drops the request's future and none of its steps runs
/// again: dropped unanswered, this writes the line then, with status 0 and the outcome
/// `client-gone` (or `shutdown`), so a client cannot hide a request by disconnecting early.
struct Unanswered<'a> {
    record: Option<AccessRecord>,
    guard: &'a Guard,
}

impl Unanswered<'_> {
    fn record(&mut self) -> &mut AccessRecord {
        self.record.as_mut().expect("the record is taken only by answered(), which consumes this")
    }

    /// The record of an answered request, for the response body to write when it ends.
    fn answered(mut self) -> AccessRecord {
        self.record.take().expect("the record is taken only here, once")
    }
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            record.write(0, Ending::unfinished(self.guard.is_closing()));
        }
    }
}

/// The settings of the listener at `index`. The state always has one per bound socket
/// ([`State::assemble`]); the fallback only keeps a bug from becoming a panic.
fn listener_of(state: &State, index: usize) -> Arc<ListenerConfig> {
    state.listeners.get(index).or(state.listeners.first()).cloned().expect("a proxy has at least one listener")
}

/// The absolute `https://` URL of a request inside an intercepted tunnel to `origin`, also
/// written to the access record. The tunnel's target wins over any authority the request
/// names: the client's certificate check was for that host alone.
fn inside_tunnel(origin: &http::uri::Authority, req: &Request<Incoming>, record: &mut AccessRecord) -> Result<Uri, ProxyError> {
    if req.method() == Method::CONNECT {
        return Err(ProxyError::BadRequest { reason: "CONNECT inside an intercepted tunnel".into() });
    }
    let uri = target::in_tunnel(origin, req.uri())?;
    record.url = uri.to_string();
    Ok(uri)
}

/// The span a request is served in. Its target is the URL the access log names, except that
/// a request inside an intercepted tunnel is named by its rebuilt `https://` URL from the
/// start, so that every line, the earliest refusals included, says which host it was for.
fn request_span(handler: &Handler, req: &Request<Incoming>, url: &str) -> tracing::Span {
    let in_tunnel = handler.intercepted.as_ref().filter(|_| req.method() != Method::CONNECT).and_then(|origin| target::in_tunnel(origin, req.uri()).ok());
    match in_tunnel {
        Some(uri) => tracing::info_span!("request", client = %handler.client, method = %req.method(), target = %uri),
        None => tracing::info_span!("request", client = %handler.client, method = %req.method(), target = %url),
    }
}

/// One log line per failure, with its cause chain; the request's span names the client and
/// the target.
fn log_failure(err: &ProxyError) {
    let cause = std::error::Error::source(err).map(crate::net::error::describe).unwrap_or_default();
    match err.side() {
        crate::net::error::Side::Downstream => tracing::warn!(reason = %err.reason(), "request refused"),
        crate::net::error::Side::Upstream => tracing::warn!(reason = %err.reason(), %cause, "upstream failed"),
        crate::net::error::Side::Internal => tracing::error!(reason = %err.reason(), %cause, "internal error"),
    }
}
