//! How long a client may hold a connection slot without using it: a client that never reads
//! the response it asked for, an idle tunnel (blind, intercepted or switched), and one client
//! opening many connections. Each is closed or refused, and the slot serves other clients
//! again. And the access-log line of a request that ends early: client gone, drain deadline.

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::logs::Logs;
use crate::common::raw::{request, GUARD};
use crate::common::*;
use crate::limits::{echo_origin, get_from, open_tunnel, until_open};
use crate::reload::Running;

/// One pass-through listener on 127.0.0.1:0, then `rest` (other tables).
async fn start(rest: &str) -> Running {
    Running::start(&format!("[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n{rest}\n")).await
}

/// Larger than what the loopback socket buffers of pith and the client can hold together.
const LARGE: usize = 48 << 20;

async fn large_origin() -> RunningOrigin {
    let body = Bytes::from(vec![b'x'; LARGE]);
    Origin::new()
        .route("/large", move |_| reply(&[("content-type", "application/octet-stream")], body.clone()))
        .route("/", |_| reply(&[("content-type", "text/plain")], "hello"))
        .run()
        .await
}

#[tokio::test]
async fn a_client_that_never_reads_its_response_is_closed_and_frees_its_slot() {
    let origin = large_origin().await;
    let pith = start("[limits]\nmax_connections = 1\nclient_write_timeout_ms = 300\nconnection_wait_ms = 100").await;
    let mut stalled = TcpStream::connect(pith.addr).await.expect("connect");
    stalled.write_all(&request("GET", &origin.url("/large"), "")).await.unwrap();
    until_open(&pith, 1).await;
    // Nothing is read: pith's writes stop making progress once the socket buffers are full.
    until_open(&pith, 0).await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"), "the slot serves another client");
    // What the stalled client finds when it reads at last: part of the body, then the close.
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match tokio::time::timeout(GUARD, stalled.read(&mut buf)).await.expect("the connection was closed") {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(got < LARGE, "the response was cut short ({got} bytes), not completed");
}

#[tokio::test]
async fn a_slow_client_that_keeps_reading_gets_the_whole_response() {
    let origin = large_origin().await;
    let pith = start("[limits]\nclient_write_timeout_ms = 2000").await;
    let mut client = RawClient::connect(pith.addr).await;
    client.send(&request("GET", &origin.url("/large"), "")).await;
    let resp = client.read_response(false).await;
    assert_eq!((resp.status, resp.body.len()), (200, LARGE));
}

#[tokio::test]
async fn an_idle_tunnel_is_closed_and_frees_its_slot() {
    let (echo, origin) = (echo_origin().await, large_origin().await);
    let logs = Logs::capture("pith::access=info");
    let pith = start("[upstream]\nconnect_ports = []\n[limits]\nmax_connections = 1\ntunnel_idle_timeout_ms = 300\nconnection_wait_ms = 100").await;
    let mut tunnel = open_tunnel(pith.addr, echo.addr).await;
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(GUARD, tunnel.read(&mut buf)).await.expect("the proxy closes the idle tunnel");
    assert!(matches!(read, Ok(0) | Err(_)), "closed, not fed: {read:?}");
    until_open(&pith, 0).await;
    logs.wait_for(&["CONNECT", "outcome=\"idle\""]).await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"), "the slot serves another client");
}

#[tokio::test]
async fn a_tunnel_in_use_outlives_its_idle_timeout() {
    let echo = echo_origin().await;
    let pith = start("[upstream]\nconnect_ports = []\n[limits]\ntunnel_idle_timeout_ms = 1000").await;
    let mut tunnel = open_tunnel(pith.addr, echo.addr).await;
    // Fifteen exchanges 100 ms apart: longer than the timeout in all, never idle for as long.
    for _ in 0..15 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        tunnel.get_mut().write_all(b"ping").await.unwrap();
        let mut back = [0u8; 4];
        tokio::time::timeout(GUARD, tunnel.read_exact(&mut back)).await.expect("the echo comes back").expect("the tunnel is open");
    }
}

#[tokio::test]
async fn a_client_past_its_connection_cap_gets_503_and_others_are_served() {
    let origin = large_origin().await;
    let logs = Logs::capture("pith=info");
    let pith = start("[limits]\nmax_connections_per_client = 2").await;
    let first = TcpStream::connect(pith.addr).await.unwrap();
    let _second = TcpStream::connect(pith.addr).await.unwrap();
    until_open(&pith, 2).await;
    let refused = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert!(refused.text().contains("limits.max_connections_per_client"), "{}", refused.text());
    logs.wait_for(&["127.0.0.1", "max_connections_per_client"]).await;

    let other = get_from("127.0.0.2", pith.addr, &origin.url("/")).await;
    assert_eq!((other.status, other.text().as_str()), (200, "hello"), "another client is not affected");

    drop(first);
    until_open(&pith, 1).await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"), "served again under the cap");
    assert_eq!(origin.received().len(), 2, "the refused request reached no origin");
}

