//! Debian's Squid in front of pith's ICAP service, as docs/squid.md sets
//! it up: Squid fetches, caches and serves; pith rewrites the responses Squid sends it.
//!
//! Each test writes its own `squid.conf` in a temporary folder (logs, pid file and memory
//! cache there, loopback only), starts `squid -N` in the foreground, waits for its port, and
//! kills it by its process id when the test ends. Squid is required: without it these tests
//! fail and say how to install it (`scripts/test.sh` does).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::IcapPith;
use crate::common::{assert_decluttered, client_builder, reply, Origin, CLUTTERED};

/// How long Squid may take to open its port: a ceiling for a broken setup, not a measurement.
const START_GUARD: Duration = Duration::from_secs(30);

/// A running Squid, killed when dropped.
struct Squid {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Drop for Squid {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Squid {
    /// Squid with one optional (`bypass=on`) ICAP service per address in `services`, in one
    /// `adaptation_service_set` when there are several; `extra` is appended to its configuration.
    async fn start(services: &[SocketAddr], extra: &str) -> Squid {
        Squid::launch(services, true, extra).await
    }

    /// The same with essential services (`bypass=off`): a transaction that fails with one
    /// service of the set is retried with the next.
    async fn start_essential(services: &[SocketAddr], extra: &str) -> Squid {
        Squid::launch(services, false, extra).await
    }

    async fn launch(services: &[SocketAddr], bypass: bool, extra: &str) -> Squid {
        let binary = squid_binary();
        let dir = tempfile::tempdir().expect("a temporary folder");
        // Squid started as root runs as the `proxy` user: it must be able to write its logs.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod the Squid folder");
        let port = free_port();
        let conf = squid_conf(dir.path(), port, services, bypass, extra);
        let conf_path = dir.path().join("squid.conf");
        std::fs::write(&conf_path, &conf).expect("write squid.conf");
        let log = std::fs::File::create(dir.path().join("squid.out")).expect("a log file");
        // Squid names its shared-memory segments after its service name (`-n`, "squid" by
        // default): two started at once with the same name collide ("shm_open ... File
        // exists"), so each gets its own, from its port.
        let child = Command::new(&binary)
            .args(["-N", "-n", &format!("pithtest{port}"), "-f"])
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut squid = Squid { child, addr: SocketAddr::from(([127, 0, 0, 1], port)), dir };
        squid.wait_for_port().await;
        squid
    }

    async fn wait_for_port(&mut self) {
        let start = Instant::now();
        loop {
            if tokio::net::TcpStream::connect(self.addr).await.is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("squid exited ({status}) before opening its port:\n{}", self.logs());
            }
            assert!(start.elapsed() < START_GUARD, "squid did not open {} within {} s:\n{}", self.addr, START_GUARD.as_secs(), self.logs());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        format!("--- squid.out\n{}\n--- cache.log\n{}", read("squid.out"), read("cache.log"))
    }

