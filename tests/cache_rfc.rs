//! The cache held to RFC 9111 where the public cache test suite found it wanting: one test per
//! clause, each against a real loopback origin that counts what it receives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use http::{Method, StatusCode};

use crate::common::origin::{Body, Received};
use crate::common::got::{send, Got};
use crate::common::{reply, Origin, Pith, CLUTTERED};

async fn get(client: &reqwest::Client, url: &str) -> Got {
    send(client, Method::GET, url, &[]).await
}

fn with_status(mut resp: http::Response<Body>, status: StatusCode) -> http::Response<Body> {
    *resp.status_mut() = status;
    resp
}

/// A page fresh for ten minutes, without validators: once kept, only a HIT or a whole new
/// fetch (MISS) can follow.
fn fresh_page(_: &Received) -> http::Response<Body> {
    reply(&[("content-type", "text/html"), ("cache-control", "max-age=600")], CLUTTERED)
}

/// RFC 9111 §4.4: a POST, PUT or DELETE answered 2xx or 3xx invalidates what is kept for its
/// target URI; an error answer does not.
#[tokio::test]
async fn rfc9111_4_4_unsafe_methods_invalidate_the_target_uri() {
    let origin = Origin::new()
        .route("/page", |r: &Received| match r.method {
            Method::GET => fresh_page(r),
            Method::PUT => with_status(reply(&[], ""), StatusCode::INTERNAL_SERVER_ERROR),
            _ => with_status(reply(&[], ""), StatusCode::NO_CONTENT),
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    assert_eq!(get(&client, &url).await.x_cache(), Some("MISS"));
    assert_eq!(get(&client, &url).await.x_cache(), Some("HIT"));
    for (method, status) in [(Method::POST, 204), (Method::DELETE, 204)] {
        assert_eq!(send(&client, method.clone(), &url, &[]).await.status, status);
        let after = get(&client, &url).await;
        assert_eq!((after.status, after.x_cache()), (200, Some("MISS")), "after a {method} that succeeded, the kept page is not served");
        assert_eq!(get(&client, &url).await.x_cache(), Some("HIT"), "the page fetched again is kept again");
    }
    assert_eq!(send(&client, Method::PUT, &url, &[]).await.status, 500);
    assert_eq!(get(&client, &url).await.x_cache(), Some("HIT"), "a failed PUT changed nothing");
    let gets = origin.received().iter().filter(|r| r.method == Method::GET).count();
    assert_eq!(gets, 3, "one fetch at first, one after each successful unsafe request");
}

/// RFC 9111 §4.4: the URIs in `Location` and `Content-Location` are invalidated too, when
/// they are on the target's host; another host's are not, even one that reaches the same
/// server (`localhost` for `127.0.0.1`).
#[tokio::test]
async fn rfc9111_4_4_location_and_content_location_on_the_same_host_are_invalidated() {
    let elsewhere = Arc::new(std::sync::OnceLock::<String>::new());
    let named = elsewhere.clone();
    let origin = Origin::new()
        .route("/form", move |_: &Received| {
            let other_host = named.get().map(String::as_str).unwrap_or("http://localhost/elsewhere");
            with_status(reply(&[("location", "/moved"), ("content-location", other_host)], ""), StatusCode::SEE_OTHER)
        })
        .route("/put", |_: &Received| with_status(reply(&[("content-location", "described")], ""), StatusCode::CREATED))
        .route("/moved", fresh_page)
        .route("/described", fresh_page)
        .route("/elsewhere", fresh_page)
        .run()
        .await;
    let other_host = origin.url("/elsewhere").replace("127.0.0.1", "localhost");
    elsewhere.set(other_host.clone()).expect("set once");
    let pith = Pith::start("").await;
    let client = pith.client_builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let urls = [origin.url("/moved"), origin.url("/described"), other_host.clone()];
    for url in &urls {
        assert_eq!(get(&client, url).await.x_cache(), Some("MISS"), "{url}");
        assert_eq!(get(&client, url).await.x_cache(), Some("HIT"), "{url}");
    }
    assert_eq!(send(&client, Method::POST, &origin.url("/form"), &[]).await.status, 303);
    assert_eq!(send(&client, Method::PUT, &origin.url("/put"), &[]).await.status, 201);
    assert_eq!(get(&client, &urls[0]).await.x_cache(), Some("MISS"), "Location, relative to the target");
    assert_eq!(get(&client, &urls[1]).await.x_cache(), Some("MISS"), "Content-Location, a relative path");
    assert_eq!(get(&client, &other_host).await.x_cache(), Some("HIT"), "another host's URI stays");
}

/// RFC 9111 §3.2 and §4.3.4: a 304 replaces every stored header field it carries, not only the
/// freshness ones, except those the kept (rewritten) body depends on.
#[tokio::test]
async fn rfc9111_3_2_a_304_updates_every_stored_header() {
    let origin = Origin::new()
        .route("/page", |r: &Received| {
            if r.header("if-none-match").is_some() {
                let head = [
                    ("etag", "\"v1\""),
                    ("cache-control", "max-age=600"),
                    ("x-note", "new"),
                    ("link", "</new.css>; rel=preload"),
                    ("content-type", "text/plain"),
                ];
                return with_status(reply(&head, ""), StatusCode::NOT_MODIFIED);
            }
            reply(&[("content-type", "text/html"), ("cache-control", "no-cache"), ("etag", "\"v1\""), ("x-note", "old"), ("link", "</old.css>; rel=preload")], CLUTTERED)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    let first = get(&client, &url).await;
    assert_eq!((first.x_cache(), first.header("x-note")), (Some("MISS"), Some("old")));
    let revalidated = get(&client, &url).await;
    assert_eq!(revalidated.x_cache(), Some("REVALIDATED"));
    for got in [&revalidated, &get(&client, &url).await] {
        assert_eq!(got.header("x-note"), Some("new"), "{:?}", got.headers);
        assert_eq!(got.header("link"), Some("</new.css>; rel=preload"));
        assert_eq!(got.header("cache-control"), Some("max-age=600"));
        assert!(got.header("content-type").is_some_and(|t| t.starts_with("text/html")), "the rewritten page's own type stays: {:?}", got.header("content-type"));
        assert_eq!(got.header("etag"), Some("W/\"v1\""), "the served ETag stays weak");
        assert_eq!(got.header("content-length"), Some(first.body.len().to_string().as_str()));
        assert_eq!(got.body, first.body);
    }
    assert_eq!(origin.count("/page"), 2, "the 304's max-age=600 made the page fresh");
}

/// RFC 9111 §4.3.4: a 304 whose strong ETag is not the kept page's cannot refresh it; the
/// client gets the origin's current page, fetched whole, never an error.
#[tokio::test]
async fn rfc9111_4_3_4_a_304_for_another_representation_fetches_the_page() {
    let origin = Origin::new()
        .route("/page", |r: &Received| {
            if r.header("if-none-match").is_some() {
                return with_status(reply(&[("etag", "\"v2\""), ("cache-control", "max-age=600")], ""), StatusCode::NOT_MODIFIED);
            }
            let n = r.header("x-round").unwrap_or_default();
            let body = format!("<html><body><p>Version {n} of the page, with enough words to be a page.</p></body></html>");
            reply(&[("content-type", "text/html"), ("cache-control", "no-cache"), ("etag", "\"v1\"")], body)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    let first = send(&client, Method::GET, &url, &[("x-round", "one")]).await;
    assert_eq!((first.status, first.x_cache()), (200, Some("MISS")));
    let second = send(&client, Method::GET, &url, &[("x-round", "two")]).await;
    assert_eq!((second.status, second.x_cache()), (200, Some("MISS")), "{}", second.body);
    assert!(second.body.contains("Version two"), "the page fetched again, not the kept one: {}", second.body);
    let received = origin.received();
    assert_eq!(received.len(), 3, "the first fetch, the revalidation, the whole page");
    assert_eq!(received[1].header("if-none-match").as_deref(), Some("\"v1\""));
    assert_eq!(received[2].header("if-none-match"), None, "asked again without conditions");
}

/// RFC 9111 §5.1: a list-valued Age counts by its first member: `Age: 7200, 0` on a page fresh
/// for an hour makes it stale at once.
#[tokio::test]
async fn rfc9111_5_1_a_list_valued_age_uses_its_first_member() {
    let origin = Origin::new()
        .route("/page", |_: &Received| reply(&[("content-type", "text/html"), ("cache-control", "max-age=3600"), ("age", "7200, 0"), ("etag", "\"a\"")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    assert_eq!(get(&client, &url).await.x_cache(), Some("MISS"));
    assert_ne!(get(&client, &url).await.x_cache(), Some("HIT"), "two hours old, fresh for one: stale");
    assert_eq!(origin.count("/page"), 2);
}

/// RFC 9111 §5.3: an Expires that is not a valid HTTP-date (double spaces) means already
/// expired, however far in the future it reads.
#[tokio::test]
async fn rfc9111_5_3_an_invalid_expires_is_already_expired() {
    let origin = Origin::new()
        .route("/page", |_: &Received| reply(&[("content-type", "text/html"), ("expires", "Thu, 18  Aug  2050 02:01:18 GMT"), ("etag", "\"a\"")], CLUTTERED))
        .route("/valid", |_: &Received| reply(&[("content-type", "text/html"), ("expires", "Thu, 18 Aug 2050 02:01:18 GMT")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    assert_eq!(get(&client, &origin.url("/page")).await.x_cache(), Some("MISS"));
    assert_ne!(get(&client, &origin.url("/page")).await.x_cache(), Some("HIT"));
    assert_eq!(origin.count("/page"), 2);
    assert_eq!(get(&client, &origin.url("/valid")).await.x_cache(), Some("MISS"));
    assert_eq!(get(&client, &origin.url("/valid")).await.x_cache(), Some("HIT"), "the same date written validly is in the future");
}

/// RFC 9111 §5.2: directive names are case-insensitive, in responses and in requests.
#[tokio::test]
async fn rfc9111_5_2_cache_control_directives_are_case_insensitive() {
    let full = Arc::new(AtomicUsize::new(0));
    let counted = full.clone();
    let origin = Origin::new()
        .route("/no-cache", move |r: &Received| {
            if r.header("if-none-match").is_some() {
                return with_status(reply(&[("etag", "\"a\"")], ""), StatusCode::NOT_MODIFIED);
            }
            counted.fetch_add(1, Ordering::SeqCst);
            reply(&[("content-type", "text/html"), ("cache-control", "No-CaChE, max-age=600"), ("etag", "\"a\"")], CLUTTERED)
        })
        .route("/fresh", fresh_page)
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/no-cache");
    assert_eq!(get(&client, &url).await.x_cache(), Some("MISS"));
    assert_eq!(get(&client, &url).await.x_cache(), Some("REVALIDATED"), "`No-CaChE` is no-cache: revalidate every time");
    assert_eq!((origin.count("/no-cache"), full.load(Ordering::SeqCst)), (2, 1));
    let fresh = origin.url("/fresh");
    assert_eq!(get(&client, &fresh).await.x_cache(), Some("MISS"));
    assert_eq!(get(&client, &fresh).await.x_cache(), Some("HIT"));
    let forced = send(&client, Method::GET, &fresh, &[("cache-control", "NO-CACHE")]).await;
    assert_eq!(forced.x_cache(), Some("MISS"), "a client's `NO-CACHE` goes to the origin");
    assert_eq!(origin.count("/fresh"), 2);
}

/// A kept download of 1,000 bytes (0, 1, …, 231, 0, 1, …), fresh for ten minutes, with a
/// strong ETag.
fn download(_: &Received) -> http::Response<Body> {
    let body: Vec<u8> = (0..1000u32).map(|i| (i % 232) as u8).collect();
    reply(&[("content-type", "application/octet-stream"), ("cache-control", "max-age=600"), ("etag", "\"d1\"")], body)
}

async fn get_bytes(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut req = client.get(url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = req.send().await.expect("the proxy answers");
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    (status, headers, resp.bytes().await.expect("a whole body").to_vec())
}

/// RFC 9110 §14: a range of a complete kept response is cut from it (206 with
/// `Content-Range`, or 416 past its end) without asking the origin; `If-Range` for another
/// representation, or several ranges, get the whole response; a range of what is not kept
/// goes to the origin as sent.
#[tokio::test]
async fn rfc9110_14_ranges_are_cut_from_a_kept_response() {
    let origin = Origin::new().route("/file", download).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/file");
    let whole: Vec<u8> = (0..1000u32).map(|i| (i % 232) as u8).collect();

    let (status, _, _) = get_bytes(&client, &url, &[("range", "bytes=0-9")]).await;
    assert_eq!(status, 200, "nothing kept yet: the origin's answer (it ignores ranges)");
    assert_eq!(origin.last().header("range").as_deref(), Some("bytes=0-9"), "the range was forwarded");
    let (status, _, body) = get_bytes(&client, &url, &[]).await;
    assert_eq!((status, body.len()), (200, 1000));

    let (status, headers, body) = get_bytes(&client, &url, &[("range", "bytes=10-19")]).await;
    assert_eq!(status, 206);
    assert_eq!(body, whole[10..20]);
    assert_eq!(headers["content-range"], "bytes 10-19/1000");
    assert_eq!(headers["content-length"], "10");
    assert_eq!(headers["x-cache"], "HIT");

    let (status, headers, body) = get_bytes(&client, &url, &[("range", "bytes=-5"), ("if-range", "\"d1\"")]).await;
    assert_eq!((status, &body[..]), (206, &whole[995..]));
    assert_eq!(headers["content-range"], "bytes 995-999/1000");

    let (status, headers, body) = get_bytes(&client, &url, &[("range", "bytes=5000-")]).await;
    assert_eq!((status, body.len()), (416, 0));
    assert_eq!(headers["content-range"], "bytes */1000");

    for ignored in [&[("range", "bytes=0-1"), ("if-range", "\"other\"")][..], &[("range", "bytes=0-1,5-6")][..]] {
        let (status, headers, body) = get_bytes(&client, &url, ignored).await;
        assert_eq!((status, body.len()), (200, 1000), "{ignored:?}");
        assert_eq!(headers["x-cache"], "HIT");
    }
    assert_eq!(origin.count("/file"), 2, "the first range and the whole were fetched; every part after came from the kept copy");
}

/// A page whose body names how many times the origin was asked, with `cache_control`; when
/// `fail_after` requests have been answered, the origin answers 503.
fn counted(cache_control: &'static str, fail_after: usize) -> (Arc<AtomicUsize>, impl Fn(&Received) -> http::Response<Body> + Send + Sync + 'static) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let handler = move |_: &Received| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        if n > fail_after {
            return with_status(reply(&[("content-type", "text/html")], "<p>down</p>"), StatusCode::SERVICE_UNAVAILABLE);
        }
        reply(&[("content-type", "text/html"), ("cache-control", cache_control)], format!("<html><body><p>version {n}</p></body></html>"))
    };
    (asked, handler)
}

/// RFC 5861 §3: within `stale-while-revalidate` a stale page is served at once, and the
/// origin is asked in the background, once; the next request gets the revalidated page.
#[tokio::test]
async fn rfc5861_3_stale_while_revalidate_serves_at_once_and_refreshes_behind() {
    let (asked, handler) = counted("max-age=1, stale-while-revalidate=60", usize::MAX);
    let origin = Origin::new().route("/page", handler).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    let first = get(&client, &url).await;
    assert!(first.body.contains("version 1"), "{}", first.body);
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let stale = get(&client, &url).await;
    assert_eq!((stale.status, stale.x_cache()), (200, Some("STALE")));
    assert!(stale.body.contains("version 1"), "the stale page, at once: {}", stale.body);
    // The background revalidation: bounded wait for the origin's second request.
    for _ in 0..100 {
        if asked.load(Ordering::SeqCst) >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(asked.load(Ordering::SeqCst), 2, "one revalidation in the background");
    let mut fresh = get(&client, &url).await;
    for _ in 0..40 {
        if fresh.x_cache() == Some("HIT") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        fresh = get(&client, &url).await;
    }
    assert_eq!(fresh.x_cache(), Some("HIT"));
    assert!(fresh.body.contains("version 2"), "the page the background fetch kept: {}", fresh.body);
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

/// RFC 5861 §4: within `stale-if-error` a stale page stands in for the origin's 503; without
/// it, or with `must-revalidate`, the client gets the origin's error.
#[tokio::test]
async fn rfc5861_4_stale_if_error_stands_in_for_a_failing_origin() {
    let (_, granted) = counted("max-age=1, stale-if-error=60", 1);
    let (_, plain) = counted("max-age=1", 1);
    let (_, forbidden) = counted("max-age=1, stale-if-error=60, must-revalidate", 1);
    let (_, client_grants) = counted("max-age=1", 1);
    let origin = Origin::new().route("/granted", granted).route("/plain", plain).route("/forbidden", forbidden).route("/client", client_grants).run().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for path in ["/granted", "/plain", "/forbidden", "/client"] {
        assert!(get(&client, &origin.url(path)).await.body.contains("version 1"));
    }
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let stood_in = get(&client, &origin.url("/granted")).await;
    assert_eq!((stood_in.status, stood_in.x_cache()), (200, Some("STALE")));
    assert!(stood_in.body.contains("version 1"), "{}", stood_in.body);
    for path in ["/plain", "/forbidden"] {
        assert_eq!(get(&client, &origin.url(path)).await.status, 503, "{path}");
    }
    // A client may accept it too (RFC 5861 §4).
    let accepted = send(&client, Method::GET, &origin.url("/client"), &[("cache-control", "stale-if-error=60")]).await;
    assert_eq!((accepted.status, accepted.x_cache()), (200, Some("STALE")));
    assert!(accepted.body.contains("version 1"), "{}", accepted.body);
}

/// RFC 9110 §13.1.2: If-None-Match compares weakly. A rewritten page is served with the
/// origin's ETag made weak (`W/"a"`); a client that holds the origin's own `"a"` (or the weak
/// one) gets 304 from the kept page, and one that holds another tag gets the page.
#[tokio::test]
async fn rfc9110_13_1_2_if_none_match_matches_a_weakened_etag_weakly() {
    let origin = Origin::new()
        .route("/page", |_: &Received| reply(&[("content-type", "text/html"), ("cache-control", "max-age=600"), ("etag", "\"a\"")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    let first = get(&client, &url).await;
    assert_eq!((first.x_cache(), first.header("etag")), (Some("MISS"), Some("W/\"a\"")), "the rewritten page's tag is weak");
    for held in ["\"a\"", "W/\"a\"", "\"x\", \"a\""] {
        let again = send(&client, Method::GET, &url, &[("if-none-match", held)]).await;
        assert_eq!((again.status, again.x_cache()), (304, Some("HIT")), "If-None-Match: {held}");
    }
    let other = send(&client, Method::GET, &url, &[("if-none-match", "\"b\"")]).await;
    assert_eq!((other.status, other.x_cache()), (200, Some("HIT")));
    assert_eq!(origin.count("/page"), 1, "all answered from the kept page");
}

/// RFC 9111 §4.2.3: the apparent age (from the response's `Date`) counts: a page dated two
/// hours back with `max-age=3600` is stale on arrival, and is served with the age it has.
#[tokio::test]
async fn rfc9111_4_2_3_the_apparent_age_from_date_counts() {
    let origin = Origin::new()
        .route("/old", |_: &Received| {
            let date = httpdate::fmt_http_date(std::time::SystemTime::now() - std::time::Duration::from_secs(7200));
            reply(&[("content-type", "text/html"), ("cache-control", "max-age=3600"), ("date", date.as_str()), ("etag", "\"a\"")], CLUTTERED)
        })
        .route("/new", fresh_page)
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let old = origin.url("/old");
    assert_eq!(get(&client, &old).await.x_cache(), Some("MISS"));
    assert_ne!(get(&client, &old).await.x_cache(), Some("HIT"), "two hours old, fresh for one: stale");
    assert_eq!(origin.count("/old"), 2);
    let new = origin.url("/new");
    assert_eq!(get(&client, &new).await.x_cache(), Some("MISS"));
    let hit = get(&client, &new).await;
    assert_eq!(hit.x_cache(), Some("HIT"), "a page dated now is fresh");
    assert!(hit.header("age").and_then(|a| a.parse::<u64>().ok()).is_some_and(|a| a < 5), "{:?}", hit.header("age"));
}

/// RFC 9111 §5.4 (RFC 7234 §5.4): Pragma is read only without Cache-Control. A request with
/// `Cache-Control: max-stale` and `Pragma: no-cache` (what a browser's fetch sends with its own
/// cache off) is served the stale page the client allows; `Pragma: no-cache` alone goes to the
/// origin.
#[tokio::test]
async fn rfc9111_5_4_pragma_yields_to_cache_control() {
    let origin = Origin::new()
        .route("/page", |_: &Received| reply(&[("content-type", "text/html"), ("cache-control", "max-age=1"), ("etag", "\"a\"")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    assert_eq!(get(&client, &url).await.x_cache(), Some("MISS"));
    // Past max-age=1 (bounded: one sleep).
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let allowed = send(&client, Method::GET, &url, &[("cache-control", "max-stale=1000"), ("pragma", "no-cache")]).await;
    assert_eq!((allowed.status, allowed.x_cache()), (200, Some("HIT")), "the client accepts it stale");
    assert_eq!(origin.count("/page"), 1);
    let pragma = send(&client, Method::GET, &url, &[("pragma", "no-cache")]).await;
    assert_ne!(pragma.x_cache(), Some("HIT"), "Pragma alone asks the origin");
    assert_eq!(origin.count("/page"), 2);
}

/// RFC 9111 §5.2: a directive has no whitespace before its `=`; `max-age =3600` grants no
/// freshness, so the page (without validators) is fetched again.
#[tokio::test]
async fn rfc9111_5_2_max_age_with_space_before_equals_grants_nothing() {
    let origin = Origin::new()
        .route("/page", |_: &Received| reply(&[("content-type", "text/html"), ("cache-control", "max-age =3600")], CLUTTERED))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let url = origin.url("/page");
    assert_eq!(get(&client, &url).await.x_cache(), Some("MISS"));
    assert_eq!(get(&client, &url).await.x_cache(), Some("MISS"));
    assert_eq!(origin.count("/page"), 2);
}
