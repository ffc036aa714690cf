//! Faults of a misbehaving origin: each one gives the client a clear outcome (a status, or an
//! aborted body; never a cut-short page served as whole), and the proxy keeps serving other
//! clients while the fault is in progress.
//!
//! Every fault origin reads the request, tells the test through a [`Gate`] that it holds the
//! connection, and waits to be released. The test sends a healthy request through the same
//! proxy meanwhile, then releases the origin and checks what the faulty request got.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::common::raw::{self, read_head, GUARD};
use crate::common::*;

/// A rendezvous between a fault origin and its test: the origin says it has reached the
/// fault, the test says when to go on.
#[derive(Clone, Default)]
struct Gate {
    reached: Arc<Notify>,
    release: Arc<Notify>,
}

impl Gate {
    /// Called by the origin: "I hold a request", then wait for the test.
    async fn hold(&self) {
        self.reached.notify_one();
        self.release.notified().await;
    }
}

/// An origin that reads a request head, writes `head` and `start`, waits at the gate, then
/// runs `end` on the connection.
async fn fault_origin<F, Fut>(gate: &Gate, head: String, start: Vec<u8>, end: F) -> RawOrigin
where
    F: Fn(TcpStream) -> Fut + Send + Sync + Clone + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let gate = gate.clone();
    RawOrigin::start(move |stream| {
        let (gate, head, start, end) = (gate.clone(), head.clone(), start.clone(), end.clone());
        async move {
            let mut reader = BufReader::new(stream);
            read_head(&mut reader).await;
            let mut stream = reader.into_inner();
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&start).await;
            let _ = stream.flush().await;
            gate.hold().await;
            end(stream).await;
        }
    })
    .await
}

/// Closes with a TCP reset (SO_LINGER 0), not a clean FIN.
async fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

/// Closes cleanly.
async fn close(stream: TcpStream) {
    drop(stream);
}

/// Never writes again and never closes.
async fn stall(_stream: TcpStream) {
    std::future::pending::<()>().await;
}

/// What the faulty request got: status, and the body or the error that ended it.
type Outcome = (u16, Result<Vec<u8>, reqwest::Error>);

/// Sends a GET for `url` through `pith` in its own task.
fn spawn_get(pith: &Pith, url: String) -> JoinHandle<Outcome> {
    let client = pith.client();
    tokio::spawn(async move {
        let mut resp = client.get(url).send().await.expect("pith answers with a response head");
        let status = resp.status().as_u16();
        (status, read_body(&mut resp).await)
    })
}

/// A well-behaved origin serving [`CLUTTERED`] at `/`.
async fn healthy_origin() -> RunningOrigin {
    Origin::new().route("/", |_| reply(&[("content-type", "text/html; charset=utf-8")], CLUTTERED)).run().await
}

/// Waits until the fault origin holds its request, checks that a healthy page is served
/// meanwhile, releases the origin and returns the faulty request's outcome.
async fn while_held(pith: &Pith, healthy: &RunningOrigin, gate: &Gate, fault: JoinHandle<Outcome>) -> Outcome {
    tokio::time::timeout(GUARD, gate.reached.notified()).await.expect("the fault origin receives its request");
    let resp = pith.client().get(healthy.url("/")).send().await.expect("the healthy request gets a response");
    assert_eq!(resp.status(), 200, "a healthy page must be served while a fault is in progress");
    let headers = resp.headers().clone();
    let body = resp.bytes().await.expect("the healthy body is whole");
    assert_rewritten_headers(&headers, body.len());
    assert_decluttered(&String::from_utf8_lossy(&body));
    gate.release.notify_one();
    tokio::time::timeout(GUARD, fault).await.expect("the faulty request ends within the guard time").expect("the fault task")
}

fn head(content_type: &str, framing: &str) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{framing}\r\n")
}

const PAGE_START: &[u8] = b"<!DOCTYPE html><html><body><p>the first part of a page";

/// Asserts a pass-through response whose body was aborted, not ended cleanly.
fn assert_aborted((status, body): Outcome, what: &str) {
    assert_eq!(status, 200, "{what}: a streamed response has already sent its head");
    let err = body.expect_err(&format!("{what}: the client must see the body fail, not end as if whole"));
    assert!(!err.is_timeout(), "{what}: pith must end the body itself: {err}");
}

