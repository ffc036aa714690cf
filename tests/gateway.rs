//! Every page for every device: HTTPS fetched for plain-HTTP clients (`upgrade`), the URL
//! gateway (`/read?url=`), and pages written for old browsers (`charset`, `legacy`). Origins
//! are loopback servers, the HTTPS one with a certificate pith trusts through
//! `upstream.extra_root_certificates`; clients are plain HTTP, through the proxy or straight
//! at the gateway.

use std::path::PathBuf;

use base64::Engine;
use rustls::pki_types::CertificateDer;

use crate::common::*;

/// An article with clutter, links (relative, absolute HTTPS to itself, HTTPS to a bank), an
/// image, and text outside Latin-1.
fn article(own: &str) -> String {
    format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>An article</title><script>var TRACKER = 1;</script>
<style>p {{ color: red }}</style></head><body>
<main><article><h1>The headline stays</h1>
<p>First paragraph of the article stays, with a <a href="{own}/next">link to itself over HTTPS</a>, one to
<a href="https://bank.example/login">the bank</a> and a <a href="/relative">relative one</a>.</p>
<p><img src="/pic.png" alt="A picture"> “Curly quotes”, an em dash — and Łódź, café, 東京.</p>
</article></main></body></html>"#
    )
}

/// A small PNG signature and some bytes: an image passes through untouched.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n-not-really-an-image-but-bytes";

/// The origin's certificate written as PEM in a temporary folder, for pith's config.
struct Trust {
    dir: tempfile::TempDir,
}

impl Trust {
    fn new(cert: &CertificateDer<'_>) -> Trust {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).expect("base64 is ASCII")).collect();
        let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n"));
        std::fs::write(dir.path().join("root.pem"), pem).expect("write the origin's root");
        Trust { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("root.pem")
    }

    /// `[upstream]` trusting the origin, and `[intercept] never` (interception stays off).
    fn tables(&self, never: &[&str]) -> String {
        let never: Vec<String> = never.iter().map(|h| format!("{h:?}")).collect();
        format!("[upstream]\nextra_root_certificates = [{:?}]\n[intercept]\nnever = [{}]\n", self.path().display().to_string(), never.join(", "))
    }
}

/// An HTTPS origin on localhost serving [`article`] at `/article` with HSTS and an upgrading
/// CSP, and the picture.
async fn https_origin() -> (RunningOrigin, Trust) {
    let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
    let p = port.clone();
    let (origin, cert) = Origin::new()
        .route("/article", move |_| {
            let own = format!("https://localhost:{}", p.get().expect("the port is set before any request"));
            reply(
                &[
                    ("content-type", "text/html; charset=utf-8"),
                    ("strict-transport-security", "max-age=31536000; includeSubDomains"),
                    ("content-security-policy", "upgrade-insecure-requests; img-src *"),
                    ("set-cookie", "session=origin-secret"),
                    ("cache-control", "max-age=60"),
                ],
                article(&own),
            )
        })
        .route("/pic.png", |_| reply(&[("content-type", "image/png")], PNG))
        .run_tls()
        .await;
    port.set(origin.addr.port()).expect("set once");
    (origin, Trust::new(&cert))
}

/// A client that talks to the gateway directly (no proxy), sees the bytes as sent and does
/// not follow redirects.
fn direct() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .expect("a reqwest client")
}

fn gateway_url(pith: &Pith, target: &str, extra: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(target.as_bytes()).collect();
    format!("http://{}/read?url={encoded}{extra}", pith.addr)
}

