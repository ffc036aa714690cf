//! The ICAP service (RFC 3507): a listener per `[[icap]]` on the proxy's own runtime, so that
//! a proxy such as Squid can hand its responses to pith and serve what comes back.
//!
//! pith answers `OPTIONS` and `RESPMOD`; `REQMOD` and anything else get 405. A response is
//! rewritten by the proxy's own steps ([`crate::net::exchange::respond::plan`] decides, the same
//! [`crate::body::Decoder`] with its cap reads, [`crate::net::exchange::respond::rewrite`] runs the pipeline
//! and re-encodes), so one configuration serves the proxy and the service alike. Whatever pith
//! leaves alone (not HTML, the `pass` profile, too large, over the rewrite memory budget, a
//! coding it cannot undo) is answered `204 No Content`, right after the preview when the
//! headers decide it, so Squid serves its own copy and the body never travels twice. Only
//! when the client neither previews nor allows 204 is the response echoed back as it came.
//! A page longer than Squid buffers gets its answer's head before it is read whole
//! (`respmod.rs`: Squid stops reading the origin until the answer begins).
//!
//! Connections are persistent and share the proxy's bounds: `limits.max_connections` slots
//! (advertised as `Max-Connections`; not `max_connections_per_client`, since an ICAP client
//! is one proxy with many connections), the request-head size, field count and read timeout, the
//! body idle timeout (`upstream.body_idle_timeout`, Squid standing in for the origin), the
//! write timeout, and the shutdown drain. A malformed head, a lying chunk size or an
//! `Encapsulated` offset that does not fit gets `400 Bad Request`, a log line, and the
//! connection closed: after a framing error nothing that follows can be trusted.
//!
//! `respmod.rs` has the steps of one `RESPMOD`; this file the accept loop, the connection's
//! reading and writing, and `OPTIONS`.

mod respmod;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::net::reload::Live;
use crate::net::accept::admit;
use crate::net::State;
use crate::config::IcapConfig;
use crate::icap::{head, Chunk, ChunkParser, IcapError, IcapHead, Method};

/// How long a persistent connection may wait for its next request. Squid keeps idle ICAP
/// connections for reuse; one that stays silent this long is closed and its slot freed.
const IDLE: Duration = Duration::from_secs(60);

/// `Options-TTL`: how long a client may trust an `OPTIONS` answer (seconds). A reload that
/// changes the profile changes the `ISTag` of every answer, which tells the client sooner.
const OPTIONS_TTL: u64 = 3600;

/// `Preview`: bytes of the body sent before pith decides. The headers decide most responses;
/// the preview lets a small page arrive whole (`ieof`) without a `100 Continue` round trip,
/// and covers the sniffing of a response without Content-Type.
const PREVIEW: usize = 4096;

/// `Transfer-Ignore`: extensions of what pith never rewrites, which a client then sends no
/// ICAP request for at all. Anything else is previewed (`Transfer-Preview: *`).
const TRANSFER_IGNORE: &str = "jpg,jpeg,png,gif,webp,avif,ico,bmp,svg,css,js,mjs,json,woff,woff2,ttf,otf,eot,mp3,mp4,m4a,webm,ogg,wav,flac,avi,mov,mkv,zip,gz,tgz,bz2,xz,zst,7z,rar,tar,pdf,exe,msi,dmg,iso,deb,rpm,apk,bin,wasm";

/// Counts of what the ICAP listeners answered, for tests and operators.
#[derive(Debug, Default)]
pub struct Counters {
    /// `OPTIONS` requests answered.
    pub options: AtomicU64,
    /// `RESPMOD` requests answered (any status).
    pub respmod: AtomicU64,
    /// `RESPMOD` requests answered with a rewritten response.
    pub rewritten: AtomicU64,
    /// Requests refused as malformed (400).
    pub malformed: AtomicU64,
}

/// One `[[icap]]`'s accept loop.
pub(in crate::net) struct Acceptor {
    pub socket: TcpListener,
    /// The service's place in `[[icap]]`, which picks its settings from each state.
    pub index: usize,
    /// The settings it was bound with: kept when a reload removes the entry.
    pub bound: Arc<IcapConfig>,
    pub live: Arc<Live>,
    pub stop: watch::Receiver<bool>,
    pub counters: Arc<Counters>,
}

