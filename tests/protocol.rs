//! HTTP protocol details a proxy must get right between a client and an origin: framing that
//! disagrees with itself, a client body that breaks, and what the access log counts.

use tokio::io::{AsyncWriteExt, BufReader};

use crate::common::logs::Logs;
use crate::common::raw::{read_head, request};
use crate::common::*;

/// An origin answering every request with `response`, as raw bytes, then closing.
async fn raw_origin(response: &'static [u8]) -> RawOrigin {
    RawOrigin::start(move |stream| async move {
        let mut reader = BufReader::new(stream);
        read_head(&mut reader).await;
        let mut stream = reader.into_inner();
        let _ = stream.write_all(response).await;
        let _ = stream.shutdown().await;
    })
    .await
}

/// A chunked body of 15 bytes with a `Content-Length: 5` beside it.
fn length_and_chunks(content_type: &str) -> &'static [u8] {
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n<p>fifteen!</p>\r\n0\r\n\r\n");
    Box::leak(head.into_boxed_str()).as_bytes()
}

#[tokio::test]
async fn a_length_beside_chunks_is_dropped_and_the_whole_body_passes() {
    let origin = raw_origin(length_and_chunks("text/plain")).await;
    for profile in ["pass", "declutter"] {
        let pith = Pith::start(&format!("profile = \"{profile}\"")).await;
        let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
        assert_eq!(resp.status, 200, "{profile}");
        assert_eq!(resp.header("content-length"), None, "{profile}: the chunked framing wins, the length goes");
        assert_eq!(resp.text(), "<p>fifteen!</p>", "{profile}: every byte the chunks carried");
    }
}

#[tokio::test]
async fn a_page_with_a_length_beside_chunks_is_rewritten_whole() {
    let origin = raw_origin(length_and_chunks("text/html")).await;
    let pith = Pith::start("profile = \"declutter\"").await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!(resp.status, 200);
    assert!(resp.text().contains("fifteen!"), "{}", resp.text());
    assert_eq!(resp.header("content-length"), Some(resp.body.len().to_string().as_str()), "the rewritten page's own length");
}

#[tokio::test]
async fn a_malformed_chunked_request_body_gets_400_and_is_logged_as_the_clients_error() {
    let origin = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "posted")).run().await;
    let logs = Logs::capture("pith=info");
    let pith = Pith::start("profile = \"pass\"").await;
    let mut bad = request("POST", &origin.url("/"), "Transfer-Encoding: chunked\r\n");
    bad.extend_from_slice(b"zz\r\nabc\r\n0\r\n\r\n");
    let resp = exchange(pith.addr, &bad).await;
    assert_eq!(resp.status, 400, "{}", resp.text());
    let line = logs.wait_for(&["request refused", "request body"]).await;
    assert!(!line.contains("upstream failed"), "{line}");
    assert!(logs.matching(&["upstream failed"]).is_empty(), "not the origin's failure");

    let mut good = request("POST", &origin.url("/"), "Transfer-Encoding: chunked\r\n");
    good.extend_from_slice(b"3\r\nabc\r\n0\r\n\r\n");
    let resp = exchange(pith.addr, &good).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "posted"));
}

#[tokio::test]
async fn a_page_passed_through_as_too_large_counts_each_origin_byte_once() {
    let page = format!("<!DOCTYPE html><html><body>{}</body></html>", "<p>words</p>".repeat(500));
    let len = page.len();
    // Chunked, so that pith starts reading it to rewrite and stops past the limit.
    let chunks: Vec<bytes::Bytes> = page.as_bytes().chunks(500).map(bytes::Bytes::copy_from_slice).collect();
    let origin = Origin::new().route("/", move |_| reply_chunked(&[("content-type", "text/html")], chunks.clone())).run().await;
    let logs = Logs::capture("pith::access=info");
    let pith = Pith::start("[limits]\nmax_rewrite_bytes = 1024").await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!((resp.status, resp.body.len()), (200, len));
    let line = logs.wait_for(&["action=\"too-large\""]).await;
    assert!(line.contains(&format!("origin_bytes={len} ")), "{line}");
    assert!(line.contains(&format!("client_bytes={len} ")), "{line}");
}

