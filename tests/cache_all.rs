//! One cache for every response, not only rewritten pages: images, scripts and other responses
//! pith streams through unchanged, in every profile, held to RFC 9111 as a shared cache. Each
//! test names the clause it checks and counts what the origin received.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;

use crate::common::got::{metric, send};
use crate::common::origin::{reply_stream, Body, Received};
use crate::common::{read_body, reply, Origin, Pith, RawOrigin, CLUTTERED};

/// A response as the client saw it, body as bytes.
struct Fetched {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Fetched {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().expect("ASCII header"))
    }

    fn x_cache(&self) -> Option<&str> {
        self.header("x-cache")
    }
}

async fn fetch(client: &reqwest::Client, method: Method, url: &str, headers: &[(&str, &str)]) -> Fetched {
    let mut req = client.request(method, url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let mut resp = req.send().await.expect("the proxy answers");
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let body = read_body(&mut resp).await.expect("a whole body");
    Fetched { status, headers, body }
}

async fn get(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> Fetched {
    fetch(client, Method::GET, url, headers).await
}

/// Bytes that are no text in any encoding, and differ from one position to the next.
fn image_bytes(len: usize) -> Bytes {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..len.saturating_sub(8)).map(|i| (i * 7 % 251) as u8));
    Bytes::from(bytes)
}