impl Acceptor {
    /// Accepts until told to stop. A client outside the allow list is closed at once; past
    /// `limits.max_connections` a connection waits `limits.connection_wait` for a slot, then
    /// gets `503` and is closed. Accept errors back off instead of spinning.
    pub async fn run(mut self) {
        let mut backoff = Duration::from_millis(5);
        loop {
            let accepted = tokio::select! {
                a = self.socket.accept() => a,
                _ = self.stop.changed() => return,
            };
            let (stream, client) = match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "ICAP accept failed; backing off {} ms", backoff.as_millis());
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            backoff = Duration::from_millis(5);
            let settings = self.settings(&self.live.current());
            if !admit::is_allowed(&settings.allow, client.ip()) {
                tracing::warn!(%client, service = %settings.address, "refused an ICAP client outside icap.allow");
                continue;
            }
            let conn = Conn::new(stream, client, self.index, self.bound.clone(), self.live.clone(), self.counters.clone());
            tokio::spawn(conn.start());
        }
    }

    fn settings(&self, state: &State) -> Arc<IcapConfig> {
        settings(state, self.index, &self.bound)
    }
}

/// The service's settings in `state`, or those it was bound with when a reload removed it.
fn settings(state: &State, index: usize, bound: &Arc<IcapConfig>) -> Arc<IcapConfig> {
    match state.config.icap.get(index) {
        Some(s) => Arc::new(IcapConfig { address: bound.address, ..s.clone() }),
        None => bound.clone(),
    }
}

fn method_name(method: &Method) -> &str {
    match method {
        Method::Options => "OPTIONS",
        Method::Respmod => "RESPMOD",
        Method::Reqmod => "REQMOD",
        Method::Other(m) => m,
    }
}

/// Why a connection stops serving.
#[derive(Debug)]
enum Failure {
    /// The peer sent something malformed: answered 400 (when no answer was started), closed.
    Bad(IcapError),
    /// The peer was silent too long while `what`.
    Timeout(&'static str),
    /// The peer closed the connection in the middle of a message.
    Closed,
    /// A read or write failed.
    Io(std::io::Error),
    /// A page whose head went early could not be rewritten after all (`too-large`,
    /// `over-budget`, `pass` for a coding that fails, `error`): its answer is cut short.
    Abandoned(&'static str),
}

impl From<IcapError> for Failure {
    fn from(e: IcapError) -> Self {
        Failure::Bad(e)
    }
}

/// A body chunk as the connection hands it on: owned data, or the end.
enum Piece {
    Data(Bytes),
    End { ieof: bool },
}

/// Longest a connection is kept open after a 400, reading what the client still sends.
const LINGER_FOR: Duration = Duration::from_secs(2);

/// Most bytes read and dropped after a 400 before the connection is closed regardless.
const LINGER_BYTES: usize = 4 << 20;

/// One ICAP client connection.
struct Conn {
    stream: TcpStream,
    /// Bytes read and not yet used; never more than a head's limit plus one read.
    buf: BytesMut,
    client: SocketAddr,
    index: usize,
    bound: Arc<IcapConfig>,
    live: Arc<Live>,
    counters: Arc<Counters>,
    /// The `ISTag` and the profile it was computed for (by address; the `Arc` keeps it alive).
    istag: Option<(Arc<crate::profile::Profile>, String)>,
    /// Set once a final answer to the current request has started: a failure after it can
    /// only close the connection.
    answering: bool,
    /// What the current request came to, for its log line.
    note: Note,
}

/// The access-log fields of one ICAP request that only its handling knows.
#[derive(Debug, Default)]
struct Note {
    /// The encapsulated request's URL.
    url: String,
    /// What pith did: `rewrite`, `pass`, `too-large`, `over-budget`, `error`; empty for
    /// requests that carry no response.
    action: &'static str,
}

impl Conn {
    fn new(stream: TcpStream, client: SocketAddr, index: usize, bound: Arc<IcapConfig>, live: Arc<Live>, counters: Arc<Counters>) -> Conn {
        Conn { stream, buf: BytesMut::new(), client, index, bound, live, counters, istag: None, answering: false, note: Note::default() }
    }

    /// Takes a connection slot (or answers 503), then serves until the client closes, a
    /// failure, or the shutdown drain's deadline.
    async fn start(mut self) {
        let _ = self.stream.set_nodelay(true);
        let permit = match self.live.limit.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                let wait = self.live.current().config.limits.connection_wait;
                match tokio::time::timeout(wait, self.live.limit.clone().acquire_owned()).await {
                    Ok(Ok(p)) => p,
                    _ => {
                        tracing::debug!(client = %self.client, "refused an ICAP connection: every slot is taken");
                        let _ = self.answer_status(503, "Service Unavailable", true).await;
                        return;
                    }
                }
            }
        };
        let guard = self.live.drain.guard(permit, None);
        let client = self.client;
        if guard.tunnel(self.serve()).await.is_none() {
            tracing::debug!(%client, "ICAP connection closed at the end of the shutdown drain");
        }
    }

