//! What HTTPS interception costs, as figures taken in one run.
//!
//! - `tls/handshake`: CONNECT plus a full TLS handshake with pith, for a host pith has never
//!   seen (a new leaf: key generation and signature) and for a host whose leaf is cached.
//!   The client does not resume sessions, so each handshake is a full one. No origin is
//!   involved: pith answers the handshake before it contacts anyone. One element = one
//!   handshake, so criterion's elem/s is handshakes per second.
//! - `tls/leaf/issue`: what a new host adds, alone: one P-256 key and one signature by the CA
//!   (`Authority::issue`), in this thread.
//! - `tls/keep-alive`: one small page (about 2 KB) fetched again and again over one
//!   keep-alive HTTP/1.1 connection, through pith's `pass` profile: as plain HTTP (`http`),
//!   through an intercepted CONNECT (`https-intercepted`: TLS from the client to pith and from
//!   pith to the origin, pooled) and through a blind CONNECT tunnel (`https-tunnel`: one TLS
//!   session end to end). One element = one request, so elem/s is requests per second.
//!
//! Everything runs in this process on one tokio runtime, with loopback origins (plain and
//! TLS, a fresh self-signed certificate pith trusts by config) and a CA in a temporary folder.
//!
//! Run: `cargo bench --bench tls`.

use std::fmt::Display;
use std::hint::black_box;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// The page every request fetches: small, so the figures are the transport's, not the body's.
fn page() -> Bytes {
    let para = "<p>A paragraph of an ordinary page, long enough to be a real response body.</p>\n";
    Bytes::from(format!("<!DOCTYPE html><html><body>{}</body></html>", para.repeat(24)))
}

fn must<T, E: Display>(result: Result<T, E>, what: &str) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Serves [`page`] on 127.0.0.1:0, over TLS when `tls` is given.
async fn start_origin(tls: Option<tokio_rustls::TlsAcceptor>) -> SocketAddr {
    let listener = must(TcpListener::bind("127.0.0.1:0").await, "bind an origin");
    let addr = must(listener.local_addr(), "origin address");
    let body = page();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (tls, body) = (tls.clone(), body.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_req| {
                    let mut resp = Response::new(Full::new(body.clone()));
                    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/html"));
                    std::future::ready(Ok::<_, std::convert::Infallible>(resp))
                });
                let builder = hyper::server::conn::http1::Builder::new();
                match tls {
                    None => drop(builder.serve_connection(TokioIo::new(stream), service).await),
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            drop(builder.serve_connection(TokioIo::new(stream), service).await);
                        }
                    }
                }
            });
        }
    });
    addr
}

/// A TLS acceptor for `localhost` with a fresh self-signed certificate, and that certificate.
fn origin_tls() -> (tokio_rustls::TlsAcceptor, CertificateDer<'static>) {
    let certified = must(rcgen::generate_simple_self_signed(vec!["localhost".to_string()]), "an origin certificate");
    let cert = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = must(rustls::ServerConfig::builder_with_provider(provider).with_safe_default_protocol_versions(), "TLS versions");
    let config = must(builder.with_no_client_auth().with_single_cert(vec![cert.clone()], key), "an origin TLS config");
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), cert)
}

fn pem(cert: &CertificateDer<'_>) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
    let lines: Vec<String> = b64.as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n"))
}

/// pith with the `pass` profile, intercepting every host but 127.0.0.1 (the tunnel case),
/// trusting `root_file` upstream, its CA in `ca_dir`.
async fn start_pith(root_file: &Path, ca_dir: &Path) -> SocketAddr {
    let toml = format!(
        "[log]\nlevel = \"warn\"\n[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n\
         [upstream]\nsend_via = false\nconnect_ports = []\nextra_root_certificates = [{:?}]\n\
         [intercept]\nenabled = true\nca_dir = {:?}\nnever = [\"127.0.0.1\"]\nmax_hosts = 1000000\n",
        root_file.display().to_string(),
        ca_dir.display().to_string()
    );
    let config = must(pith::config::Config::from_toml_str(&toml, "bench.toml", None), "the bench config");
    let proxy = must(pith::net::Proxy::bind(config).await, "pith starts");
    let addr = proxy.local_addrs()[0];
    tokio::spawn(proxy.run(std::future::pending()));
    addr
}

