//! Failures get a clear page with the right status: unreachable and silent origins, stalled
//! bodies, and requests pith cannot serve.

use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};

use crate::common::raw::read_head;
use crate::common::*;

#[tokio::test]
async fn a_refused_connection_is_502_naming_the_host() {
    let (_holder, closed) = closed_port();
    let pith = Pith::start("").await;
    let resp = pith.client().get(format!("http://{closed}/")).send().await.unwrap();
    assert_eq!(resp.status(), 502);
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let text = resp.text().await.unwrap();
    assert!(text.contains("connection refused to 127.0.0.1"), "{text}");
}

/// An origin that reads the request and then says nothing, keeping the connection open.
async fn silent_origin() -> RawOrigin {
    RawOrigin::start(|stream| async move {
        let mut reader = BufReader::new(stream);
        read_head(&mut reader).await;
        std::future::pending::<()>().await;
    })
    .await
}

#[tokio::test]
async fn an_origin_that_never_answers_is_504() {
    let origin = silent_origin().await;
    let pith = Pith::start("[upstream]\nresponse_timeout_ms = 300").await;
    let resp = pith.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 504);
    assert!(resp.text().await.unwrap().contains("127.0.0.1"));
}

/// An origin that sends a head and the start of a body, then stalls with the connection open.
async fn stalling_origin(content_type: &'static str) -> RawOrigin {
    RawOrigin::start(move |stream| async move {
        let mut reader = BufReader::new(stream);
        read_head(&mut reader).await;
        let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: 5000\r\n\r\n");
        reader.get_mut().write_all(head.as_bytes()).await.unwrap();
        reader.get_mut().write_all(&[b'z'; 100]).await.unwrap();
        std::future::pending::<()>().await;
    })
    .await
}

#[tokio::test]
async fn a_stalled_streamed_body_is_aborted() {
    let origin = stalling_origin("application/octet-stream").await;
    let pith = Pith::start("[upstream]\nbody_idle_timeout_ms = 300").await;
    // The client's own timeout is a ceiling far above pith's 300 ms: it must not be what ends
    // the body.
    let client = pith.client_builder().timeout(Duration::from_secs(5)).build().unwrap();
    let mut resp = client.get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let err = read_body(&mut resp).await.expect_err("a stalled body must end in an error, not a clean short body");
    assert!(!err.is_timeout(), "pith must abort the stalled body itself (body_idle_timeout_ms), not leave it to the client: {err}");
}

#[tokio::test]
async fn a_stalled_page_is_504() {
    let origin = stalling_origin("text/html").await;
    let pith = Pith::start("[upstream]\nbody_idle_timeout_ms = 300").await;
    let resp = pith.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 504);
}

#[tokio::test]
async fn a_malformed_request_is_400() {
    let pith = Pith::start("").await;
    let resp = exchange(pith.addr, b"GARBAGE\r\n\r\n").await;
    assert_eq!(resp.status, 400);
}

#[tokio::test]
async fn a_scheme_other_than_http_is_400() {
    let pith = Pith::start("").await;
    let resp = exchange(pith.addr, b"GET ftp://127.0.0.1/file.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("ftp"), "{}", resp.text());
}
