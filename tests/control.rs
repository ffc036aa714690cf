//! The control page at `http://pith/`: a client's profile choice and per-site switches are
//! followed by its next requests and by no other client's, changes need the page's token and
//! pith's own origin, choices survive a restart, a corrupt state file stops the start, the bar
//! on rewritten pages serves a page once as the original, PAC, metrics and the operators'
//! section.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use crate::common::*;

/// An origin serving [`CLUTTERED`] at `/page`.
async fn cluttered_origin() -> RunningOrigin {
    Origin::new().route("/page", |_| reply(&[("content-type", "text/html")], CLUTTERED)).run().await
}

/// A client of `pith` from the local address `from` that follows no redirects.
fn client_from(pith: &Pith, from: &str) -> reqwest::Client {
    let from: IpAddr = from.parse().expect("an address");
    pith.client_builder().local_address(from).redirect(reqwest::redirect::Policy::none()).build().expect("a client")
}

/// The control page as `client` sees it, and the token in its forms.
async fn control_page(client: &reqwest::Client) -> (String, String) {
    let resp = client.get("http://pith/").send().await.expect("pith answers");
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.expect("a body");
    let token = html.split("name=\"token\" value=\"").nth(1).and_then(|r| r.split('"').next()).expect("a token in the page's forms").to_string();
    (html, token)
}

/// POSTs `form` to `path` on pith with `origin` as its Origin (none when `None`).
async fn post(client: &reqwest::Client, path: &str, form: &[(&str, &str)], origin: Option<&str>) -> reqwest::Response {
    let mut req = client.post(format!("http://pith{path}")).form(form);
    if let Some(origin) = origin {
        req = req.header("origin", origin);
    }
    req.send().await.expect("pith answers")
}

/// Whether `client` got `url` untouched (the original) or rewritten.
async fn original(client: &reqwest::Client, url: &str) -> bool {
    let resp = client.get(url).send().await.expect("the page");
    assert_eq!(resp.status(), 200);
    let rewritten = resp.headers().contains_key("x-pith");
    let body = resp.text().await.expect("a body");
    assert_eq!(body == CLUTTERED, !rewritten, "x-pith is there exactly when the page was changed:\n{body}");
    !rewritten
}

#[tokio::test]
async fn a_choice_is_followed_by_that_client_alone() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let (me, other) = (client_from(&pith, "127.0.0.1"), client_from(&pith, "127.0.0.2"));
    let url = origin.url("/page");
    assert!(!original(&me, &url).await && !original(&other, &url).await, "the listener's declutter at first");

    let (page, token) = control_page(&me).await;
    assert!(page.contains("127.0.0.1") && page.contains("this proxy's default"), "{page}");
    assert!(page.contains("<html lang=\"en\">") && page.matches("<h1>").count() == 1, "{page}");
    let resp = post(&me, "/choose", &[("token", &token), ("profile", "pass")], Some("http://pith")).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()["location"], "/");

    assert!(original(&me, &url).await, "the next page follows the choice");
    assert!(!original(&other, &url).await, "another client keeps the listener's profile");
    let (mine, _) = control_page(&me).await;
    assert!(mine.contains("value=\"pass\" checked") && mine.contains("(your choice"), "{mine}");
    let (theirs, their_token) = control_page(&other).await;
    assert!(!theirs.contains("value=\"pass\" checked") && !theirs.contains("<strong>127.0.0.1</strong>"), "another client's choice is never shown:\n{theirs}");
    assert_ne!(token, their_token, "each client has its own token");

    // The other client cannot change this one's choice with this one's token.
    let resp = post(&other, "/choose", &[("token", &token), ("profile", "text")], Some("http://pith")).await;
    assert_eq!(resp.status(), 403);
    assert!(original(&me, &url).await);

    // Back to the default.
    let resp = post(&me, "/choose", &[("token", &token), ("profile", "")], None).await;
    assert_eq!(resp.status(), 303, "a form without Origin or Referer (a text browser) relies on its token");
    assert!(!original(&me, &url).await);
}

