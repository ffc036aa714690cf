//! The soak test's load driver: `--conc` HTTP/1.1 clients with keep-alive, spread round-robin
//! over `--sources` loopback addresses (each connection binds its source address before it
//! connects, which wrk cannot do), for `--secs` seconds, asking for the pages of `--paths` in
//! turn. So a gateway's LAN is imitated: a per-client connection cap sees several clients of a
//! few connections each, not one client with all of them.
//!
//! Modes (`--mode`):
//! - `proxy`: absolute-form requests (`GET http://ORIGIN/p/x.html`) to the proxy at `--target`;
//! - `gateway`: the URL gateway, `GET /read?url=http%3A%2F%2FORIGIN%2Fp%2Fx.html` to `--target`;
//! - `https`: one `CONNECT --tls-origin` per connection, then TLS (trusting only `--ca`, the
//!   proxy's interception CA) and origin-form requests inside;
//! - `direct`: origin-form requests to the origin itself, to show what the driver can do alone.
//!
//! Prints one line of `key=value` fields (the fields of `../shared/perf/load.sh`, plus more):
//! `requests` (responses received), `status_err` (status >= 400), `err` (connect and timeout
//! errors), `err_read` (a connection broken during a response, or a body shorter than its
//! length), `ka_closed` (a kept-alive connection closed by the server before any byte of the
//! next response: the request is sent again on a new connection and is not an error),
//! `statuses`, and `by_source` (`ADDRESS:requests:errors` per source address). Every address
//! must be loopback; the run ends at `--secs` (requests still in flight then are dropped
//! uncounted), and each request is bounded by `--timeout-ms`.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio::time::timeout_at;

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Proxy,
    Gateway,
    Https,
    Direct,
}

struct Opts {
    target: SocketAddr,
    mode: Mode,
    sources: Vec<IpAddr>,
    conc: usize,
    secs: u64,
    gzip: bool,
    paths: Vec<String>,
    page: String,
    origin: String,
    tls_origin: String,
    profile: Option<String>,
    timeout: Duration,
    label: String,
    tls: Option<Arc<rustls::ClientConfig>>,
}

fn usage(msg: &str) -> ! {
    eprintln!("loadgen: {msg}");
    eprintln!(
        "usage: loadgen --target HOST:PORT --sources IP[,IP...] [--mode proxy|gateway|https|direct] \
         [--conc N] [--secs S] [--gzip] [--paths FILE | --path P] [--origin HOST:PORT] \
         [--tls-origin HOST:PORT --ca PEM] [--profile NAME] [--timeout-ms MS] [--label TEXT]"
    );
    std::process::exit(2)
}

fn loopback_addr(s: &str) -> SocketAddr {
    let a: SocketAddr = s.parse().unwrap_or_else(|_| usage(&format!("not an IP:port: {s}")));
    if !a.ip().is_loopback() {
        usage(&format!("{s} is not a loopback address"));
    }
    a
}

