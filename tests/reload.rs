//! Config reload: a new configuration is in force for the next request, a request already
//! running finishes with the one it started with, no connection is dropped, the cache never
//! serves a page rewritten under the old profile, and a file that does not validate changes
//! nothing. Driven through the library's handle, and through the real binary with SIGHUP.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use pith::config::Config;
use pith::net::{Proxy, ProxyHandle};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::common::raw::{read_head, request, GUARD};
use crate::common::*;

/// A proxy run with its handle: reload it, count its connections, shut it down and wait.
pub struct Running {
    pub addr: SocketAddr,
    pub handle: ProxyHandle,
    stop: Option<oneshot::Sender<()>>,
    done: JoinHandle<()>,
}

impl Running {
    /// A proxy running exactly `toml`.
    pub async fn start(toml: &str) -> Running {
        let proxy = Proxy::bind(config(toml)).await.expect("the proxy binds 127.0.0.1:0");
        let (addr, handle) = (proxy.local_addrs()[0], proxy.handle());
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(proxy.run(async move {
            let _ = stopped.await;
        }));
        Running { addr, handle, stop: Some(stop), done }
    }

    /// Starts shutting down; the returned task ends when the proxy has finished draining.
    pub fn shut_down(mut self) -> JoinHandle<()> {
        drop(self.stop.take());
        self.done
    }
}

/// A validated test config.
pub fn config(toml: &str) -> Config {
    Config::from_toml_str(toml, "test.toml", None).unwrap_or_else(|e| panic!("test config rejected: {e}\n{toml}"))
}

fn listener(extra: &str) -> String {
    format!("[[listener]]\naddress = \"127.0.0.1:0\"\n{extra}\n")
}

/// An origin serving [`CLUTTERED`] at every path, for ten minutes fresh.
async fn page_origin() -> RunningOrigin {
    Origin::new().route("/", |_| reply(&[("content-type", "text/html; charset=utf-8"), ("cache-control", "max-age=600")], CLUTTERED)).run().await
}

#[tokio::test]
async fn a_changed_profile_applies_at_once_and_the_cache_does_not_serve_the_old_rewrite() {
    let origin = page_origin().await;
    let profile = |output: &str| format!("[profiles.mine]\nrules = \"declutter\"\noutput = \"{output}\"\npreset = \"none\"\n");
    let pith = Running::start(&format!("{}{}", listener("profile = \"mine\""), profile("html"))).await;
    let client = client_builder(reqwest::Proxy::all(format!("http://{}", pith.addr)).unwrap()).build().unwrap();
    let get = || async {
        let resp = client.get(origin.url("/")).send().await.expect("a response");
        let head = |n: &str| resp.headers().get(n).map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let (kind, cache) = (head("content-type"), head("x-cache"));
        (kind, cache, resp.text().await.unwrap())
    };
    let (kind, cache, body) = get().await;
    assert_eq!((kind.as_str(), cache.as_str()), ("text/html; charset=utf-8", "MISS"));
    assert_decluttered(&body);
    assert_eq!(get().await.1, "HIT", "kept while the profile is the same");

    // Same profile name, other output: the kept page was rewritten by the old profile.
    let reloaded = pith.handle.reload(config(&format!("{}{}", listener("profile = \"mine\""), profile("text")))).expect("a valid config");
    assert!(reloaded.needs_restart.is_empty(), "{reloaded:?}");
    let (kind, cache, body) = get().await;
    assert!(kind.starts_with("text/plain"), "the new profile's output, not the kept HTML page: {kind}");
    assert_eq!(cache, "MISS");
    assert!(body.contains("First paragraph stays.") && !body.contains("<p"), "{body}");
    assert_eq!(origin.received().len(), 2, "fetched again after the reload, once");
}

#[tokio::test]
async fn a_changed_allow_list_applies_to_the_next_request() {
    let origin = page_origin().await;
    let pith = Running::start(&listener("profile = \"pass\"\nallow = [\"127.0.0.1\"]")).await;
    let client = client_builder(reqwest::Proxy::all(format!("http://{}", pith.addr)).unwrap()).build().unwrap();
    assert_eq!(client.get(origin.url("/")).send().await.unwrap().status(), 200);

    pith.handle.reload(config(&listener("profile = \"pass\"\nallow = [\"10.0.0.0/8\"]"))).unwrap();
    // reqwest keeps its connection alive: the refusal comes on the connection already open.
    assert_eq!(client.get(origin.url("/")).send().await.unwrap().status(), 403);
    assert_eq!(origin.received().len(), 1, "the refused request never reached the origin");

    pith.handle.reload(config(&listener("profile = \"pass\""))).unwrap();
    assert_eq!(client.get(origin.url("/")).send().await.unwrap().status(), 200, "the default allow list is loopback");
}