#[tokio::test]
async fn changes_without_the_token_or_from_another_origin_are_refused() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let me = client_from(&pith, "127.0.0.1");
    let (_, token) = control_page(&me).await;
    let no_token = post(&me, "/choose", &[("profile", "pass")], Some("http://pith")).await;
    assert_eq!(no_token.status(), 403);
    let wrong_token = post(&me, "/choose", &[("token", "0123456789abcdef0123456789abcdef"), ("profile", "pass")], Some("http://pith")).await;
    assert_eq!(wrong_token.status(), 403);
    let elsewhere = post(&me, "/choose", &[("token", &token), ("profile", "pass")], Some("http://evil.example")).await;
    assert_eq!(elsewhere.status(), 403);
    let null = post(&me, "/choose", &[("token", &token), ("profile", "pass")], Some("null")).await;
    assert_eq!(null.status(), 403);
    let referer = me.post("http://pith/site").header("referer", "http://evil.example/x").form(&[("token", token.as_str()), ("host", "127.0.0.1"), ("mode", "pass")]).send().await.unwrap();
    assert_eq!(referer.status(), 403, "without Origin, Referer is checked");
    let get = me.get("http://pith/choose?profile=pass").send().await.unwrap();
    assert_eq!(get.status(), 405, "changes are POSTs");
    assert!(!original(&me, &origin.url("/page")).await, "nothing changed");
    let own_address = post(&me, "/choose", &[("token", &token), ("profile", "pass")], Some(&format!("http://{}", pith.addr))).await;
    assert_eq!(own_address.status(), 303, "the listener's own address is pith too");
}

#[tokio::test]
async fn a_site_switch_covers_its_host_and_no_other() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let me = client_from(&pith, "127.0.0.1");
    let (_, token) = control_page(&me).await;
    let (by_ip, by_name) = (origin.url("/page"), origin.url("/page").replace("127.0.0.1", "localhost"));
    let resp = post(&me, "/site", &[("token", &token), ("host", "127.0.0.1"), ("mode", "pass")], Some("http://pith")).await;
    assert_eq!(resp.status(), 303);
    assert!(original(&me, &by_ip).await, "always the original here");
    assert!(!original(&me, &by_name).await, "another host keeps the profile");
    let (page, _) = control_page(&me).await;
    assert!(page.contains("<strong>127.0.0.1</strong>") && page.contains("Remove the switch for 127.0.0.1"), "{page}");

    // Reading mode for one host, given as a pasted URL.
    let resp = post(&me, "/site", &[("token", &token), ("host", &by_name), ("mode", "reader")], Some("http://pith")).await;
    assert_eq!(resp.status(), 303);
    let read = me.get(&by_name).send().await.unwrap();
    assert!(read.headers()["x-pith"].to_str().unwrap().contains("profile=reader"), "{:?}", read.headers());

    // Removed: back to the listener's profile.
    let resp = post(&me, "/site", &[("token", &token), ("host", "127.0.0.1"), ("mode", "")], Some("http://pith")).await;
    assert_eq!(resp.status(), 303);
    assert!(!original(&me, &by_ip).await);
    let bad = post(&me, "/site", &[("token", &token), ("host", "a b<c>"), ("mode", "pass")], Some("http://pith")).await;
    assert_eq!(bad.status(), 400);
}

/// The bar's signed `/once` link on `page` (served for `url`) to `profile`, as a client
/// follows it.
fn bar_link(page: &str, url: &str, profile: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
    let start = format!("http://pith/once?profile={profile}&amp;url={encoded}&amp;sig=");
    let at = page.find(&start).unwrap_or_else(|| panic!("no signed link to {profile} in:\n{page}"));
    page[at..].split('"').next().expect("the link ends").replace("&amp;", "&")
}

#[tokio::test]
async fn the_bar_serves_a_page_once_as_the_original() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let me = client_from(&pith, "127.0.0.1");
    let url = origin.url("/page");
    let page = me.get(&url).send().await.unwrap().text().await.unwrap();
    assert_decluttered(&page);
    let link = bar_link(&page, &url, "pass");
    assert!(page.contains("<nav aria-label=\"pith\" lang=\"en\" dir=\"ltr\"><a href=\"#pith-content\""), "the bar, opening on its skip link, links to the original:\n{page}");
    assert!(page.contains("profile=reader&amp;url="), "and to reading mode:\n{page}");

    let resp = me.get(&link).send().await.unwrap();
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()["location"], url.as_str(), "back to the same URL");
    assert!(original(&me, &url).await, "served once as the original");
    assert!(!original(&me, &url).await, "then as before");

    // Not a way to reach anything but a web URL.
    for bad in ["/once?profile=pass&url=file:///etc/passwd", "/once?profile=nope&url=http://a.example/", "/once?profile=pass"] {
        let resp = me.get(format!("http://pith{bad}")).send().await.unwrap();
        assert_eq!(resp.status(), 400, "{bad}");
    }
}

