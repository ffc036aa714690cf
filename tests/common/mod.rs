//! The integration-test harness: a real pith on 127.0.0.1:0 ([`Pith`]), origins it talks to
//! ([`origin`]), a real HTTP client configured to use it, raw TCP for what a real client will not
//! send ([`raw`]), and the content-codings to build and check bodies ([`codec`]).
//!
//! Everything listens on loopback port 0 and stops through a oneshot (or task abort) when its
//! handle is dropped. Nothing sleeps to synchronise.

pub mod binary;
pub mod codec;
pub mod got;
pub mod logs;
pub mod origin;
pub mod raw;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::oneshot;

pub use origin::{reply, reply_chunked, reply_stream, Origin, RawOrigin, RunningOrigin};
pub use raw::{exchange, RawClient};

/// The profiles proxy.toml ships, for configs written by the tests.
pub const PROFILES: &str = "[profiles.declutter]\nrules = \"declutter\"\noutput = \"html\"\n\n[profiles.text]\nrules = \"declutter\"\noutput = \"text\"\n";

/// A running proxy; it shuts down when dropped.
pub struct Pith {
    /// The first listener's address.
    pub addr: SocketAddr,
    /// Every listener's address, in config order.
    pub addrs: Vec<SocketAddr>,
    _stop: oneshot::Sender<()>,
}

impl Pith {
    /// One listener on 127.0.0.1:0 serving `declutter` unless told otherwise; `extra` is
    /// appended to its `[[listener]]` table, so it may start with listener keys
    /// (`profile = "pass"`) and go on with other tables (`[upstream]`, `[limits]`). The
    /// `declutter` and `text` profiles of the shipped proxy.toml are defined.
    pub async fn start(extra: &str) -> Pith {
        let profile = if extra.contains("profile =") { "" } else { "profile = \"declutter\"\n" };
        Pith::from_config(&format!("[[listener]]\naddress = \"127.0.0.1:0\"\n{profile}{extra}\n{PROFILES}")).await
    }

    /// A proxy running exactly `toml`.
    pub async fn from_config(toml: &str) -> Pith {
        init_tracing();
        let config = pith::config::Config::from_toml_str(toml, "test.toml", None).unwrap_or_else(|e| panic!("test config rejected: {e}\n{toml}"));
        let proxy = pith::net::Proxy::bind(config).await.expect("the proxy binds 127.0.0.1:0");
        let addrs = proxy.local_addrs();
        let addr = addrs[0];
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(proxy.run(async move {
            let _ = stopped.await;
        }));
        Pith { addr, addrs, _stop: stop }
    }

    /// Starts shutting down: no new connections, in-flight requests drain.
    pub fn stop(self) {}

    /// A client that sends every request through this proxy and never decodes bodies itself,
    /// so that tests see the bytes pith sent.
    pub fn client(&self) -> reqwest::Client {
        self.client_builder().build().expect("a reqwest client")
    }

    /// The builder behind [`Pith::client`], for tests that add to it.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        client_builder(self.proxy())
    }

    /// The proxy setting for reqwest.
    pub fn proxy(&self) -> reqwest::Proxy {
        reqwest::Proxy::all(format!("http://{}", self.addr)).expect("a proxy URL")
    }

    /// A raw TCP connection to the proxy.
    pub async fn raw(&self) -> RawClient {
        RawClient::connect(self.addr).await
    }
}

/// A reqwest builder using `proxy`, with automatic decompression off and a guard timeout.
pub fn client_builder(proxy: reqwest::Proxy) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .proxy(proxy)
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        // A ceiling for a broken build, never a measurement.
        .timeout(Duration::from_secs(60))
}

/// Logs go to the test's captured output; `RUST_LOG=pith=debug` shows them for one test.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
}

/// A page with every kind of clutter the declutter rules remove, around text that must stay.
pub const CLUTTERED: &str = r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>The title stays</title>
<script>var tracker = "SCRIPT-BODY";</script>
<style>p { color: red }</style>
</head>
<body onload="init()">
<h1 style="color:blue">Heading text stays</h1>
<p onclick="steal()">First paragraph stays.</p>
<iframe src="http://ads.example/frame"></iframe>
<form action="/s"><input name="q"><button>Go</button></form>
<p><a href="javascript:alert(1)">script link text stays</a> and <a href="/next">a real link</a>.</p>
</body></html>
"#;

/// Asserts that `html` is [`CLUTTERED`] with its clutter removed and its text kept. pith's
/// phone viewport and stylesheet are the only style left: once on a page the removers ran over,
/// never on a stage-1 page (`preset = "none"`), which is streamed without a tree.
pub fn assert_decluttered(html: &str) {
    assert!(html.matches(pith::render::html::PHONE_HEAD).count() <= 1, "the phone stylesheet, at most once:\n{html}");
    let html = &html.replace(pith::render::html::PHONE_HEAD, "");
    for kept in ["The title stays", "Heading text stays", "First paragraph stays.", "script link text stays", "href=\"/next\""] {
        assert!(html.contains(kept), "{kept:?} should survive declutter:\n{html}");
    }
    for gone in ["<script", "SCRIPT-BODY", "<style", "color: red", "onclick", "onload", "style=", "<iframe", "<input", "<button", "javascript:"] {
        assert!(!html.contains(gone), "{gone:?} should be removed by declutter:\n{html}");
    }
}

/// Asserts the headers of a page pith rewrote: UTF-8 HTML, exact length, `x-pith`, `Vary`,
/// `Via`.
pub fn assert_rewritten_headers(headers: &reqwest::header::HeaderMap, body_len: usize) {
    let get = |name: &str| headers.get(name).map(|v| v.to_str().expect("ASCII header").to_string());
    assert_eq!(get("content-type").as_deref(), Some("text/html; charset=utf-8"));
    assert_eq!(get("content-length"), Some(body_len.to_string()), "Content-Length must be exact");
    assert!(get("x-pith").is_some_and(|v| v.contains("profile=declutter")), "x-pith: {:?}", get("x-pith"));
    assert!(
        headers.get_all("vary").iter().any(|v| v.to_str().unwrap_or("").to_ascii_lowercase().contains("accept-encoding")),
        "Vary must name Accept-Encoding: {headers:?}"
    );
    assert!(get("via").is_some_and(|v| v.contains("pith")), "Via: {:?}", get("via"));
}

/// Reads a reqwest response body chunk by chunk; `Err` when the body fails part-way.
pub async fn read_body(resp: &mut reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A loopback port that refuses connections for as long as the returned socket lives: bound
/// but never listening, so no other test can take the port in the meantime (a listener bound
/// and dropped frees its port for the next test that binds port 0).
pub fn closed_port() -> (tokio::net::TcpSocket, std::net::SocketAddr) {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.bind("127.0.0.1:0".parse().expect("an address")).expect("bind a loopback port");
    let addr = socket.local_addr().expect("its address");
    (socket, addr)
}
