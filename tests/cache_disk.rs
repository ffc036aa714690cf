//! The cache's disk tier (`cache.disk_dir`): entries outlive a restart, stale ones are
//! revalidated after it, a `kill -9` in the middle of fills never leaves an entry that serves
//! other bytes than the origin's, a torn or flipped file is fetched again, the folder stays
//! within `cache.disk_max_bytes`, and a folder that cannot be used leaves the cache in memory.
//!
//! Writes to disk happen in the background; a test that restarts waits for them by reading
//! `pith_cache_disk_writes_total`, in a loop bounded in time.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, StatusCode};
use tokio::sync::Semaphore;

use crate::common::binary::Served;
use crate::common::got::metric;
use crate::common::origin::{Body, Received};
use crate::common::{client_builder, read_body, reply, Origin, Pith, RunningOrigin, CLUTTERED};

/// How long a test waits for background writes before it fails.
const WRITES_GUARD: Duration = Duration::from_secs(20);

/// Bytes that differ from one URL to the next and along the body: a stored body of another
/// URL, or cut short, or shifted, never equals it.
fn body_of(i: usize, len: usize) -> Bytes {
    let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    Bytes::from((0..len).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    }).collect::<Vec<u8>>())
}

fn blob(i: usize, len: usize, cache_control: &'static str) -> impl Fn(&Received) -> http::Response<Body> + Send + Sync + 'static {
    let bytes = body_of(i, len);
    move |_| reply(&[("content-type", "application/octet-stream"), ("cache-control", cache_control)], bytes.clone())
}

/// A proxy config with a disk tier in `dir`; `cache` adds keys to `[cache]`.
fn with_disk(dir: &Path, cache: &str) -> String {
    format!("[cache]\ndisk_dir = \"{}\"\n{cache}\n", dir.display())
}

/// Waits until pith says it has written at least `n` entries to disk.
async fn wait_for_writes(client: &reqwest::Client, n: u64) {
    let deadline = Instant::now() + WRITES_GUARD;
    loop {
        let written = metric(client, "pith_cache_disk_writes_total").await;
        if written >= n {
            return;
        }
        assert!(Instant::now() < deadline, "{written} of {n} entries written to disk in {WRITES_GUARD:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn get(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> (u16, Option<String>, Vec<u8>) {
    let mut req = client.request(Method::GET, url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let mut resp = req.send().await.expect("the proxy answers");
    let status = resp.status().as_u16();
    let x_cache = resp.headers().get("x-cache").map(|v| v.to_str().expect("ASCII").to_string());
    let body = read_body(&mut resp).await.expect("a whole body");
    (status, x_cache, body)
}

/// The entry files under a disk folder.
fn entry_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for shard in std::fs::read_dir(dir.join("entries-v3")).expect("the entries folder") {
        for file in std::fs::read_dir(shard.expect("a shard").path()).expect("a shard folder") {
            files.push(file.expect("a file").path());
        }
    }
    files.sort();
    files
}

/// Fresh entries, a rewritten page among them, are served from disk after a restart: the
/// origin is not asked again, and the bodies are the ones served before.
#[tokio::test]
async fn fresh_entries_survive_a_restart_without_asking_the_origin() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut origin = Origin::new().route("/page", |_| reply(&[("content-type", "text/html"), ("cache-control", "max-age=600")], CLUTTERED));
    for i in 0..20 {
        origin = origin.route(&format!("/b{i}"), blob(i, 20 * 1024, "max-age=600"));
    }
    let origin = origin.run().await;
    let urls: Vec<String> = std::iter::once(origin.url("/page")).chain((0..20).map(|i| origin.url(&format!("/b{i}")))).collect();

    let first = Pith::start(&with_disk(dir.path(), "")).await;
    let client = first.client();
    let mut bodies = Vec::new();
    for url in &urls {
        let (status, x_cache, body) = get(&client, url, &[]).await;
        assert_eq!((status, x_cache.as_deref()), (200, Some("MISS")), "{url}");
        bodies.push(body);
    }
    wait_for_writes(&client, urls.len() as u64).await;
    first.stop();
    let asked = origin.received().len();

    let second = Pith::start(&with_disk(dir.path(), "")).await;
    let client = second.client();
    for (url, before) in urls.iter().zip(&bodies) {
        let (status, x_cache, body) = get(&client, url, &[]).await;
        assert_eq!((status, x_cache.as_deref()), (200, Some("HIT")), "{url}");
        assert!(body == *before, "{url}: the body served before the restart");
    }
    assert_eq!(origin.received().len(), asked, "no request reaches the origin after the restart");
    assert_eq!(metric(&client, "pith_cache_disk_hits_total").await, urls.len() as u64);
    assert_eq!(metric(&client, "pith_cache_disk_entries").await, urls.len() as u64);
}

/// An unsafe request that succeeds invalidates the URL's entries (RFC 9111 §4.4) on disk too:
/// after a restart, whose memory holds no mark of it, the origin is asked again, in every
/// profile; another URL's entry is still served from disk.
#[tokio::test]
async fn an_invalidated_url_is_not_served_from_disk_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let origin = Origin::new()
        .route("/page", |r: &Received| match r.method {
            Method::GET => reply(&[("content-type", "text/html"), ("cache-control", "max-age=600")], CLUTTERED),
            _ => {
                let mut resp = reply(&[], "");
                *resp.status_mut() = StatusCode::NO_CONTENT;
                resp
            }
        })
        .route("/other", blob(3, 10_000, "max-age=600"))
        .run()
        .await;
    let first = Pith::start(&with_disk(dir.path(), "")).await;
    let client = first.client();
    assert_eq!(get(&client, &origin.url("/other"), &[]).await.1.as_deref(), Some("MISS"));
    // The page in two encoding classes: two entries of one URL.
    for coding in ["gzip", "br"] {
        assert_eq!(get(&client, &origin.url("/page"), &[("accept-encoding", coding)]).await.1.as_deref(), Some("MISS"), "{coding}");
    }
    wait_for_writes(&client, 3).await;
    assert_eq!(entry_files(dir.path()).len(), 3);
    let posted = client.post(origin.url("/page")).body("x=1").send().await.expect("the proxy answers");
    assert_eq!(posted.status(), 204);
    let deadline = Instant::now() + WRITES_GUARD;
    while entry_files(dir.path()).len() > 1 {
        assert!(Instant::now() < deadline, "the page's files were not removed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.stop();

    let second = Pith::start(&with_disk(dir.path(), "")).await;
    let client = second.client();
    for coding in ["gzip", "br"] {
        assert_eq!(get(&client, &origin.url("/page"), &[("accept-encoding", coding)]).await.1.as_deref(), Some("MISS"), "the invalidated page is fetched again ({coding})");
    }
    assert_eq!(get(&client, &origin.url("/other"), &[]).await.1.as_deref(), Some("HIT"), "another URL's entry stays");
}

/// A stale entry read back from disk is revalidated with its validators, and the origin's 304
/// serves the kept body (RFC 9111 §4.3).
#[tokio::test]
async fn stale_entries_revalidate_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let bytes = body_of(7, 30_000);
    let kept = bytes.clone();
    let origin = Origin::new()
        .route("/stale", move |req| {
            if req.header("if-none-match").as_deref() == Some("\"v1\"") {
                let mut resp = reply(&[("etag", "\"v1\""), ("cache-control", "max-age=0")], "");
                *resp.status_mut() = StatusCode::NOT_MODIFIED;
                return resp;
            }
            reply(&[("content-type", "application/octet-stream"), ("etag", "\"v1\""), ("cache-control", "max-age=0")], kept.clone())
        })
        .run()
        .await;
    let url = origin.url("/stale");
    let first = Pith::start(&with_disk(dir.path(), "")).await;
    let client = first.client();
    assert_eq!(get(&client, &url, &[]).await.1.as_deref(), Some("MISS"));
    wait_for_writes(&client, 1).await;
    first.stop();

    let second = Pith::start(&with_disk(dir.path(), "")).await;
    let client = second.client();
    let (status, x_cache, body) = get(&client, &url, &[]).await;
    assert_eq!((status, x_cache.as_deref()), (200, Some("REVALIDATED")));
    assert!(body == bytes, "the kept body");
    assert_eq!(origin.last().header("if-none-match").as_deref(), Some("\"v1\""), "asked with the kept validator");
    assert_eq!(origin.count("/stale"), 2);
    assert_eq!(metric(&client, "pith_cache_revalidations_total").await, 1);
}

/// A file truncated or with a flipped byte is never served: it is dropped (counted as a disk
/// error) and the response is fetched again, whole and right.
#[tokio::test]
async fn a_torn_or_flipped_file_is_fetched_again_not_served() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let origin = Origin::new().route("/a", blob(1, 40_000, "max-age=600")).route("/b", blob(2, 40_000, "max-age=600")).run().await;
    let first = Pith::start(&with_disk(dir.path(), "")).await;
    let client = first.client();
    for path in ["/a", "/b"] {
        get(&client, &origin.url(path), &[]).await;
    }
    wait_for_writes(&client, 2).await;
    first.stop();
    let files = entry_files(dir.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let mut flipped = std::fs::read(&files[0]).expect("an entry file");
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    std::fs::write(&files[0], flipped).expect("rewrite it");
    let torn = std::fs::read(&files[1]).expect("an entry file");
    std::fs::write(&files[1], &torn[..torn.len() - 1000]).expect("cut it short");

    let second = Pith::start(&with_disk(dir.path(), "")).await;
    let client = second.client();
    for (i, path) in [(1, "/a"), (2, "/b")] {
        let (status, x_cache, body) = get(&client, &origin.url(path), &[]).await;
        assert_eq!((status, x_cache.as_deref()), (200, Some("MISS")), "{path}");
        assert!(body == body_of(i, 40_000), "{path}: the origin's bytes");
        assert_eq!(origin.count(path), 2, "{path}: fetched again");
    }
    assert_eq!(metric(&client, "pith_cache_disk_errors_total").await, 2);
    assert_eq!(metric(&client, "pith_cache_disk_hits_total").await, 0);
}

/// The folder stays within `cache.disk_max_bytes`: the least recently used entries go, and
/// the newest are kept.
#[tokio::test]
async fn the_disk_bound_holds() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut origin = Origin::new();
    for i in 0..30 {
        origin = origin.route(&format!("/b{i}"), blob(i, 20 * 1024, "max-age=600"));
    }
    let origin = origin.run().await;
    let bound = 200 * 1024;
    let pith = Pith::start(&with_disk(dir.path(), &format!("max_entry_bytes = 65536\ndisk_max_bytes = {bound}"))).await;
    let client = pith.client();
    for i in 0..30 {
        get(&client, &origin.url(&format!("/b{i}")), &[]).await;
    }
    wait_for_writes(&client, 30).await;
    let on_disk: u64 = entry_files(dir.path()).iter().map(|f| std::fs::metadata(f).expect("a file").len()).sum();
    assert!(on_disk <= bound, "{on_disk} bytes on disk, bound {bound}");
    assert!(on_disk > bound / 2, "{on_disk} bytes: the bound is used, not emptied");
    assert_eq!(metric(&client, "pith_cache_disk_bytes").await, on_disk);
    assert!(metric(&client, "pith_cache_disk_evictions_total").await >= 20);
    pith.stop();
    // The newest entry is on disk: served after a restart without the origin.
    let again = Pith::start(&with_disk(dir.path(), &format!("max_entry_bytes = 65536\ndisk_max_bytes = {bound}"))).await;
    let (_, x_cache, body) = get(&again.client(), &origin.url("/b29"), &[]).await;
    assert_eq!(x_cache.as_deref(), Some("HIT"));
    assert!(body == body_of(29, 20 * 1024));
}

/// A folder that cannot be created is reported, and the cache runs in memory.
#[tokio::test]
async fn an_unusable_folder_leaves_the_cache_in_memory() {
    let origin = Origin::new().route("/a", blob(1, 1000, "max-age=600")).run().await;
    let pith = Pith::start("[cache]\ndisk_dir = \"/dev/null/cache\"\n").await;
    let client = pith.client();
    assert_eq!(get(&client, &origin.url("/a"), &[]).await.1.as_deref(), Some("MISS"));
    assert_eq!(get(&client, &origin.url("/a"), &[]).await.1.as_deref(), Some("HIT"));
    assert_eq!(metric(&client, "pith_cache_disk_enabled").await, 0);
}

/// How many distinct URLs the `kill -9` test fills, and their sizes.
const KILL_URLS: usize = 120;

fn kill_len(i: usize) -> usize {
    64 * 1024 + (i * 7919) % (700 * 1024)
}

async fn kill_origin() -> RunningOrigin {
    let mut origin = Origin::new();
    for i in 0..KILL_URLS {
        origin = origin.route(&format!("/k{i}"), blob(i, kill_len(i), "max-age=3600"));
    }
    origin.run().await
}

/// The real binary, killed with SIGKILL while it fills the cache from many concurrent
/// downloads: after a restart every URL is served with exactly the origin's bytes, whether from
/// disk or fetched again, and some are served from disk.
#[tokio::test]
async fn kill_9_mid_fill_never_serves_a_torn_or_mismatched_entry() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let config = dir.path().join("proxy.toml");
    let cache = dir.path().join("cache");
    std::fs::write(&config, format!("[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n[cache]\nmax_bytes = 268435456\ndisk_dir = \"{}\"\n", cache.display())).expect("write the config");
    let origin = kill_origin().await;
    let urls: Vec<String> = (0..KILL_URLS).map(|i| origin.url(&format!("/k{i}"))).collect();

    let served = Served::start(&config, &[]);
    let proxy = reqwest::Proxy::all(format!("http://{}", served.addrs[0])).expect("a proxy URL");
    let client = client_builder(proxy).build().expect("a client");
    // Fills 16 at a time; the process is killed once a third of them have been answered, with
    // the rest downloading and their files being written.
    let permits = Arc::new(Semaphore::new(16));
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut fills = Vec::new();
    for url in urls.clone() {
        let (client, permits, done) = (client.clone(), permits.clone(), done_tx.clone());
        fills.push(tokio::spawn(async move {
            let Ok(_permit) = permits.acquire().await else { return };
            if let Ok(mut resp) = client.get(&url).send().await {
                let _ = read_body(&mut resp).await;
            }
            let _ = done.send(());
        }));
    }
    for _ in 0..KILL_URLS / 3 {
        tokio::time::timeout(WRITES_GUARD, done_rx.recv()).await.expect("fills go on").expect("a fill");
    }
    drop(served);
    for fill in fills {
        let _ = tokio::time::timeout(WRITES_GUARD, fill).await;
    }

    let served = Served::start(&config, &[]);
    let left: Vec<PathBuf> = entry_files(&cache).into_iter().filter(|f| f.file_name().is_some_and(|n| n.to_string_lossy().contains(".tmp"))).collect();
    assert!(left.is_empty(), "temporary files of the killed run are removed at start-up: {left:?}");
    let proxy = reqwest::Proxy::all(format!("http://{}", served.addrs[0])).expect("a proxy URL");
    let client = client_builder(proxy).build().expect("a client");
    let mut hits = 0;
    for (i, url) in urls.iter().enumerate() {
        let (status, x_cache, body) = get(&client, url, &[]).await;
        assert_eq!(status, 200, "{url}");
        assert!(body.len() == kill_len(i) && body == body_of(i, kill_len(i)), "{url} ({:?}): {} bytes, not the origin's {}", x_cache, body.len(), kill_len(i));
        hits += usize::from(x_cache.as_deref() == Some("HIT"));
    }
    assert!(hits > 0, "some entries written before the kill are served from disk");
    assert_eq!(metric(&client, "pith_cache_disk_errors_total").await, 0, "rename after write: no torn file under an entry's name");
}