#[tokio::test]
async fn a_profile_without_the_bar_and_a_proxy_without_choices() {
    let origin = cluttered_origin().await;
    let pith = Pith::from_config(&format!(
        "[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"plain\"\n[profiles.plain]\nrules = \"declutter\"\nbar = false\n{PROFILES}"
    ))
    .await;
    let page = pith.client().get(origin.url("/page")).send().await.unwrap().text().await.unwrap();
    assert!(!page.contains("aria-label=\"pith\""), "{page}");

    let off = Pith::start("[control]\nchoices = false").await;
    let me = client_from(&off, "127.0.0.1");
    let page = me.get(origin.url("/page")).send().await.unwrap().text().await.unwrap();
    assert!(!page.contains("aria-label=\"pith\""), "no bar while choices are off:\n{page}");
    let home = me.get("http://pith/").send().await.unwrap().text().await.unwrap();
    assert!(home.contains("Choices are off") && !home.contains("method=\"post\""), "no form that changes a choice: {home}");
    let resp = post(&me, "/choose", &[("token", "x"), ("profile", "pass")], Some("http://pith")).await;
    assert_eq!(resp.status(), 403);
}

#[tokio::test]
async fn pac_and_wpad_send_all_but_local_networks_through_pith() {
    let pith = Pith::start("[control]\nbypass = [\"intranet.example\", \"10.9.0.0/16\"]").await;
    for path in ["/proxy.pac", "/wpad.dat"] {
        let resp = pith.client().get(format!("http://pith{path}")).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/x-ns-proxy-autoconfig");
        let pac = resp.text().await.unwrap();
        assert!(pac.contains("function FindProxyForURL(url, host)"), "{pac}");
        assert!(pac.contains(&format!("return \"PROXY {}\";", pith.addr)), "{pac}");
        assert!(pac.contains("dnsDomainIs(host, \".intranet.example\")") && pac.contains("isInNet(ip, \"10.9.0.0\", \"255.255.0.0\")"), "{pac}");
        assert!(pac.contains("isInNet(ip, \"192.168.0.0\", \"255.255.0.0\")") && pac.contains("isPlainHostName(host)"), "{pac}");
    }
    // On the listener's own address too, as a device not yet set up fetches it.
    let direct = reqwest::get(format!("http://{}/wpad.dat", pith.addr)).await.unwrap();
    assert_eq!(direct.headers()["content-type"], "application/x-ns-proxy-autoconfig");
}

#[tokio::test]
async fn metrics_and_the_page_count_requests_and_bytes() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let me = client_from(&pith, "127.0.0.1");
    let url = origin.url("/page");
    for _ in 0..2 {
        me.get(&url).header("cache-control", "no-cache").send().await.unwrap().bytes().await.unwrap();
    }
    let metrics = me.get("http://pith/metrics").send().await.unwrap().text().await.unwrap();
    let line = metrics.lines().find(|l| l.starts_with("pith_requests_total{profile=\"declutter\",action=\"rewrite\",status=\"200\"}")).unwrap_or_else(|| panic!("{metrics}"));
    assert!(line.ends_with(" 1") || line.ends_with(" 2"), "{line}");
    let value = |name: &str| metrics.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).and_then(|v| v.parse::<f64>().ok()).unwrap_or_else(|| panic!("{name}:\n{metrics}"));
    assert!(value("pith_origin_bytes_total") >= CLUTTERED.len() as f64, "{metrics}");
    assert!(value("pith_client_bytes_total") > 0.0 && value("pith_connections_open") >= 1.0, "{metrics}");
    assert!(value("pith_request_seconds_count") >= 2.0 && value("pith_rewrite_seconds_count") >= 1.0, "{metrics}");
    assert!(metrics.contains("pith_tunnels_open 0") && metrics.contains("pith_cache_hits_total"), "{metrics}");
    let (page, _) = control_page(&me).await;
    let sent = format!("Sites sent {} bytes for you", 2 * CLUTTERED.len());
    assert!(page.contains(&sent) && page.contains("pith sent you"), "{sent}: {page}");
    let (theirs, _) = control_page(&client_from(&pith, "127.0.0.2")).await;
    assert!(theirs.contains("Nothing served to this device yet"), "{theirs}");
}