#[tokio::test]
async fn a_keep_alive_connection_and_a_request_in_flight_live_through_a_reload() {
    let (reached, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (r, l) = (reached.clone(), release.clone());
    let origin = RawOrigin::start(move |stream| {
        let (reached, release) = (r.clone(), l.clone());
        async move {
            let mut reader = BufReader::new(stream);
            let head = read_head(&mut reader).await;
            if head.starts_with("GET /slow") {
                reached.notify_one();
                release.notified().await;
            }
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", CLUTTERED.len());
            let stream = reader.get_mut();
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(CLUTTERED.as_bytes()).await;
        }
    })
    .await;
    let pith = Running::start(&format!("{}[cache]\nenabled = false\n", listener("profile = \"declutter\""))).await;
    let mut client = RawClient::connect(pith.addr).await;

    client.send(&request("GET", &origin.url("/slow"), "")).await;
    tokio::time::timeout(GUARD, reached.notified()).await.expect("the request reaches the origin");
    let reloaded = pith.handle.reload(config(&format!("{}[cache]\nenabled = false\n", listener("profile = \"text\"")))).unwrap();
    assert!(reloaded.needs_restart.is_empty());
    release.notify_one();
    let first = client.read_response(false).await;
    assert_eq!(first.status, 200);
    assert!(first.header("x-pith").is_some_and(|v| v.contains("profile=declutter")), "the request in flight keeps its config: {:?}", first.headers);
    assert_decluttered(&first.text());

    // The same connection, still open, serves the next request with the new config.
    client.send(&request("GET", &origin.url("/fast"), "")).await;
    let second = client.read_response(false).await;
    assert_eq!(second.status, 200);
    assert!(second.header("x-pith").is_some_and(|v| v.contains("profile=text")), "{:?}", second.headers);
    assert!(second.header("content-type").is_some_and(|v| v.starts_with("text/plain")));
    assert_eq!(pith.handle.open_connections(), 1, "one client connection throughout");
}

#[tokio::test]
async fn a_moved_listener_is_reported_and_keeps_serving_where_it_is() {
    let origin = page_origin().await;
    let pith = Running::start(&listener("profile = \"pass\"")).await;
    let (_holder, elsewhere) = closed_port();
    let moved = format!("[[listener]]\naddress = \"{elsewhere}\"\nprofile = \"pass\"\nallow = [\"10.0.0.0/8\"]\n");
    let reloaded = pith.handle.reload(config(&moved)).unwrap();
    assert_eq!(reloaded.needs_restart.len(), 1, "{reloaded:?}");
    assert!(reloaded.needs_restart[0].contains(&elsewhere.to_string()) && reloaded.needs_restart[0].contains("restart"), "{reloaded:?}");
    // Still on the bound address, with the listener's other new settings in force.
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!(resp.status, 403, "the new allow list applies to the listener that stayed");
    assert_eq!(pith.handle.config().listeners[0].address, elsewhere, "the config in force is the new one");
}

/// The real binary, serving a config file; killed when dropped.
struct Binary {
    child: Child,
    addr: SocketAddr,
    stderr: mpsc::UnboundedReceiver<String>,
}

impl Binary {
    fn spawn(args: &[&str]) -> Binary {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pith"))
            .args(args)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the pith binary starts");
        let (tx, stderr) = mpsc::unbounded_channel();
        let pipe = child.stderr.take().expect("stderr is piped");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Binary { child, addr: SocketAddr::from(([0, 0, 0, 0], 0)), stderr }
    }

    /// Starts `pith serve --config FILE` and waits until it listens.
    async fn serve(file: &Path) -> Binary {
        Binary::serve_with(&["serve", "--config", file.to_str().expect("a UTF-8 path")]).await
    }

    async fn serve_with(args: &[&str]) -> Binary {
        let mut bin = Binary::spawn(args);
        let line = bin.line_containing("pith: proxy on http://").await;
        let addr = line.split("http://").nth(1).and_then(|rest| rest.split('/').next()).expect("an address");
        bin.addr = addr.parse().expect("a socket address");
        bin
    }

    /// Waits for a line of the log containing `needle`; returns it.
    async fn line_containing(&mut self, needle: &str) -> String {
        let wait = async {
            while let Some(line) = self.stderr.recv().await {
                if line.contains(needle) {
                    return line;
                }
            }
            panic!("pith exited before logging {needle:?}");
        };
        tokio::time::timeout(GUARD, wait).await.unwrap_or_else(|_| panic!("no log line with {needle:?}"))
    }

    fn hang_up(&self) {
        let status = Command::new("kill").args(["-HUP", &self.child.id().to_string()]).status().expect("kill runs");
        assert!(status.success(), "kill -HUP failed");
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const BINARY_CONFIG: &str = "[log]\nlevel = \"info\"\n[cache]\nenabled = false\n[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n";

#[tokio::test]
async fn the_binary_reloads_its_file_on_sighup_without_dropping_a_connection() {
    let origin = page_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.toml");
    std::fs::write(&file, format!("{BINARY_CONFIG}allow = [\"127.0.0.1\"]\n")).unwrap();
    let mut pith = Binary::serve(&file).await;
    let mut client = RawClient::connect(pith.addr).await;
    client.send(&request("GET", &origin.url("/"), "")).await;
    let before = client.read_response(false).await;
    assert_eq!((before.status, before.text()), (200, CLUTTERED.to_string()), "pass: untouched");

    std::fs::write(&file, format!("{BINARY_CONFIG}allow = [\"10.0.0.0/8\"]\n")).unwrap();
    pith.hang_up();
    pith.line_containing("configuration reloaded").await;
    client.send(&request("GET", &origin.url("/"), "")).await;
    let after = client.read_response(false).await;
    assert_eq!(after.status, 403, "the new allow list, on the connection opened before the reload");
    assert_eq!(origin.received().len(), 1);
}

#[tokio::test]
async fn the_binary_keeps_its_config_when_the_new_file_is_bad() {
    let origin = page_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.toml");
    std::fs::write(&file, BINARY_CONFIG).unwrap();
    let mut pith = Binary::serve(&file).await;

    // Line 9: a key that does not exist, after a change (line 8) that must not take effect.
    std::fs::write(&file, format!("{BINARY_CONFIG}allow = [\"10.0.0.0/8\"]\nmax_conections = 5\n")).unwrap();
    pith.hang_up();
    let rejected = pith.line_containing("config reload rejected").await;
    assert!(rejected.contains("proxy.toml:9:") && rejected.contains("listener.max_conections"), "file:line:key named: {rejected}");
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!(resp.status, 200, "the running config (loopback allowed) stays in force");

    // The process still reloads once the file is fixed.
    std::fs::write(&file, format!("{BINARY_CONFIG}allow = [\"10.0.0.0/8\"]\n")).unwrap();
    pith.hang_up();
    pith.line_containing("configuration reloaded").await;
    assert_eq!(exchange(pith.addr, &request("GET", &origin.url("/"), "")).await.status, 403);
}

#[tokio::test]
async fn a_reload_that_would_open_the_listen_address_is_rejected() {
    let origin = page_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.toml");
    // The origin is on loopback, which a listener off loopback refuses unless told otherwise.
    std::fs::write(&file, format!("{BINARY_CONFIG}allow = [\"10.0.0.0/8\", \"127.0.0.1\"]\ndeny_private = false\n")).unwrap();
    let mut pith = Binary::serve_with(&["serve", "--config", file.to_str().unwrap(), "--listen", "0.0.0.0:0"]).await;
    assert!(pith.addr.ip().is_unspecified(), "--listen in force: {}", pith.addr);
    let local = SocketAddr::from(([127, 0, 0, 1], pith.addr.port()));

    // Harmless on the file's loopback address, an open proxy on the address --listen bound.
    std::fs::write(&file, format!("{BINARY_CONFIG}allow = [\"0.0.0.0/0\", \"::/0\"]\ndeny_private = false\n")).unwrap();
    pith.hang_up();
    let rejected = pith.line_containing("config reload rejected").await;
    assert!(rejected.contains("proxy.toml:8:") && rejected.contains("(from --listen)") && rejected.contains("open proxy"), "{rejected}");
    assert_eq!(exchange(local, &request("GET", &origin.url("/"), "")).await.status, 200, "the running config stays");
}

#[tokio::test]
async fn the_binary_on_its_built_in_config_says_sighup_changes_nothing() {
    let origin = page_origin().await;
    let mut pith = Binary::serve_with(&["serve", "--listen", "127.0.0.1:0"]).await;
    pith.hang_up();
    pith.line_containing("nothing to reload").await;
    let resp = exchange(pith.addr, &request("GET", &origin.url("/"), "")).await;
    assert_eq!(resp.status, 200, "still serving after the SIGHUP");
}

/// Requests in flight while many reloads land all complete, each whole.
#[tokio::test]
async fn requests_racing_reloads_are_all_served_whole() {
    let origin = page_origin().await;
    let pith = Running::start(&format!("{}[cache]\nenabled = false\n", listener("profile = \"declutter\""))).await;
    let failures = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (url, addr, failures) = (origin.url("/"), pith.addr, failures.clone());
        clients.push(tokio::spawn(async move {
            let mut client = RawClient::connect(addr).await;
            for _ in 0..10 {
                client.send(&request("GET", &url, "")).await;
                let resp = client.read_response(false).await;
                let profile = resp.header("x-pith").unwrap_or_default().to_string();
                let whole = resp.text().contains("First paragraph stays.");
                if resp.status != 200 || !whole || !(profile.contains("profile=declutter") || profile.contains("profile=text")) {
                    failures.lock().unwrap().push(format!("{} {profile}", resp.status));
                }
            }
        }));
    }
    for i in 0..10 {
        let profile = if i % 2 == 0 { "text" } else { "declutter" };
        pith.handle.reload(config(&format!("{}[cache]\nenabled = false\n", listener(&format!("profile = \"{profile}\""))))).unwrap();
        tokio::task::yield_now().await;
    }
    for c in clients {
        c.await.expect("a client task");
    }
    assert!(failures.lock().unwrap().is_empty(), "{:?}", failures.lock().unwrap());
}