/// A response that varies (RFC 9111 §4.1) is found on disk after a restart, for each value it
/// was stored under, without the origin: the disk keeps which request headers select it.
/// Filled across restarts: one language before the first, another before the second; after
/// it both are served from disk, each with its own body, and a third language is fetched.
#[tokio::test]
async fn rfc9111_4_1_a_varying_response_is_found_on_disk_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let origin = Origin::new()
        .route("/lang", |r: &Received| {
            let lang = r.header("accept-language").unwrap_or_default();
            reply(&[("content-type", "application/octet-stream"), ("cache-control", "max-age=600"), ("vary", "Accept-Language")], format!("body for {lang}"))
        })
        .run()
        .await;
    let url = origin.url("/lang");
    let lang = |l: &'static str| [("accept-language", l)];

    let first = Pith::start(&with_disk(dir.path(), "")).await;
    let client = first.client();
    assert_eq!(get(&client, &url, &lang("en")).await.1.as_deref(), Some("MISS"));
    // The entry, and the URL's Vary names under the key made without them.
    wait_for_writes(&client, 2).await;
    assert_eq!(entry_files(dir.path()).len(), 2);
    first.stop();

    let second = Pith::start(&with_disk(dir.path(), "")).await;
    let client = second.client();
    let (_, x_cache, body) = get(&client, &url, &lang("en")).await;
    assert_eq!((x_cache.as_deref(), body.as_slice()), (Some("HIT"), &b"body for en"[..]), "the first fill, from disk");
    let (_, x_cache, body) = get(&client, &url, &lang("fr")).await;
    assert_eq!((x_cache.as_deref(), body.as_slice()), (Some("MISS"), &b"body for fr"[..]), "another language is not the stored one");
    wait_for_writes(&client, 1).await;
    assert_eq!(entry_files(dir.path()).len(), 3, "the names are not written again");
    second.stop();
    assert_eq!(origin.count("/lang"), 2);

    let third = Pith::start(&with_disk(dir.path(), "")).await;
    let client = third.client();
    for l in ["fr", "en"] {
        let (_, x_cache, body) = get(&client, &url, &lang(l)).await;
        assert_eq!((x_cache.as_deref(), String::from_utf8_lossy(&body).as_ref()), (Some("HIT"), format!("body for {l}").as_str()), "{l}, from disk");
    }
    assert_eq!(origin.count("/lang"), 2, "both served without the origin");
    let (_, x_cache, body) = get(&client, &url, &lang("de")).await;
    assert_eq!((x_cache.as_deref(), body.as_slice()), (Some("MISS"), &b"body for de"[..]), "a third language is fetched");
    let (_, x_cache, body) = get(&client, &url, &[]).await;
    assert_eq!((x_cache.as_deref(), body.as_slice()), (Some("MISS"), &b"body for "[..]), "no Accept-Language is a value of its own");
    assert_eq!(origin.count("/lang"), 4);
}

