//! Content-codings: every coding an origin may send is undone before filtering, the page is
//! re-encoded for what the client accepts, broken data is a clear 502, and a page past the
//! rewrite cap passes through as the origin sent it.

use bytes::Bytes;

use crate::common::codec::{br, gunzip, gzip, raw_deflate, unbr, zlib, zstd};
use crate::common::*;

/// An origin serving [`CLUTTERED`] under each coding, by path.
async fn coded_origin() -> RunningOrigin {
    let page = CLUTTERED.as_bytes();
    let routes: Vec<(&str, &str, Vec<u8>)> = vec![
        ("/identity", "", page.to_vec()),
        ("/gzip", "gzip", gzip(page)),
        ("/x-gzip", "x-gzip", gzip(page)),
        ("/br", "br", br(page)),
        ("/zstd", "zstd", zstd(page)),
        ("/deflate-zlib", "deflate", zlib(page)),
        ("/deflate-raw", "deflate", raw_deflate(page)),
        // Codings are listed in the order they were applied: gzip first, then br.
        ("/gzip-br", "gzip, br", br(&gzip(page))),
    ];
    let mut origin = Origin::new();
    for (path, coding, body) in routes {
        origin = origin.route(path, move |_| {
            let mut headers = vec![("content-type", "text/html; charset=utf-8"), ("etag", "\"v1\"")];
            if !coding.is_empty() {
                headers.push(("content-encoding", coding));
            }
            reply(&headers, body.clone())
        });
    }
    origin.run().await
}