#[tokio::test]
async fn the_operators_section_needs_its_credentials() {
    let origin = Origin::new().route("/k", |_| reply(&[("content-type", "text/plain"), ("cache-control", "max-age=600")], "kept")).run().await;
    let pith = Pith::start("[control]\nadmin = { user = \"op\", password = \"s3cret\" }").await;
    let me = client_from(&pith, "127.0.0.1");
    let resp = me.get("http://pith/admin").send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().contains_key("www-authenticate"));
    let wrong = me.get("http://pith/admin").basic_auth("op", Some("nope")).send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let purge = me.post("http://pith/admin/purge").form(&[("url", "http://a.example/")]).send().await.unwrap();
    assert_eq!(purge.status(), 401, "nothing without the credentials");

    let page = me.get("http://pith/admin").basic_auth("op", Some("s3cret")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Configuration in force") && page.contains("profile declutter"), "{page}");
    let token = page.split("name=\"token\" value=\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_string();
    let url = origin.url("/k");
    me.get(&url).send().await.unwrap().bytes().await.unwrap();
    me.get(&url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(origin.count("/k"), 1, "kept");
    let done = me.post("http://pith/admin/purge").basic_auth("op", Some("s3cret")).header("origin", "http://pith").form(&[("token", token.as_str()), ("url", url.as_str())]).send().await.unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().await.unwrap().contains("Purged"));
    me.get(&url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(origin.count("/k"), 2, "purged, fetched again");
    // A whole host.
    me.get(&url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(origin.count("/k"), 2, "kept again");
    let done = me.post("http://pith/admin/purge").basic_auth("op", Some("s3cret")).header("origin", "http://pith").form(&[("token", token.as_str()), ("host", "127.0.0.1")]).send().await.unwrap();
    assert!(done.text().await.unwrap().contains("Purged everything kept from 127.0.0.1"));
    me.get(&url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(origin.count("/k"), 3, "the host's entries were purged");
    let page = me.get("http://pith/admin").basic_auth("op", Some("s3cret")).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Sites in the last hour") && page.contains("<td>127.0.0.1</td>"), "per-site bytes: {page}");
}

/// Binds a proxy on `toml`, retrying while the previous one (same state file) still holds it:
/// its connections drain after it was told to stop.
async fn bind_again(toml: &str) -> pith::net::Proxy {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let config = pith::config::Config::from_toml_str(toml, "test.toml", None).unwrap();
        match pith::net::Proxy::bind(config).await {
            Ok(proxy) => return proxy,
            Err(e) if std::time::Instant::now() < deadline => {
                assert!(e.to_string().contains("state file"), "{e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the state file was not released: {e}"),
        }
    }
}

fn state_config(path: &Path) -> String {
    format!("[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"declutter\"\n[state]\npath = {:?}\n{PROFILES}", path.display().to_string())
}

#[tokio::test]
async fn choices_survive_a_restart() {
    let origin = cluttered_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let toml = state_config(&dir.path().join("state.redb"));
    let url = origin.url("/page");
    {
        let pith = Pith::from_config(&toml).await;
        let me = client_from(&pith, "127.0.0.1");
        let (page, token) = control_page(&me).await;
        assert!(page.contains("keeps these choices across restarts"), "{page}");
        assert_eq!(post(&me, "/choose", &[("token", &token), ("profile", "pass")], None).await.status(), 303);
        assert_eq!(post(&me, "/site", &[("token", &token), ("host", "localhost"), ("mode", "declutter")], None).await.status(), 303);
        assert!(original(&me, &url).await);
    }
    let proxy = bind_again(&toml).await;
    let addr = proxy.local_addrs()[0];
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(proxy.run(async move {
        let _ = stopped.await;
    }));
    let me = client_builder(reqwest::Proxy::all(format!("http://{addr}")).unwrap()).build().unwrap();
    assert!(original(&me, &url).await, "the choice was kept");
    assert!(!original(&me, &url.replace("127.0.0.1", "localhost")).await, "and the switch");
    drop(stop);
}

#[tokio::test]
async fn a_corrupt_state_file_stops_the_start_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.redb");
    let junk = b"not a state file at all, but long enough to look like a header of one".repeat(64);
    std::fs::write(&path, &junk).unwrap();
    let config = pith::config::Config::from_toml_str(&state_config(&path), "test.toml", None).unwrap();
    let err = pith::net::Proxy::bind(config).await.err().expect("refused");
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()) && message.contains("cannot be used"), "{message}");

    // The binary says so and exits non-zero.
    let file = dir.path().join("proxy.toml");
    std::fs::write(&file, state_config(&path)).unwrap();
    let out = binary::run(&["serve", "--config", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("state file cannot be used") && stderr.contains("state.redb"), "{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), junk, "the file is left as it was");
}

/// `lynx ARGS` with pith as its HTTP proxy, on the blocking pool (pith runs on this test's
/// runtime). Bounded by lynx's own connect and read timeouts.
async fn lynx(pith: &Pith, args: &[&str], stdin: Option<String>) -> String {
    let proxy = format!("http://{}/", pith.addr);
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new("lynx")
            .args(["-dump", "-nocolor", "-connect_timeout=10", "-read_timeout=20", "-useragent=lynx-test"])
            .args(&args)
            .env("http_proxy", &proxy)
            .env("no_proxy", "")
            .env_remove("HOME")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("lynx is needed for this test ({e}): apt-get install lynx, as scripts/test.sh does"));
        let mut input = child.stdin.take().expect("piped stdin");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("lynx reads its post data");
        }
        drop(input);
        let out = child.wait_with_output().expect("lynx runs");
        assert!(out.status.success(), "lynx failed: {}", String::from_utf8_lossy(&out.stderr));
        // Lines as lynx wrapped them, joined: the tests look for phrases.
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
    })
    .await
    .expect("the lynx task")
}