    async fn serve(mut self) {
        loop {
            self.answering = false;
            self.note = Note::default();
            let state = self.live.current();
            let head = match self.read_head(&state).await {
                Ok(Some(head)) => head,
                Ok(None) => return,
                Err(failure) => return self.fail(failure, None).await,
            };
            let started = Instant::now();
            let result = match head.method {
                Method::Options => self.options(&state, &head).await,
                Method::Respmod => self.respmod(&state, &head).await,
                Method::Reqmod | Method::Other(_) => self.skip_and_answer(&state, &head, 405, "Method Not Allowed").await,
            };
            match result {
                Ok(status) => tracing::info!(
                    target: "pith::icap",
                    client = %self.client,
                    method = method_name(&head.method),
                    url = self.note.url,
                    status,
                    action = self.note.action,
                    ms = started.elapsed().as_millis() as u64,
                ),
                Err(failure) => return self.fail(failure, Some(&head)).await,
            }
            if head.close {
                return;
            }
        }
    }

    /// Logs a failure and, for a malformed message not yet answered, answers 400.
    async fn fail(&mut self, failure: Failure, head: Option<&IcapHead>) {
        let uri = head.map_or("", |h| h.uri.as_str());
        match failure {
            Failure::Bad(e) => {
                self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(client = %self.client, uri, error = %e, "malformed ICAP request: 400, connection closed");
                if !self.answering && self.answer_status(400, "Bad Request", true).await.is_ok() {
                    self.linger().await;
                }
            }
            Failure::Timeout(what) => tracing::debug!(client = %self.client, uri, "ICAP client silent too long {what}; closed"),
            Failure::Closed => tracing::debug!(client = %self.client, uri, "ICAP client closed the connection mid-message"),
            Failure::Io(e) => tracing::debug!(client = %self.client, uri, error = %e, "ICAP connection failed"),
            Failure::Abandoned(why) => tracing::warn!(
                client = %self.client,
                url = self.note.url,
                why,
                "icap: a page whose head was sent could not be rewritten; its answer is cut short and the connection closed"
            ),
        }
    }

    /// Closes after an answer given while the client may still be sending (an oversized head):
    /// the sending side is shut, then what the client still sends is read and dropped, for at
    /// most [`LINGER_FOR`] and [`LINGER_BYTES`]. Closing with unread bytes would make the
    /// kernel reset the connection, and the client would lose the answer it was sent.
    async fn linger(&mut self) {
        if self.stream.shutdown().await.is_err() {
            return;
        }
        let deadline = Instant::now() + LINGER_FOR;
        let mut read = 0;
        let mut sink = vec![0u8; 16 * 1024];
        while read < LINGER_BYTES {
            match tokio::time::timeout(deadline.saturating_duration_since(Instant::now()), self.stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => read += n,
                _ => return,
            }
        }
    }