/// Asserts a page pith meant to rewrite came back as a 5xx error page (`status`).
fn assert_error_page((got, body): Outcome, status: u16, what: &str) {
    assert_eq!(got, status, "{what}");
    let text = String::from_utf8(body.expect("an error page is whole")).expect("UTF-8 error page");
    assert!(text.contains("127.0.0.1"), "{what}: the error page names the origin:\n{text}");
    assert!(!text.contains("the first part of a page"), "{what}: no part of the broken page is served:\n{text}");
}

#[tokio::test]
async fn a_page_reset_mid_body_is_502() {
    let (gate, healthy) = (Gate::default(), healthy_origin().await);
    let origin = fault_origin(&gate, head("text/html", "Content-Length: 5000\r\n"), PAGE_START.to_vec(), reset).await;
    let pith = Pith::start("").await;
    let outcome = while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await;
    assert_error_page(outcome, 502, "reset page");
}

#[tokio::test]
async fn a_streamed_body_reset_midway_is_aborted() {
    let (gate, healthy) = (Gate::default(), healthy_origin().await);
    let origin = fault_origin(&gate, head("application/octet-stream", "Content-Length: 5000\r\n"), vec![b'z'; 100], reset).await;
    let pith = Pith::start("").await;
    assert_aborted(while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await, "reset stream");
}

#[tokio::test]
async fn an_origin_stalling_after_the_head_is_504_for_a_page_and_aborted_for_a_stream() {
    let healthy = healthy_origin().await;
    let pith = Pith::start("[upstream]\nbody_idle_timeout_ms = 400").await;
    for (content_type, is_page) in [("text/html", true), ("application/octet-stream", false)] {
        let gate = Gate::default();
        let origin = fault_origin(&gate, head(content_type, "Content-Length: 5000\r\n"), Vec::new(), stall).await;
        let outcome = while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await;
        if is_page {
            assert_error_page(outcome, 504, "stalled page");
        } else {
            assert_aborted(outcome, "stalled stream");
        }
    }
}

#[tokio::test]
async fn a_content_length_promising_more_than_sent_is_502_or_aborted() {
    let healthy = healthy_origin().await;
    let pith = Pith::start("").await;
    for (content_type, is_page) in [("text/html", true), ("application/octet-stream", false)] {
        let gate = Gate::default();
        let origin = fault_origin(&gate, head(content_type, "Content-Length: 5000\r\n"), PAGE_START.to_vec(), close).await;
        let outcome = while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await;
        if is_page {
            assert_error_page(outcome, 502, "short page");
        } else {
            assert_aborted(outcome, "short stream");
        }
    }
}

/// The origin promises 12 bytes and sends, on the same connection, a whole second response
/// after them. The excess must be dropped, never taken as the answer to a later request on a
/// pooled connection (response splitting).
#[tokio::test]
async fn bytes_past_the_content_length_are_dropped_and_never_answer_another_request() {
    let (gate, healthy) = (Gate::default(), healthy_origin().await);
    let smuggled = b"<p>promised</p>HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 21\r\n\r\n<p>SMUGGLED PAGE</p>\n";
    let origin = RawOrigin::start({
        let gate = gate.clone();
        move |stream| {
            let gate = gate.clone();
            async move {
                let mut reader = BufReader::new(stream);
                read_head(&mut reader).await;
                let _ = reader.get_mut().write_all(head("text/html", "Content-Length: 15\r\n").as_bytes()).await;
                let _ = reader.get_mut().write_all(smuggled).await;
                gate.hold().await;
                // Should pith ever send a second request here, answer it honestly.
                read_head(&mut reader).await;
                let _ = reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 14\r\n\r\n<p>honest</p>\n").await;
                std::future::pending::<()>().await;
            }
        }
    })
    .await;
    let pith = Pith::start("").await;
    let (status, body) = while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await;
    assert_eq!(status, 200);
    let text = String::from_utf8(body.expect("the promised page is whole")).unwrap();
    assert!(text.contains("promised") && !text.contains("SMUGGLED"), "only the promised 15 bytes are the page:\n{text}");
    // The next request to the same origin is answered by a fresh exchange, never by the excess.
    gate.release.notify_one();
    let next = pith.client().get(origin.url("/again")).send().await.unwrap();
    assert_eq!(next.status(), 200);
    let text = next.text().await.unwrap();
    assert!(!text.contains("SMUGGLED"), "the excess bytes answered another request:\n{text}");
}