/// A TLS client trusting `roots`, without session resumption so every handshake is full.
fn connector(roots: &[CertificateDer<'static>]) -> tokio_rustls::TlsConnector {
    let mut store = rustls::RootCertStore::empty();
    for root in roots {
        must(store.add(root.clone()), "a usable root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = must(rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions(), "TLS versions");
    let mut config = builder.with_root_certificates(store).with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// CONNECT `target` through pith; the connection once pith said 200.
async fn connect(pith: SocketAddr, target: &str) -> TcpStream {
    let stream = must(TcpStream::connect(pith).await, "connect to pith");
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream);
    must(reader.get_mut().write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await, "send CONNECT");
    let mut status = String::new();
    must(reader.read_line(&mut status).await, "read the CONNECT answer");
    assert!(status.starts_with("HTTP/1.1 200"), "CONNECT {target}: {status}");
    loop {
        let mut line = String::new();
        must(reader.read_line(&mut line).await, "read the CONNECT answer");
        if line == "\r\n" || line.is_empty() {
            return reader.into_inner();
        }
    }
}

/// CONNECT and a full handshake with pith as `name`.
async fn handshake(pith: SocketAddr, tls: &tokio_rustls::TlsConnector, target: &str, name: &str) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = connect(pith, target).await;
    let server_name = must(ServerName::try_from(name.to_string()), "a server name");
    must(tls.connect(server_name, tcp).await, "the TLS handshake")
}

/// Opens HTTP/1.1 over `io` and drives the connection on the runtime.
async fn http1<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(io: I) -> SendRequest<Empty<Bytes>> {
    let (sender, conn) = must(hyper::client::conn::http1::handshake(TokioIo::new(io)).await, "HTTP handshake");
    tokio::spawn(conn);
    sender
}

/// GETs `target` (absolute- or origin-form) with `host` and returns the whole body.
async fn get(sender: &mut SendRequest<Empty<Bytes>>, target: &str, host: &str) -> Bytes {
    let request = must(Request::get(target).header(http::header::HOST, host).body(Empty::new()), "a request");
    must(sender.ready().await, "the connection stays open");
    let response = must(sender.send_request(request).await, "a response");
    assert_eq!(response.status(), StatusCode::OK, "{target}");
    must(response.into_body().collect().await, "a whole body").to_bytes()
}

fn handshakes(c: &mut Criterion, rt: &Runtime, pith: SocketAddr, tls: &tokio_rustls::TlsConnector) {
    let mut group = c.benchmark_group("tls/handshake");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    let mut n = 0u64;
    group.bench_function("new-host", |b| {
        b.iter(|| {
            n += 1;
            let name = format!("h{n}.bench.test");
            black_box(rt.block_on(handshake(pith, tls, &format!("{name}:443"), &name)))
        })
    });
    group.bench_function("cached-host", |b| b.iter(|| black_box(rt.block_on(handshake(pith, tls, "cached.bench.test:443", "cached.bench.test")))));
    group.finish();
}

fn issue(c: &mut Criterion, ca_dir: &Path) {
    let ca = must(pith::tls::Authority::load(ca_dir), "load pith's CA");
    let mut group = c.benchmark_group("tls/leaf");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(2));
    let mut n = 0u64;
    group.bench_function("issue", |b| {
        b.iter(|| {
            n += 1;
            black_box(must(ca.issue(&format!("h{n}.issue.test")), "a leaf"))
        })
    });
    group.finish();
}

fn keep_alive(c: &mut Criterion, rt: &Runtime, pith: SocketAddr, plain: SocketAddr, secure: SocketAddr, roots: &[CertificateDer<'static>]) {
    let tls = connector(roots);
    let secure_host = format!("localhost:{}", secure.port());
    let tunnel_host = format!("127.0.0.1:{}", secure.port());
    let mut http = rt.block_on(async { http1(must(TcpStream::connect(pith).await, "connect to pith")).await });
    let mut intercepted = rt.block_on(async { http1(handshake(pith, &tls, &secure_host, "localhost").await).await });
    let mut tunnel = rt.block_on(async { http1(handshake(pith, &tls, &tunnel_host, "localhost").await).await });
    let plain_url = format!("http://{plain}/page");
    let expected = page();
    for body in [rt.block_on(get(&mut http, &plain_url, &plain.to_string())), rt.block_on(get(&mut intercepted, "/page", &secure_host)), rt.block_on(get(&mut tunnel, "/page", &tunnel_host))] {
        assert_eq!(body, expected, "every path serves the page unchanged (pass profile)");
    }
    let mut group = c.benchmark_group("tls/keep-alive");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("http", |b| b.iter(|| black_box(rt.block_on(get(&mut http, &plain_url, &plain.to_string())))));
    group.bench_function("https-intercepted", |b| b.iter(|| black_box(rt.block_on(get(&mut intercepted, "/page", &secure_host)))));
    group.bench_function("https-tunnel", |b| b.iter(|| black_box(rt.block_on(get(&mut tunnel, "/page", &tunnel_host)))));
    group.finish();
}

fn tls(c: &mut Criterion) {
    let rt = must(tokio::runtime::Builder::new_multi_thread().enable_all().build(), "the tokio runtime");
    let dir = must(tempfile::tempdir(), "a temporary folder");
    let (acceptor, origin_cert) = origin_tls();
    let root_file = dir.path().join("origin.pem");
    must(std::fs::write(&root_file, pem(&origin_cert)), "write the origin root");
    let (plain, secure) = rt.block_on(async { (start_origin(None).await, start_origin(Some(acceptor)).await) });
    let pith = rt.block_on(start_pith(&root_file, &dir.path().join("ca")));
    let ca_pem = must(std::fs::read(dir.path().join("ca/ca.pem")), "pith created its CA");
    let ca: CertificateDer<'static> = must(rustls::pki_types::pem::PemObject::from_pem_slice(&ca_pem), "the CA certificate");
    let _entered = rt.enter();
    handshakes(c, &rt, pith, &connector(std::slice::from_ref(&ca)));
    issue(c, &dir.path().join("ca"));
    keep_alive(c, &rt, pith, plain, secure, &[ca, origin_cert]);
}

criterion_group!(benches, tls);
criterion_main!(benches);