/// A URL whose response stopped varying: after a restart the response without `Vary` is
/// served, never a variant kept from before.
#[tokio::test]
async fn a_response_that_stopped_varying_is_not_answered_by_an_old_variant_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let varies = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = varies.clone();
    let origin = Origin::new()
        .route("/v", move |r: &Received| {
            let lang = r.header("accept-language").unwrap_or_default();
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                reply(&[("cache-control", "max-age=600"), ("vary", "Accept-Language")], format!("old {lang}"))
            } else {
                reply(&[("cache-control", "max-age=600")], "new")
            }
        })
        .run()
        .await;
    let url = origin.url("/v");
    let first = Pith::start(&with_disk(dir.path(), "")).await;
    let client = first.client();
    assert_eq!(get(&client, &url, &[("accept-language", "en")]).await.2, b"old en");
    wait_for_writes(&client, 2).await;
    varies.store(false, std::sync::atomic::Ordering::SeqCst);
    // A client's no-cache fetches it again: it no longer varies.
    assert_eq!(get(&client, &url, &[("accept-language", "en"), ("cache-control", "no-cache")]).await.2, b"new");
    wait_for_writes(&client, 3).await;
    first.stop();

    let second = Pith::start(&with_disk(dir.path(), "")).await;
    let client = second.client();
    let (_, x_cache, body) = get(&client, &url, &[("accept-language", "en")]).await;
    assert_eq!((x_cache.as_deref(), body.as_slice()), (Some("HIT"), &b"new"[..]));
}