#[tokio::test]
async fn every_origin_coding_is_decoded_and_the_page_filtered() {
    let origin = coded_origin().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for path in ["/identity", "/gzip", "/x-gzip", "/br", "/zstd", "/deflate-zlib", "/deflate-raw", "/gzip-br"] {
        let resp = client.get(origin.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert!(resp.headers().get("content-encoding").is_none(), "{path}: a client that accepts no coding gets identity");
        assert_eq!(resp.headers()["etag"], "W/\"v1\"", "{path}: the bytes changed, so the validator is weakened");
        let headers = resp.headers().clone();
        let body = resp.bytes().await.unwrap();
        assert_rewritten_headers(&headers, body.len());
        let html = String::from_utf8(body.to_vec()).unwrap_or_else(|_| panic!("{path}: the page is not UTF-8"));
        assert_decluttered(&html);
    }
}

#[tokio::test]
async fn the_page_is_encoded_for_what_the_client_accepts() {
    let origin = coded_origin().await;
    let pith = Pith::start("").await;
    let client = pith.client();
    let cases: [(Option<&str>, Option<&str>); 6] = [
        (None, None),
        (Some("identity"), None),
        (Some("br"), Some("br")),
        (Some("gzip"), Some("gzip")),
        (Some("gzip;q=1.0, br;q=0"), Some("gzip")),
        (Some("gzip, deflate, br, zstd"), Some("br")),
    ];
    for (accept, expected) in cases {
        let mut req = client.get(origin.url("/zstd"));
        if let Some(accept) = accept {
            req = req.header("accept-encoding", accept);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let coding = resp.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
        assert_eq!(coding.as_deref(), expected, "Accept-Encoding: {accept:?}");
        let headers = resp.headers().clone();
        let body = resp.bytes().await.unwrap();
        assert_rewritten_headers(&headers, body.len());
        let decoded = match expected {
            None => body.to_vec(),
            Some("br") => unbr(&body),
            Some("gzip") => gunzip(&body),
            Some(other) => unreachable!("{other}"),
        };
        assert_decluttered(&String::from_utf8(decoded).expect("UTF-8 page"));
    }
}

#[tokio::test]
async fn invalid_compressed_data_is_a_clear_502() {
    let page = gzip(CLUTTERED.as_bytes());
    let cut = page[..page.len() / 2].to_vec();
    let origin = Origin::new()
        .route("/garbage", |_| reply(&[("content-type", "text/html"), ("content-encoding", "gzip")], "this is not gzip data at all"))
        .route("/truncated", move |_| reply(&[("content-type", "text/html"), ("content-encoding", "gzip")], cut.clone()))
        .route("/bad-br", |_| reply(&[("content-type", "text/html"), ("content-encoding", "br")], vec![0xffu8; 64]))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();
    for (path, coding) in [("/garbage", "gzip"), ("/truncated", "gzip"), ("/bad-br", "br")] {
        let resp = client.get(origin.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 502, "{path}");
        let text = resp.text().await.unwrap();
        assert!(text.to_lowercase().contains(coding), "{path}: the error page should name {coding}:\n{text}");
        assert!(!text.contains("First paragraph"), "{path}: no part of the page may be served");
    }
}

/// A page of a little over `size` bytes, with a script that declutter would remove.
fn long_page(size: usize) -> Vec<u8> {
    let mut page = String::from("<!DOCTYPE html><html><head><title>Long</title><script>track()</script></head><body>\n");
    let mut i = 0;
    while page.len() < size {
        page.push_str(&format!("<p>Paragraph {i} of a long page, with enough words to be a page.</p>\n"));
        i += 1;
    }
    page.push_str("</body></html>\n");
    page.into_bytes()
}

#[tokio::test]
async fn a_page_over_the_rewrite_cap_passes_through_as_sent() {
    let compressed = gzip(&long_page(300_000));
    assert!(compressed.len() < 100_000, "the compressed page must fit the cap so that decoding reaches it");
    let plain = long_page(300_000);
    let (gz, identity) = (compressed.clone(), plain.clone());
    let origin = Origin::new()
        // Chunked, so pith cannot know the size before decoding past the cap.
        .route("/gzip", move |_| {
            let pieces: Vec<Bytes> = gz.chunks(4096).map(Bytes::copy_from_slice).collect();
            reply_chunked(&[("content-type", "text/html"), ("content-encoding", "gzip")], pieces)
        })
        .route("/identity", move |_| reply(&[("content-type", "text/html")], identity.clone()))
        .run()
        .await;
    let pith = Pith::start("[limits]\nmax_rewrite_bytes = 100000").await;
    let client = pith.client();

    let resp = client.get(origin.url("/gzip")).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-encoding"], "gzip");
    assert!(resp.headers().get("x-pith").is_none(), "a page past the cap is not rewritten");
    assert!(resp.bytes().await.unwrap() == compressed, "the origin's compressed bytes, whole and unchanged");

    let resp = client.get(origin.url("/identity")).send().await.unwrap();
    assert_eq!(resp.headers()["content-length"], plain.len().to_string());
    assert!(resp.bytes().await.unwrap() == plain, "the origin's page, whole and unchanged");
}

#[tokio::test]
async fn an_unknown_coding_passes_through_untouched() {
    let origin = Origin::new()
        .route("/odd", |_| reply(&[("content-type", "text/html"), ("content-encoding", "x-unheard-of")], "<p>opaque</p><script>s()</script>"))
        .run()
        .await;
    let pith = Pith::start("").await;
    let resp = pith.client().get(origin.url("/odd")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-encoding"], "x-unheard-of");
    assert_eq!(resp.text().await.unwrap(), "<p>opaque</p><script>s()</script>");
}

/// Over half a megabyte pith rewrites off the async threads; the page must still come whole.
#[tokio::test]
async fn a_large_page_under_the_cap_is_rewritten_whole() {
    let page = long_page(2_000_000);
    let last = String::from_utf8_lossy(&page).lines().rev().find(|l| l.starts_with("<p>")).unwrap().to_string();
    let compressed = gzip(&page);
    let origin = Origin::new()
        .route("/long", move |_| {
            let pieces: Vec<Bytes> = compressed.chunks(1000).map(Bytes::copy_from_slice).collect();
            reply_chunked(&[("content-type", "text/html"), ("content-encoding", "gzip")], pieces)
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let resp = pith.client().get(origin.url("/long")).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-encoding"], "gzip");
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap();
    assert_rewritten_headers(&headers, body.len());
    let html = String::from_utf8(gunzip(&body)).unwrap();
    assert!(!html.contains("<script") && !html.contains("track()"));
    assert!(html.contains(&last), "the last paragraph must be there: {last}");
    let paragraphs = html.matches("<p>").count();
    assert_eq!(paragraphs, String::from_utf8_lossy(&page).matches("<p>").count(), "every paragraph arrives");
}