fn encoded(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn upgrade_always_fetches_https_for_a_plain_client_and_keeps_it_on_http() {
    let (origin, trust) = https_origin().await;
    let pith = Pith::start(&format!("upgrade = \"always\"\n{}", trust.tables(&["bank.example"]))).await;
    let port = origin.addr.port();
    let resp = pith.client().get(format!("http://localhost:{port}/article")).send().await.expect("served");
    assert_eq!(resp.status(), 200);
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("a body");
    assert_eq!(origin.count("/article"), 1, "fetched from the HTTPS origin");
    assert!(body.contains("The headline stays") && body.contains("First paragraph of the article stays"), "{body}");
    assert!(!body.contains("TRACKER") && !body.contains("color: red"), "de-cluttered: {body}");
    assert!(body.contains(&format!("href=\"http://localhost:{port}/next\"")), "own HTTPS link now http: {body}");
    assert!(!body.contains(&format!("https://localhost:{port}")), "no HTTPS link to the upgraded host left: {body}");
    assert!(body.contains("href=\"https://bank.example/login\""), "a never host's link stays HTTPS: {body}");
    assert!(headers.get("strict-transport-security").is_none(), "HSTS dropped: {headers:?}");
    assert!(body.contains("unencrypted between this device and pith</span></nav>"), "the bar says the last hop is plain: {body}");
    let csp = headers.get("content-security-policy").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(!csp.contains("upgrade-insecure-requests"), "{csp}");
    // The picture is asked for over plain HTTP too, and fetched over HTTPS.
    let pic = pith.client().get(format!("http://localhost:{port}/pic.png")).send().await.expect("served");
    assert_eq!(pic.bytes().await.expect("bytes").as_ref(), PNG);
    assert_eq!(origin.count("/pic.png"), 1);
}

#[tokio::test]
async fn upgrade_spares_never_hosts() {
    // The plain origin speaks only HTTP: upgrading it would fail, so a page means it was not.
    let origin = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run().await;
    let (_tls, trust) = https_origin().await;
    let pith = Pith::start(&format!("upgrade = \"always\"\n{}", trust.tables(&["localhost"]))).await;
    let resp = pith.client().get(format!("http://localhost:{}/", origin.addr.port())).send().await.expect("served");
    assert_eq!(resp.status(), 200);
    assert_decluttered(&resp.text().await.expect("a body"));
    assert_eq!(origin.count("/"), 1);
}

#[tokio::test]
async fn upgrade_on_redirect_follows_the_origin_to_https_and_keeps_the_client_on_http() {
    let (secure, trust) = https_origin().await;
    let https_url = format!("https://localhost:{}/article", secure.addr.port());
    let plain = Origin::new()
        .route("/", move |_| {
            let mut resp = reply(&[("location", &https_url)], "moved");
            *resp.status_mut() = http::StatusCode::MOVED_PERMANENTLY;
            resp
        })
        .run()
        .await;
    let pith = Pith::start(&format!("upgrade = \"on-redirect\"\n{}", trust.tables(&[]))).await;
    let client = pith.client_builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let first = client.get(format!("http://localhost:{}/", plain.addr.port())).send().await.expect("served");
    assert_eq!(first.status(), 301);
    let location = first.headers().get("location").expect("a redirect").to_str().unwrap().to_string();
    assert_eq!(location, format!("http://localhost:{}/article", secure.addr.port()), "the redirect stays on HTTP");
    let page = client.get(&location).send().await.expect("served");
    assert_eq!(page.status(), 200);
    let body = page.text().await.expect("a body");
    assert!(body.contains("The headline stays"), "{body}");
    assert_eq!(secure.count("/article"), 1, "fetched over HTTPS once the host redirected there");
    // A listener that does not upgrade passes the origin's redirect on as it is.
    let off = Pith::start(&trust.tables(&[])).await;
    let client = off.client_builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let first = client.get(format!("http://localhost:{}/", plain.addr.port())).send().await.expect("served");
    assert!(first.headers().get("location").unwrap().to_str().unwrap().starts_with("https://"));
}

#[test]
fn upgrade_off_loopback_needs_an_allow_list_or_auth() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("open.toml");
    std::fs::write(&file, "[[listener]]\naddress = \"0.0.0.0:0\"\nupgrade = \"always\"\n").expect("write the config");
    for (code, stderr) in binary::refused(&file, &[]) {
        assert_eq!(code, Some(64), "{stderr}");
        assert!(stderr.contains("listener.upgrade") && stderr.contains("allow"), "{stderr}");
    }
    let parse = |toml: &str| pith::config::Config::from_toml_str(toml, "t.toml", None);
    assert!(parse("[[listener]]\naddress = \"0.0.0.0:0\"\nupgrade = \"always\"\nallow = [\"192.168.0.0/16\"]\n").is_ok());
    assert!(parse("[[listener]]\naddress = \"0.0.0.0:0\"\nupgrade = \"on-redirect\"\nauth = { user = \"u\", password = \"p\" }\n").is_ok());
    assert!(parse("[[listener]]\naddress = \"127.0.0.1:0\"\nupgrade = \"always\"\n").is_ok(), "loopback is its own machine");
    let bad = parse("[[listener]]\naddress = \"127.0.0.1:0\"\nupgrade = \"sometimes\"\n").expect_err("an unknown value");
    assert!(bad.to_string().contains("listener.upgrade"), "{bad}");
    let bad = parse("[[listener]]\naddress = \"127.0.0.1:0\"\ncharset = \"koi8-r\"\n").expect_err("an unknown charset");
    assert!(bad.to_string().contains("listener.charset"), "{bad}");
}