#[tokio::test]
async fn invalid_chunked_framing_is_502_for_a_page_and_aborted_for_a_stream() {
    let healthy = healthy_origin().await;
    let pith = Pith::start("").await;
    let mut body = raw::chunk(PAGE_START);
    body.extend_from_slice(b"ZZ-not-hex\r\nmore\r\n0\r\n\r\n");
    for (content_type, is_page) in [("text/html", true), ("application/octet-stream", false)] {
        let gate = Gate::default();
        let origin = chunked_origin(&gate, content_type, body.clone()).await;
        let outcome = while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await;
        if is_page {
            assert_error_page(outcome, 502, "bad chunking in a page");
        } else {
            assert_aborted(outcome, "bad chunking in a stream");
        }
    }
}

/// A chunked response: the head before the gate, `rest` (valid chunks, then garbage) after it.
async fn chunked_origin(gate: &Gate, content_type: &'static str, rest: Vec<u8>) -> RawOrigin {
    let gate = gate.clone();
    RawOrigin::start(move |stream| {
        let (gate, rest) = (gate.clone(), rest.clone());
        async move {
            let mut reader = BufReader::new(stream);
            read_head(&mut reader).await;
            let mut stream = reader.into_inner();
            let _ = stream.write_all(head(content_type, "Transfer-Encoding: chunked\r\n").as_bytes()).await;
            gate.hold().await;
            let _ = stream.write_all(&rest).await;
            std::future::pending::<()>().await;
        }
    })
    .await
}


/// A gzip page that is garbage from the start, and one cut short inside the stream (the
/// HTTP framing is whole, the gzip trailer is missing).
#[tokio::test]
async fn invalid_gzip_in_a_page_is_502() {
    let healthy = healthy_origin().await;
    let pith = Pith::start("").await;
    let whole = codec::gzip(CLUTTERED.as_bytes());
    let cut = whole[..whole.len() / 2].to_vec();
    for (what, body) in [("garbage gzip", b"this is not gzip at all, not even close".to_vec()), ("truncated gzip", cut)] {
        let gate = Gate::default();
        let framing = format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", body.len());
        let origin = fault_origin(&gate, head("text/html", &framing), Vec::new(), move |mut stream: TcpStream| {
            let body = body.clone();
            async move {
                let _ = stream.write_all(&body).await;
                std::future::pending::<()>().await;
            }
        })
        .await;
        let outcome = while_held(&pith, &healthy, &gate, spawn_get(&pith, origin.url("/"))).await;
        assert_error_page(outcome, 502, what);
    }
}

/// Decoded bytes the bomb expands to: 5 GiB of zeros.
const BOMB_DECODED: u64 = 5 << 30;
/// Zeros per repeated DEFLATE segment.
const BOMB_SEGMENT: usize = 1 << 20;

