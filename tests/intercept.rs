//! HTTPS interception: a local TLS origin with its own test root (which pith trusts by
//! config), pith with a CA in a temporary folder, and real clients (reqwest, tokio-rustls,
//! curl) that trust pith's CA. Pages arrive filtered over HTTP/1.1 and HTTP/2, bypass hosts
//! arrive byte-identical, an untrusted origin is a clear error, WebSockets pass through, and
//! non-TLS bytes inside a CONNECT are tunnelled, and early hints reach HTTP/1.1 clients inside.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::common::raw::{read_response, GUARD};
use crate::common::*;

/// A temporary CA folder, and the origin's root written where pith's config can name it.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        Setup { dir: tempfile::tempdir().expect("a temporary folder") }
    }

    fn ca_dir(&self) -> PathBuf {
        self.dir.path().join("ca")
    }

    /// Writes `cert` as a PEM file for `upstream.extra_root_certificates`.
    fn trust_file(&self, cert: &CertificateDer<'_>) -> PathBuf {
        let path = self.dir.path().join("origin-root.pem");
        std::fs::write(&path, pem(cert)).expect("write the origin's root");
        path
    }

    /// pith intercepting everything except `never`, trusting `root` for upstream TLS.
    async fn pith(&self, root: Option<&Path>, never: &[&str]) -> Pith {
        let roots = root.map(|p| format!("{:?}", p.display().to_string())).unwrap_or_default();
        let never: Vec<String> = never.iter().map(|h| format!("{h:?}")).collect();
        Pith::start(&format!(
            "[upstream]\nconnect_ports = []\nextra_root_certificates = [{roots}]\n[intercept]\nenabled = true\nca_dir = {:?}\nnever = [{}]\n",
            self.ca_dir().display().to_string(),
            never.join(", ")
        ))
        .await
    }

    /// pith's CA certificate, PEM, as a user downloads it.
    fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.ca_dir().join("ca.pem")).expect("pith created its CA certificate")
    }

    /// A reqwest client through `pith` trusting pith's CA (and nothing else extra).
    fn client(&self, pith: &Pith) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(self.ca_pem().as_bytes()).expect("a PEM certificate");
        pith.client_builder().add_root_certificate(ca).build().expect("a reqwest client")
    }

    /// A tokio-rustls connector trusting pith's CA only.
    fn connector(&self, alpn: &[&[u8]]) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(self.ca_pem().as_bytes()) {
            roots.add(cert.expect("a PEM certificate")).expect("a usable root");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

fn pem(cert: &CertificateDer<'_>) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
    let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).expect("base64 is ASCII")).collect();
    format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n"))
}

/// Sends `CONNECT target` on a new connection to pith and returns it once pith said 200.
async fn connect(pith: &Pith, target: &str) -> TcpStream {
    let mut client = pith.raw().await;
    client.send(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await;
    let resp = client.read_response(true).await;
    assert_eq!(resp.status, 200, "CONNECT {target}: {}", resp.text());
    client.into_inner().into_inner()
}

/// CONNECT, then a TLS handshake with pith as `name`.
async fn tls_through(setup: &Setup, pith: &Pith, target: &str, name: &str, alpn: &[&[u8]]) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = connect(pith, target).await;
    let name = ServerName::try_from(name.to_string()).expect("a server name");
    tokio::time::timeout(GUARD, setup.connector(alpn).connect(name, tcp)).await.expect("a handshake in time").expect("the client trusts pith's leaf")
}

#[tokio::test]
async fn html_over_https_arrives_decluttered_through_the_same_path() {
    let (origin, cert) = Origin::new().route("/page", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run_tls().await;
    let setup = Setup::new();
    let pith = setup.pith(Some(&setup.trust_file(&cert)), &[]).await;

    let resp = setup.client(&pith).get(format!("https://localhost:{}/page?q=1", origin.addr.port())).send().await.expect("the intercepted exchange succeeds");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.version(), reqwest::Version::HTTP_2, "reqwest offers h2 and pith's leaf config accepts it");
    let headers = resp.headers().clone();
    let body = resp.text().await.unwrap();
    assert_rewritten_headers(&headers, body.len());
    assert_decluttered(&body);

    let seen = origin.last();
    assert_eq!(seen.uri.path_and_query().map(|p| p.as_str()), Some("/page?q=1"), "the origin gets an origin-form target");
    assert_eq!(seen.header("host"), Some(format!("localhost:{}", origin.addr.port())));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(setup.ca_dir().join("ca-key.pem")).expect("the CA key exists").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the CA key is private");
    }
}

