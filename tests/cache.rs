//! The cache with rewritten pages: what is kept, what never is, how variants stay apart, how a
//! stale page is revalidated, and that concurrent misses reach the origin once. Every test
//! counts the requests the origin received.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http::StatusCode;
use tokio::sync::Notify;

use crate::common::origin::{reply_stream, status, Received};
use crate::common::got::{metric, send, Got};
use crate::common::{assert_decluttered, reply, Origin, Pith, CLUTTERED};


async fn get(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> Got {
    send(client, http::Method::GET, url, headers).await
}

fn html(cache_control: &'static str) -> impl Fn(&Received) -> http::Response<crate::common::origin::Body> + Send + Sync + 'static {
    move |_| reply(&[("content-type", "text/html"), ("cache-control", cache_control)], CLUTTERED)
}

#[tokio::test]
async fn a_fresh_page_reaches_the_origin_once() {
    let origin = Origin::new().route("/page", html("max-age=60")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();

    let first = get(&client, &origin.url("/page"), &[]).await;
    assert_eq!((first.status, first.x_cache()), (200, Some("MISS")));
    assert_decluttered(&first.body);
    let second = get(&client, &origin.url("/page"), &[]).await;
    assert_eq!((second.status, second.x_cache()), (200, Some("HIT")));
    assert_eq!(second.body, first.body, "a hit serves the rewritten page as first served");
    assert!(second.header("age").is_some_and(|a| a.parse::<u64>().is_ok()), "Age: {:?}", second.header("age"));
    assert_eq!(second.header("content-length"), Some(first.body.len().to_string().as_str()));
    assert!(second.header("x-pith").is_some_and(|v| v.contains("profile=declutter")));
    assert_eq!(origin.count("/page"), 1);
}

#[tokio::test]
async fn encodings_are_kept_apart() {
    let origin = Origin::new().route("/page", html("max-age=60")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let plain = get(&client, &origin.url("/page"), &[]).await;
    let gzip = get(&client, &origin.url("/page"), &[("accept-encoding", "gzip")]).await;
    assert_eq!((plain.x_cache(), gzip.x_cache()), (Some("MISS"), Some("MISS")), "each encoding class is its own entry");
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    let again = get(&client, &origin.url("/page"), &[("accept-encoding", "gzip")]).await;
    assert_eq!((again.x_cache(), again.header("content-encoding")), (Some("HIT"), Some("gzip")));
    assert_eq!(origin.count("/page"), 2);
}

/// A hit sends the body kept as first sent, in the client's coding: nothing is compressed again.
/// The proxy runs on this test's runtime thread, so the thread's count of compressed bodies
/// sees every compression the requests caused.
#[tokio::test]
async fn a_gzip_hit_compresses_nothing() {
    let origin = Origin::new().route("/page", html("max-age=60")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let before = pith::body::compressions_on_this_thread();
    let first = get(&client, &origin.url("/page"), &[("accept-encoding", "gzip")]).await;
    assert_eq!((first.x_cache(), first.header("content-encoding")), (Some("MISS"), Some("gzip")));
    let after_miss = pith::body::compressions_on_this_thread();
    assert_eq!(after_miss, before + 1, "the miss compresses the rewritten page once");
    for _ in 0..3 {
        let hit = get(&client, &origin.url("/page"), &[("accept-encoding", "gzip")]).await;
        assert_eq!((hit.x_cache(), hit.header("content-encoding")), (Some("HIT"), Some("gzip")));
        assert_eq!(hit.body, first.body, "the kept gzip body, byte for byte");
    }
    assert_eq!(pith::body::compressions_on_this_thread(), after_miss, "a hit compresses nothing");
    assert_eq!(origin.count("/page"), 1);
}

/// no-store, private, Set-Cookie, a Cookie without `public`, and error statuses a cache does
/// not understand (RFC 9111 §3; a 404 with freshness is kept, see `cache_all.rs`): each is
/// fetched twice and reaches the origin twice.
#[tokio::test]
async fn what_must_not_be_kept_never_is() {
    let error_page = |_: &Received| {
        let mut resp = reply(&[("content-type", "text/html"), ("cache-control", "max-age=60")], CLUTTERED);
        *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        resp
    };
    let origin = Origin::new()
        .route("/no-store", html("no-store"))
        .route("/private", html("private, max-age=60"))
        .route("/set-cookie", |_| reply(&[("content-type", "text/html"), ("cache-control", "max-age=60"), ("set-cookie", "id=1")], CLUTTERED))
        .route("/cookie", html("max-age=60"))
        .route("/unavailable", error_page)
        .route("/failing", |_| status(StatusCode::INTERNAL_SERVER_ERROR, "broken"))
        .route("/no-freshness", |_| reply(&[("content-type", "text/html")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for (path, headers) in [
        ("/no-store", vec![]),
        ("/private", vec![]),
        ("/set-cookie", vec![]),
        ("/cookie", vec![("cookie", "session=secret")]),
        ("/unavailable", vec![]),
        ("/failing", vec![]),
        ("/no-freshness", vec![]),
    ] {
        for _ in 0..2 {
            let got = get(&client, &origin.url(path), &headers).await;
            assert_ne!(got.x_cache(), Some("HIT"), "{path} must not be served from the cache");
        }
        assert_eq!(origin.count(path), 2, "{path} must reach the origin every time");
    }
}

#[tokio::test]
async fn credentials_are_kept_only_when_the_origin_says_public() {
    let origin = Origin::new().route("/public", html("public, max-age=60")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    get(&client, &origin.url("/public"), &[("cookie", "a=b")]).await;
    let second = get(&client, &origin.url("/public"), &[("cookie", "a=b")]).await;
    assert_eq!(second.x_cache(), Some("HIT"));
    assert_eq!(origin.count("/public"), 1);
}

#[tokio::test]
async fn vary_keeps_variants_apart() {
    let origin = Origin::new()
        .route("/greeting", |r: &Received| {
            let text = if r.header("accept-language").as_deref() == Some("fr") { "Bonjour tout le monde" } else { "Hello world" };
            let page = format!("<!DOCTYPE html><html><body><p>{text}</p></body></html>");
            reply(&[("content-type", "text/html"), ("cache-control", "max-age=60"), ("vary", "Accept-Language")], page)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/greeting");
    let en = get(&client, &url, &[("accept-language", "en")]).await;
    let fr = get(&client, &url, &[("accept-language", "fr")]).await;
    assert!(en.body.contains("Hello world") && !en.body.contains("Bonjour"), "{}", en.body);
    assert!(fr.body.contains("Bonjour"), "a French client must not get the English page: {}", fr.body);
    for _ in 0..2 {
        let en_again = get(&client, &url, &[("accept-language", "en")]).await;
        let fr_again = get(&client, &url, &[("accept-language", "fr")]).await;
        assert_eq!((en_again.x_cache(), fr_again.x_cache()), (Some("HIT"), Some("HIT")));
        assert_eq!((en_again.body.as_str(), fr_again.body.as_str()), (en.body.as_str(), fr.body.as_str()));
    }
    assert_eq!(origin.count("/greeting"), 2, "one fetch per language");
}

/// A page that must be revalidated each time (`no-cache`, with an ETag): the origin answers
/// the revalidation with 304, and pith serves the kept page without rewriting it again.
#[tokio::test]
async fn a_stale_page_is_revalidated_and_a_304_reuses_it() {
    let full = Arc::new(AtomicUsize::new(0));
    let counted = full.clone();
    let origin = Origin::new()
        .route("/page", move |r: &Received| {
            if r.header("if-none-match").as_deref() == Some("\"v1\"") {
                let mut resp = reply(&[("etag", "\"v1\""), ("cache-control", "no-cache")], "");
                *resp.status_mut() = StatusCode::NOT_MODIFIED;
                return resp;
            }
            counted.fetch_add(1, Ordering::SeqCst);
            reply(&[("content-type", "text/html"), ("cache-control", "no-cache"), ("etag", "\"v1\"")], CLUTTERED)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let first = get(&client, &origin.url("/page"), &[]).await;
    assert_eq!(first.x_cache(), Some("MISS"));
    assert_eq!(first.header("etag"), Some("W/\"v1\""));
    let second = get(&client, &origin.url("/page"), &[]).await;
    assert_eq!((second.status, second.x_cache()), (200, Some("REVALIDATED")));
    assert_eq!(second.body, first.body);
    assert_eq!(origin.last().header("if-none-match").as_deref(), Some("\"v1\""), "pith revalidates with the origin's own ETag");
    assert_eq!((origin.count("/page"), full.load(Ordering::SeqCst)), (2, 1), "two requests, one full page");
    assert_eq!(metric(&client, "pith_cache_revalidations_total").await, 1);
}

/// A 304 that brings new freshness makes the kept page fresh again: the next request is a hit.
#[tokio::test]
async fn a_304_refreshes_the_kept_page() {
    let origin = Origin::new()
        .route("/page", |r: &Received| {
            if r.header("if-modified-since").is_some() {
                let mut resp = reply(&[("cache-control", "max-age=600")], "");
                *resp.status_mut() = StatusCode::NOT_MODIFIED;
                return resp;
            }
            // Already stale when it arrives: max-age=10 but 20 s old.
            reply(&[("content-type", "text/html"), ("cache-control", "max-age=10"), ("age", "20"), ("last-modified", "Mon, 02 Nov 2026 10:00:00 GMT")], CLUTTERED)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    assert_eq!(get(&client, &origin.url("/page"), &[]).await.x_cache(), Some("MISS"));
    let revalidated = get(&client, &origin.url("/page"), &[]).await;
    assert_eq!(revalidated.x_cache(), Some("REVALIDATED"));
    assert_eq!(origin.last().header("if-modified-since").as_deref(), Some("Mon, 02 Nov 2026 10:00:00 GMT"));
    let hit = get(&client, &origin.url("/page"), &[]).await;
    assert_eq!(hit.x_cache(), Some("HIT"), "the 304's max-age=600 made the page fresh");
    assert_eq!(hit.header("cache-control"), Some("max-age=600"));
    assert_eq!(origin.count("/page"), 2);
}

/// No Cache-Control, no Expires: a page last modified long ago is fresh for a tenth of its age.
#[tokio::test]
async fn last_modified_gives_heuristic_freshness() {
    let origin = Origin::new()
        .route("/old", |_| reply(&[("content-type", "text/html"), ("last-modified", "Thu, 01 Jan 2026 00:00:00 GMT")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    get(&client, &origin.url("/old"), &[]).await;
    assert_eq!(get(&client, &origin.url("/old"), &[]).await.x_cache(), Some("HIT"));
    assert_eq!(origin.count("/old"), 1);
}

/// A client revalidating its own copy of a kept page gets 304 from the cache.
#[tokio::test]
async fn a_client_revalidation_is_answered_from_a_fresh_page() {
    let origin = Origin::new()
        .route("/page", |_| reply(&[("content-type", "text/html"), ("cache-control", "max-age=60"), ("etag", "\"v1\"")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let first = get(&client, &origin.url("/page"), &[]).await;
    let etag = first.header("etag").expect("an ETag").to_string();
    let again = get(&client, &origin.url("/page"), &[("if-none-match", &etag)]).await;
    assert_eq!((again.status, again.x_cache(), again.body.as_str()), (304, Some("HIT"), ""));
    assert_eq!(origin.count("/page"), 1);
}

/// 50 clients miss at once; the origin is asked once and all get the same page.
#[tokio::test]
async fn concurrent_misses_reach_the_origin_once() {
    let gate = Arc::new(Notify::new());
    let release = gate.clone();
    let origin = Origin::new()
        .route("/slow", move |_| {
            let gate = gate.clone();
            let body = futures_util::stream::once(async move {
                gate.notified().await;
                bytes::Bytes::from_static(CLUTTERED.as_bytes())
            });
            reply_stream(&[("content-type", "text/html"), ("cache-control", "max-age=60")], body)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/slow");
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { get(&client, &url, &[]).await })
        })
        .collect();
    while origin.count("/slow") == 0 {
        tokio::task::yield_now().await;
    }
    // Room for the other 49 to reach the cache and wait; the assertions hold either way,
    // because a late request finds the page kept.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    release.notify_one();
    let mut bodies = Vec::new();
    for t in tasks {
        let got = t.await.expect("the task finished");
        assert_eq!(got.status, 200);
        bodies.push(got.body);
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "every client gets the same page");
    assert_decluttered(&bodies[0]);
    assert_eq!(origin.count("/slow"), 1);
    assert_eq!((metric(&client, "pith_cache_misses_total").await, metric(&client, "pith_cache_hits_total").await), (1, 49));
}

#[tokio::test]
async fn an_oversized_page_is_served_but_not_kept() {
    let big = format!("<!DOCTYPE html><html><body><p>{}</p></body></html>", "word ".repeat(2000));
    let origin = Origin::new()
        .route("/big", move |_| reply(&[("content-type", "text/html"), ("cache-control", "max-age=60")], big.clone()))
        .run()
        .await;
    let pith = Pith::start("[cache]\nmax_entry_bytes = 4096\n").await;
    let client = pith.client();
    for _ in 0..2 {
        let got = get(&client, &origin.url("/big"), &[]).await;
        assert_eq!((got.status, got.x_cache()), (200, Some("MISS")));
        assert!(got.body.matches("word ").count() == 2000, "the page is served whole");
    }
    assert_eq!(origin.count("/big"), 2);
    assert_eq!(metric(&client, "pith_cache_entries").await, 0);
}

#[tokio::test]
async fn the_byte_bound_holds() {
    let page = format!("<!DOCTYPE html><html><body><p>{}</p></body></html>", "text ".repeat(1000));
    let mut origin = Origin::new();
    for i in 0..40 {
        let page = page.clone();
        origin = origin.route(&format!("/p{i}"), move |_| reply(&[("content-type", "text/html"), ("cache-control", "max-age=60")], page.clone()));
    }
    let origin = origin.run().await;
    let max_bytes = 64 * 1024;
    let pith = Pith::start(&format!("[cache]\nmax_bytes = {max_bytes}\nmax_entry_bytes = 16384\n")).await;
    let client = pith.client();
    for i in 0..40 {
        get(&client, &origin.url(&format!("/p{i}")), &[]).await;
    }
    let bytes = metric(&client, "pith_cache_bytes").await;
    let entries = metric(&client, "pith_cache_entries").await;
    assert!(bytes <= max_bytes, "{bytes} bytes kept, bound {max_bytes}");
    assert!(entries > 0 && entries < 40, "{entries} entries kept of 40 pages of ~5 KB");
    assert!(metric(&client, "pith_cache_evictions_total").await > 0 || metric(&client, "pith_cache_stores_total").await > entries);
}

#[tokio::test]
async fn metrics_reflect_the_counts() {
    let origin = Origin::new().route("/page", html("max-age=60")).route("/other", html("max-age=60")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    assert_eq!(metric(&client, "pith_cache_enabled").await, 1);
    get(&client, &origin.url("/page"), &[]).await;
    get(&client, &origin.url("/page"), &[]).await;
    get(&client, &origin.url("/page"), &[]).await;
    get(&client, &origin.url("/other"), &[]).await;
    assert_eq!(metric(&client, "pith_cache_hits_total").await, 2);
    assert_eq!(metric(&client, "pith_cache_misses_total").await, 2);
    assert_eq!(metric(&client, "pith_cache_stores_total").await, 2);
    assert_eq!(metric(&client, "pith_cache_entries").await, 2);
    assert!(metric(&client, "pith_cache_bytes").await > 2 * 100);
    let page = get(&client, "http://pith/metrics", &[]).await;
    assert!(page.header("content-type").is_some_and(|t| t.starts_with("text/plain")));
    assert!(page.body.contains("# TYPE pith_cache_hits_total counter"), "{}", page.body);
}

/// `cache.pass = false` keeps the `pass` profile out of the cache, and `enabled = false` keeps
/// everything out; the `pass` profile's own caching is in `cache_all.rs`.
#[tokio::test]
async fn cache_pass_false_and_a_disabled_cache_bypass_it() {
    let origin = Origin::new().route("/page", html("max-age=60")).run().await;
    for extra in ["profile = \"pass\"\n[cache]\npass = false\n", "[cache]\nenabled = false\n"] {
        let pith = Pith::start(extra).await;
        let client = pith.client();
        let before = origin.count("/page");
        for _ in 0..2 {
            let got = get(&client, &origin.url("/page"), &[]).await;
            assert_eq!((got.status, got.x_cache()), (200, None), "{extra}");
        }
        assert_eq!(origin.count("/page") - before, 2, "{extra}");
    }
}

/// A body cut short by the origin is an error for the client and is never kept.
#[tokio::test]
async fn a_truncated_page_is_never_kept() {
    use tokio::io::AsyncWriteExt;
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let origin = crate::common::RawOrigin::start(move |mut stream| {
        let counter = counter.clone();
        async move {
            let mut buf = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await;
            counter.fetch_add(1, Ordering::SeqCst);
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncache-control: max-age=60\r\ncontent-length: 5000\r\n\r\n<html><body><p>only part";
            let _ = stream.write_all(head.as_bytes()).await;
        }
    })
    .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for _ in 0..2 {
        let got = client.get(origin.url("/cut")).send().await.expect("a response");
        assert_eq!(got.status(), 502);
    }
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert_eq!(metric(&client, "pith_cache_entries").await, 0);
}

/// Only a GET fills the cache, and only for a whole representation: a POST reaches the
/// origin every time, and so does a range request while nothing is kept (parts of a kept
/// response are cut from it: `cache_rfc.rs`); a part is never kept. (Responses pith does not
/// rewrite are kept too: see `cache_all.rs`.)
#[tokio::test]
async fn a_post_and_a_range_bypass_the_cache() {
    let origin = Origin::new().route("/page", html("max-age=60")).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for _ in 0..2 {
        let resp = client.post(origin.url("/page")).body("q=1").send().await.unwrap();
        assert!(resp.headers().get("x-cache").is_none(), "a POST bypasses the cache");
    }
    assert_eq!(origin.count("/page"), 2);
    let range = get(&client, &origin.url("/page"), &[("range", "bytes=0-10")]).await;
    assert_eq!(range.x_cache(), Some("MISS"), "a range request of what is not kept goes to the origin");
    assert_eq!(origin.count("/page"), 3);
    assert_eq!(metric(&client, "pith_cache_entries").await, 0);
}
