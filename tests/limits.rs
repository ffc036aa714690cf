//! Limits on what one client may do: its request rate (429 with Retry-After), the number of
//! header fields and the size of a request head (431; a malformed head gets 400), and the
//! connections it holds, an open CONNECT tunnel included. Then shutdown with tunnels open:
//! drained while they last, closed at the deadline. And where requests may go: a denied
//! destination stays denied inside an intercepted tunnel, where only the upstream connector
//! resolves the name. The tests of refusals also check that the proxy serves on afterwards.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::raw::{read_response, request, GUARD};
use crate::common::*;
use crate::reload::Running;

async fn hello_origin() -> RunningOrigin {
    Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run().await
}

/// One pass-through listener on 127.0.0.1:0, then `rest` (other tables).
async fn start(rest: &str) -> Running {
    Running::start(&format!("[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n{rest}\n")).await
}

/// A GET through the proxy from the loopback address `from`.
pub(crate) async fn get_from(from: &str, proxy: SocketAddr, url: &str) -> crate::common::raw::RawResponse {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).expect("bind a loopback source address");
    let mut stream = socket.connect(proxy).await.expect("connect to the proxy");
    stream.write_all(&request("GET", url, "")).await.unwrap();
    tokio::time::timeout(GUARD, read_response(&mut BufReader::new(stream), false)).await.expect("a response")
}

#[tokio::test]
async fn a_client_over_its_rate_gets_429_with_retry_after_while_others_are_served() {
    let origin = hello_origin().await;
    let pith = start("[limits]\nclient_rate = 1\nclient_burst = 3").await;
    let mut responses = Vec::new();
    for _ in 0..8 {
        responses.push(exchange(pith.addr, &request("GET", &origin.url("/"), "")).await);
    }
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert_eq!(statuses[..3], [200, 200, 200], "the burst is served: {statuses:?}");
    // One token a second comes back: of the five requests sent at once, at most one is served.
    assert!(statuses[3..].iter().filter(|s| **s == 429).count() >= 4, "{statuses:?}");
    for refused in responses.iter().filter(|r| r.status != 200) {
        assert_eq!(refused.status, 429);
        let retry: u64 = refused.header("retry-after").expect("Retry-After").parse().expect("whole seconds");
        assert!((1..=3).contains(&retry), "Retry-After: {retry}");
        assert!(refused.text().contains("limits.client_rate"), "{}", refused.text());
    }
    assert_eq!(origin.received().len(), statuses.iter().filter(|s| **s == 200).count(), "refused requests never reach the origin");

    // Another client has a bucket of its own.
    let other = get_from("127.0.0.2", pith.addr, &origin.url("/")).await;
    assert_eq!((other.status, other.text().as_str()), (200, "hello"));
}

/// A request with `n` header fields besides Host.
fn with_headers(url: &str, n: usize) -> Vec<u8> {
    let extra: String = (0..n).map(|i| format!("X-Filler-{i}: {i}\r\n")).collect();
    request("GET", url, &extra)
}

#[tokio::test]
async fn too_many_header_fields_get_431_and_the_proxy_keeps_serving() {
    let origin = hello_origin().await;
    let pith = start("[limits]\nmax_headers = 20").await;
    assert_eq!(exchange(pith.addr, &with_headers(&origin.url("/"), 25)).await.status, 431);
    assert_eq!(exchange(pith.addr, &with_headers(&origin.url("/"), 15)).await.status, 200);

    let default = start("").await;
    assert_eq!(exchange(default.addr, &with_headers(&origin.url("/"), 120)).await.status, 431, "the default is 100");
    assert_eq!(exchange(default.addr, &with_headers(&origin.url("/"), 90)).await.status, 200);
    assert_eq!(origin.received().len(), 2, "only the requests within the limits were forwarded");
}

/// Sends `head` (which never ends) and reads the answer.
async fn send_head(proxy: SocketAddr, head: &[u8]) -> u16 {
    exchange(proxy, head).await.status
}

#[tokio::test]
async fn an_oversized_head_gets_431_and_a_malformed_one_400() {
    let origin = hello_origin().await;
    let pith = start("[limits]\nmax_header_bytes = 8192").await;
    // Exactly the limit, without the blank line that would end the head: every byte sent is
    // read, so the connection closes cleanly after the answer.
    let url = origin.url("/");
    let mut big_header = format!("GET {url} HTTP/1.1\r\nHost: {}\r\nX-Big: ", url.trim_start_matches("http://").trim_end_matches('/')).into_bytes();
    big_header.resize(8192, b'a');
    assert_eq!(send_head(pith.addr, &big_header).await, 431, "a header section reaching max_header_bytes");
    let mut long_line = format!("GET {url}").into_bytes();
    long_line.resize(8192, b'a');
    assert_eq!(send_head(pith.addr, &long_line).await, 431, "a request line reaching max_header_bytes");

    assert_eq!(send_head(pith.addr, b"NOT A REQUEST\r\n\r\n").await, 400);
    assert_eq!(send_head(pith.addr, b"GET / HTTP/1.1\r\nHost example\r\n\r\n").await, 400, "a header line without a colon");

    let resp = exchange(pith.addr, &request("GET", &url, "X-Fits: yes\r\n")).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"), "still serving");
    assert_eq!(origin.received().len(), 1);
}

/// An origin that echoes what it reads.
pub(crate) async fn echo_origin() -> RawOrigin {
    RawOrigin::start(|mut stream| async move {
        let mut buf = [0u8; 1024];
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            if stream.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    })
    .await
}

