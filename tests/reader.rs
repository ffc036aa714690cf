//! Reading mode through the proxy: the `reader` profile serves the main content in pith's own
//! page, falls back to the declutter page (with a note and `x-pith-fallback`) when a page has
//! no clear main content, and a reading profile with `output = "text"` serves the title, byline
//! and date lines, then the content, as plain text.

use crate::common::*;

const ARTICLE: &str = include_str!("fixtures/reader-article.src.html");
const PORTAL: &str = include_str!("fixtures/reader-portal.src.html");

#[tokio::test]
async fn the_reader_profile_serves_the_article_in_a_reading_page() {
    let origin = Origin::new().route("/science/tide-tables", |_| reply(&[("content-type", "text/html")], ARTICLE)).run().await;
    let pith = Pith::start("profile = \"reader\"").await;
    let url = origin.url("/science/tide-tables");
    let resp = pith.client().get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("profile=reader") && summary.contains("; reader=article; kind=article; kind-confidence="), "x-pith: {summary}");
    assert!(resp.headers().get("x-pith-fallback").is_none());
    let html = resp.text().await.unwrap();
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en-GB\" dir=\"ltr\">"), "{html}");
    assert_eq!(html.matches("<h1").count(), 1, "{html}");
    assert!(html.contains("<h1>How the tide tables are made</h1>"), "{html}");
    assert!(html.contains("By Mira Okafor · <time datetime=\"2024-06-01\">"), "{html}");
    // One link to the original: the bar's, not a second one in the header.
    assert!(!html.contains("Original page on"), "{html}");
    assert_eq!(html.matches(">original</a>").count(), 1, "{html}");
    assert!(html.contains("A tide gauge records the height of the sea"), "{html}");
    let dir = url.rsplit_once('/').map(|(d, _)| d).unwrap();
    assert!(html.contains(&format!("<img src=\"{dir}/images/gauge.jpg\" alt=\"\">")), "relative image made absolute: {html}");
    for gone in ["<script", "onload", "style=", "class=", "Lifeboat station opens", "Privacy", "About us"] {
        assert!(!html.contains(gone), "{gone:?} should not be on the reading page:\n{html}");
    }
}

#[tokio::test]
async fn a_page_of_links_falls_back_to_the_declutter_page_and_says_so() {
    let origin = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], PORTAL)).run().await;
    let pith = Pith::start("profile = \"reader\"").await;
    let resp = pith.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let fallback = resp.headers().get("x-pith-fallback").map(|v| v.to_str().unwrap().to_string());
    assert!(fallback.as_deref().is_some_and(|f| f.starts_with("declutter; pith kept ")), "x-pith-fallback: {fallback:?}");
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("; reader=fallback:"), "x-pith: {summary}");
    let html = resp.text().await.unwrap();
    assert!(html.contains("<p role=\"note\">Reading mode found no clear main content"), "{html}");
    assert!(html.contains("Storm surges explained"), "the links are the page: {html}");
}

#[tokio::test]
async fn a_reading_profile_with_text_output_serves_the_title_then_the_content() {
    let origin = Origin::new().route("/a", |_| reply(&[("content-type", "text/html")], ARTICLE)).run().await;
    let pith = Pith::start("profile = \"quiet\"\n[profiles.quiet]\nrules = \"reader\"\noutput = \"text\"\nalgorithm = \"pith\"\n").await;
    let resp = pith.client().get(origin.url("/a")).send().await.unwrap();
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    let text = resp.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..2], ["How the tide tables are made", "By Mira Okafor · 2024-06-01"], "the title, byline and date first:\n{text}");
    assert!(lines[2].starts_with("Every harbour master relies"), "then the body:\n{text}");
    assert_eq!(text.matches("How the tide tables are made").count(), 1, "the title is read once:\n{text}");
    assert!(!text.contains("Lifeboat station") && !text.contains('<'), "{text}");
}

#[tokio::test]
async fn a_post_only_scripts_would_show_is_read_from_its_noscript_copy() {
    let post = "<article><h2>Spring tides</h2><p>Spring tides come twice a month, at new and full moon, when the sun and the moon pull in line and the range between high and low water is at its widest.</p><p>Neap tides fall between them, with the sun and the moon at right angles, and the range at its narrowest; harbour masters plan dredging and repairs around them.</p></article>";
    let page = format!("<html><head><title>Spring tides</title></head><body><h1>The Coastal Blog</h1><p>Notes from the harbour wall.</p><div id=app></div><noscript>{post}</noscript></body></html>");
    let origin = Origin::new().route("/post", move |_| reply(&[("content-type", "text/html")], page.clone())).run().await;
    let pith = Pith::start("profile = \"reader\"").await;
    let resp = pith.client().get(origin.url("/post")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("source=noscript"), "x-pith: {summary}");
    assert!(resp.headers().get("x-pith-fallback").is_none());
    let html = resp.text().await.unwrap();
    assert!(html.contains("Neap tides fall between them") && !html.contains("Notes from the harbour wall"), "{html}");
}

const FORUM: &str = include_str!("fixtures/reader-forum.src.html");
const REPLIES: &str = include_str!("fixtures/reader-thread-replies.src.html");

#[tokio::test]
async fn a_forum_thread_is_named_in_x_pith_and_after_the_headline() {
    let origin = Origin::new().route("/t/boiler", |_| reply(&[("content-type", "text/html")], FORUM)).run().await;
    let pith = Pith::start("profile = \"reader\"").await;
    let resp = pith.client().get(origin.url("/t/boiler")).send().await.unwrap();
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("; kind=forum; kind-confidence=0."), "x-pith: {summary}");
    let html = resp.text().await.unwrap();
    assert!(html.contains("<h1>Combi boiler clicking every few minutes</h1><p>Forum thread, 5 posts</p>"), "{html}");
    assert!(html.contains("Update: the engineer found"), "the last post is read: {html}");
    assert!(!html.contains("Reading mode is not sure"), "every post kept, no doubt: {html}");
}

#[tokio::test]
async fn a_reading_page_that_kept_one_post_of_five_says_so_links_the_declutter_page_and_is_counted() {
    let origin = Origin::new().route("/t/boiler", |_| reply(&[("content-type", "text/html")], REPLIES)).run().await;
    let pith = Pith::start("profile = \"reader\"").await;
    let url = origin.url("/t/boiler");
    let resp = pith.client().get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("x-pith-fallback").is_none(), "a reading page, not the fallback");
    let html = resp.text().await.unwrap();
    let encoded: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
    let note = format!("<p role=\"note\">Reading mode is not sure it kept the right part of this page. <a href=\"http://pith/once?profile=declutter&amp;url={encoded}&amp;sig=");
    let at = html.find(&note).unwrap_or_else(|| panic!("the note with the bar's link, after the headline: {html}"));
    assert!(html[..at].ends_with("</h1><p>Forum thread, 4 posts</p>"), "the kind line, then the note: {html}");
    // The note's link is the bar's own signed link.
    let note_link = html[at..].split("href=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or_default().to_string();
    assert!(html.matches(note_link.as_str()).count() >= 2, "the bar carries the same link: {note_link}\n{html}");
    let metrics = pith.client().get("http://pith/metrics").send().await.unwrap().text().await.unwrap();
    let unsure = metrics.lines().find_map(|l| l.strip_prefix("pith_reader_unsure_total ")).and_then(|v| v.parse::<u64>().ok());
    assert!(unsure.is_some_and(|n| n >= 1), "{metrics}");
}