#[tokio::test]
async fn the_control_page_works_in_lynx() {
    let pith = Pith::start("").await;
    let page = lynx(&pith, &["http://pith/"], None).await;
    for shown in ["What pith does for you", "How pages are served to you", "reading mode: the main text alone", "Save my choice", "Add a switch for one site", "Site (host name, such as example.com)"] {
        assert!(page.contains(shown), "{shown:?} in lynx:\n{page}");
    }
    // The same form lynx submits: lynx is 127.0.0.1, as is this client.
    let (_, token) = control_page(&client_from(&pith, "127.0.0.1")).await;
    let after = lynx(&pith, &["-post_data", "http://pith/choose"], Some(format!("token={token}&profile=reader\n---\n"))).await;
    assert!(after.contains("Pages are served reading mode (your choice"), "lynx followed the redirect to the changed page:\n{after}");
}

#[tokio::test]
async fn clients_of_listeners_with_auth_are_told_apart_by_user() {
    let origin = cluttered_origin().await;
    let pith = Pith::from_config(&format!(
        "[[listener]]\naddress = \"127.0.0.1:0\"\nauth = {{ user = \"ann\", password = \"pw-a\" }}\n\
         [[listener]]\naddress = \"127.0.0.1:0\"\nauth = {{ user = \"bob\", password = \"pw-b\" }}\n{PROFILES}"
    ))
    .await;
    let as_user = |addr: std::net::SocketAddr, user: &str, password: &str| {
        let proxy = reqwest::Proxy::all(format!("http://{addr}")).unwrap().basic_auth(user, password);
        client_builder(proxy).redirect(reqwest::redirect::Policy::none()).build().unwrap()
    };
    let (ann, bob) = (as_user(pith.addrs[0], "ann", "pw-a"), as_user(pith.addrs[1], "bob", "pw-b"));
    let (page, token) = control_page(&ann).await;
    assert!(page.contains("as the user <strong>ann</strong>"), "{page}");
    assert_eq!(post(&ann, "/choose", &[("token", &token), ("profile", "pass")], Some("http://pith")).await.status(), 303);
    let url = origin.url("/page");
    assert!(original(&ann, &url).await, "ann's choice");
    assert!(!original(&bob, &url).await, "bob, from the same address, keeps the listener's profile");
    let (theirs, _) = control_page(&bob).await;
    assert!(theirs.contains("as the user <strong>bob</strong>") && !theirs.contains("value=\"pass\" checked"), "{theirs}");
}

