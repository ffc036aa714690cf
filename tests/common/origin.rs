//! Origins for the proxy to talk to: a well-behaved hyper server with routes that records what
//! it receives, a TLS variant of it, and raw TCP origins for misbehaviour hyper would not allow.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::{self, Stream};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The body type origin routes answer with.
pub type Body = BoxBody<Bytes, std::io::Error>;

/// One request as the origin received it, body collected.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    /// A header's value as text, if present.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).map(|v| v.to_str().expect("ASCII header").to_string())
    }
}

type Handler = Arc<dyn Fn(&Received) -> Response<Body> + Send + Sync>;

/// Routes by exact path; a request for any other path gets 404.
#[derive(Clone, Default)]
pub struct Origin {
    routes: Vec<(String, Handler)>,
}

/// What a running origin shares with its connection tasks.
struct Shared {
    routes: Vec<(String, Handler)>,
    received: Mutex<Vec<Received>>,
    connections: AtomicUsize,
}

impl Origin {
    /// An origin with no routes yet.
    pub fn new() -> Origin {
        Origin::default()
    }

    /// Answers `path` with `handler`.
    pub fn route(mut self, path: &str, handler: impl Fn(&Received) -> Response<Body> + Send + Sync + 'static) -> Origin {
        self.routes.push((path.to_string(), Arc::new(handler)));
        self
    }

    /// Serves plain HTTP on 127.0.0.1, port 0.
    pub async fn run(self) -> RunningOrigin {
        self.start(None).await
    }

    /// Serves plain HTTP on `bind` (e.g. `"[::1]:0"`).
    pub async fn run_at(self, bind: &str) -> RunningOrigin {
        self.start_at(bind, None).await
    }

    /// Serves HTTPS on 127.0.0.1, port 0, with a fresh self-signed certificate for
    /// `localhost`; returns the origin and the certificate a client must trust.
    pub async fn run_tls(self) -> (RunningOrigin, CertificateDer<'static>) {
        let (mut config, cert) = localhost_tls_config();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        (self.start(Some(acceptor)).await, cert)
    }

    async fn start(self, tls: Option<tokio_rustls::TlsAcceptor>) -> RunningOrigin {
        self.start_at("127.0.0.1:0", tls).await
    }

    async fn start_at(self, bind: &str, tls: Option<tokio_rustls::TlsAcceptor>) -> RunningOrigin {
        let listener = TcpListener::bind(bind).await.expect("bind an origin port");
        let addr = listener.local_addr().expect("origin address");
        let shared = Arc::new(Shared { routes: self.routes, received: Mutex::new(Vec::new()), connections: AtomicUsize::new(0) });
        let (stop, mut stopped) = oneshot::channel::<()>();
        let accept_shared = shared.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = &mut stopped => return,
                };
                let Ok((stream, _)) = accepted else { continue };
                accept_shared.connections.fetch_add(1, Ordering::SeqCst);
                let shared = accept_shared.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        None => serve_connection(stream, shared).await,
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                serve_connection(stream, shared).await;
                            }
                        }
                    }
                });
            }
        });
        RunningOrigin { addr, shared, _stop: stop }
    }
}

async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: S, shared: Arc<Shared>) {
    let service = service_fn(move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            let received = Received { method: parts.method, uri: parts.uri, headers: parts.headers, body };
            shared.received.lock().expect("not poisoned").push(received.clone());
            let handler = shared.routes.iter().find(|(path, _)| *path == received.uri.path()).map(|(_, h)| h.clone());
            let response = match handler {
                Some(h) => h(&received),
                None => status(StatusCode::NOT_FOUND, "no such route"),
            };
            Ok::<_, Infallible>(response)
        }
    });
    let _ = http1::Builder::new().serve_connection(TokioIo::new(io), service).await;
}

/// A running origin; it stops accepting when dropped.
pub struct RunningOrigin {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: oneshot::Sender<()>,
}

impl RunningOrigin {
    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().expect("not poisoned").clone()
    }

    /// The last request received.
    pub fn last(&self) -> Received {
        self.received().pop().expect("the origin received a request")
    }

    /// Requests received so far for `path` (any method, any query): how often the origin
    /// was reached for it.
    pub fn count(&self, path: &str) -> usize {
        self.shared.received.lock().expect("not poisoned").iter().filter(|r| r.uri.path() == path).count()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

/// A TLS server configuration with a fresh self-signed certificate for `localhost`, and that
/// certificate, which a client must trust.
pub fn localhost_tls_config() -> (rustls::ServerConfig, CertificateDer<'static>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("rcgen makes a certificate");
    let cert = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .expect("the generated key matches its certificate");
    (config, cert)
}

/// A 200 response with the given headers and a body of known length.
pub fn reply(headers: &[(&str, &str)], body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()).map_err(|never| match never {}).boxed());
    for (name, value) in headers {
        resp.headers_mut().append(http::HeaderName::from_bytes(name.as_bytes()).expect("header name"), value.parse().expect("header value"));
    }
    resp
}

/// A 200 response sent with chunked framing, one chunk per element.
pub fn reply_chunked(headers: &[(&str, &str)], chunks: Vec<Bytes>) -> Response<Body> {
    reply_stream(headers, stream::iter(chunks))
}

/// A 200 response whose body is produced lazily by `chunks` (chunked framing, never held in
/// one buffer).
pub fn reply_stream(headers: &[(&str, &str)], chunks: impl Stream<Item = Bytes> + Send + Sync + 'static) -> Response<Body> {
    use futures_util::StreamExt;
    let body = StreamBody::new(chunks.map(|c| Ok::<_, std::io::Error>(Frame::data(c))));
    let mut resp = Response::new(BodyExt::boxed(body));
    for (name, value) in headers {
        resp.headers_mut().append(http::HeaderName::from_bytes(name.as_bytes()).expect("header name"), value.parse().expect("header value"));
    }
    resp
}

/// A plain-text response with a status.
pub fn status(code: StatusCode, text: &str) -> Response<Body> {
    let mut resp = reply(&[("content-type", "text/plain")], text.to_string());
    *resp.status_mut() = code;
    resp
}

/// An origin speaking raw TCP, one task per connection running `handler`; for behaviour a
/// correct HTTP server cannot produce. Stops (and drops its connections) when dropped.
pub struct RawOrigin {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl RawOrigin {
    /// Starts accepting on 127.0.0.1, port 0.
    pub async fn start<F, Fut>(handler: F) -> RawOrigin
    where
        F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a raw origin port");
        let addr = listener.local_addr().expect("raw origin address");
        let connections = Arc::new(Mutex::new(Vec::new()));
        let tasks = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let conn = tokio::spawn(handler(stream));
                tasks.lock().expect("not poisoned").push(conn);
            }
        });
        RawOrigin { addr, task, connections }
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for RawOrigin {
    fn drop(&mut self) {
        self.task.abort();
        for conn in self.connections.lock().expect("not poisoned").drain(..) {
            conn.abort();
        }
    }
}
