//! Forwarding: keep-alive on both sides, body framings, methods and request bodies, a large
//! download streamed unchanged, hop-by-hop headers, pith's own pages, and origins that fail
//! part-way through a body.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

use crate::common::raw::{self, chunk, read_chunk, read_chunked, read_head, request};
use crate::common::*;

/// Deterministic bytes that do not compress: a xorshift stream seeded by `seed`.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// `data` cut into `n` nearly equal chunks.
fn pieces(data: &[u8], n: usize) -> Vec<Bytes> {
    data.chunks(data.len().div_ceil(n)).map(Bytes::copy_from_slice).collect()
}

#[tokio::test]
async fn keep_alive_reuses_the_client_and_the_origin_connection() {
    let origin = Origin::new()
        .route("/plain", |_| reply(&[("content-type", "text/plain")], "first answer"))
        .route("/page", |_| reply(&[("content-type", "text/html")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let mut client = pith.raw().await;

    client.send(&request("GET", &origin.url("/plain"), "")).await;
    let first = client.read_response(false).await;
    client.send(&request("GET", &origin.url("/page"), "")).await;
    let second = client.read_response(false).await;
    client.send(&request("GET", &origin.url("/plain"), "")).await;
    let third = client.read_response(false).await;

    assert_eq!((first.status, first.text().as_str()), (200, "first answer"));
    assert_eq!(second.status, 200);
    assert_decluttered(&second.text());
    assert_eq!((third.status, third.text().as_str()), (200, "first answer"));
    assert_eq!(origin.received().len(), 3);
    assert_eq!(origin.connections(), 1, "pith should reuse its pooled upstream connection");
}

#[tokio::test]
async fn content_length_and_chunked_bodies_arrive_intact() {
    let data = noise(1, 300_000);
    let (cl, chunked) = (data.clone(), data.clone());
    let origin = Origin::new()
        .route("/bin-cl", move |_| reply(&[("content-type", "application/octet-stream")], cl.clone()))
        .route("/bin-chunked", move |_| reply_chunked(&[("content-type", "application/octet-stream")], pieces(&chunked, 7)))
        .route("/html-cl", |_| reply(&[("content-type", "text/html")], CLUTTERED))
        // Small pieces, so chunk boundaries fall inside tags, attributes and the script.
        .route("/html-chunked", |_| reply_chunked(&[("content-type", "text/html")], pieces(CLUTTERED.as_bytes(), 41)))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();

    let resp = client.get(origin.url("/bin-cl")).send().await.unwrap();
    assert_eq!(resp.headers()["content-length"], "300000");
    assert_eq!(resp.bytes().await.unwrap(), data);

    let resp = client.get(origin.url("/bin-chunked")).send().await.unwrap();
    assert!(resp.headers().get("content-length").is_none(), "a chunked origin body streams chunked");
    assert_eq!(resp.bytes().await.unwrap(), data);

    for path in ["/html-cl", "/html-chunked"] {
        let resp = client.get(origin.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let headers = resp.headers().clone();
        let body = resp.text().await.unwrap();
        assert_rewritten_headers(&headers, body.len());
        assert_decluttered(&body);
    }
}

#[tokio::test]
async fn request_bodies_and_every_method_are_forwarded() {
    let origin = Origin::new().route("/echo", |r| reply(&[("content-type", "text/plain")], format!("{} {}", r.method, r.body.len()))).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();

    let upload = noise(2, 1 << 20);
    let resp = client.post(origin.url("/echo")).header("content-type", "application/octet-stream").body(upload.clone()).send().await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "POST 1048576");
    let seen = origin.last();
    assert_eq!(seen.method, "POST");
    assert!(seen.body == upload, "the origin must receive the uploaded bytes unchanged");

    for method in ["PUT", "DELETE", "PATCH", "OPTIONS"] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let resp = client.request(m, origin.url("/echo")).body(format!("{method} body")).send().await.unwrap();
        let expected = format!("{method} {}", method.len() + 5);
        assert_eq!(resp.text().await.unwrap(), expected);
        assert_eq!(origin.last().method, method);
        assert_eq!(origin.last().body, format!("{method} body"));
    }
}

/// The origin answers only after it has seen part of the body, and the client sends the rest
/// only after the origin said so: this completes only if pith streams the request body.
#[tokio::test]
async fn a_chunked_request_body_is_streamed_upstream() {
    let (first_tx, first_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel::<(String, Vec<u8>)>();
    let first_tx = Arc::new(Mutex::new(Some(first_tx)));
    let done_tx = Arc::new(Mutex::new(Some(done_tx)));
    let origin = RawOrigin::start(move |stream| {
        let (first_tx, done_tx) = (first_tx.clone(), done_tx.clone());
        async move {
            let mut reader = BufReader::new(stream);
            let head = read_head(&mut reader).await;
            let mut body = read_chunk(&mut reader).await.expect("a first chunk").expect("data, not the end");
            if let Some(tx) = first_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            body.extend(read_chunked(&mut reader).await.expect("the rest of the body"));
            reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok").await.unwrap();
            if let Some(tx) = done_tx.lock().unwrap().take() {
                let _ = tx.send((head, body));
            }
        }
    })
    .await;
    let pith = Pith::start("").await;
    let mut client = pith.raw().await;

    let mut head = request("POST", &origin.url("/upload"), "Transfer-Encoding: chunked\r\nContent-Type: application/octet-stream\r\n");
    head.extend(chunk(b"first part;"));
    client.send(&head).await;
    tokio::time::timeout(raw::GUARD, first_rx).await.expect("the origin sees the first part before the body ends").unwrap();
    let mut rest = chunk(b" second part");
    rest.extend_from_slice(b"0\r\n\r\n");
    client.send(&rest).await;
    let resp = client.read_response(false).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "ok"));

    let (head, body) = done_rx.await.unwrap();
    assert!(head.starts_with("POST /upload HTTP/1.1\r\n"), "origin-form upstream: {head:?}");
    assert_eq!(body, b"first part; second part");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_binary_streams_through_byte_identical() {
    const CHUNK: usize = 64 * 1024;
    const CHUNKS: u64 = 1024; // 64 MiB, generated chunk by chunk, never held whole.
    let origin = Origin::new()
        .route("/big", |_| {
            let chunks = futures_util::stream::iter((0..CHUNKS).map(|i| Bytes::from(noise(i + 10, CHUNK))));
            reply_stream(&[("content-type", "application/octet-stream")], chunks)
        })
        .run()
        .await;
    let sent = tokio::task::spawn_blocking(|| {
        let mut hash = Sha256::new();
        for i in 0..CHUNKS {
            hash.update(noise(i + 10, CHUNK));
        }
        hash.finalize()
    });
    let pith = Pith::start("").await;
    let mut resp = pith.client().get(origin.url("/big")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut hash = Sha256::new();
    let mut len = 0u64;
    while let Some(chunk) = resp.chunk().await.expect("the body streams to its end") {
        len += chunk.len() as u64;
        hash.update(&chunk);
    }
    assert_eq!(len, CHUNKS * CHUNK as u64);
    assert_eq!(hash.finalize(), sent.await.unwrap(), "the client must receive exactly the origin's bytes");
}

#[tokio::test]
async fn hop_by_hop_headers_never_cross_and_via_is_added() {
    let origin = Origin::new()
        .route("/hop", |_| {
            reply(&[("content-type", "text/plain"), ("connection", "x-resp-secret"), ("x-resp-secret", "1"), ("x-resp-public", "2")], "ok")
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let extra = "Connection: keep-alive, X-Secret\r\nX-Secret: hidden\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n\
                 Proxy-Authorization: Basic dXNlcjpwYXNz\r\nProxy-Connection: keep-alive\r\nUpgrade: websocket\r\nTrailer: X-Checksum\r\n\
                 Cookie: session=abc\r\nAuthorization: Bearer token-1\r\nX-Custom: kept\r\n";
    let resp = exchange(pith.addr, &request("GET", &origin.url("/hop"), extra)).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "ok"));

    let seen = origin.last();
    for gone in ["x-secret", "keep-alive", "te", "proxy-authorization", "proxy-connection", "upgrade", "trailer"] {
        assert!(seen.header(gone).is_none(), "{gone} reached the origin: {:?}", seen.headers);
    }
    assert!(!seen.header("connection").unwrap_or_default().to_ascii_lowercase().contains("x-secret"));
    assert!(seen.header("via").is_some_and(|v| v.contains("pith")), "Via: {:?}", seen.header("via"));
    assert_eq!(seen.header("cookie").as_deref(), Some("session=abc"));
    assert_eq!(seen.header("authorization").as_deref(), Some("Bearer token-1"));
    assert_eq!(seen.header("x-custom").as_deref(), Some("kept"));

    assert!(resp.header("x-resp-secret").is_none(), "a header the origin's Connection names must not reach the client");
    assert_eq!(resp.header("x-resp-public"), Some("2"));
    assert!(resp.header("via").is_some_and(|v| v.contains("pith")), "response Via: {:?}", resp.header("via"));
}

#[tokio::test]
async fn own_pages_answer_requests_addressed_to_pith() {
    let pith = Pith::start("").await;

    let resp = exchange(pith.addr, format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", pith.addr).as_bytes()).await;
    assert_eq!(resp.status, 200);
    assert!(resp.text().contains("pith") && resp.text().contains("declutter"), "{}", resp.text());
    // The built-in config defines more profiles than this one listener serves.
    for unserved in ["<strong>reader</strong>", ">text<", ">pass<"] {
        assert!(!resp.text().contains(unserved), "{unserved} listed: {}", resp.text());
    }

    let client = pith.client();
    for url in ["http://pith/".to_string(), format!("http://{}/", pith.addr), format!("http://localhost:{}/", pith.addr.port())] {
        let resp = client.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        assert!(resp.text().await.unwrap().contains("pith"), "{url}");
    }
    let resp = client.get("http://pith/no-such-page").send().await.unwrap();
    assert_eq!(resp.status(), 404);
}

/// An origin that promises `Content-Length: 100000`, sends 1000 bytes and closes. An empty
/// `content_type` sends no Content-Type, so that pith has to sniff.
async fn short_origin(content_type: &'static str) -> RawOrigin {
    RawOrigin::start(move |stream| async move {
        let mut reader = BufReader::new(stream);
        read_head(&mut reader).await;
        let type_line = if content_type.is_empty() { String::new() } else { format!("Content-Type: {content_type}\r\n") };
        let head = format!("HTTP/1.1 200 OK\r\n{type_line}Content-Length: 100000\r\n\r\n");
        let stream = reader.get_mut();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&[b'x'; 1000]).await.unwrap();
        stream.shutdown().await.unwrap();
    })
    .await
}

#[tokio::test]
async fn an_origin_closing_mid_body_aborts_a_streamed_response() {
    // Typed: streamed at once. Untyped: sniffed first (and found not to be HTML), then
    // streamed after the bytes already read.
    for content_type in ["application/octet-stream", ""] {
        let origin = short_origin(content_type).await;
        let pith = Pith::start("").await;
        let mut resp = pith.client().get(origin.url("/cut")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{content_type:?}: the head was already on its way");
        let body = read_body(&mut resp).await;
        assert!(body.is_err(), "{content_type:?}: a cut-short body must not end cleanly; got {} bytes", body.map(|b| b.len()).unwrap_or(0));
    }
}

#[tokio::test]
async fn an_origin_dropping_the_last_chunk_aborts_a_streamed_response() {
    let origin = RawOrigin::start(|stream| async move {
        let mut reader = BufReader::new(stream);
        read_head(&mut reader).await;
        let stream = reader.get_mut();
        stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n").await.unwrap();
        stream.write_all(&chunk(&[b'y'; 1000])).await.unwrap();
        stream.shutdown().await.unwrap();
    })
    .await;
    let pith = Pith::start("").await;
    // Raw, to see the framing itself: the proxy must not send the terminating chunk.
    let mut client = pith.raw().await;
    client.send(&request("GET", &origin.url("/cut"), "")).await;
    let resp = client.read_response(true).await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    let mut reader = client.into_inner();
    let mut received = 0;
    let end = loop {
        match tokio::time::timeout(raw::GUARD, read_chunk(&mut reader)).await.expect("pith ends the response") {
            Ok(Some(data)) => received += data.len(),
            other => break other,
        }
    };
    assert!(end.is_err(), "the response must be aborted, not terminated with a last chunk ({received} bytes before)");
    assert_eq!(received, 1000);
}

#[tokio::test]
async fn an_origin_closing_mid_page_gives_502() {
    let origin = short_origin("text/html").await;
    let pith = Pith::start("").await;
    let resp = pith.client().get(origin.url("/cut")).send().await.unwrap();
    assert_eq!(resp.status(), 502);
    let text = resp.text().await.unwrap();
    assert!(text.contains("127.0.0.1"), "the error page names the origin: {text}");
}

/// A request that already carries this pith's `Via` entry has come round in a loop (through
/// another proxy, or a name that resolves to pith): it is refused, not forwarded again.
#[tokio::test]
async fn a_request_that_already_passed_this_proxy_is_refused() {
    let origin = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let first = client.get(origin.url("/")).send().await.unwrap();
    let ours = first.headers()["via"].to_str().unwrap().to_string();

    let looped = client.get(origin.url("/")).header("via", format!("1.1 other-proxy, {ours}")).send().await.unwrap();
    assert_eq!(looped.status(), 508);
    assert_eq!(origin.received().len(), 1, "the looping request must not reach the origin");

    let elsewhere = client.get(origin.url("/")).header("via", "1.1 pith-00000000").send().await.unwrap();
    assert_eq!(elsewhere.status(), 200, "another pith's entry is not a loop");
}