fn parse_args() -> Opts {
    let mut args = std::env::args().skip(1);
    let mut target = None;
    let mut mode = Mode::Proxy;
    let mut sources = Vec::new();
    let (mut conc, mut secs, mut gzip) = (16usize, 10u64, false);
    let (mut paths_file, mut path) = (None, None);
    let mut origin = "127.0.0.1:18080".to_string();
    let mut tls_origin = "127.0.0.1:18443".to_string();
    let (mut ca, mut profile, mut timeout_ms, mut label) = (None, None, 15_000u64, String::new());
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--target" => target = Some(loopback_addr(&val())),
            "--mode" => {
                mode = match val().as_str() {
                    "proxy" => Mode::Proxy,
                    "gateway" => Mode::Gateway,
                    "https" => Mode::Https,
                    "direct" => Mode::Direct,
                    m => usage(&format!("unknown mode {m}")),
                }
            }
            "--sources" => {
                for s in val().split(',') {
                    let ip: IpAddr = s.parse().unwrap_or_else(|_| usage(&format!("not an IP: {s}")));
                    if !ip.is_loopback() {
                        usage(&format!("{s} is not a loopback address"));
                    }
                    sources.push(ip);
                }
            }
            "--conc" => conc = val().parse().unwrap_or_else(|_| usage("--conc: a number")),
            "--secs" => secs = val().parse().unwrap_or_else(|_| usage("--secs: a number")),
            "--gzip" => gzip = true,
            "--paths" => paths_file = Some(val()),
            "--path" => path = Some(val()),
            "--origin" => origin = loopback_addr(&val()).to_string(),
            "--tls-origin" => tls_origin = loopback_addr(&val()).to_string(),
            "--ca" => ca = Some(val()),
            "--profile" => profile = Some(val()),
            "--timeout-ms" => timeout_ms = val().parse().unwrap_or_else(|_| usage("--timeout-ms: a number")),
            "--label" => label = val(),
            "-h" | "--help" => usage("help"),
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let target = target.unwrap_or_else(|| usage("--target is required"));
    if sources.is_empty() {
        usage("--sources is required");
    }
    if conc == 0 || !(1..=3600).contains(&secs) {
        usage("--conc must be at least 1 and --secs 1 to 3600");
    }
    let (paths, page) = match (path, paths_file) {
        (Some(p), _) => (vec![p.clone()], p),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(&f).unwrap_or_else(|e| usage(&format!("{f}: {e}")));
            let paths: Vec<String> = text.lines().map(str::trim).filter(|l| l.starts_with('/')).map(String::from).collect();
            (paths, "all".to_string())
        }
        (None, None) => usage("--paths FILE or --path P is required"),
    };
    if paths.is_empty() {
        usage("no paths");
    }
    let tls = (mode == Mode::Https).then(|| {
        let ca = ca.unwrap_or_else(|| usage("--mode https needs --ca"));
        Arc::new(tls_config(&ca))
    });
    if label.is_empty() {
        label = target.to_string();
    }
    Opts {
        target,
        mode,
        sources,
        conc,
        secs,
        gzip,
        paths,
        page,
        origin,
        tls_origin,
        profile,
        timeout: Duration::from_millis(timeout_ms),
        label,
        tls,
    }
}

fn tls_config(ca: &str) -> rustls::ClientConfig {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca).unwrap_or_else(|e| usage(&format!("{ca}: {e}")));
    for c in certs {
        let c = c.unwrap_or_else(|e| usage(&format!("{ca}: {e}")));
        roots.add(c).unwrap_or_else(|e| usage(&format!("{ca}: {e}")));
    }
    rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth()
}