#[tokio::test]
async fn http1_clients_get_the_same_filtered_page_with_keep_alive() {
    let (origin, cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run_tls().await;
    let setup = Setup::new();
    let pith = setup.pith(Some(&setup.trust_file(&cert)), &[]).await;
    let target = format!("localhost:{}", origin.addr.port());
    let tls = tls_through(&setup, &pith, &target, "localhost", &[b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut tls = BufReader::new(tls);
    for _ in 0..3 {
        tls.get_mut().write_all(format!("GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.unwrap();
        let resp = tokio::time::timeout(GUARD, read_response(&mut tls, false)).await.expect("a response in time");
        assert_eq!(resp.status, 200);
        assert_decluttered(&resp.text());
    }
    assert_eq!(origin.received().len(), 3, "three requests on one client connection");
}

#[tokio::test]
async fn a_bypass_host_arrives_byte_identical_with_the_origins_certificate() {
    const PAGE: &str = "<html><body><script>kept()</script><p>untouched</p></body></html>";
    let (origin, cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], PAGE)).run_tls().await;
    let setup = Setup::new();
    let pith = setup.pith(None, &["localhost"]).await;
    // This client trusts only the origin: it would refuse a leaf from pith.
    let client = pith.client_builder().add_root_certificate(reqwest::Certificate::from_der(cert.as_ref()).unwrap()).tls_built_in_root_certs(false).build().unwrap();

    let resp = client.get(format!("https://localhost:{}/", origin.addr.port())).send().await.expect("a blind tunnel to the origin");
    assert!(resp.headers().get("x-pith").is_none() && resp.headers().get("via").is_none(), "nothing of pith's inside a bypassed tunnel");
    assert_eq!(resp.bytes().await.unwrap(), PAGE.as_bytes());
}

#[tokio::test]
async fn an_origin_pith_cannot_verify_is_an_error_page_naming_the_problem() {
    let (origin, _cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run_tls().await;
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;

    let resp = setup.client(&pith).get(format!("https://localhost:{}/", origin.addr.port())).send().await.expect("pith answers inside the tunnel");
    assert_eq!(resp.status(), 502);
    let text = resp.text().await.unwrap();
    assert!(text.contains("certificate of localhost is not trusted"), "{text}");
    assert!(text.contains("not signed by an authority pith trusts"), "{text}");
    assert!(origin.received().is_empty(), "no request reaches an unverified origin");
}

#[tokio::test]
async fn repeat_connects_reuse_one_leaf_and_addresses_get_ip_sans() {
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;
    // No origin is needed: the handshake with the client comes before any upstream request.
    let peer = |tls: &tokio_rustls::client::TlsStream<TcpStream>| tls.get_ref().1.peer_certificates().expect("a leaf")[0].clone();
    let first = peer(&tls_through(&setup, &pith, "shop.example:443", "shop.example", &[]).await);
    let again = peer(&tls_through(&setup, &pith, "shop.example:443", "shop.example", &[]).await);
    assert_eq!(first, again, "the second CONNECT gets the cached leaf");
    let other = peer(&tls_through(&setup, &pith, "news.example:443", "news.example", &[]).await);
    assert_ne!(first, other);
    // A client sends no SNI for an address: the CONNECT host names the leaf, as an IP SAN.
    tls_through(&setup, &pith, "127.0.0.2:443", "127.0.0.2", &[]).await;
}

#[tokio::test]
async fn non_tls_bytes_inside_an_intercepted_connect_are_tunnelled() {
    let echo = RawOrigin::start(|mut stream| async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    })
    .await;
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;
    let mut tunnel = connect(&pith, &echo.addr.to_string()).await;
    for message in [&b"plain words, not a ClientHello"[..], &b"\x00\xffmore"[..]] {
        tunnel.write_all(message).await.unwrap();
        let mut back = vec![0; message.len()];
        tokio::time::timeout(GUARD, tunnel.read_exact(&mut back)).await.expect("the echo comes back").unwrap();
        assert_eq!(back, message);
    }
}

#[tokio::test]
async fn a_server_first_protocol_inside_an_intercepted_connect_is_tunnelled_after_the_wait() {
    // An origin that speaks first (a mail or SSH banner): the client sends nothing until it
    // has read it, so pith must stop waiting for a ClientHello and open the tunnel.
    let banner = RawOrigin::start(|mut stream| async move {
        if stream.write_all(b"220 banner from the origin\r\n").await.is_err() {
            return;
        }
        let mut buf = [0u8; 64];
        if let Ok(n) = stream.read(&mut buf).await {
            let _ = stream.write_all(&buf[..n]).await;
        }
    })
    .await;
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;
    let mut tunnel = connect(&pith, &banner.addr.to_string()).await;
    let mut greeting = [0u8; 28];
    tokio::time::timeout(GUARD, tunnel.read_exact(&mut greeting)).await.expect("the banner arrives after the wait").unwrap();
    assert_eq!(&greeting, b"220 banner from the origin\r\n");
    tunnel.write_all(b"HELO").await.unwrap();
    let mut back = [0u8; 4];
    tokio::time::timeout(GUARD, tunnel.read_exact(&mut back)).await.expect("the echo").unwrap();
    assert_eq!(&back, b"HELO");
}

#[tokio::test]
async fn an_unreachable_intercepted_origin_is_an_error_page_inside_the_tunnel() {
    let (_holder, closed) = closed_port();
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;
    let target = format!("localhost:{}", closed.port());
    let mut tls = BufReader::new(tls_through(&setup, &pith, &target, "localhost", &[b"http/1.1"]).await);
    tls.get_mut().write_all(format!("GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.unwrap();
    let resp = tokio::time::timeout(GUARD, read_response(&mut tls, false)).await.expect("a response in time");
    assert_eq!(resp.status, 502);
    assert!(resp.text().contains("connection refused to localhost"), "{}", resp.text());
}

#[tokio::test]
async fn a_websocket_echo_works_through_an_intercepted_tunnel() {
    let (ws, cert) = WsOrigin::start(true).await;
    let setup = Setup::new();
    let pith = setup.pith(Some(&setup.trust_file(&cert)), &[]).await;
    let target = format!("localhost:{}", ws.port);
    let tls = tls_through(&setup, &pith, &target, "localhost", &[b"http/1.1"]).await;
    websocket_echo(tls, &format!("GET /chat HTTP/1.1\r\nHost: {target}\r\n")).await;
}

#[tokio::test]
async fn a_websocket_echo_works_over_plain_http() {
    let (ws, _cert) = WsOrigin::start(false).await;
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;
    let stream = TcpStream::connect(pith.addr).await.unwrap();
    websocket_echo(stream, &format!("GET http://127.0.0.1:{0}/chat HTTP/1.1\r\nHost: 127.0.0.1:{0}\r\n", ws.port)).await;
}

#[tokio::test]
async fn pith_offers_its_certificate_and_install_steps_but_never_its_key() {
    let setup = Setup::new();
    let pith = setup.pith(None, &[]).await;
    let client = pith.client();
    let page = client.get("http://pith/ca").send().await.unwrap();
    assert_eq!(page.status(), 200);
    let text = page.text().await.unwrap();
    for platform in ["Firefox", "Chrome", "macOS", "Windows", "Android", "iOS"] {
        assert!(text.contains(platform), "install steps for {platform}: {text}");
    }
    let pem = client.get("http://pith/ca.pem").send().await.unwrap();
    assert_eq!(pem.headers()["content-type"], "application/x-pem-file");
    assert_eq!(pem.text().await.unwrap(), setup.ca_pem(), "the download is the CA certificate");
    let der = client.get("http://pith/ca.crt").send().await.unwrap().bytes().await.unwrap();
    assert!(setup.ca_pem().contains(&base64::engine::general_purpose::STANDARD.encode(&der)[..60]));
    for path in ["/ca-key.pem", "/certs/ca-key.pem", "/ca.pem/../ca-key.pem"] {
        let resp = client.get(format!("http://pith{path}")).send().await.unwrap();
        assert!(!resp.text().await.unwrap().contains("PRIVATE KEY"), "{path} must not serve the key");
    }
}

#[tokio::test]
async fn without_interception_the_ca_page_says_so() {
    let pith = Pith::start("").await;
    let resp = pith.client().get("http://pith/ca.pem").send().await.unwrap();
    assert_eq!(resp.status(), 404);
    assert!(resp.text().await.unwrap().contains("HTTPS interception is off"));
}

#[tokio::test]
async fn curl_fetches_through_pith_trusting_its_ca() {
    let (origin, cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run_tls().await;
    let setup = Setup::new();
    let pith = setup.pith(Some(&setup.trust_file(&cert)), &[]).await;
    // Interception creates the CA when pith starts; the script gets its certificate's path.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/intercept_curl.sh");
    let args = [pith.addr.to_string(), format!("https://localhost:{}/", origin.addr.port()), setup.ca_dir().join("ca.pem").display().to_string()];
    let run = tokio::task::spawn_blocking(move || std::process::Command::new("sh").arg(script).args(args).output());
    let out = tokio::time::timeout(GUARD * 3, run).await.expect("curl finishes").unwrap().expect("sh runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the curl check failed: {stdout}{stderr}");
    assert!(stdout.contains("curl through pith: ok"), "{stdout}");
    assert_eq!(origin.received().len(), 1);
}

/// A WebSocket echo origin (HTTPS with a fresh self-signed certificate for `localhost`, or
/// plain HTTP): it answers the handshake with 101 and echoes each small text frame.
struct WsOrigin {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WsOrigin {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WsOrigin {
    async fn start(tls: bool) -> (WsOrigin, CertificateDer<'static>) {
        let (config, cert) = crate::common::origin::localhost_tls_config();
        let acceptor = tls.then(|| tokio_rustls::TlsAcceptor::from(Arc::new(config)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        Some(a) => {
                            if let Ok(s) = a.accept(stream).await {
                                ws_serve(s).await
                            }
                        }
                        None => ws_serve(stream).await,
                    }
                });
            }
        });
        (WsOrigin { port, task }, cert)
    }
}

async fn ws_serve<S: AsyncRead + AsyncWrite + Unpin>(stream: S) {
    let mut stream = BufReader::new(stream);
    let head = crate::common::raw::read_head(&mut stream).await.to_ascii_lowercase();
    if !head.contains("upgrade: websocket") || !head.contains("connection: upgrade") {
        let _ = stream.get_mut().write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").await;
        return;
    }
    let accept = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    if stream.get_mut().write_all(accept.as_bytes()).await.is_err() {
        return;
    }
    // Frames: FIN+text, a masked payload under 126 bytes; echoed unmasked, as servers send.
    loop {
        let mut head = [0u8; 6];
        if stream.read_exact(&mut head).await.is_err() {
            return;
        }
        let len = usize::from(head[1] & 0x7f);
        let mut payload = vec![0u8; len];
        if stream.read_exact(&mut payload).await.is_err() {
            return;
        }
        payload.iter_mut().enumerate().for_each(|(i, b)| *b ^= head[2 + i % 4]);
        let mut frame = vec![0x81, len as u8];
        frame.extend_from_slice(&payload);
        if stream.get_mut().write_all(&frame).await.is_err() {
            return;
        }
    }
}

/// Sends a WebSocket handshake (`request_start` is the request line and Host), expects 101,
/// then sends two masked text frames and reads each echo.
async fn websocket_echo<S: AsyncRead + AsyncWrite + Unpin>(stream: S, request_start: &str) {
    let mut stream = BufReader::new(stream);
    let handshake = format!("{request_start}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    stream.get_mut().write_all(handshake.as_bytes()).await.unwrap();
    let head = tokio::time::timeout(GUARD, crate::common::raw::read_head(&mut stream)).await.expect("a handshake answer");
    assert!(head.starts_with("HTTP/1.1 101"), "the switch passes through: {head}");
    assert!(head.to_ascii_lowercase().contains("upgrade: websocket"), "{head}");
    for text in ["hello through pith", "second frame"] {
        let mask = [0x12, 0x34, 0x56, 0x78];
        let mut frame = vec![0x81, 0x80 | text.len() as u8];
        frame.extend_from_slice(&mask);
        frame.extend(text.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        stream.get_mut().write_all(&frame).await.unwrap();
        let mut back = vec![0u8; 2 + text.len()];
        tokio::time::timeout(GUARD, stream.read_exact(&mut back)).await.expect("the echo in time").unwrap();
        assert_eq!(&back[..2], &[0x81, text.len() as u8]);
        assert_eq!(&back[2..], text.as_bytes());
    }
}

/// Runs the `pith` binary to completion.
fn pith_command(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pith")).args(args).env_remove("RUST_LOG").output().expect("run the pith binary")
}

#[test]
fn ca_commands_create_locate_and_export_the_certificate_never_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.toml");
    // A relative ca_dir resolves against the config file's folder.
    std::fs::write(&config, "[[listener]]\naddress = \"127.0.0.1:0\"\n[intercept]\nca_dir = \"my-ca\"\n").unwrap();
    let run = |action: &str| pith_command(&["ca".as_ref(), action.as_ref(), "--config".as_ref(), config.as_os_str()]);
    let cert = dir.path().join("my-ca").join("ca.pem");

    let before = run("path");
    assert_eq!(before.status.code(), Some(1), "no CA yet");
    assert_eq!(String::from_utf8_lossy(&before.stdout).trim(), cert.display().to_string());

    let init = run("init");
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    assert!(String::from_utf8_lossy(&init.stdout).starts_with("created"), "{}", String::from_utf8_lossy(&init.stdout));
    assert!(String::from_utf8_lossy(&init.stderr).contains("--cacert"), "init says how to trust it");
    let again = run("init");
    assert!(String::from_utf8_lossy(&again.stdout).starts_with("exists:"), "a second init keeps the CA");

    assert!(run("path").status.success());
    let export = run("export");
    assert!(export.status.success());
    let exported = String::from_utf8(export.stdout).unwrap();
    assert_eq!(exported, std::fs::read_to_string(&cert).unwrap());
    for output in [&init, &again, &run("path")] {
        let all = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!all.contains("PRIVATE KEY"), "the key is never printed: {all}");
    }
}

#[test]
fn serve_creates_the_ca_on_first_use_and_says_once_how_to_trust_it() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("proxy.toml");
    std::fs::write(&config, "[log]\nlevel = \"info\"\n[[listener]]\naddress = \"127.0.0.1:0\"\n[intercept]\nenabled = true\nca_dir = \"ca\"\n").unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(["serve".as_ref(), "--config".as_ref(), config.as_os_str()])
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the pith binary");
    let stderr = child.stderr.take().expect("piped stderr");
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    // "proxy on http://" is printed once start-up (CA included) is done.
    while !seen.iter().any(|l: &String| l.contains("proxy on http://")) {
        match lines_rx.recv_timeout(GUARD) {
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = seen.join("\n");
    assert_eq!(log.matches("HTTPS interception uses the local CA certificate").count(), 1, "said once:\n{log}");
    assert!(log.contains(&dir.path().join("ca").join("ca.pem").display().to_string()), "names the certificate:\n{log}");
    assert!(log.contains("created a local CA"), "{log}");
    assert!(!log.contains("PRIVATE KEY"), "{log}");
    assert!(dir.path().join("ca").join("ca-key.pem").exists());
}

/// A certificate verifier that accepts anything and keeps the leaf it was shown, to see who
/// answered a handshake whatever name the client asked for.
#[derive(Debug, Default)]
struct Recorder {
    leaf: std::sync::Mutex<Option<CertificateDer<'static>>>,
}

impl rustls::client::danger::ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.leaf.lock().unwrap() = Some(end_entity.clone().into_owned());
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, _m: &[u8], _c: &CertificateDer<'_>, _d: &rustls::DigitallySignedStruct) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(&self, _m: &[u8], _c: &CertificateDer<'_>, _d: &rustls::DigitallySignedStruct) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

/// CONNECT `target`, then a TLS handshake sending `sni`; returns the leaf shown, if the
/// handshake completed.
async fn handshake_with_sni(pith: &Pith, target: &str, sni: &str) -> Option<CertificateDer<'static>> {
    let tcp = connect(pith, target).await;
    let recorder = Arc::new(Recorder::default());
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    let name = ServerName::try_from(sni.to_string()).expect("a server name");
    let done = tokio::time::timeout(GUARD, tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp)).await.expect("an outcome in time");
    let leaf = recorder.leaf.lock().unwrap().clone();
    done.ok().and(leaf)
}

#[tokio::test]
async fn an_sni_other_than_the_connect_host_gets_no_leaf() {
    let (origin, cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run_tls().await;
    let setup = Setup::new();
    let pith = setup.pith(Some(&setup.trust_file(&cert)), &["bank.example"]).await;
    let target = format!("localhost:{}", origin.addr.port());

    let leaf = handshake_with_sni(&pith, &target, "localhost").await.expect("the CONNECT host's own name is intercepted");
    assert_ne!(leaf, cert, "pith's leaf, not the origin's");

    // A name on the never list: tunnelled untouched, so the origin itself answers.
    let leaf = handshake_with_sni(&pith, &target, "bank.example").await.expect("a blind tunnel to the origin");
    assert_eq!(leaf, cert, "the origin's own certificate, never a leaf for a `never` host");

    // Any other name: refused, no certificate shown at all.
    assert_eq!(handshake_with_sni(&pith, &target, "other.example").await, None, "no leaf for a host pith does not connect to");
    assert_eq!(handshake_with_sni(&pith, &target, "localhost.other.example").await, None);
    assert_eq!(origin.connections(), 1, "only the blind tunnel reached the origin");
}

/// A TLS origin for `localhost` that answers every request with `103 Early Hints`, then a 200.
async fn hinting_tls_origin() -> (u16, CertificateDer<'static>, tokio::task::JoinHandle<()>) {
    let (config, cert) = crate::common::origin::localhost_tls_config();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let mut tls = BufReader::new(tls);
                crate::common::raw::read_head(&mut tls).await;
                let reply = "HTTP/1.1 103 Early Hints\r\nLink: </app.js>; rel=preload; as=script\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nsafe";
                let _ = tls.get_mut().write_all(reply.as_bytes()).await;
                let _ = tls.get_mut().shutdown().await;
            });
        }
    });
    (port, cert, task)
}

#[tokio::test]
async fn early_hints_reach_an_http1_client_inside_an_intercepted_tunnel() {
    let (port, cert, origin) = hinting_tls_origin().await;
    let setup = Setup::new();
    let pith = setup.pith(Some(&setup.trust_file(&cert)), &[]).await;
    let target = format!("localhost:{port}");
    let tls = tls_through(&setup, &pith, &target, "localhost", &[b"http/1.1"]).await;
    let mut tls = BufReader::new(tls);
    tls.get_mut().write_all(format!("GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.unwrap();
    let hint = tokio::time::timeout(GUARD, read_response(&mut tls, false)).await.expect("a response in time");
    assert_eq!(hint.status, 103);
    assert_eq!(hint.header("link"), Some("</app.js>; rel=preload; as=script"));
    let last = tokio::time::timeout(GUARD, read_response(&mut tls, false)).await.expect("a response in time");
    assert_eq!((last.status, last.text().as_str()), (200, "safe"));
    origin.abort();
}