#[tokio::test]
async fn choices_outlive_a_reload_and_a_new_state_file_waits_for_a_restart() {
    let origin = cluttered_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let toml = state_config(&dir.path().join("state.redb"));
    let config = pith::config::Config::from_toml_str(&toml, "test.toml", None).unwrap();
    let proxy = pith::net::Proxy::bind(config).await.unwrap();
    let (addr, handle) = (proxy.local_addrs()[0], proxy.handle());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(proxy.run(async move {
        let _ = stopped.await;
    }));
    let me = client_builder(reqwest::Proxy::all(format!("http://{addr}")).unwrap()).redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (_, token) = control_page(&me).await;
    assert_eq!(post(&me, "/choose", &[("token", &token), ("profile", "pass")], None).await.status(), 303);
    let url = origin.url("/page");
    assert!(original(&me, &url).await);

    let same = pith::config::Config::from_toml_str(&toml, "test.toml", None).unwrap();
    assert!(handle.reload(same).unwrap().needs_restart.is_empty());
    assert!(original(&me, &url).await, "the choice outlives the reload");
    let (_, after) = control_page(&me).await;
    assert_eq!(after, token, "and so does the token");

    let moved = pith::config::Config::from_toml_str(&state_config(&dir.path().join("other.redb")), "test.toml", None).unwrap();
    let notes = handle.reload(moved).unwrap().needs_restart;
    assert!(notes.iter().any(|n| n.contains("state.path")), "{notes:?}");
    assert!(original(&me, &url).await, "choices stay in the file in use");
    drop(stop);
}

/// `/once` is no open redirect and changes nothing on a plain GET: without the bar's signature
/// (the same for every client) it only shows a page whose one button posts the choice with
/// the client's token.
#[tokio::test]
async fn once_without_the_bars_signature_asks_and_records_nothing() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let (me, other) = (client_from(&pith, "127.0.0.1"), client_from(&pith, "127.0.0.2"));
    let url = origin.url("/page");
    let mine = bar_link(&me.get(&url).send().await.unwrap().text().await.unwrap(), &url, "pass");
    let theirs = bar_link(&other.get(&url).send().await.unwrap().text().await.unwrap(), &url, "pass");
    assert_eq!(mine, theirs, "the page is the same for every client of its profile");

    let encoded: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
    for query in ["profile=pass&url=http://evil.example/".to_string(), format!("profile=pass&url={encoded}"), format!("profile=pass&url={encoded}&sig=00112233445566778899aabbccddeeff")] {
        let resp = me.get(format!("http://pith/once?{query}")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{query}");
        assert!(resp.headers().get("location").is_none(), "{query}: no redirect");
        let body = resp.text().await.unwrap();
        assert!(body.contains("<form method=\"post\" action=\"/once\">") && body.matches("<button").count() == 1, "{query}: {body}");
    }
    assert!(!original(&me, &url).await, "nothing was noted by those GETs");
    // A signature is for its own URL and profile only.
    let moved = mine.replace(&encoded, "http%3A%2F%2Fevil.example%2F");
    let resp = me.get(&moved).send().await.unwrap();
    assert_eq!((resp.status().as_u16(), resp.headers().get("location").is_none()), (200, true));

    // The button: a POST with the token from pith's own page.
    let (_, token) = control_page(&me).await;
    let resp = post(&me, "/once", &[("token", &token), ("profile", "pass"), ("url", &url)], Some("http://pith")).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()["location"], url.as_str());
    assert!(original(&me, &url).await, "served once as the original");
    let forged = post(&me, "/once", &[("token", "0"), ("profile", "pass"), ("url", "http://evil.example/")], Some("http://pith")).await;
    assert_eq!(forged.status(), 403);
}

/// Under `auth`, one user's devices keep their one-shot choices apart: a `/once` made on one
/// is not spent by the other's next request.
#[tokio::test]
async fn one_shot_choices_belong_to_the_device_under_auth() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("auth = { user = \"reader\", password = \"s3cret\" }").await;
    let device = |from: &str| {
        let proxy = reqwest::Proxy::all(format!("http://{}", pith.addr)).unwrap().basic_auth("reader", "s3cret");
        client_builder(proxy).local_address(from.parse::<IpAddr>().unwrap()).redirect(reqwest::redirect::Policy::none()).build().unwrap()
    };
    let (phone, laptop) = (device("127.0.0.1"), device("127.0.0.2"));
    let url = origin.url("/page");
    let link = bar_link(&phone.get(&url).send().await.unwrap().text().await.unwrap(), &url, "pass");
    assert_eq!(phone.get(&link).send().await.unwrap().status(), 303);
    assert!(!original(&laptop, &url).await, "the other device's request does not spend it");
    assert!(original(&phone, &url).await, "the device that asked gets it");
}

