//! The proxy's cost per page, as a ratio taken in one run: the same keep-alive client fetches
//! the same real pages from the same loopback origin straight (`direct`), through pith's `pass`
//! profile and through its `declutter` profile. All three are one criterion group, so the
//! figures share the machine's state at the time and their ratios are the result; the absolute
//! numbers move with whatever else the machine is doing.
//!
//! Everything runs inside this process on one tokio runtime: a hyper origin on 127.0.0.1:0
//! serving about 20 pages of the development set (`../shared/bench/scrapinghub`, spread over
//! the sorted set so their sizes vary as the set's do), and pith itself on 127.0.0.1:0, one
//! listener per profile. Each iteration fetches the next page, whole, without
//! `Accept-Encoding` (identity bodies, so no codec work on either side). Throughput is the
//! origin's bytes per page, averaged over the chosen pages.
//!
//! Run: `cargo bench --bench proxy`. For the whole proxy under concurrent load, with nginx as
//! the origin and wrk as the client, see `scripts/perf.sh`.

mod common;

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// About how many pages to serve: enough to mix small and large pages, few enough that the
/// bench starts at once.
const PAGES: usize = 20;

/// pith with one listener per measured profile. Via is off, as in `scripts/perf.sh`.
const CONFIG: &str = r#"
[log]
level = "warn"

[[listener]]
address = "127.0.0.1:0"
profile = "pass"

[[listener]]
address = "127.0.0.1:0"
profile = "declutter"

[upstream]
send_via = false
"#;

/// Every `step`-th page of the sorted development set, about [`PAGES`] of them, as served
/// bytes; `None` when the set is absent.
fn load_pages() -> Option<Vec<Bytes>> {
    let paths = common::page_paths();
    let step = (paths.len() / PAGES).max(1);
    let pages: Vec<Bytes> = paths
        .iter()
        .step_by(step)
        .take(PAGES)
        .filter_map(|path| std::fs::read(path).ok())
        .map(Bytes::from)
        .collect();
    (!pages.is_empty()).then_some(pages)
}

