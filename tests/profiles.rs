//! What each profile serves, and which responses are never rewritten: `pass` forwards pages
//! untouched, `text` serves their visible text, a missing Content-Type is sniffed, and HEAD and
//! bodiless statuses stream through.

use http::StatusCode;

use crate::common::origin::status;
use crate::common::*;

#[tokio::test]
async fn the_pass_profile_forwards_html_untouched() {
    let origin = Origin::new().route("/page", |_| reply(&[("content-type", "text/html"), ("etag", "\"v1\"")], CLUTTERED)).run().await;
    let pith = Pith::start("profile = \"pass\"").await;
    let resp = pith.client().get(origin.url("/page")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/html");
    assert_eq!(resp.headers()["etag"], "\"v1\"");
    assert!(resp.headers().get("x-pith").is_none());
    assert_eq!(resp.bytes().await.unwrap(), CLUTTERED.as_bytes(), "byte-identical");
}

#[tokio::test]
async fn the_text_profile_serves_one_block_per_line() {
    let page = "<html><head><title>Doc</title><script>bad()</script></head><body>\
                <h1>Title here</h1><p>First   paragraph\n continues.</p><ul><li>One</li><li>Two</li></ul>\
                <div>Block <b>with</b> inline</div></body></html>";
    let origin = Origin::new().route("/page", move |_| reply(&[("content-type", "text/html")], page)).run().await;
    let pith = Pith::start("profile = \"text\"").await;
    let resp = pith.client().get(origin.url("/page")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    let text = resp.text().await.unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    for block in ["Title here", "First paragraph continues.", "One", "Two", "Block with inline"] {
        assert!(lines.contains(&block), "{block:?} should be a line of its own:\n{text}");
    }
    let title = lines.iter().position(|l| *l == "Title here").unwrap();
    let two = lines.iter().position(|l| *l == "Two").unwrap();
    assert!(title < two, "blocks keep document order:\n{text}");
    assert!(!text.contains("bad()") && !text.contains('<'), "no script, no markup:\n{text}");
}

#[tokio::test]
async fn the_summary_header_reports_what_stage_two_removed() {
    let page = "<html><body><nav><ul><li><a href=/a>Home</a></li><li><a href=/b>World</a></li>\
                <li><a href=/c>Sport</a></li></ul></nav><article><p>A paragraph of real article text, \
                long enough to be what the page is about, and then some more words for it.</p>\
                </article></body></html>";
    let origin = Origin::new().route("/page", move |_| reply(&[("content-type", "text/html")], page)).run().await;
    let pith = Pith::start("").await;
    let resp = pith.client().get(origin.url("/page")).send().await.unwrap();
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("profile=declutter") && summary.contains("preset=automatic"), "x-pith: {summary}");
    let removed: u32 = ["landmarks=", "link-lists="]
        .iter()
        .map(|key| summary.split(key).nth(1).and_then(|v| v.split(';').next()).unwrap().parse::<u32>().unwrap())
        .sum();
    assert!(removed >= 1, "the navigation was removed and counted: {summary}");
    let body = resp.text().await.unwrap();
    assert!(!body.contains("World") && body.contains("real article text"), "{body}");
}

#[tokio::test]
async fn a_missing_content_type_is_sniffed() {
    let binary: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let expected = binary.clone();
    let origin = Origin::new()
        .route("/html", |_| reply(&[], CLUTTERED))
        .route("/binary", move |_| reply(&[], binary.clone()))
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();

    let resp = client.get(origin.url("/html")).send().await.unwrap();
    let headers = resp.headers().clone();
    let body = resp.text().await.unwrap();
    assert_rewritten_headers(&headers, body.len());
    assert_decluttered(&body);

    let resp = client.get(origin.url("/binary")).send().await.unwrap();
    assert!(resp.headers().get("x-pith").is_none());
    assert!(resp.bytes().await.unwrap() == expected, "a sniffed non-HTML body passes byte-identical");
}

#[tokio::test]
async fn head_and_bodiless_statuses_pass_through() {
    let origin = Origin::new()
        .route("/page", |_| reply(&[("content-type", "text/html")], CLUTTERED))
        .route("/empty", |_| status(StatusCode::NO_CONTENT, ""))
        .route("/unchanged", |_| {
            let mut resp = reply(&[("content-type", "text/html"), ("etag", "\"v1\"")], "");
            *resp.status_mut() = StatusCode::NOT_MODIFIED;
            resp
        })
        .run()
        .await;
    let pith = Pith::start("").await;
    let client = pith.client();

    let resp = client.head(origin.url("/page")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-length"], CLUTTERED.len().to_string(), "HEAD keeps the origin's length");
    assert!(resp.headers().get("x-pith").is_none());
    assert_eq!(origin.last().method, "HEAD");

    let resp = client.get(origin.url("/empty")).send().await.unwrap();
    assert_eq!(resp.status(), 204);
    assert!(resp.bytes().await.unwrap().is_empty());

    let resp = client.get(origin.url("/unchanged")).header("if-none-match", "\"v1\"").send().await.unwrap();
    assert_eq!(resp.status(), 304);
    assert_eq!(resp.headers()["etag"], "\"v1\"");
    assert_eq!(origin.last().header("if-none-match").as_deref(), Some("\"v1\""));
}

/// proxy.toml says every key is optional and a key left out takes the default it shows; it
/// shows `profile = "declutter"` and defines the `declutter` and `text` profiles. A config
/// naming only a listener must therefore serve decluttered pages.
#[tokio::test]
async fn a_minimal_config_serves_the_documented_default_profile() {
    let origin = Origin::new().route("/page", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run().await;
    let pith = Pith::from_config("[[listener]]\naddress = \"127.0.0.1:0\"\n").await;
    let resp = pith.client().get(origin.url("/page")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let summary = resp.headers().get("x-pith").map(|v| v.to_str().unwrap().to_string());
    assert!(summary.as_deref().is_some_and(|s| s.contains("profile=declutter")), "x-pith: {summary:?}");
    assert_decluttered(&resp.text().await.unwrap());
}

#[tokio::test]
async fn each_listener_serves_its_own_profile() {
    let origin = Origin::new().route("/page", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run().await;
    let config = format!(
        "[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"declutter\"\n\n\
         [[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n\n\
         [[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"text\"\n\n{PROFILES}"
    );
    let pith = Pith::from_config(&config).await;
    assert_eq!(pith.addrs.len(), 3);
    let via = |addr: std::net::SocketAddr| client_builder(reqwest::Proxy::all(format!("http://{addr}")).unwrap()).build().unwrap();

    let decluttered = via(pith.addrs[0]).get(origin.url("/page")).send().await.unwrap().text().await.unwrap();
    assert_decluttered(&decluttered);
    let passed = via(pith.addrs[1]).get(origin.url("/page")).send().await.unwrap().text().await.unwrap();
    assert_eq!(passed, CLUTTERED);
    let resp = via(pith.addrs[2]).get(origin.url("/page")).send().await.unwrap();
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    assert!(resp.text().await.unwrap().lines().any(|l| l.trim() == "First paragraph stays."));
}

/// oEmbed and JSON alternates are gone from every rewritten page (lynx listed each as
/// "[4]alternate"); feeds, translations and the canonical link stay.
#[test]
fn oembed_and_json_alternates_are_removed_feeds_and_translations_kept() {
    let config = pith::config::Config::embedded_default().expect("the built-in config");
    let page = concat!(
        "<html><head><title>T</title>",
        "<link rel=\"alternate\" type=\"application/json+oembed\" href=\"/oembed?url=a&amp;format=json\">",
        "<link rel=\"alternate\" type=\"text/xml+oembed\" href=\"/oembed?url=a&amp;format=xml\">",
        "<link rel=\"alternate\" type=\"application/json\" href=\"/wp-json/wp/v2/posts/1\">",
        "<link rel=\"alternate\" type=\"application/rss+xml\" title=\"Feed\" href=\"/feed\">",
        "<link rel=\"alternate\" hreflang=\"de\" href=\"/de/a\">",
        "<link rel=\"canonical\" href=\"https://example.com/a\">",
        "</head><body><article><h1>T</h1><p>Some words of the article, long enough to be read as one.</p></article></body></html>",
    );
    for name in ["declutter", "reader"] {
        let profile = &config.profiles[name];
        let out = pith::pipeline::process(profile, page.as_bytes(), Some("text/html"), pith::profile::Output::Html, Some("https://example.com/a")).expect("processed");
        let html = String::from_utf8_lossy(&out.body);
        assert!(!html.contains("oembed") && !html.contains("wp-json"), "{name}: plumbing alternates removed:\n{html}");
        if name == "declutter" {
            assert!(html.contains("href=\"/feed\"") && html.contains("hreflang=\"de\"") && html.contains("rel=\"canonical\""), "{name}: feeds, translations, canonical kept:\n{html}");
        }
    }
}