    fn client(&self) -> reqwest::Client {
        client_builder(reqwest::Proxy::all(format!("http://{}", self.addr)).expect("a proxy URL")).build().expect("a client")
    }
}

/// Where Debian installs Squid; the tests fail, saying so, when it is not there.
fn squid_binary() -> PathBuf {
    ["/usr/sbin/squid", "/usr/bin/squid"].iter().map(PathBuf::from).find(|p| p.exists()).unwrap_or_else(|| {
        panic!("the ICAP tests with Squid need Debian's squid: `apt-get install squid` (scripts/test.sh installs it when missing)")
    })
}

/// A loopback port free a moment ago (Squid cannot report a port 0 it picked).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

fn squid_conf(dir: &Path, port: u16, services: &[SocketAddr], bypass: bool, extra: &str) -> String {
    let d = dir.display();
    let mut icap = String::new();
    for (i, addr) in services.iter().enumerate() {
        let bypass = if bypass { "on" } else { "off" };
        icap.push_str(&format!("icap_service pith{i} respmod_precache bypass={bypass} icap://{addr}/respmod\n"));
    }
    if services.len() > 1 {
        let names: Vec<String> = (0..services.len()).map(|i| format!("pith{i}")).collect();
        icap.push_str(&format!("adaptation_service_set pith_set {}\nadaptation_access pith_set allow all\n", names.join(" ")));
    } else {
        icap.push_str("adaptation_access pith0 allow all\n");
    }
    format!(
        "http_port 127.0.0.1:{port}
acl localnet src 127.0.0.0/8
http_access allow localnet
http_access deny all
cache_mem 32 MB
maximum_object_size_in_memory 4 MB
cache_log {d}/cache.log
access_log stdio:{d}/access.log
cache_store_log none
pid_filename {d}/squid.pid
coredump_dir {d}
shutdown_lifetime 0 seconds
pinger_enable off
icap_enable on
{icap}{extra}"
    )
}

/// An origin with a cacheable cluttered page, a binary without an extension (previewed, so
/// pith answers 204) and an image pith is never asked about (`Transfer-Ignore`).
async fn origin() -> (crate::common::RunningOrigin, Vec<u8>) {
    let blob: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (b1, b2) = (blob.clone(), blob.clone());
    let origin = Origin::new()
        .route("/page", |_| reply(&[("content-type", "text/html"), ("cache-control", "max-age=600")], CLUTTERED))
        .route("/blob", move |_| reply(&[("content-type", "application/octet-stream"), ("cache-control", "max-age=600")], b1.clone()))
        .route("/photo.png", move |_| reply(&[("content-type", "image/png")], b2.clone()))
        .run()
        .await;
    (origin, blob)
}

#[tokio::test]
async fn a_page_through_squid_comes_back_decluttered_and_is_served_again_from_squid() {
    let pith = IcapPith::start("", "").await;
    let squid = Squid::start(&pith.icap, "").await;
    let (origin, _) = origin().await;
    let client = squid.client();
    let first = client.get(origin.url("/page")).send().await.expect("a response through squid");
    assert_eq!(first.status(), 200, "{}", squid.logs());
    assert!(first.headers().get("x-pith").is_some_and(|v| v.to_str().unwrap_or("").contains("profile=declutter")), "{:?}", first.headers());
    let html = first.text().await.expect("a body");
    assert_decluttered(&html);
    let asked = pith.respmods();
    assert_eq!((asked, origin.count("/page")), (1, 1));
    // Squid kept the adapted page: neither pith nor the origin is asked again.
    let again = client.get(origin.url("/page")).send().await.expect("a second response");
    assert_eq!(again.status(), 200);
    assert!(again.headers().get("x-cache").is_some_and(|v| v.to_str().unwrap_or("").starts_with("HIT")), "{:?}", again.headers());
    assert_eq!(again.text().await.expect("a body"), html, "the kept page is the adapted one");
    assert_eq!((pith.respmods(), origin.count("/page")), (asked, 1), "served from Squid's cache without pith");
}

#[tokio::test]
async fn a_long_page_through_squid_comes_back_decluttered() {
    let pith = IcapPith::start("", "").await;
    let squid = Squid::start(&pith.icap, "").await;
    // Past Squid's 64 KiB buffer: pith must answer before it has the page whole.
    let page = super::long_page(300);
    let origin = Origin::new().route("/long", move |_| reply(&[("content-type", "text/html")], page.clone())).run().await;
    let resp = squid.client().get(origin.url("/long")).send().await.expect("a response through squid");
    assert_eq!(resp.status(), 200, "{}", squid.logs());
    let html = resp.text().await.expect("a whole body");
    assert!(html.matches("Long text stays.").count() == 300 * 60, "every paragraph kept");
    assert_decluttered(&html);
    assert_eq!(pith.counters.rewritten.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[tokio::test]
async fn binaries_through_squid_are_byte_identical() {
    let pith = IcapPith::start("", "").await;
    let squid = Squid::start(&pith.icap, "").await;
    let (origin, blob) = origin().await;
    let client = squid.client();
    for path in ["/blob", "/photo.png"] {
        let resp = client.get(origin.url(path)).send().await.expect("a response through squid");
        assert_eq!(resp.status(), 200, "{path}");
        assert!(resp.headers().get("x-pith").is_none(), "{path}: pith rewrote nothing");
        assert!(resp.bytes().await.expect("a body") == blob, "{path}: byte-identical");
    }
    // The binary without an extension was previewed and answered 204; the .png never sent.
    assert_eq!(pith.respmods(), 1, "{}", squid.logs());
    assert_eq!(pith.counters.rewritten.load(std::sync::atomic::Ordering::Relaxed), 0);
}

#[tokio::test]
async fn one_of_two_pith_services_killed_mid_run_fails_no_request() {
    let limits = "[limits]\ndrain_timeout_ms = 0\n";
    let (mut a, b) = (IcapPith::start("", limits).await, IcapPith::start("", limits).await);
    let services = [a.icap[0], b.icap[0]];
    let squid = Squid::start(&services, "icap_service_failure_limit 1\n").await;
    let (origin, _) = origin().await;
    let client = squid.client();
    const REQUESTS: usize = 40;
    const KILL_AT: usize = 10;
    let mut after_kill = None;
    for i in 0..REQUESTS {
        if i == KILL_AT {
            a.kill();
            after_kill = Some(b.respmods());
        }
        // A new URL each time, so Squid asks an ICAP service each time.
        let resp = client.get(origin.url(&format!("/page?n={i}"))).send().await.unwrap_or_else(|e| panic!("request {i} failed: {e}\n{}", squid.logs()));
        assert_eq!(resp.status(), 200, "request {i}");
        let html = resp.text().await.unwrap_or_else(|e| panic!("request {i}: the body failed: {e}"));
        assert!(html.contains("First paragraph stays."), "request {i}: {html}");
    }
    let before = after_kill.expect("the kill happened");
    assert!(a.respmods() >= 1, "the first service served before it was killed");
    assert!(b.respmods() > before, "the second service took over: {} RESPMODs after the kill\n{}", b.respmods() - before, squid.logs());
}

/// docs/squid.md's failover, with pith as an operator runs it: two `pith serve` processes in one
/// `adaptation_service_set` of essential services, the first killed with SIGKILL mid-run (its
/// connections with Squid die with it). Every request gets a de-cluttered page: the transaction
/// that met the dead service is retried with the other one. (With optional services, the set
/// docs/squid.md shows first, that one request would be served as the origin sent it: Squid
/// bypasses a failed optional transaction instead of retrying it.)
#[tokio::test]
async fn one_of_two_pith_processes_killed_mid_run_fails_no_request() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let config = dir.path().join("pith.toml");
    std::fs::write(&config, "[[listener]]\naddress = \"127.0.0.1:0\"\n\n[[icap]]\naddress = \"127.0.0.1:0\"\nprofile = \"declutter\"\n\n[limits]\ndrain_timeout_ms = 0\n").expect("write the config");
    let icap_of = |served: &mut crate::common::binary::Served| -> SocketAddr {
        let line = served.wait_for("ICAP service on icap://");
        let rest = line.split("icap://").nth(1).expect("an address");
        rest.split('/').next().and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("an ICAP address in {line:?}"))
    };
    let mut a = crate::common::binary::Served::start(&config, &[]);
    let mut b = crate::common::binary::Served::start(&config, &[]);
    let services = [icap_of(&mut a), icap_of(&mut b)];
    let squid = Squid::start_essential(&services, "icap_service_failure_limit 1\n").await;
    let (origin, _) = origin().await;
    let client = squid.client();
    const REQUESTS: usize = 40;
    const KILL_AT: usize = 10;
    let mut a = Some(a);
    for i in 0..REQUESTS {
        if i == KILL_AT {
            drop(a.take()); // SIGKILL, then reaped
        }
        let resp = client.get(origin.url(&format!("/page?n={i}"))).send().await.unwrap_or_else(|e| panic!("request {i} failed: {e}\n{}", squid.logs()));
        assert_eq!(resp.status(), 200, "request {i}\n{}", squid.logs());
        assert!(resp.headers().get("x-pith").is_some(), "request {i} was not adapted (bypassed): {:?}\n{}", resp.headers(), squid.logs());
        assert_decluttered(&resp.text().await.unwrap_or_else(|e| panic!("request {i}: the body failed: {e}")));
    }
    assert_eq!(origin.count("/page"), REQUESTS, "every request reached the origin once");
    drop(b);
}