fn image(len: usize, headers: &'static [(&'static str, &'static str)]) -> impl Fn(&Received) -> http::Response<Body> + Send + Sync + 'static {
    let bytes = image_bytes(len);
    move |_| {
        let mut head = vec![("content-type", "image/png")];
        head.extend_from_slice(headers);
        reply(&head, bytes.clone())
    }
}

fn with_status(mut resp: http::Response<Body>, status: StatusCode) -> http::Response<Body> {
    *resp.status_mut() = status;
    resp
}

/// RFC 9111 §3: an image, which pith never rewrites, is stored in every profile, the `pass`
/// profile included: fetched once, then served from memory with the origin's own bytes and
/// fields (a strong ETag, its own Content-Length) and an `Age`.
#[tokio::test]
async fn rfc9111_3_an_image_is_kept_in_every_profile() {
    let origin = Origin::new().route("/logo.png", image(64 * 1024, &[("cache-control", "max-age=600"), ("etag", "\"img1\"")])).run().await;
    let url = origin.url("/logo.png");
    for extra in ["", "profile = \"pass\"\n", "profile = \"text\"\n"] {
        let pith = Pith::start(extra).await;
        let client = pith.client();
        let before = origin.count("/logo.png");
        let first = get(&client, &url, &[]).await;
        assert_eq!((first.status, first.x_cache()), (200, Some("MISS")), "{extra}");
        assert_eq!(first.body, image_bytes(64 * 1024), "{extra}");
        let second = get(&client, &url, &[]).await;
        assert_eq!((second.status, second.x_cache()), (200, Some("HIT")), "{extra}");
        assert_eq!(second.body, first.body, "{extra}: the origin's bytes, unchanged");
        assert_eq!(second.header("etag"), Some("\"img1\""), "{extra}: the origin's strong ETag");
        assert_eq!(second.header("content-length"), Some("65536"), "{extra}");
        assert_eq!(second.header("content-type"), Some("image/png"), "{extra}");
        assert!(second.header("age").is_some_and(|a| a.parse::<u64>().is_ok()), "{extra}: Age {:?}", second.header("age"));
        assert_eq!(origin.count("/logo.png") - before, 1, "{extra}: the origin is asked once");
        assert_eq!(metric(&client, "pith_cache_stores_total").await, 1, "{extra}");
    }
}

/// RFC 9111 §3 and §4.2.2: other final statuses are kept when they have explicit freshness or
/// are cacheable by default with a heuristic or validator (404, 301, 410, 204, and a rewritten
/// 404 page); a status the cache does not understand (500) and a 302 without explicit freshness
/// are not.
#[tokio::test]
async fn rfc9111_3_other_final_statuses_are_kept() {
    let origin = Origin::new()
        .route("/missing", |_| with_status(reply(&[("content-type", "text/plain"), ("cache-control", "max-age=60")], "no such thing"), StatusCode::NOT_FOUND))
        .route("/missing-page", |_| with_status(reply(&[("content-type", "text/html"), ("cache-control", "max-age=60")], CLUTTERED), StatusCode::NOT_FOUND))
        .route("/moved", |_| with_status(reply(&[("location", "/elsewhere"), ("cache-control", "max-age=60")], ""), StatusCode::MOVED_PERMANENTLY))
        .route("/gone", |_| with_status(reply(&[("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")], "gone"), StatusCode::GONE))
        .route("/empty", |_| with_status(reply(&[("cache-control", "max-age=60")], ""), StatusCode::NO_CONTENT))
        .route("/broken", |_| with_status(reply(&[("cache-control", "max-age=60")], "broken"), StatusCode::INTERNAL_SERVER_ERROR))
        .route("/found", |_| with_status(reply(&[("location", "/elsewhere"), ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")], ""), StatusCode::FOUND))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client_builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    for (path, status, kept) in [
        ("/missing", 404, true),
        ("/missing-page", 404, true),
        ("/moved", 301, true),
        ("/gone", 410, true),
        ("/empty", 204, true),
        ("/broken", 500, false),
        ("/found", 302, false),
    ] {
        let first = get(&client, &origin.url(path), &[]).await;
        let second = get(&client, &origin.url(path), &[]).await;
        assert_eq!((first.status, second.status), (status, status), "{path}");
        assert_eq!(second.body, first.body, "{path}");
        let expect = if kept { (Some("HIT"), 1) } else { (Some("MISS"), 2) };
        assert_eq!((second.x_cache(), origin.count(path)), expect, "{path}");
    }
}

/// A body pith does not rewrite reaches the client while the origin is still sending it (it is
/// never held back to be stored), and is kept once it has ended whole.
#[tokio::test]
async fn a_streamed_body_reaches_the_client_before_it_ends_and_is_kept_after() {
    let gate = Arc::new(Notify::new());
    let release = gate.clone();
    let origin = Origin::new()
        .route("/video.bin", move |_| {
            let gate = gate.clone();
            let first = futures_util::stream::once(async { Bytes::from_static(b"first part; ") });
            let rest = futures_util::stream::once(async move {
                gate.notified().await;
                Bytes::from_static(b"the rest, sent once the client has the first")
            });
            reply_stream(&[("content-type", "application/octet-stream"), ("cache-control", "max-age=600")], futures_util::StreamExt::chain(first, rest))
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/video.bin");
    let mut resp = client.get(&url).send().await.expect("the head arrives before the body ends");
    // A ceiling for a broken build (a body held back until whole never arrives), not a timing.
    let first = tokio::time::timeout(Duration::from_secs(30), resp.chunk()).await.expect("the first bytes arrive while the origin waits");
    assert_eq!(first.expect("a chunk").expect("data").as_ref(), b"first part; ");
    release.notify_one();
    let rest = read_body(&mut resp).await.expect("the rest");
    assert_eq!(rest, b"the rest, sent once the client has the first");
    let again = get(&client, &url, &[]).await;
    assert_eq!(again.x_cache(), Some("HIT"));
    assert_eq!(again.body, b"first part; the rest, sent once the client has the first");
    assert_eq!(origin.count("/video.bin"), 1);
}

/// A body larger than `cache.max_entry_bytes` streams to the client whole, stated length or
/// not, and is not kept: the copy is dropped once it outgrows the bound.
#[tokio::test]
async fn a_body_past_max_entry_bytes_is_served_whole_and_not_kept() {
    let big = image_bytes(100 * 1024);
    let chunks: Vec<Bytes> = big.chunks(8 * 1024).map(Bytes::copy_from_slice).collect();
    let origin = Origin::new()
        .route("/sized.png", image(100 * 1024, &[("cache-control", "max-age=600")]))
        .route("/chunked.png", move |_| reply_stream(&[("content-type", "image/png"), ("cache-control", "max-age=600")], futures_util::stream::iter(chunks.clone())))
        .run()
        .await;
    let pith = Pith::start("[cache]\nmax_entry_bytes = 16384\n").await;
    let client = pith.client();
    for path in ["/sized.png", "/chunked.png"] {
        for _ in 0..2 {
            let got = get(&client, &origin.url(path), &[]).await;
            assert_eq!((got.status, got.x_cache()), (200, Some("MISS")), "{path}");
            assert_eq!(got.body, big, "{path}: served whole");
        }
        assert_eq!(origin.count(path), 2, "{path}");
    }
    assert_eq!(metric(&client, "pith_cache_entries").await, 0);
}

/// RFC 9111 §3.3 (a cache must not store an incomplete response as complete): a body the origin
/// cuts short, with a Content-Length or chunked, fails for the client and is never kept.
#[tokio::test]
async fn rfc9111_3_3_a_truncated_body_is_never_kept() {
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let origin = RawOrigin::start(move |mut stream| {
        let counter = counter.clone();
        async move {
            let mut buf = [0u8; 4096];
            let n = tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await.unwrap_or(0);
            counter.fetch_add(1, Ordering::SeqCst);
            let chunked = String::from_utf8_lossy(&buf[..n]).contains("/chunked");
            let head = "HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncache-control: max-age=600\r\n";
            let cut = if chunked { format!("{head}transfer-encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n") } else { format!("{head}content-length: 5000\r\n\r\nonly part of it") };
            let _ = stream.write_all(cut.as_bytes()).await;
        }
    })
    .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for path in ["/sized", "/chunked"] {
        for _ in 0..2 {
            let mut resp = client.get(origin.url(path)).send().await.expect("a head");
            assert_eq!(resp.status(), 200, "{path}: the head was sent before the body failed");
            assert!(read_body(&mut resp).await.is_err(), "{path}: the body must fail, not end cleanly");
        }
    }
    assert_eq!(served.load(Ordering::SeqCst), 4, "every request reached the origin");
    assert_eq!(metric(&client, "pith_cache_entries").await, 0);
}

/// RFC 9111 §4.1: a streamed response is kept per value of the request headers its Vary names
/// (Accept-Encoding included: the origin chose the coding), and `Vary: *` is never kept.
#[tokio::test]
async fn rfc9111_4_1_vary_keeps_streamed_variants_apart() {
    let origin = Origin::new()
        .route("/style.css", |r: &Received| {
            let lang = r.header("accept-language").unwrap_or_default();
            reply(&[("content-type", "text/css"), ("cache-control", "max-age=600"), ("vary", "Accept-Language")], format!("/* {lang} */"))
        })
        .route("/coded.js", |r: &Received| {
            let coding = r.header("accept-encoding").unwrap_or_default();
            reply(&[("content-type", "text/javascript"), ("cache-control", "max-age=600"), ("vary", "Accept-Encoding")], format!("// {coding}"))
        })
        .route("/any.js", |_: &Received| reply(&[("content-type", "text/javascript"), ("cache-control", "max-age=600"), ("vary", "*")], "//"))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let css = origin.url("/style.css");
    for _ in 0..2 {
        for lang in ["en", "fr"] {
            let got = get(&client, &css, &[("accept-language", lang)]).await;
            assert_eq!(String::from_utf8_lossy(&got.body), format!("/* {lang} */"));
        }
    }
    assert_eq!(origin.count("/style.css"), 2, "one fetch per language");
    let js = origin.url("/coded.js");
    for _ in 0..2 {
        for coding in ["gzip", "gzip, deflate"] {
            let got = get(&client, &js, &[("accept-encoding", coding)]).await;
            assert_eq!(String::from_utf8_lossy(&got.body), format!("// {coding}"), "one encoding class, two Accept-Encoding values");
        }
    }
    assert_eq!(origin.count("/coded.js"), 2, "one fetch per Accept-Encoding value");
    for _ in 0..2 {
        assert_eq!(get(&client, &origin.url("/any.js"), &[]).await.x_cache(), Some("MISS"));
    }
    assert_eq!(origin.count("/any.js"), 2, "Vary: * is never kept");
}

/// RFC 9111 §3.5: a response to a request with Authorization is kept only when the origin says
/// public (or must-revalidate, or s-maxage); otherwise every request reaches the origin.
#[tokio::test]
async fn rfc9111_3_5_authorization_keeps_only_what_the_origin_allows() {
    let origin = Origin::new()
        .route("/mine.png", image(1024, &[("cache-control", "max-age=600")]))
        .route("/shared.png", image(1024, &[("cache-control", "public, max-age=600")]))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for path in ["/mine.png", "/shared.png"] {
        for _ in 0..2 {
            get(&client, &origin.url(path), &[("authorization", "Basic dXNlcjpwYXNz")]).await;
        }
    }
    assert_eq!((origin.count("/mine.png"), origin.count("/shared.png")), (2, 1));
}

/// RFC 9111 §4 (a stored GET may answer HEAD): a HEAD gets the stored response's head and no
/// body, without asking the origin; a HEAD for a URL not kept goes to the origin and stores
/// nothing.
#[tokio::test]
async fn rfc9111_4_a_head_is_answered_from_a_stored_get() {
    let origin = Origin::new()
        .route("/logo.png", image(4096, &[("cache-control", "max-age=600"), ("etag", "\"h\"")]))
        .route("/other.png", image(512, &[("cache-control", "max-age=600")]))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    assert_eq!(get(&client, &origin.url("/logo.png"), &[]).await.x_cache(), Some("MISS"));
    let head = fetch(&client, Method::HEAD, &origin.url("/logo.png"), &[]).await;
    assert_eq!((head.status, head.x_cache(), head.body.len()), (200, Some("HIT"), 0));
    assert_eq!(head.header("content-length"), Some("4096"), "the GET's length");
    assert_eq!(head.header("etag"), Some("\"h\""));
    assert_eq!(origin.count("/logo.png"), 1, "the HEAD did not reach the origin");
    let miss = fetch(&client, Method::HEAD, &origin.url("/other.png"), &[]).await;
    assert_eq!((miss.status, miss.x_cache(), miss.body.len()), (200, Some("MISS"), 0));
    assert_eq!(origin.last().method, Method::HEAD, "sent to the origin as a HEAD");
    assert_eq!(get(&client, &origin.url("/other.png"), &[]).await.x_cache(), Some("MISS"), "a HEAD stores nothing");
}

/// RFC 9111 §5.2.1.7: `only-if-cached` gets a stored fresh response or 504, and never reaches
/// the origin: not when nothing is kept, not when what is kept is stale.
#[tokio::test]
async fn rfc9111_5_2_1_7_only_if_cached_gets_504_when_nothing_fresh_is_kept() {
    let origin = Origin::new()
        .route("/logo.png", image(2048, &[("cache-control", "max-age=600")]))
        .route("/stale.png", image(2048, &[("cache-control", "max-age=0"), ("etag", "\"s\"")]))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let only = [("cache-control", "only-if-cached")];
    let logo = origin.url("/logo.png");
    assert_eq!(get(&client, &logo, &only).await.status, 504);
    assert_eq!(fetch(&client, Method::HEAD, &logo, &only).await.status, 504);
    assert_eq!(origin.count("/logo.png"), 0, "only-if-cached never reaches the origin");
    assert_eq!(get(&client, &logo, &[]).await.x_cache(), Some("MISS"));
    let kept = get(&client, &logo, &[("cache-control", "Only-If-Cached")]).await;
    assert_eq!((kept.status, kept.x_cache(), kept.body.len()), (200, Some("HIT"), 2048));
    let stale = origin.url("/stale.png");
    assert_eq!(get(&client, &stale, &[]).await.x_cache(), Some("MISS"));
    assert_eq!(get(&client, &stale, &only).await.status, 504, "stale is not enough");
    assert_eq!((origin.count("/logo.png"), origin.count("/stale.png")), (1, 1));
}

/// RFC 9111 §4.3.2 (and RFC 9110 §13.1.3): a client's If-Modified-Since is compared with the
/// stored Last-Modified as a date, in any of the three HTTP-date forms; an invalid date is
/// ignored. If-None-Match is compared weakly. A match gets 304 from the cache.
#[tokio::test]
async fn rfc9111_4_3_2_if_modified_since_is_compared_as_a_date() {
    let origin = Origin::new()
        .route("/logo.png", image(1024, &[("cache-control", "max-age=600"), ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT"), ("etag", "\"v1\"")]))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/logo.png");
    assert_eq!(get(&client, &url, &[]).await.x_cache(), Some("MISS"));
    for (name, value, status) in [
        ("if-modified-since", "Thu, 01 Jan 2026 00:00:00 GMT", 304),
        ("if-modified-since", "Friday, 02-Jan-26 00:00:00 GMT", 304),
        ("if-modified-since", "Fri Jan  2 00:00:00 2026", 304),
        ("if-modified-since", "Wed, 31 Dec 2025 23:59:59 GMT", 200),
        ("if-modified-since", "not a date", 200),
        ("if-none-match", "W/\"v1\"", 304),
        ("if-none-match", "\"v0\", \"v1\"", 304),
        ("if-none-match", "\"v2\"", 200),
    ] {
        let got = get(&client, &url, &[(name, value)]).await;
        assert_eq!((got.status, got.x_cache()), (status, Some("HIT")), "{name}: {value}");
        let length = if status == 304 { 0 } else { 1024 };
        assert_eq!(got.body.len(), length, "{name}: {value}");
    }
    assert_eq!(origin.count("/logo.png"), 1);
}

/// RFC 9111 §4.3 and §3.2: a stale streamed response is revalidated with its validators, and
/// a 304 serves the kept bytes again, with the 304's fields in place of the kept ones but for
/// those the kept bytes depend on (Content-Encoding, Content-Length).
#[tokio::test]
async fn rfc9111_4_3_a_stale_streamed_response_is_revalidated() {
    let full = Arc::new(AtomicUsize::new(0));
    let counted = full.clone();
    let bytes = image_bytes(4096);
    let origin = Origin::new()
        .route("/logo.png", move |r: &Received| {
            if r.header("if-none-match").as_deref() == Some("\"v1\"") {
                let head = [("etag", "\"v1\""), ("cache-control", "no-cache"), ("x-note", "new"), ("content-encoding", "gzip")];
                return with_status(reply(&head, ""), StatusCode::NOT_MODIFIED);
            }
            counted.fetch_add(1, Ordering::SeqCst);
            reply(&[("content-type", "image/png"), ("cache-control", "no-cache"), ("etag", "\"v1\""), ("x-note", "old")], bytes.clone())
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/logo.png");
    let first = get(&client, &url, &[]).await;
    assert_eq!(first.x_cache(), Some("MISS"));
    let second = get(&client, &url, &[]).await;
    assert_eq!((second.status, second.x_cache()), (200, Some("REVALIDATED")));
    assert_eq!(second.body, first.body);
    assert_eq!(second.header("etag"), Some("\"v1\""));
    assert_eq!(second.header("x-note"), Some("new"), "the 304's field replaces the kept one");
    assert_eq!((second.header("content-encoding"), second.header("content-length")), (None, Some("4096")), "but not what the kept bytes depend on");
    assert_eq!((origin.count("/logo.png"), full.load(Ordering::SeqCst)), (2, 1));
}

/// Many clients asking at once for a response that streams get it whole, each; the first to
/// finish makes it kept, and the next request is a hit.
#[tokio::test]
async fn concurrent_requests_for_a_streamed_response_are_all_served_whole() {
    let origin = Origin::new().route("/font.woff2", image(32 * 1024, &[("cache-control", "max-age=600")])).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/font.woff2");
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { get(&client, &url, &[]).await })
        })
        .collect();
    for t in tasks {
        let got = t.await.expect("the task finished");
        assert_eq!((got.status, got.body.len()), (200, 32 * 1024));
        assert_eq!(got.body, image_bytes(32 * 1024));
    }
    let asked = origin.count("/font.woff2");
    assert!((1..=20).contains(&asked), "{asked}");
    let after = send(&client, Method::GET, &url, &[]).await;
    assert_eq!(after.x_cache(), Some("HIT"));
    assert_eq!(origin.count("/font.woff2"), asked);
}