/// A gzip stream of [`BOMB_DECODED`] zeros, built in bounded memory: one DEFLATE segment of
/// 1 MiB of zeros, compressed from a fresh state and ended with a full flush, so that it
/// refers to nothing before it and can be repeated; then a final empty block and the trailer,
/// whose CRC is combined rather than computed over 5 GiB. Returns the head, the segment, its
/// count and the tail.
fn gzip_bomb(decoded: u64) -> (Bytes, Bytes, u64, Bytes) {
    let zeros = vec![0u8; BOMB_SEGMENT];
    let mut deflate = flate2::Compress::new(flate2::Compression::best(), false);
    let mut segment = Vec::with_capacity(BOMB_SEGMENT / 100);
    deflate.compress_vec(&zeros, &mut segment, flate2::FlushCompress::Full).expect("compress into memory");
    assert_eq!(deflate.total_in(), BOMB_SEGMENT as u64, "the whole segment fits the output buffer");
    let count = decoded / BOMB_SEGMENT as u64;
    let mut segment_crc = flate2::Crc::new();
    segment_crc.update(&zeros);
    let mut crc = flate2::Crc::new();
    for _ in 0..count {
        crc.combine(&segment_crc);
    }
    let head = Bytes::from_static(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
    // A final fixed-Huffman block holding only end-of-block, then CRC32 and ISIZE (mod 2^32).
    let mut tail = vec![0x03, 0x00];
    tail.extend_from_slice(&crc.sum().to_le_bytes());
    tail.extend_from_slice(&((count * BOMB_SEGMENT as u64) as u32).to_le_bytes());
    (head, Bytes::from(segment), count, Bytes::from(tail))
}

#[test]
fn the_bomb_generator_makes_valid_gzip() {
    use std::io::Read;
    let (head, segment, count, tail) = gzip_bomb(3 * BOMB_SEGMENT as u64);
    let mut stream = head.to_vec();
    for _ in 0..count {
        stream.extend_from_slice(&segment);
    }
    stream.extend_from_slice(&tail);
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&stream[..]).read_to_end(&mut out).expect("valid gzip, CRC and length included");
    assert_eq!(out.len(), 3 * BOMB_SEGMENT);
    assert!(out.iter().all(|&b| b == 0));
    assert!(segment.len() < BOMB_SEGMENT / 500, "a segment compresses ~1000:1, got {} bytes", segment.len());
}