    /// Reads the next request head: `None` when the client closed (or stayed idle) between
    /// requests. The head has `limits.header_read_timeout` from its first byte.
    async fn read_head(&mut self, state: &State) -> Result<Option<IcapHead>, Failure> {
        let limits = &state.config.limits;
        let mut deadline = None;
        loop {
            if let Some((head, used)) = head::parse_head(&self.buf, limits.max_header_bytes, limits.max_headers)? {
                self.buf.advance(used);
                return Ok(Some(head));
            }
            let wait = match deadline {
                None if self.buf.is_empty() => IDLE,
                None => *deadline.insert(Instant::now() + limits.header_read_timeout) - Instant::now(),
                Some(d) => d.saturating_duration_since(Instant::now()),
            };
            match self.fill(wait, "sending a request head").await {
                Ok(0) if self.buf.is_empty() => return Ok(None),
                Ok(0) => return Err(Failure::Closed),
                Ok(_) => {}
                Err(Failure::Timeout(_)) if self.buf.is_empty() => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads more bytes within `wait`; 0 at the end of the stream.
    async fn fill(&mut self, wait: Duration, what: &'static str) -> Result<usize, Failure> {
        self.buf.reserve(16 * 1024);
        match tokio::time::timeout(wait, self.stream.read_buf(&mut self.buf)).await {
            Err(_) => Err(Failure::Timeout(what)),
            Ok(Err(e)) => Err(Failure::Io(e)),
            Ok(Ok(n)) => Ok(n),
        }
    }

    /// Reads until `n` bytes are buffered, within `limits.header_read_timeout`.
    async fn fill_to(&mut self, n: usize, state: &State) -> Result<(), Failure> {
        let deadline = Instant::now() + state.config.limits.header_read_timeout;
        while self.buf.len() < n {
            if self.fill(deadline.saturating_duration_since(Instant::now()), "sending encapsulated heads").await? == 0 {
                return Err(Failure::Closed);
            }
        }
        Ok(())
    }

    /// The next piece of a chunked body; each read waits at most `upstream.body_idle_timeout`.
    async fn next_piece(&mut self, parser: &mut ChunkParser, state: &State) -> Result<Piece, Failure> {
        let idle = state.config.upstream.body_idle_timeout;
        loop {
            let step = parser.step(&self.buf)?;
            let used = step.used;
            match step.chunk {
                Some(Chunk::Data(data)) => {
                    let len = data.len();
                    let taken = self.buf.split_to(used).freeze();
                    return Ok(Piece::Data(taken.slice(used - len..)));
                }
                Some(Chunk::End { ieof }) => {
                    self.buf.advance(used);
                    return Ok(Piece::End { ieof });
                }
                None => {
                    self.buf.advance(used);
                    if self.fill(idle, "sending a body").await? == 0 {
                        return Err(Failure::Closed);
                    }
                }
            }
        }
    }

    /// Reads and drops a chunked body to its last chunk.
    async fn drain_body(&mut self, parser: &mut ChunkParser, state: &State) -> Result<(), Failure> {
        while !parser.is_done() {
            self.next_piece(parser, state).await?;
        }
        Ok(())
    }

    /// Writes `bytes` within `limits.client_write_timeout`.
    async fn send(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let wait = self.live.current().config.limits.client_write_timeout;
        match tokio::time::timeout(wait, self.stream.write_all(bytes)).await {
            Err(_) => Err(Failure::Timeout("reading the answer")),
            Ok(Err(e)) => Err(Failure::Io(e)),
            Ok(Ok(())) => Ok(()),
        }
    }

    /// The `ISTag` of this service's profile in `state`: a hash of everything that shapes
    /// its output ([`crate::cache::settings_hash`]), so it changes when a reload changes the
    /// rewriting and stays when it does not, and is the same on every pith with the same
    /// configuration and build.
    fn istag(&mut self, state: &State) -> String {
        let profile = settings(state, self.index, &self.bound).profile.clone();
        match &self.istag {
            Some((p, tag)) if Arc::ptr_eq(p, &profile) => tag.clone(),
            _ => {
                let tag = format!("\"pith-{:016x}\"", crate::cache::settings_hash(&profile));
                self.istag = Some((profile, tag.clone()));
                tag
            }
        }
    }

    /// An ICAP response head: status line, `ISTag`, `Service`, `Encapsulated`, then `extra`.
    fn response_head(&mut self, status: u16, reason: &str, encapsulated: &str, extra: &str) -> Vec<u8> {
        let istag = self.istag(&self.live.current());
        format!("ICAP/1.0 {status} {reason}\r\nISTag: {istag}\r\nService: pith/{}\r\nEncapsulated: {encapsulated}\r\n{extra}\r\n", env!("CARGO_PKG_VERSION")).into_bytes()
    }

    /// A bodiless answer (`Connection: close` when `close`).
    async fn answer_status(&mut self, status: u16, reason: &str, close: bool) -> Result<u16, Failure> {
        self.answering = true;
        let head = self.response_head(status, reason, "null-body=0", if close { "Connection: close\r\n" } else { "" });
        self.send(&head).await?;
        Ok(status)
    }

    /// `OPTIONS`: what the service does and how a client should use it.
    async fn options(&mut self, state: &State, head: &IcapHead) -> Result<u16, Failure> {
        self.skip_body(state, head).await?;
        self.counters.options.fetch_add(1, Ordering::Relaxed);
        let extra = format!(
            "Methods: RESPMOD\r\nService-ID: pith\r\nMax-Connections: {}\r\nOptions-TTL: {OPTIONS_TTL}\r\nAllow: 204\r\nPreview: {PREVIEW}\r\nTransfer-Preview: *\r\nTransfer-Ignore: {TRANSFER_IGNORE}\r\n",
            state.config.limits.max_connections
        );
        self.answering = true;
        let bytes = self.response_head(200, "OK", "null-body=0", &extra);
        self.send(&bytes).await?;
        Ok(200)
    }

    /// Reads past a request's encapsulated heads and body, unused, then answers `status`.
    async fn skip_and_answer(&mut self, state: &State, head: &IcapHead, status: u16, reason: &str) -> Result<u16, Failure> {
        self.skip_body(state, head).await?;
        self.answer_status(status, reason, false).await
    }

    /// Reads past what `Encapsulated` says follows the head. A preview is answered by the
    /// caller's final response, so a previewed body is read only to its preview's end.
    async fn skip_body(&mut self, state: &State, head: &IcapHead) -> Result<(), Failure> {
        let Some(enc) = &head.encapsulated else { return Ok(()) };
        self.fill_to(enc.body_offset, state).await?;
        self.buf.advance(enc.body_offset);
        if enc.body != crate::icap::Section::NullBody {
            self.drain_body(&mut ChunkParser::new(), state).await?;
        }
        Ok(())
    }
}