/// Opens a CONNECT tunnel to `target` through `proxy` and checks it echoes.
pub(crate) async fn open_tunnel(proxy: SocketAddr, target: SocketAddr) -> BufReader<TcpStream> {
    let mut client = RawClient::connect(proxy).await;
    client.send(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await;
    assert_eq!(client.read_response(true).await.status, 200);
    let mut tunnel = client.into_inner();
    assert_echoes(&mut tunnel).await;
    tunnel
}

async fn assert_echoes(tunnel: &mut BufReader<TcpStream>) {
    tunnel.get_mut().write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    tokio::time::timeout(GUARD, tunnel.read_exact(&mut back)).await.expect("the echo comes back").unwrap();
    assert_eq!(&back, b"ping");
}

/// Waits until the proxy counts `n` open connections (a closed one is counted down once its
/// task notices the close, which nothing else reports).
pub(crate) async fn until_open(pith: &Running, n: usize) {
    tokio::time::timeout(GUARD, async {
        while pith.handle.open_connections() != n {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} connections open, not {n}", pith.handle.open_connections()));
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_closed_and_frees_its_slot() {
    let origin = hello_origin().await;
    let pith = start("[limits]\nmax_connections = 1\nheader_read_timeout_ms = 300").await;
    let mut silent = TcpStream::connect(pith.addr).await.expect("connect");
    until_open(&pith, 1).await;
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(GUARD, silent.read(&mut byte)).await.expect("closed by the proxy");
    assert!(matches!(read, Ok(0) | Err(_)), "the silent connection is closed, not answered: {read:?}");
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"), "the slot is free again");
}

#[tokio::test]
async fn a_connection_past_the_limit_waits_briefly_then_gets_503() {
    let origin = hello_origin().await;
    let pith = start("[limits]\nmax_connections = 1\nconnection_wait_ms = 200").await;
    let holder = TcpStream::connect(pith.addr).await.expect("connect");
    until_open(&pith, 1).await;
    let refused = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert!(origin.received().is_empty(), "a refused connection reaches no origin");
    drop(holder);
    until_open(&pith, 0).await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"), "served once the slot is free");
}

#[tokio::test]
async fn an_open_tunnel_counts_against_max_connections() {
    let (echo, origin) = (echo_origin().await, hello_origin().await);
    let pith = start("[upstream]\nconnect_ports = []\n[limits]\nmax_connections = 1").await;
    let tunnel = open_tunnel(pith.addr, echo.addr).await;
    assert_eq!(pith.handle.open_connections(), 1, "the tunnel is its client's connection");

    let (addr, url) = (pith.addr, origin.url("/"));
    let mut second = tokio::spawn(async move { exchange(addr, &request("GET", &url, "")).await });
    // The second client waits in the listen queue while the tunnel holds the only slot; a
    // wait that ends in an answer is the failure (nothing to observe on success but silence).
    assert!(tokio::time::timeout(Duration::from_millis(300), &mut second).await.is_err(), "served while the tunnel held the only connection slot");
    assert!(origin.received().is_empty());

    drop(tunnel);
    let resp = tokio::time::timeout(GUARD, second).await.expect("served once the tunnel closed").unwrap();
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"));
    until_open(&pith, 0).await;
}

#[tokio::test]
async fn shutdown_drains_an_open_tunnel_until_it_closes() {
    let echo = echo_origin().await;
    let pith = start("[upstream]\nconnect_ports = []\n[limits]\ndrain_timeout_ms = 60000").await;
    let addr = pith.addr;
    let mut tunnel = open_tunnel(addr, echo.addr).await;
    let done = pith.shut_down();
    tokio::time::timeout(GUARD, async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("no new connections once shutdown starts");

    assert_echoes(&mut tunnel).await;
    assert!(!done.is_finished(), "shutdown waits for the open tunnel");
    drop(tunnel);
    tokio::time::timeout(GUARD, done).await.expect("shutdown ends once the tunnel closes").unwrap();
}

#[tokio::test]
async fn shutdown_closes_a_tunnel_still_open_at_the_deadline() {
    let echo = echo_origin().await;
    let logs = crate::common::logs::Logs::capture("pith::access=info");
    let pith = start("[upstream]\nconnect_ports = []\n[limits]\ndrain_timeout_ms = 200").await;
    let mut tunnel = open_tunnel(pith.addr, echo.addr).await;
    let done = pith.shut_down();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(GUARD, tunnel.read(&mut buf)).await.expect("the proxy closes the tunnel");
    assert!(matches!(read, Ok(0) | Err(_)), "closed, not fed: {read:?}");
    tokio::time::timeout(GUARD, done).await.expect("shutdown ends at the deadline").unwrap();
    logs.wait_for(&["CONNECT", "outcome=\"shutdown\""]).await;
}

#[tokio::test]
async fn an_intercepted_request_to_a_denied_name_is_refused_by_the_resolver() {
    let origin = hello_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let ca_dir = dir.path().join("ca").display().to_string();
    let pith = start(&format!("[upstream]\nconnect_ports = []\ndeny_private = true\n[intercept]\nenabled = true\nca_dir = {ca_dir:?}")).await;
    let ca = std::fs::read(dir.path().join("ca/ca.pem")).expect("pith created its CA");
    let client = client_builder(reqwest::Proxy::all(format!("http://{}", pith.addr)).unwrap())
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .build()
        .unwrap();
    // The name is resolved once, by the upstream connector, which refuses its loopback address.
    let resp = client.get(format!("https://localhost:{}/", origin.addr.port())).send().await.expect("an answer inside the tunnel");
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("upstream.deny_private"));
    assert_eq!(origin.connections(), 0, "never connected to");
}