/// A plain origin with a page in a folder, its picture, a redirect and a page too large.
async fn http_origin() -> RunningOrigin {
    Origin::new()
        .route("/dir/page", |r| {
            let cookie = r.header("cookie").unwrap_or_default();
            let page = article("https://elsewhere.example").replace("First paragraph", &format!("First paragraph{cookie}"));
            reply(&[("content-type", "text/html; charset=utf-8"), ("cache-control", "max-age=60")], page)
        })
        .route("/pic.png", |_| reply(&[("content-type", "image/png"), ("set-cookie", "track=1")], PNG))
        .route("/old", |_| {
            let mut resp = reply(&[("location", "/dir/page")], "moved");
            *resp.status_mut() = http::StatusCode::FOUND;
            resp
        })
        .route("/big", |_| reply(&[("content-type", "text/html")], format!("<p>{}</p>", "long text ".repeat(2000))))
        .run()
        .await
}

#[tokio::test]
async fn the_gateway_serves_an_http_page_with_its_links_and_images_through_itself() {
    let origin = http_origin().await;
    let pith = Pith::start("").await;
    let base = format!("http://{}", origin.addr);
    let client = direct();
    let resp = client.get(gateway_url(&pith, &format!("{base}/dir/page"), "")).header("cookie", "pith-side=1").send().await.expect("served");
    assert_eq!(resp.status(), 200);
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("a body");
    assert!(body.contains("The headline stays") && !body.contains("TRACKER"), "{body}");
    assert!(!headers.contains_key("set-cookie"));
    assert!(!body.contains("pith-side"), "the client's cookie for pith never reaches the origin: {body}");
    assert!(body.contains(&format!("href=\"/read?url={}\"", encoded(&format!("{base}/relative")))), "{body}");
    assert!(body.contains(&format!("href=\"/read?url={}\"", encoded("https://elsewhere.example/next"))), "{body}");
    let pic = format!("/read?url={}", encoded(&format!("{base}/pic.png")));
    assert!(body.contains(&format!("src=\"{pic}\"")), "{body}");
    assert!(headers.get("content-security-policy").unwrap().to_str().unwrap().contains("script-src 'none'"));
    // The picture, through the gateway, byte for byte, without the origin's cookie.
    let image = client.get(format!("http://{}{pic}", pith.addr)).send().await.expect("served");
    assert_eq!(image.status(), 200);
    assert!(image.headers().get("set-cookie").is_none(), "the origin's cookies are not set on pith's address");
    assert_eq!(image.bytes().await.expect("bytes").as_ref(), PNG);
    // Kept like any response: the second read comes from the cache.
    let again = client.get(gateway_url(&pith, &format!("{base}/dir/page"), "")).send().await.expect("served");
    assert_eq!(again.headers().get("x-cache").map(|v| v.to_str().unwrap()), Some("HIT"));
    assert_eq!(origin.count("/dir/page"), 1);
    // A redirect is routed back through the gateway.
    let moved = client.get(gateway_url(&pith, &format!("{base}/old"), "")).send().await.expect("served");
    assert_eq!(moved.status(), 302);
    let want = format!("/read?url={}", encoded(&format!("{base}/dir/page")));
    assert_eq!(moved.headers().get("location").map(|v| v.to_str().unwrap()), Some(want.as_str()));
    // Without an address, a box to type one in; pith's home page has it too.
    let form = client.get(format!("http://{}/read", pith.addr)).send().await.expect("served").text().await.expect("a body");
    assert!(form.contains("<form action=\"/read\"") && form.contains("name=\"url\""), "{form}");
    let home = client.get(format!("http://{}/", pith.addr)).send().await.expect("served").text().await.expect("a body");
    assert!(home.contains("<form action=\"/read\""), "{home}");
}