/// An origin that reads a request, says so, and never answers.
async fn silent_origin() -> (RawOrigin, std::sync::Arc<tokio::sync::Notify>) {
    let received = std::sync::Arc::new(tokio::sync::Notify::new());
    let told = received.clone();
    let origin = RawOrigin::start(move |stream| {
        let told = told.clone();
        async move {
            let mut reader = tokio::io::BufReader::new(stream);
            crate::common::raw::read_head(&mut reader).await;
            told.notify_one();
            std::future::pending::<()>().await;
        }
    })
    .await;
    (origin, received)
}

#[tokio::test]
async fn a_request_the_client_abandons_is_logged() {
    let (origin, received) = silent_origin().await;
    let logs = Logs::capture("pith::access=info");
    let pith = start("").await;
    let mut client = RawClient::connect(pith.addr).await;
    client.send(&request("GET", &origin.url("/probe"), "")).await;
    tokio::time::timeout(GUARD, received.notified()).await.expect("the origin holds the request");
    drop(client);
    let line = logs.wait_for(&["/probe", "outcome=\"client-gone\""]).await;
    assert!(line.contains("status=0"), "{line}");
}

#[tokio::test]
async fn a_request_cut_by_the_drain_deadline_is_logged() {
    let (origin, received) = silent_origin().await;
    let logs = Logs::capture("pith::access=info");
    let pith = start("[limits]\ndrain_timeout_ms = 200").await;
    let mut client = RawClient::connect(pith.addr).await;
    client.send(&request("GET", &origin.url("/held"), "")).await;
    tokio::time::timeout(GUARD, received.notified()).await.expect("the origin holds the request");
    tokio::time::timeout(GUARD, pith.shut_down()).await.expect("shutdown ends at the deadline").unwrap();
    logs.wait_for(&["/held", "outcome=\"shutdown\""]).await;
    drop(client);
}

#[tokio::test]
async fn an_idle_intercepted_tunnel_is_closed_too() {
    let echo = echo_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let ca_dir = dir.path().join("ca").display().to_string();
    let pith = start(&format!("[upstream]\nconnect_ports = []\n[intercept]\nenabled = true\nca_dir = {ca_dir:?}\n[limits]\ntunnel_idle_timeout_ms = 300")).await;
    // Not TLS: the intercepted tunnel copies these bytes blindly, the echo proves it is open.
    let mut tunnel = open_tunnel(pith.addr, echo.addr).await;
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(GUARD, tunnel.read(&mut buf)).await.expect("the proxy closes the idle tunnel");
    assert!(matches!(read, Ok(0) | Err(_)), "closed, not fed: {read:?}");
    until_open(&pith, 0).await;
}

#[tokio::test]
async fn a_response_cut_by_the_drain_deadline_is_logged_as_such() {
    let told = std::sync::Arc::new(tokio::sync::Notify::new());
    let notify = told.clone();
    let origin = RawOrigin::start(move |stream| {
        let notify = notify.clone();
        async move {
            let mut reader = tokio::io::BufReader::new(stream);
            crate::common::raw::read_head(&mut reader).await;
            let mut stream = reader.into_inner();
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n").await;
            notify.notify_one();
            std::future::pending::<()>().await;
        }
    })
    .await;
    let logs = Logs::capture("pith::access=info");
    let pith = start("[limits]\ndrain_timeout_ms = 200").await;
    let mut client = RawClient::connect(pith.addr).await;
    client.send(&request("GET", &origin.url("/streaming"), "")).await;
    tokio::time::timeout(GUARD, told.notified()).await.expect("the origin started its answer");
    tokio::time::timeout(GUARD, pith.shut_down()).await.expect("shutdown ends at the deadline").unwrap();
    let line = logs.wait_for(&["/streaming", "outcome=\"shutdown\""]).await;
    assert!(line.contains("status=200"), "{line}");
    drop(client);
}

#[tokio::test]
async fn an_idle_switched_connection_is_closed() {
    let origin = RawOrigin::start(|stream| async move {
        let mut reader = tokio::io::BufReader::new(stream);
        crate::common::raw::read_head(&mut reader).await;
        let mut stream = reader.into_inner();
        let _ = stream.write_all(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-echo\r\n\r\n").await;
        let mut buf = [0u8; 1024];
        while let Ok(n @ 1..) = stream.read(&mut buf).await {
            if stream.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    })
    .await;
    let pith = start("[limits]\ntunnel_idle_timeout_ms = 300").await;
    let mut client = RawClient::connect(pith.addr).await;
    client.send(&request("GET", &origin.url("/"), "Connection: Upgrade\r\nUpgrade: x-echo\r\n")).await;
    assert_eq!(client.read_response(true).await.status, 101);
    let mut switched = client.into_inner();
    switched.get_mut().write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    tokio::time::timeout(GUARD, switched.read_exact(&mut back)).await.expect("the echo comes back").unwrap();
    assert_eq!(&back, b"ping");
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(GUARD, switched.read(&mut buf)).await.expect("the proxy closes the idle connection");
    assert!(matches!(read, Ok(0) | Err(_)), "closed, not fed: {read:?}");
    until_open(&pith, 0).await;
}