/// An origin whose first connection answers one request, reads the next one and closes
/// without answering (`reset`: with a TCP reset), as an origin does whose idle timeout fires
/// just as the request arrives; later connections answer every request. Returns the origin
/// and how many connections it has accepted.
async fn closing_after_one(reset: bool) -> (RawOrigin, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let origin = RawOrigin::start(move |stream| {
        let first = count.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            let mut reader = BufReader::new(stream);
            loop {
                let head = read_head_or_eof(&mut reader).await;
                if head.is_none() {
                    return;
                }
                let _ = reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello").await;
                if first {
                    let _ = read_head_or_eof(&mut reader).await;
                    let stream = reader.into_inner();
                    if reset {
                        let _ = stream.set_zero_linger();
                    }
                    return;
                }
            }
        }
    })
    .await;
    (origin, accepted)
}

/// A request head, or `None` when the connection closed first.
async fn read_head_or_eof<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    use tokio::io::AsyncBufReadExt;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            return Some(head);
        }
        head.push_str(&line);
    }
}

#[tokio::test]
async fn a_request_on_a_pooled_connection_the_origin_closed_is_sent_again() {
    for reset in [false, true] {
        let (origin, accepted) = closing_after_one(reset).await;
        let pith = Pith::start("profile = \"pass\"").await;
        let client = pith.client();
        for n in 0..3 {
            let resp = client.get(origin.url("/")).send().await.unwrap();
            assert_eq!(resp.status(), 200, "request {n} (reset: {reset})");
            assert_eq!(resp.text().await.unwrap(), "hello");
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2, "one fresh connection after the dead one");
    }
}

#[tokio::test]
async fn a_request_with_a_body_is_not_sent_twice() {
    let (origin, accepted) = closing_after_one(false).await;
    let pith = Pith::start("profile = \"pass\"").await;
    let client = pith.client();
    assert_eq!(client.get(origin.url("/")).send().await.unwrap().status(), 200);
    let resp = client.post(origin.url("/")).body("once").send().await.unwrap();
    assert_eq!(resp.status(), 502, "a POST is never repeated");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// An origin that sends `103 Early Hints`, then `body` as a 200 of `content_type`, for every
/// request on a connection.
async fn hinting_origin(content_type: &'static str, body: &'static str) -> RawOrigin {
    RawOrigin::start(move |stream| async move {
        let mut reader = BufReader::new(stream);
        while read_head_or_eof(&mut reader).await.is_some() {
            let hint = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n";
            let last = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            if reader.get_mut().write_all(format!("{hint}{last}").as_bytes()).await.is_err() {
                return;
            }
        }
    })
    .await
}

#[tokio::test]
async fn early_hints_reach_an_http11_client_in_every_profile() {
    let page = "<!DOCTYPE html><html><body><p>the page</p></body></html>";
    for (profile, content_type) in [("pass", "text/html"), ("declutter", "text/html"), ("text", "text/html"), ("declutter", "text/plain")] {
        let origin = hinting_origin(content_type, page).await;
        let pith = Pith::start(&format!("profile = \"{profile}\"\n[cache]\nenabled = false")).await;
        let mut client = RawClient::connect(pith.addr).await;
        // Twice on one connection: the second hint comes after a whole response.
        for n in 0..2 {
            client.send(&request("GET", &origin.url("/"), "")).await;
            let hint = client.read_response(false).await;
            assert_eq!(hint.status, 103, "{profile} {content_type} request {n}");
            assert_eq!(hint.header("link"), Some("</style.css>; rel=preload; as=style"));
            let last = client.read_response(false).await;
            assert_eq!(last.status, 200, "{profile} {content_type} request {n}");
            assert!(last.text().contains("the page"), "{}", last.text());
        }
    }
}

#[tokio::test]
async fn an_http10_client_gets_no_interim_response() {
    let origin = hinting_origin("text/plain", "plain").await;
    let pith = Pith::start("profile = \"pass\"").await;
    let url = origin.url("/");
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    let resp = exchange(pith.addr, format!("GET {url} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes()).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "plain"));
}