#[tokio::test]
async fn the_gateway_reads_https_over_verified_tls_in_the_profile_asked() {
    let (origin, trust) = https_origin().await;
    let pith = Pith::start(&format!("gateway_profiles = [\"text\"]\n{}", trust.tables(&[]))).await;
    let url = format!("https://localhost:{}/article", origin.addr.port());
    let client = direct();
    let resp = client.get(gateway_url(&pith, &url, "")).send().await.expect("served");
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("strict-transport-security").is_none());
    let body = resp.text().await.expect("a body");
    assert!(body.contains("The headline stays"), "{body}");
    let next = format!("href=\"/read?url={}\"", encoded(&format!("https://localhost:{}/next", origin.addr.port())));
    assert!(body.contains(&next), "{body}");
    let text = client.get(gateway_url(&pith, &url, "&profile=text")).send().await.expect("served");
    assert_eq!(text.headers().get("content-type").unwrap().to_str().unwrap(), "text/plain; charset=utf-8");
    assert!(text.text().await.expect("a body").contains("The headline stays"));
    let refused = client.get(gateway_url(&pith, &url, "&profile=reader")).send().await.expect("served");
    assert_eq!(refused.status(), 400, "a profile the listener does not offer");
    assert!(refused.text().await.expect("a body").contains("declutter, text"));
    // An origin pith cannot verify is an error, never read.
    let untrusted = Pith::start("").await;
    let resp = client.get(gateway_url(&untrusted, &url, "")).send().await.expect("served");
    assert_eq!(resp.status(), 502);
}

#[tokio::test]
async fn the_gateway_keeps_the_proxys_deny_rules_limits_and_admission() {
    let origin = http_origin().await;
    let target = format!("http://{}/dir/page", origin.addr);
    let client = direct();
    let denied = Pith::start("[upstream]\ndeny = [\"127.0.0.0/8\"]\n").await;
    assert_eq!(client.get(gateway_url(&denied, &target, "")).send().await.expect("served").status(), 403);
    let private = Pith::start("[upstream]\ndeny_private = true\n").await;
    assert_eq!(client.get(gateway_url(&private, &format!("http://localhost:{}/dir/page", origin.addr.port()), "")).send().await.expect("served").status(), 403);
    let stranger = Pith::start("allow = [\"10.0.0.0/8\"]\n").await;
    assert_eq!(client.get(gateway_url(&stranger, &target, "")).send().await.expect("served").status(), 403, "a client outside the allow list");
    let locked = Pith::start("auth = { user = \"reader\", password = \"s3cret\" }\n").await;
    assert_eq!(client.get(gateway_url(&locked, &target, "")).send().await.expect("served").status(), 407, "no credentials");
    assert_eq!(origin.count("/dir/page"), 0, "no refused request reached the origin");
    // A page too large to rewrite is refused, not passed through with its links and scripts.
    let small = Pith::start("[limits]\nmax_rewrite_bytes = 4096\n").await;
    let resp = client.get(gateway_url(&small, &format!("http://{}/big", origin.addr), "")).send().await.expect("served");
    assert_eq!(resp.status(), 502);
    assert!(resp.text().await.expect("a body").contains("max_rewrite_bytes"));
    // Only HTTP(S), never pith itself, GET and HEAD only.
    let pith = Pith::start("").await;
    assert_eq!(client.get(gateway_url(&pith, "file:///etc/passwd", "")).send().await.expect("served").status(), 400);
    assert_eq!(client.get(gateway_url(&pith, &format!("http://{}/", pith.addr), "")).send().await.expect("served").status(), 508);
    assert_eq!(client.post(gateway_url(&pith, &target, "")).send().await.expect("served").status(), 400);
}