/// Percent-encodes a URL for the gateway's `url=` parameter.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn request(o: &Opts, path: &str) -> Vec<u8> {
    let (target, host) = match o.mode {
        Mode::Proxy => (format!("http://{}{}", o.origin, path), o.origin.clone()),
        Mode::Gateway => {
            let mut t = format!("/read?url={}", encode(&format!("http://{}{}", o.origin, path)));
            if let Some(p) = &o.profile {
                t.push_str("&profile=");
                t.push_str(p);
            }
            (t, o.target.to_string())
        }
        Mode::Https => (path.to_string(), o.tls_origin.clone()),
        Mode::Direct => (path.to_string(), o.origin.clone()),
    };
    let enc = if o.gzip { "gzip" } else { "identity" };
    format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: pith-loadgen\r\nAccept: text/html,*/*\r\nAccept-Encoding: {enc}\r\n\r\n")
        .into_bytes()
}

#[derive(Debug)]
enum Fail {
    /// The connection ended before any byte of the response.
    Closed,
    /// Broken during the response, or a malformed one.
    Read(String),
}

struct Conn {
    io: Box<dyn Io>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

struct Response {
    status: u16,
    bytes: u64,
    close: bool,
}

impl Conn {
    async fn fill(&mut self) -> std::io::Result<usize> {
        let n = self.io.read(&mut self.scratch).await?;
        self.buf.extend_from_slice(&self.scratch[..n]);
        Ok(n)
    }

    /// A line (without CRLF) from the buffer, reading more as needed.
    async fn line(&mut self) -> Result<String, Fail> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 2);
                return Ok(line);
            }
            if self.buf.len() > 16 * 1024 {
                return Err(Fail::Read("a line over 16 KiB".into()));
            }
            match self.fill().await {
                Ok(0) => return Err(Fail::Read("closed in a chunk size line".into())),
                Ok(_) => {}
                Err(e) => return Err(Fail::Read(e.to_string())),
            }
        }
    }

    /// Skips `n` body bytes.
    async fn skip(&mut self, mut n: u64) -> Result<(), Fail> {
        let have = (self.buf.len() as u64).min(n);
        self.buf.drain(..have as usize);
        n -= have;
        while n > 0 {
            let want = (self.scratch.len() as u64).min(n) as usize;
            match self.io.read(&mut self.scratch[..want]).await {
                Ok(0) => return Err(Fail::Read(format!("closed with {n} body bytes missing"))),
                Ok(k) => n -= k as u64,
                Err(e) => return Err(Fail::Read(e.to_string())),
            }
        }
        Ok(())
    }

    async fn exchange(&mut self, req: &[u8]) -> Result<Response, Fail> {
        if let Err(e) = self.io.write_all(req).await {
            return Err(if e.kind() == std::io::ErrorKind::BrokenPipe || e.kind() == std::io::ErrorKind::ConnectionReset {
                Fail::Closed
            } else {
                Fail::Read(e.to_string())
            });
        }
        // The head.
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if self.buf.len() > 256 * 1024 {
                return Err(Fail::Read("a response head over 256 KiB".into()));
            }
            match self.fill().await {
                Ok(0) if self.buf.is_empty() => return Err(Fail::Closed),
                Ok(0) => return Err(Fail::Read("closed inside the response head".into())),
                Ok(_) => {}
                Err(e) if self.buf.is_empty() && e.kind() == std::io::ErrorKind::ConnectionReset => return Err(Fail::Closed),
                Err(e) => return Err(Fail::Read(e.to_string())),
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Fail::Read(format!("bad status line {status_line:?}")))?;
        let (mut length, mut chunked, mut close) = (None, false, status_line.starts_with("HTTP/1.0"));
        for l in lines {
            let Some((name, value)) = l.split_once(':') else { continue };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_ascii_lowercase());
            match name.as_str() {
                "content-length" => length = Some(value.parse::<u64>().map_err(|_| Fail::Read(format!("bad length {value}")))?),
                "transfer-encoding" => chunked = value.contains("chunked"),
                "connection" => close = value.contains("close") || (close && !value.contains("keep-alive")),
                _ => {}
            }
        }
        let mut bytes = 0u64;
        if status == 204 || status == 304 || (100..200).contains(&status) {
        } else if chunked {
            loop {
                let line = self.line().await?;
                let size_text = line.split(';').next().unwrap_or("").trim();
                let size = u64::from_str_radix(size_text, 16).map_err(|_| Fail::Read(format!("bad chunk size {line:?}")))?;
                if size == 0 {
                    while !self.line().await?.is_empty() {}
                    break;
                }
                self.skip(size).await?;
                bytes += size;
                if !self.line().await?.is_empty() {
                    return Err(Fail::Read("no CRLF after a chunk".into()));
                }
            }
        } else if let Some(n) = length {
            self.skip(n).await?;
            bytes = n;
        } else {
            // Delimited by the close.
            bytes = self.buf.len() as u64;
            self.buf.clear();
            loop {
                match self.io.read(&mut self.scratch).await {
                    Ok(0) => break,
                    Ok(k) => bytes += k as u64,
                    Err(e) => return Err(Fail::Read(e.to_string())),
                }
            }
            close = true;
        }
        Ok(Response { status, bytes, close })
    }
}

async fn connect(o: &Opts, source: IpAddr) -> Result<Conn, String> {
    let sock = if o.target.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(|e| e.to_string())?;
    sock.bind(SocketAddr::new(source, 0)).map_err(|e| format!("bind {source}: {e}"))?;
    let tcp = sock.connect(o.target).await.map_err(|e| format!("connect: {e}"))?;
    tcp.set_nodelay(true).ok();
    let mut conn = Conn { io: Box::new(tcp), buf: Vec::with_capacity(16 * 1024), scratch: vec![0; 64 * 1024] };
    if let Some(tls) = &o.tls {
        let req = format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", o.tls_origin);
        let resp = conn.exchange_connect(req.as_bytes()).await?;
        if resp != 200 {
            return Err(format!("CONNECT answered {resp}"));
        }
        let host = o.tls_origin.rsplit_once(':').map_or(o.tls_origin.as_str(), |(h, _)| h);
        let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
        let Conn { io, buf, scratch } = conn;
        if !buf.is_empty() {
            return Err("bytes after the CONNECT answer".into());
        }
        let tls = tokio_rustls::TlsConnector::from(tls.clone()).connect(name, io).await.map_err(|e| format!("TLS: {e}"))?;
        conn = Conn { io: Box::new(tls), buf, scratch };
    }
    Ok(conn)
}

impl Conn {
    /// Sends a CONNECT and reads its answer's head only (a 200 has no body).
    async fn exchange_connect(&mut self, req: &[u8]) -> Result<u16, String> {
        self.io.write_all(req).await.map_err(|e| e.to_string())?;
        loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..i]).into_owned();
                self.buf.drain(..i + 4);
                return head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| "bad CONNECT answer".to_string());
            }
            if self.fill().await.map_err(|e| e.to_string())? == 0 {
                return Err("closed before the CONNECT answer".into());
            }
        }
    }
}

#[derive(Default)]
struct Stats {
    requests: u64,
    status_err: u64,
    err_connect: u64,
    err_timeout: u64,
    err_read: u64,
    ka_closed: u64,
    bytes: u64,
    statuses: BTreeMap<u16, u64>,
    micros: Vec<u32>,
    first_errors: Vec<String>,
}

impl Stats {
    fn errors(&self) -> u64 {
        self.status_err + self.err_connect + self.err_timeout + self.err_read
    }

    fn note(&mut self, what: String) {
        if self.first_errors.len() < 3 {
            self.first_errors.push(what);
        }
    }

    fn merge(&mut self, o: Stats) {
        self.requests += o.requests;
        self.status_err += o.status_err;
        self.err_connect += o.err_connect;
        self.err_timeout += o.err_timeout;
        self.err_read += o.err_read;
        self.ka_closed += o.ka_closed;
        self.bytes += o.bytes;
        for (k, v) in o.statuses {
            *self.statuses.entry(k).or_default() += v;
        }
        self.micros.extend(o.micros);
        for e in o.first_errors {
            self.note(e);
        }
    }
}

async fn worker(o: Arc<Opts>, source: IpAddr, next: Arc<AtomicUsize>, deadline: tokio::time::Instant) -> Stats {
    let mut st = Stats::default();
    let mut conn: Option<Conn> = None;
    let mut reused = false;
    let mut retry: Option<usize> = None;
    while tokio::time::Instant::now() < deadline {
        let i = retry.take().unwrap_or_else(|| next.fetch_add(1, Ordering::Relaxed) % o.paths.len());
        let req = request(&o, &o.paths[i]);
        let t0 = Instant::now();
        let limit = tokio::time::Instant::now() + o.timeout;
        let cut = limit.min(deadline);
        if conn.is_none() {
            match timeout_at(cut, connect(&o, source)).await {
                Ok(Ok(c)) => {
                    conn = Some(c);
                    reused = false;
                }
                Ok(Err(e)) => {
                    st.err_connect += 1;
                    st.note(format!("{source}: {e}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                Err(_) if tokio::time::Instant::now() >= deadline => break,
                Err(_) => {
                    st.err_connect += 1;
                    st.note(format!("{source}: connect timed out"));
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        let r = timeout_at(cut, c.exchange(&req)).await;
        match r {
            Err(_) if tokio::time::Instant::now() >= deadline && limit > deadline => break,
            Err(_) => {
                st.err_timeout += 1;
                st.note(format!("{source}: {} timed out", o.paths[i]));
                conn = None;
            }
            Ok(Err(Fail::Closed)) if reused => {
                st.ka_closed += 1;
                conn = None;
                retry = Some(i);
            }
            Ok(Err(f)) => {
                st.err_read += 1;
                let why = match f {
                    Fail::Closed => "closed before any byte of the response".to_string(),
                    Fail::Read(why) => why,
                };
                st.note(format!("{source}: {} {why}", o.paths[i]));
                conn = None;
            }
            Ok(Ok(resp)) => {
                st.requests += 1;
                st.bytes += resp.bytes;
                *st.statuses.entry(resp.status).or_default() += 1;
                st.micros.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
                if resp.status >= 400 {
                    st.status_err += 1;
                    st.note(format!("{source}: {} status {}", o.paths[i], resp.status));
                }
                if resp.close {
                    conn = None;
                } else {
                    reused = true;
                }
            }
        }
    }
    st
}

fn pct(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let o = Arc::new(parse_args());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let start = Instant::now();
    let (total, per_source) = rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(o.secs);
        let next = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for w in 0..o.conc {
            let src_i = w % o.sources.len();
            let t = tokio::spawn(worker(o.clone(), o.sources[src_i], next.clone(), deadline));
            tasks.push((src_i, t));
        }
        let mut per_source: Vec<Stats> = o.sources.iter().map(|_| Stats::default()).collect();
        for (src_i, t) in tasks {
            if let Ok(st) = t.await {
                per_source[src_i].merge(st);
            }
        }
        let mut total = Stats::default();
        let by: Vec<(u64, u64)> = per_source.iter().map(|s| (s.requests, s.errors())).collect();
        for st in per_source {
            total.merge(st);
        }
        (total, by)
    });
    let secs = start.elapsed().as_secs_f64();
    let mut micros = total.micros.clone();
    micros.sort_unstable();
    let mode = format!("{:?}", o.mode).to_lowercase();
    let statuses: Vec<String> = total.statuses.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    let by_source: Vec<String> =
        o.sources.iter().zip(&per_source).map(|(ip, (r, e))| format!("{ip}:{r}:{e}")).collect();
    println!(
        "label={} proxy={} conc={} gzip={} page={} secs={:.1} rps={:.1} mbps={:.2} p50_ms={:.1} p99_ms={:.1} \
         err={} err_read={} status_err={} requests={} err_connect={} err_timeout={} ka_closed={} mode={} \
         sources={} statuses={} by_source={}",
        o.label,
        o.target,
        o.conc,
        u8::from(o.gzip),
        o.page,
        secs,
        total.requests as f64 / secs,
        total.bytes as f64 / 1e6 / secs,
        pct(&micros, 0.50),
        pct(&micros, 0.99),
        total.err_connect + total.err_timeout,
        total.err_read,
        total.status_err,
        total.requests,
        total.err_connect,
        total.err_timeout,
        total.ka_closed,
        mode,
        o.sources.len(),
        if statuses.is_empty() { "-".into() } else { statuses.join(",") },
        by_source.join(","),
    );
    for e in &total.first_errors {
        eprintln!("loadgen {}: {e}", o.label);
    }
}