/// A 5 GiB decompression bomb (about 5 MB on the wire) labelled as a gzip HTML page: pith
/// decodes only up to `max_rewrite_bytes`, then passes the origin's bytes through untouched,
/// whole and never rewritten; memory stays bounded because nothing past the cap is decoded.
#[tokio::test]
async fn a_gzip_bomb_page_passes_through_whole_and_unrewritten() {
    let (gate, healthy) = (Gate::default(), healthy_origin().await);
    let (bomb_head, segment, count, tail) = gzip_bomb(BOMB_DECODED);
    let expected_tail = tail.clone();
    let wire_len = bomb_head.len() as u64 + segment.len() as u64 * count + tail.len() as u64;
    let framing = format!("Content-Encoding: gzip\r\nContent-Length: {wire_len}\r\n");
    let origin = RawOrigin::start({
        let gate = gate.clone();
        move |stream| {
            let (gate, bomb_head, segment, tail, framing) = (gate.clone(), bomb_head.clone(), segment.clone(), tail.clone(), framing.clone());
            async move {
                let mut reader = BufReader::new(stream);
                read_head(&mut reader).await;
                let mut stream = reader.into_inner();
                let _ = stream.write_all(head("text/html", &framing).as_bytes()).await;
                let _ = stream.write_all(&bomb_head).await;
                for i in 0..count {
                    if i == 4 {
                        gate.hold().await;
                    }
                    if stream.write_all(&segment).await.is_err() {
                        return;
                    }
                }
                let _ = stream.write_all(&tail).await;
                std::future::pending::<()>().await;
            }
        }
    })
    .await;
    let pith = Pith::start("").await;
    let fault = {
        let client = pith.client();
        let url = origin.url("/");
        tokio::spawn(async move {
            let mut resp = client.get(url).send().await.expect("a response head");
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let mut received = 0u64;
            let mut last = Vec::new();
            while let Some(chunk) = resp.chunk().await.expect("the bomb's bytes pass through whole") {
                received += chunk.len() as u64;
                last = chunk.to_vec();
            }
            (status, headers, received, last)
        })
    };
    tokio::time::timeout(GUARD, gate.reached.notified()).await.expect("the bomb origin receives its request");
    let resp = pith.client().get(healthy.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_decluttered(&resp.text().await.unwrap());
    gate.release.notify_one();
    let (status, headers, received, last) = tokio::time::timeout(Duration::from_secs(60), fault).await.expect("the bomb ends").unwrap();
    assert_eq!(status, 200);
    assert_eq!(headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"), "the origin's coding is kept");
    assert!(headers.get("x-pith").is_none(), "a bomb is never rewritten: {headers:?}");
    assert_eq!(received, wire_len, "every byte the origin sent, no more, no less");
    assert!(last.ends_with(&expected_tail), "the stream ends with the origin's gzip trailer");
}

/// Serves `page` as HTML at `/` after the gate (head and body sent in one go once released).
async fn page_origin(gate: &Gate, page: Vec<u8>) -> RawOrigin {
    let framing = format!("Content-Length: {}\r\n", page.len());
    fault_origin(gate, head("text/html; charset=utf-8", &framing), Vec::new(), move |mut stream: TcpStream| {
        let page = page.clone();
        async move {
            let _ = stream.write_all(&page).await;
            std::future::pending::<()>().await;
        }
    })
    .await
}

/// A hostile page must come back whole: rewritten, with its marker text, an exact length, and
/// in the form the profile asks for, or with `text_fallback` (too deep for text) as the
/// stage-1 HTML page saying so in `x-pith-fallback`. Never cut short, never an error, never a
/// crash. Checked for the HTML and the text profile.
async fn assert_hostile_page_served(page: Vec<u8>, marker: &str, what: &str, text_fallback: bool) {
    let healthy = healthy_origin().await;
    for profile in ["declutter", "text"] {
        let pith = Pith::start(&format!("profile = \"{profile}\"")).await;
        let gate = Gate::default();
        let origin = page_origin(&gate, page.clone()).await;
        let fault = {
            let client = pith.client();
            let url = origin.url("/");
            tokio::spawn(async move {
                let resp = client.get(url).send().await.expect("a response head");
                let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
                let length = resp.content_length();
                let body = resp.bytes().await.expect("a whole body");
                (status, headers, length, body)
            })
        };
        tokio::time::timeout(GUARD, gate.reached.notified()).await.expect("the origin receives its request");
        let resp = pith.client().get(healthy.url("/")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{what}/{profile}: healthy request");
        assert!(resp.text().await.unwrap().contains("First paragraph stays."), "{what}/{profile}: healthy page");
        // And once more while pith reads and rewrites the hostile page.
        gate.release.notify_one();
        let again = pith.client().get(healthy.url("/"));
        let (fault, again) = tokio::join!(tokio::time::timeout(Duration::from_secs(60), fault), again.send());
        assert_eq!(again.expect("the healthy request during the rewrite").status(), 200, "{what}/{profile}: healthy request during the rewrite");
        let (status, headers, length, body) = fault.expect("the page is served").unwrap();
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{what}/{profile}: {}", &text[..text.len().min(300)]);
        assert_eq!(length, Some(body.len() as u64), "{what}/{profile}: exact length");
        assert!(text.contains(marker), "{what}/{profile}: the page's text is kept: {}", &text[..text.len().min(300)]);
        let falls_back = profile == "text" && text_fallback;
        let content_type = if falls_back || profile == "declutter" { "text/html; charset=utf-8" } else { "text/plain; charset=utf-8" };
        assert_eq!(headers["content-type"], content_type, "{what}/{profile}");
        let fallback = headers.get("x-pith-fallback").map(|v| v.to_str().unwrap().to_string());
        assert_eq!(fallback.as_deref().is_some_and(|f| f.starts_with("too-deep")), falls_back, "{what}/{profile}: x-pith-fallback {fallback:?}");
    }
}

#[tokio::test]
async fn a_page_nested_100000_deep_is_served_whole() {
    const DEPTH: usize = 100_000;
    let mut page = b"<!DOCTYPE html><html><head><title>deep</title></head><body>".to_vec();
    page.extend(b"<div>".repeat(DEPTH));
    page.extend_from_slice(b"<p>DEEP-MARKER text at the bottom of the well.</p>");
    page.extend(b"</div>".repeat(DEPTH));
    page.extend_from_slice(b"<p>After the well, more text that stays.</p></body></html>");
    assert_hostile_page_served(page, "DEEP-MARKER", "deep nesting", true).await;
}

#[tokio::test]
async fn an_element_with_10000_attributes_is_served_whole() {
    let mut page = b"<!DOCTYPE html><html><head><title>attrs</title></head><body><div".to_vec();
    for i in 0..10_000 {
        page.extend_from_slice(format!(" data-a{i}=\"v{i}\"").as_bytes());
    }
    page.extend_from_slice(b"><p>ATTR-MARKER text inside the crowded element, long enough to be content.</p></div></body></html>");
    assert_hostile_page_served(page, "ATTR-MARKER", "10000 attributes", false).await;
}