/// Thousands of devices asking `/once` (from 127.0.x.y) fill no table that others need: a new
/// client still saves its choice, a saved choice stays, and `/metrics` counts one-shots
/// within their cap.
#[tokio::test]
async fn a_flood_of_one_shots_locks_no_one_out() {
    let origin = cluttered_origin().await;
    let pith = Pith::start("").await;
    let saver = client_from(&pith, "127.0.0.1");
    let (_, token) = control_page(&saver).await;
    assert_eq!(post(&saver, "/choose", &[("token", &token), ("profile", "pass")], Some("http://pith")).await.status(), 303);
    let url = origin.url("/page");
    let other = client_from(&pith, "127.0.0.2");
    let link = bar_link(&other.get(&url).send().await.unwrap().text().await.unwrap(), &url, "reader");
    let path = link.trim_start_matches("http://pith");
    let request = format!("GET http://pith{path} HTTP/1.1\r\nHost: pith\r\nConnection: close\r\n\r\n");
    let flood = 4200u32;
    for i in 0..flood {
        let from = std::net::Ipv4Addr::new(127, 1 + (i >> 16) as u8, (i >> 8) as u8, i as u8);
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(std::net::SocketAddr::new(from.into(), 0)).unwrap();
        let stream = socket.connect(pith.addr).await.unwrap();
        let mut raw = tokio::io::BufReader::new(stream);
        tokio::io::AsyncWriteExt::write_all(raw.get_mut(), request.as_bytes()).await.unwrap();
        let resp = crate::common::raw::read_response(&mut raw, true).await;
        assert_eq!(resp.status, 303, "device {from}");
    }
    let newcomer = client_from(&pith, "127.0.0.3");
    let (_, token) = control_page(&newcomer).await;
    assert_eq!(post(&newcomer, "/choose", &[("token", &token), ("profile", "pass")], Some("http://pith")).await.status(), 303, "a new client still saves");
    assert!(original(&saver, &url).await && original(&saver, &url).await, "a saved choice is never evicted");
    let metrics = saver.get("http://pith/metrics").send().await.unwrap().text().await.unwrap();
    let value = |name: &str| metrics.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).and_then(|v| v.parse::<u64>().ok()).unwrap_or_else(|| panic!("{name} in {metrics}"));
    assert!(value("pith_once_devices") <= 4096, "{metrics}");
    assert!(value("pith_once_evicted_total") >= u64::from(flood) - 4096, "{metrics}");
    assert_eq!(value("pith_choices_clients"), 2, "{metrics}");
}

#[tokio::test]
async fn the_page_names_the_listeners_address_and_offers_the_default_once() {
    let pith = Pith::start("").await;
    let me = client_from(&pith, "127.0.0.1");
    let (page, _) = control_page(&me).await;
    assert!(page.contains(&format!("This listener's address is <code>{}</code>", pith.addr)), "the address a device sets:\n{page}");
    assert!(page.contains(&format!("<code>http://{}/proxy.pac</code>", pith.addr)), "{page}");
    assert!(!page.contains("use this listener's own address"), "the address is printed, not described:\n{page}");
    // The label's apostrophe is escaped, the sentence's is not.
    let defaults = page.matches("this proxy's default").count() + page.matches("this proxy&#39;s default").count();
    assert_eq!(defaults, 2, "once in the sentence, once among the choices:\n{page}");
    assert!(!page.contains("this proxy&#39;s default (de-cluttered)"), "the default is not offered beside its own profile:\n{page}");
    assert_eq!(page.matches("de-cluttered: without ads").count(), 2, "one radio button and one site-switch option:\n{page}");
    assert!(page.contains("value=\"\" checked> <label for=\"p-0\">de-cluttered: without ads, scripts and clutter (this proxy&#39;s default)</label>"), "{page}");
    assert!(!page.contains("value=\"declutter\" checked"), "{page}");
}