/// Serves `/p/N.html` from `pages` on 127.0.0.1:0 until `stop` fires; returns its address.
async fn start_origin(pages: Arc<Vec<Bytes>>, stop: oneshot::Receiver<()>) -> SocketAddr {
    let listener = match TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => panic!("the bench origin cannot bind 127.0.0.1:0: {e}"),
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => panic!("the bench origin has no address: {e}"),
    };
    let accept = async move {
        while let Ok((stream, _)) = listener.accept().await {
            let pages = pages.clone();
            let service = hyper::service::service_fn(move |req| {
                std::future::ready(Ok::<_, std::convert::Infallible>(page_response(
                    &pages,
                    req.uri(),
                )))
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    };
    tokio::spawn(async move {
        tokio::select! { _ = accept => {}, _ = stop => {} }
    });
    addr
}

/// The origin's answer: the page named by the path, or 404.
fn page_response(pages: &[Bytes], uri: &Uri) -> Response<Full<Bytes>> {
    let index = uri
        .path()
        .strip_prefix("/p/")
        .and_then(|p| p.strip_suffix(".html"))
        .and_then(|n| n.parse::<usize>().ok());
    let (status, body) = match index.and_then(|i| pages.get(i)) {
        Some(page) => (StatusCode::OK, page.clone()),
        None => (StatusCode::NOT_FOUND, Bytes::from_static(b"no such page")),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/html"),
    );
    response
}

/// Starts pith with [`CONFIG`] until `stop` fires; returns the `pass` and `declutter` addresses.
async fn start_pith(stop: oneshot::Receiver<()>) -> (SocketAddr, SocketAddr) {
    let config = match pith::config::Config::from_toml_str(CONFIG, "bench.toml", None) {
        Ok(c) => c,
        Err(e) => panic!("the bench config is rejected: {e}"),
    };
    let proxy = match pith::net::Proxy::bind(config).await {
        Ok(p) => p,
        Err(e) => panic!("pith cannot start: {e}"),
    };
    let [pass, declutter] = proxy.local_addrs()[..] else {
        panic!("pith should listen on exactly the two configured addresses");
    };
    tokio::spawn(proxy.run(async move {
        let _ = stop.await;
    }));
    (pass, declutter)
}

/// One keep-alive HTTP/1.1 connection to a forward proxy, sending absolute-form request
/// lines as a browser configured with a proxy does; it reconnects if the proxy closed it.
struct ProxyClient {
    proxy: SocketAddr,
    sender: Option<SendRequest<Empty<Bytes>>>,
}

impl ProxyClient {
    fn new(proxy: SocketAddr) -> ProxyClient {
        ProxyClient {
            proxy,
            sender: None,
        }
    }

    /// The open connection, or a new one.
    async fn sender(&mut self) -> &mut SendRequest<Empty<Bytes>> {
        let sender = match self.sender.take() {
            Some(open) if !open.is_closed() => open,
            _ => connect(self.proxy).await,
        };
        self.sender.insert(sender)
    }

    /// GETs `url` through the proxy and returns the whole body.
    async fn get(&mut self, url: &Uri) -> Bytes {
        let host = url
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let request = Request::get(url.clone())
            .header(http::header::HOST, host)
            .body(Empty::new());
        let Ok(request) = request else {
            panic!("cannot build a request for {url}")
        };
        let sender = self.sender().await;
        if let Err(e) = sender.ready().await {
            panic!("pith closed the connection: {e}");
        }
        match sender.send_request(request).await {
            Ok(response) => whole_body(response, url).await,
            Err(e) => panic!("request through pith failed for {url}: {e}"),
        }
    }
}

/// Opens an HTTP/1.1 connection to the proxy and drives it on the runtime.
async fn connect(proxy: SocketAddr) -> SendRequest<Empty<Bytes>> {
    let stream = match TcpStream::connect(proxy).await {
        Ok(s) => s,
        Err(e) => panic!("cannot connect to pith at {proxy}: {e}"),
    };
    let _ = stream.set_nodelay(true);
    let (sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
        Ok(pair) => pair,
        Err(e) => panic!("HTTP handshake with pith failed: {e}"),
    };
    tokio::spawn(conn);
    sender
}

/// Reads a 200 response's whole body; anything else stops the bench, since it would measure
/// an error page instead of a page.
async fn whole_body(response: Response<hyper::body::Incoming>, url: &Uri) -> Bytes {
    if response.status() != StatusCode::OK {
        panic!("{url} answered {}", response.status());
    }
    match response.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => panic!("the body of {url} failed: {e}"),
    }
}

/// GETs `url` straight from the origin over the pooled keep-alive client.
async fn get_direct(client: &Client<HttpConnector, Empty<Bytes>>, url: &Uri) -> Bytes {
    match client.get(url.clone()).await {
        Ok(response) => whole_body(response, url).await,
        Err(e) => panic!("direct request failed for {url}: {e}"),
    }
}

/// The page URLs on the origin, in serving order.
fn page_urls(origin: SocketAddr, count: usize) -> Vec<Uri> {
    (0..count)
        .map(|i| match format!("http://{origin}/p/{i}.html").parse() {
            Ok(uri) => uri,
            Err(e) => panic!("bad page URL: {e}"),
        })
        .collect()
}

/// Checks once, before measuring, that `pass` serves the origin's bytes unchanged (so the
/// comparison is of equal work), and prints the share of those bytes `declutter` sends.
fn check_paths(
    rt: &Runtime,
    urls: &[Uri],
    pages: &[Bytes],
    pass: &mut ProxyClient,
    declutter: &mut ProxyClient,
) {
    let (mut origin_bytes, mut declutter_bytes) = (0usize, 0usize);
    for (url, page) in urls.iter().zip(pages) {
        let passed = rt.block_on(pass.get(url));
        assert!(
            passed == *page,
            "pass changed {url}: {} bytes in, {} out",
            page.len(),
            passed.len()
        );
        origin_bytes += page.len();
        declutter_bytes += rt.block_on(declutter.get(url)).len();
    }
    eprintln!(
        "proxy bench: {} pages, mean {:.0} KB; declutter sends {:.1}% of the bytes",
        pages.len(),
        origin_bytes as f64 / pages.len() as f64 / 1e3,
        100.0 * declutter_bytes as f64 / origin_bytes as f64
    );
}

/// Starts the origin and pith, checks them, then measures the three paths in one group.
fn proxy(c: &mut Criterion) {
    let Some(pages) = load_pages() else {
        eprintln!("skipping the proxy bench: no pages in ../shared/bench/scrapinghub");
        return;
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("cannot start the tokio runtime: {e}"),
    };
    let pages = Arc::new(pages);
    let (stop_origin, origin_stopped) = oneshot::channel();
    let (stop_pith, pith_stopped) = oneshot::channel();
    let origin = rt.block_on(start_origin(pages.clone(), origin_stopped));
    let (pass_addr, declutter_addr) = rt.block_on(start_pith(pith_stopped));
    let urls = page_urls(origin, pages.len());
    let direct = {
        let _entered = rt.enter();
        Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>()
    };
    let (mut pass, mut declutter) = (
        ProxyClient::new(pass_addr),
        ProxyClient::new(declutter_addr),
    );
    check_paths(&rt, &urls, &pages, &mut pass, &mut declutter);

    let mean_page = pages.iter().map(Bytes::len).sum::<usize>() / pages.len();
    let mut group = c.benchmark_group("proxy/page");
    group.throughput(Throughput::Bytes(mean_page as u64));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let mut next = 0usize;
    let mut next_url = move || {
        next = (next + 1) % urls.len();
        urls[next].clone()
    };
    group.bench_function("direct", |b| {
        b.iter(|| black_box(rt.block_on(get_direct(&direct, &next_url()))))
    });
    group.bench_function("pith-pass", |b| {
        b.iter(|| black_box(rt.block_on(pass.get(&next_url()))))
    });
    group.bench_function("pith-declutter", |b| {
        b.iter(|| black_box(rt.block_on(declutter.get(&next_url()))))
    });
    group.finish();

    let _ = stop_pith.send(());
    let _ = stop_origin.send(());
    rt.shutdown_timeout(Duration::from_secs(2));
}

criterion_group!(benches, proxy);
criterion_main!(benches);