#[tokio::test]
async fn a_latin1_listener_transliterates_what_latin1_lacks() {
    let origin = http_origin().await;
    let pith = Pith::start("charset = \"iso-8859-1\"\n").await;
    let resp = pith.client().get(format!("http://{}/dir/page", origin.addr)).send().await.expect("served");
    assert_eq!(resp.headers().get("content-type").unwrap().to_str().unwrap(), "text/html; charset=iso-8859-1");
    let bytes = resp.bytes().await.expect("bytes").to_vec();
    let contains = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(contains(b"\"Curly quotes\""), "curly quotes as ASCII quotes");
    assert!(contains(b"em dash -- and L\xf3dz, caf\xe9, &#26481;&#20140;."), "{}", String::from_utf8_lossy(&bytes));
    assert!(!contains(b"??"), "never ? soup");
    assert!(std::str::from_utf8(&bytes).is_err(), "not UTF-8: é is one Latin-1 byte");
    // HTML 3.2 for the oldest browsers, ASCII for those without Latin-1.
    let legacy = Pith::start("charset = \"us-ascii\"\nlegacy = true\n").await;
    let body = legacy.client().get(format!("http://{}/dir/page", origin.addr)).send().await.expect("served").text().await.expect("ASCII");
    assert!(body.starts_with("<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">"), "{body}");
    assert!(body.is_ascii() && body.contains("cafe"), "{body}");
    for newer in ["<main", "<article", "<style", "lang=", "<meta name=\"viewport\""] {
        assert!(!body.contains(newer), "{newer} in {body}");
    }
}

/// A text browser reads an HTTPS article through the gateway, as an old device would:
/// `lynx -dump` (Debian's `lynx`; scripts/test.sh installs it when missing).
#[tokio::test]
async fn lynx_reads_an_https_article_through_the_gateway() {
    let (origin, trust) = https_origin().await;
    let pith = Pith::start(&format!("charset = \"iso-8859-1\"\nlegacy = true\n{}", trust.tables(&[]))).await;
    let port = origin.addr.port();
    let url = gateway_url(&pith, &format!("https://localhost:{port}/article"), "");
    // lynx's own timeouts bound it; the test's guard is above them.
    let args = ["-dump", "-width=200", "-display_charset=utf-8", "-assume_charset=iso-8859-1", "-connect_timeout=20", "-read_timeout=20"];
    let run = tokio::task::spawn_blocking(move || {
        std::process::Command::new("lynx")
            .args(args)
            .arg(&url)
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("https_proxy")
            .env_remove("all_proxy")
            .output()
    });
    let out = match tokio::time::timeout(std::time::Duration::from_secs(60), run).await.expect("lynx finishes within a minute").expect("the task ran") {
        Ok(out) => out,
        Err(e) => panic!("lynx is needed for this test (Debian package `lynx`; scripts/test.sh installs it): {e}"),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "lynx failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("The headline stays") && text.contains("First paragraph of the article stays"), "{text}");
    assert!(text.contains("café") && text.contains("\"Curly quotes\"") && text.contains("東京"), "Latin-1, references for the rest: {text}");
    assert!(!text.contains("TRACKER") && !text.contains("color: red"), "{text}");
    // lynx's list of references: every link leads back through the gateway.
    // (lynx shows the query's escapes decoded.)
    let next = format!("http://{}/read?url=https://localhost:{port}/next", pith.addr);
    assert!(text.contains(&next), "{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains(". https://")), "a link leaves the gateway: {text}");
    assert_eq!(origin.count("/article"), 1);
}

/// A page whose links and sources carry script and `data:` URLs, spelt in several ways.
const SCRIPTED_URLS: &str = "<!DOCTYPE html><html><head><meta charset=utf-8><title>t</title>\
<meta http-equiv=refresh content=\"9; url=javascript:alert('refresh')\"></head><body><h1>Heading</h1>\
<p>Some text of the page that stays, long enough to be the page's content.</p>\
<p><img src=\"javascript:alert('img')\" alt=a><img src=\"data:image/gif;base64,R0lGODlhAQABAAAAACw=\" alt=b>\
<a href=\"data:text/html,<script>alert('data')</script>\">data link</a> <a href=\"jav&#x09;ascript:alert('tab')\">tab link</a>\
<a href=\"/ok?a=1&amp;b=2\">ok link</a> <a href=\"mailto:x@y.example\">mail</a></p></body></html>";

/// On the gateway's pages and a legacy listener's (served from pith's own origin), no URL but
/// http, https, mailto, tel and relative ones survives; on a proxied page in the declutter
/// profile, `javascript:` URLs go everywhere, a `data:` image may stay.
#[tokio::test]
async fn pages_keep_no_script_or_data_urls_where_they_could_reach_pith() {
    let origin = Origin::new().route("/s", |_| reply(&[("content-type", "text/html; charset=utf-8")], SCRIPTED_URLS)).run().await;
    let url = origin.url("/s");
    let unsafe_urls = |page: &str| ["javascript", "alert(", "data:text"].into_iter().filter(|bad| page.contains(bad)).collect::<Vec<_>>();

    let gateway = Pith::start("").await;
    let page = direct().get(gateway_url(&gateway, &url, "")).send().await.expect("served").text().await.expect("a body");
    assert!(page.contains("ok link"), "{page}");
    assert_eq!(unsafe_urls(&page), Vec::<&str>::new(), "gateway page:\n{page}");
    assert!(!page.contains("data:image"), "a gateway page keeps no data: URL at all:\n{page}");
    assert!(page.contains("mailto:x@y.example"), "{page}");

    let legacy = Pith::start("legacy = true\n").await;
    let page = legacy.client().get(&url).send().await.expect("served").text().await.expect("a body");
    assert!(page.contains("ok link"), "{page}");
    assert_eq!(unsafe_urls(&page), Vec::<&str>::new(), "legacy page:\n{page}");
    assert!(!page.contains("data:image"), "{page}");

    let proxied = Pith::start("").await;
    let page = proxied.client().get(&url).send().await.expect("served").text().await.expect("a body");
    assert!(page.contains("ok link"), "{page}");
    assert!(!page.contains("javascript") && !page.contains("alert('img')"), "declutter:\n{page}");
    assert!(page.contains("data:image/gif"), "a data: image may stay on the site's own origin:\n{page}");
}

/// The gateway keeps a link's parameters apart: `&amp;` in the page is `&` in the URL the
/// origin gets.
#[tokio::test]
async fn gateway_links_with_several_parameters_reach_the_origin_whole() {
    let origin = Origin::new()
        .route("/s", |_| reply(&[("content-type", "text/html; charset=utf-8")], SCRIPTED_URLS))
        .route("/ok", |r| reply(&[("content-type", "text/plain")], format!("query={}", r.uri.query().unwrap_or(""))))
        .run()
        .await;
    let pith = Pith::start("").await;
    let page = direct().get(gateway_url(&pith, &origin.url("/s"), "")).send().await.expect("served").text().await.expect("a body");
    let href = page.split("<a href=\"").map(|rest| rest.split('"').next().unwrap_or("")).find(|h| h.contains("ok")).expect("the ok link");
    let href = href.replace("&amp;", "&");
    let resp = direct().get(format!("http://{}{href}", pith.addr)).send().await.expect("served");
    assert_eq!(resp.text().await.expect("a body"), "query=a=1&b=2", "{href}");
}

/// A gateway URL nested in itself and naming pith by a name it does not know as its own
/// (`localhost.`), with `Via` off: the first request to come back to pith, on a connection
/// pith opened, is refused as a loop; the origin is never reached through the loop.
#[tokio::test]
async fn a_gateway_loop_through_a_name_or_address_of_its_own_is_cut_with_via_off() {
    let origin = http_origin().await;
    let pith = Pith::start("[upstream]\nsend_via = false\n").await;
    let mut url = format!("http://{}/dir/page", origin.addr);
    for _ in 0..6 {
        url = format!("http://localhost.:{}/read?url={}", pith.addr.port(), encoded(&url));
    }
    let resp = direct().get(gateway_url(&pith, &url, "")).send().await.expect("served");
    assert_eq!(resp.status(), 508, "{}", resp.text().await.unwrap_or_default());
    assert_eq!(origin.count("/dir/page"), 0);
}

/// A wildcard listener knows every address of the machine as its own: a gateway URL naming
/// it by its LAN address is a loop at once, and a control-page POST whose Origin is that
/// address is taken.
#[tokio::test]
async fn a_wildcard_listener_knows_the_machines_own_addresses() {
    // The machine's address on its default route, if it has one (no packet is sent).
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    let lan = socket.connect("192.0.2.1:9").ok().and_then(|()| socket.local_addr().ok()).map(|a| a.ip()).filter(|ip| !ip.is_loopback());
    let Some(lan) = lan else {
        eprintln!("this machine has no address off loopback: nothing to test");
        return;
    };
    let pith = Pith::from_config("[[listener]]\naddress = \"0.0.0.0:0\"\nallow = [\"127.0.0.0/8\"]\n").await;
    let port = pith.addr.port();
    let at = std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), port);
    let target = encoded(&format!("http://{lan}:{port}/read?url=http%3A%2F%2Fexample.org%2F"));
    let resp = direct().get(format!("http://{at}/read?url={target}")).send().await.expect("served");
    assert_eq!(resp.status(), 508);
    let home = direct().get(format!("http://{at}/")).send().await.expect("served").text().await.expect("a body");
    let token = home.split("name=\"token\" value=\"").nth(1).and_then(|r| r.split('"').next()).expect("the page's token").to_string();
    let resp = direct()
        .post(format!("http://{at}/choose"))
        .header("origin", format!("http://{lan}:{port}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}&profile=pass"))
        .send()
        .await
        .expect("served");
    assert!(resp.status().is_redirection() || resp.status().is_success(), "{}: {}", resp.status(), resp.text().await.unwrap_or_default());
}
