//! The ICAP service (`[[icap]]`, RFC 3507), spoken to byte for byte: OPTIONS, RESPMOD with and
//! without a preview, 204 for what pith leaves alone, the echo for a client that allows
//! neither, persistent connections, and 400 for every kind of malformed message. The tests
//! with a real Squid in front are in [`squid`].

mod squid;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::common::{assert_decluttered, codec, raw::GUARD, CLUTTERED, PROFILES};

/// A pith whose only job here is its ICAP services; it stops when dropped.
pub struct IcapPith {
    /// Each `[[icap]]`'s address, in config order.
    pub icap: Vec<SocketAddr>,
    /// What its ICAP services answered.
    pub counters: Arc<pith::net::icap::Counters>,
    stop: Option<oneshot::Sender<()>>,
}

impl IcapPith {
    /// One `[[icap]]` on 127.0.0.1:0 with `icap_keys` (e.g. `profile = "pass"`), then `extra`
    /// tables. The HTTP listener every config has is on port 0 too.
    pub async fn start(icap_keys: &str, extra: &str) -> IcapPith {
        let profile = if icap_keys.contains("profile =") { "" } else { "profile = \"declutter\"\n" };
        let toml = format!("[[listener]]\naddress = \"127.0.0.1:0\"\n\n[[icap]]\naddress = \"127.0.0.1:0\"\n{profile}{icap_keys}\n{extra}\n{PROFILES}");
        let config = pith::config::Config::from_toml_str(&toml, "test.toml", None).unwrap_or_else(|e| panic!("test config rejected: {e}\n{toml}"));
        let proxy = pith::net::Proxy::bind(config).await.expect("pith binds 127.0.0.1:0");
        let (icap, counters) = (proxy.icap_addrs(), proxy.icap_counters());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(proxy.run(async move {
            let _ = stopped.await;
        }));
        IcapPith { icap, counters, stop: Some(stop) }
    }

    /// Stops it now, as if it died: with `limits.drain_timeout_ms = 0` its open connections
    /// are closed at once.
    pub fn kill(&mut self) {
        drop(self.stop.take());
    }

    /// RESPMOD requests answered so far.
    pub fn respmods(&self) -> u64 {
        self.counters.respmod.load(Ordering::Relaxed)
    }
}

/// An ICAP response as read: status, headers, and the encapsulated HTTP head and body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    http_head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A raw ICAP connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Client {
        Client { reader: BufReader::new(TcpStream::connect(addr).await.expect("connect to the ICAP service")) }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).await.expect("write to the ICAP service");
    }

    /// Reads one ICAP response, its encapsulated head and chunked body included.
    async fn read(&mut self) -> Answer {
        tokio::time::timeout(GUARD, self.read_inner()).await.expect("an ICAP answer within the guard time")
    }

    async fn read_inner(&mut self) -> Answer {
        let head = read_lines(&mut self.reader).await;
        let mut lines = head.lines();
        let status_line = lines.next().expect("a status line");
        assert!(status_line.starts_with("ICAP/1.0 "), "{status_line:?}");
        let status = status_line[9..12].parse().expect("a status code");
        let headers: Vec<(String, String)> = lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_string(), v.trim().to_string())).collect();
        let mut answer = Answer { status, headers, http_head: String::new(), body: Vec::new() };
        let encapsulated = answer.header("encapsulated").unwrap_or("null-body=0").to_string();
        if encapsulated.contains("res-hdr") {
            answer.http_head = read_lines(&mut self.reader).await;
        }
        if encapsulated.contains("res-body") {
            answer.body = read_chunked(&mut self.reader).await;
        }
        answer
    }

    /// True when the service closed the connection (nothing more to read).
    async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(tokio::time::timeout(GUARD, self.reader.read(&mut byte)).await.expect("EOF within the guard time"), Ok(0) | Err(_))
    }
}

/// Lines up to and including an empty one, as text.
async fn read_lines(reader: &mut BufReader<TcpStream>) -> String {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).await.expect("read a line");
        assert!(n > 0, "the connection closed mid-head after {head:?}");
        head.push_str(&line);
        if line == "\r\n" {
            return head;
        }
    }
}

async fn read_chunked(reader: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.expect("a chunk size");
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("").trim(), 16).unwrap_or_else(|_| panic!("bad chunk size {line:?}"));
        if size == 0 {
            let mut end = String::new();
            reader.read_line(&mut end).await.expect("the end of the body");
            assert_eq!(end, "\r\n");
            return body;
        }
        let mut data = vec![0u8; size + 2];
        reader.read_exact(&mut data).await.expect("chunk data");
        assert_eq!(&data[size..], b"\r\n");
        body.extend_from_slice(&data[..size]);
    }
}

/// A RESPMOD request for a response with `res_head` and `body`; `preview` sends only that
/// many body bytes first (the caller sends the rest after 100 Continue).
fn respmod(req_head: &str, res_head: &str, body: &[u8], preview: Option<usize>, allow_204: bool) -> Vec<u8> {
    let encapsulated = format!("req-hdr=0, res-hdr={}, res-body={}", req_head.len(), req_head.len() + res_head.len());
    let mut out = format!("RESPMOD icap://127.0.0.1/respmod ICAP/1.0\r\nHost: 127.0.0.1\r\nEncapsulated: {encapsulated}\r\n").into_bytes();
    if let Some(n) = preview {
        out.extend_from_slice(format!("Preview: {n}\r\n").as_bytes());
    }
    if allow_204 {
        out.extend_from_slice(b"Allow: 204\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(req_head.as_bytes());
    out.extend_from_slice(res_head.as_bytes());
    match preview {
        Some(n) if n >= body.len() => {
            out.extend(chunk(body));
            out.extend_from_slice(b"0; ieof\r\n\r\n");
        }
        Some(n) => {
            out.extend(chunk(&body[..n]));
            out.extend_from_slice(b"0\r\n\r\n");
        }
        None => {
            out.extend(chunk(body));
            out.extend_from_slice(b"0\r\n\r\n");
        }
    }
    out
}

fn chunk(data: &[u8]) -> Vec<u8> {
    if data.is_empty() {
        return Vec::new();
    }
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

const REQ: &str = "GET http://example.test/page HTTP/1.1\r\nHost: example.test\r\n\r\n";

fn html_head(len: usize) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len}\r\nCache-Control: max-age=60\r\n\r\n")
}

/// CLUTTERED, padded past the preview size so the rest needs 100 Continue.
fn big_page() -> String {
    CLUTTERED.replace("</body>", &format!("<p>{}</p></body>", "Long text stays. ".repeat(600)))
}

#[tokio::test]
async fn options_describe_the_service() {
    let pith = IcapPith::start("", "").await;
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\nHost: 127.0.0.1\r\n\r\n").await;
    let a = c.read().await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("methods"), Some("RESPMOD"));
    assert_eq!(a.header("allow"), Some("204"));
    assert_eq!(a.header("encapsulated"), Some("null-body=0"));
    assert!(a.header("istag").is_some_and(|t| t.starts_with('"') && t.ends_with('"') && t.len() <= 34), "{:?}", a.header("istag"));
    for name in ["preview", "max-connections", "options-ttl", "service-id", "transfer-preview"] {
        assert!(a.header(name).is_some(), "{name} missing: {a:?}");
    }
    assert!(a.header("transfer-ignore").is_some_and(|v| v.split(',').any(|e| e == "jpg")));
    // The profile shapes the tag: another profile, another ISTag; the same, the same.
    let other = IcapPith::start("profile = \"text\"", "").await;
    let mut d = Client::connect(other.icap[0]).await;
    d.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert_ne!(d.read().await.header("istag"), a.header("istag"));
    let same = IcapPith::start("", "").await;
    let mut e = Client::connect(same.icap[0]).await;
    e.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert_eq!(e.read().await.header("istag"), a.header("istag"));
}

#[tokio::test]
async fn a_page_is_rewritten_after_its_preview_and_the_connection_persists() {
    let pith = IcapPith::start("", "").await;
    let page = big_page();
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(&respmod(REQ, &html_head(page.len()), page.as_bytes(), Some(1024), true)).await;
    let cont = c.read().await;
    assert_eq!(cont.status, 100, "the preview did not decide: {cont:?}");
    let mut rest = chunk(&page.as_bytes()[1024..]);
    rest.extend_from_slice(b"0\r\n\r\n");
    c.send(&rest).await;
    let a = c.read().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.header("encapsulated").is_some_and(|e| e.starts_with("res-hdr=0, res-body=")));
    let html = String::from_utf8(a.body).expect("UTF-8");
    assert!(html.contains("Long text stays."));
    assert_decluttered(&html);
    let head = a.http_head.to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200 ok\r\n"), "{head}");
    assert!(head.contains(&format!("content-length: {}\r\n", html.len())), "{head}");
    assert!(head.contains("x-pith: profile=declutter") && head.contains("cache-control: max-age=60"), "{head}");
    // Same connection: another request.
    c.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert_eq!(c.read().await.status, 200);
    assert_eq!((pith.respmods(), pith.counters.rewritten.load(Ordering::Relaxed)), (1, 1));
}

/// CLUTTERED padded to about `kib` KiB.
pub fn long_page(kib: usize) -> String {
    CLUTTERED.replace("</body>", &format!("<p>{}</p></body>", "Long text stays. ".repeat(kib * 60)))
}

#[tokio::test]
async fn a_long_page_gets_its_head_before_it_is_read_whole() {
    let pith = IcapPith::start("", "").await;
    let page = long_page(100);
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(&respmod(REQ, &html_head(page.len()), page.as_bytes(), None, true)).await;
    let a = c.read().await;
    assert_eq!(a.status, 200);
    let head = a.http_head.to_ascii_lowercase();
    assert!(!head.contains("content-length"), "the length is not known when the head goes: {head}");
    assert!(head.contains("content-type: text/html; charset=utf-8") && head.contains("x-pith: profile=declutter"), "{head}");
    let html = String::from_utf8(a.body).expect("UTF-8");
    assert!(html.contains("Long text stays."));
    assert_decluttered(&html);
    c.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert_eq!(c.read().await.status, 200, "the connection persists");
}

#[tokio::test]
async fn a_long_page_found_too_large_after_its_head_is_cut_short() {
    let pith = IcapPith::start("", "[limits]\nmax_rewrite_bytes = 50000\n").await;
    let page = long_page(100);
    // No Content-Length: the size is found while reading, after the head went.
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(&respmod(REQ, head, page.as_bytes(), None, true)).await;
    let icap_head = read_lines(&mut c.reader).await;
    assert!(icap_head.starts_with("ICAP/1.0 200 OK\r\n"), "{icap_head}");
    read_lines(&mut c.reader).await;
    // Read to the close (or reset: pith closes with the rest of the request unread).
    let mut rest = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match tokio::time::timeout(GUARD, c.reader.read(&mut buf)).await.expect("closed within the guard time") {
            Ok(0) | Err(_) => break,
            Ok(n) => rest.extend_from_slice(&buf[..n]),
        }
    }
    assert!(!rest.ends_with(b"0\r\n\r\n"), "a cut-short answer must not end cleanly");
}

#[tokio::test]
async fn a_page_whole_in_its_preview_needs_no_continue() {
    let pith = IcapPith::start("", "").await;
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(&respmod(REQ, &html_head(CLUTTERED.len()), CLUTTERED.as_bytes(), Some(4096), true)).await;
    let a = c.read().await;
    assert_eq!(a.status, 200);
    assert_decluttered(&String::from_utf8(a.body).expect("UTF-8"));
}

/// Squid 5.7 ends the encapsulated body cleanly when its origin closes early (the soak's
/// `short-page` through Squid): the body is then shorter than the response's Content-Length,
/// and pith must not answer it as a whole rewritten page.
#[tokio::test]
async fn a_body_short_of_its_content_length_is_never_rewritten_as_whole() {
    let pith = IcapPith::start("", "").await;
    let short = &CLUTTERED.as_bytes()[..CLUTTERED.len() / 2];
    let head = html_head(CLUTTERED.len());
    let mut c = Client::connect(pith.icap[0]).await;
    // Whole in its preview (ieof): 204, Squid keeps its own copy.
    c.send(&respmod(REQ, &head, short, Some(4096), true)).await;
    assert_eq!(c.read().await.status, 204);
    // No preview, no 204: an ICAP error, never a 200.
    c.send(&respmod(REQ, &head, short, None, false)).await;
    assert_eq!(c.read().await.status, 500);
    // Longer than stated: the same.
    let long = [CLUTTERED.as_bytes(), b"<p>more</p>"].concat();
    c.send(&respmod(REQ, &head, &long, None, true)).await;
    assert_eq!(c.read().await.status, 204);
    assert_eq!(pith.counters.rewritten.load(Ordering::Relaxed), 0);
    // The page whole is still rewritten, on the same connection.
    c.send(&respmod(REQ, &head, CLUTTERED.as_bytes(), None, true)).await;
    let a = c.read().await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_decluttered(&String::from_utf8(a.body).expect("UTF-8"));
}

#[tokio::test]
async fn a_gzip_page_comes_back_rewritten_and_gzip_for_a_client_that_takes_it() {
    let pith = IcapPith::start("", "").await;
    let req = "GET /page HTTP/1.1\r\nHost: example.test\r\nAccept-Encoding: gzip\r\n\r\n";
    let gz = codec::gzip(CLUTTERED.as_bytes());
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", gz.len());
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(&respmod(req, &head, &gz, None, false)).await;
    let a = c.read().await;
    assert_eq!(a.status, 200);
    assert!(a.http_head.to_ascii_lowercase().contains("content-encoding: gzip"), "{}", a.http_head);
    assert_decluttered(&String::from_utf8(codec::gunzip(&a.body)).expect("UTF-8"));
}

#[tokio::test]
async fn what_pith_leaves_alone_is_204_or_echoed() {
    let pith = IcapPith::start("", "").await;
    let png: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: {}\r\n\r\n", png.len());
    let mut c = Client::connect(pith.icap[0]).await;
    // Preview: 204 on the headers, before any 100 Continue.
    c.send(&respmod(REQ, &head, &png, Some(1024), false)).await;
    assert_eq!(c.read().await.status, 204);
    // No preview, Allow: 204: the body is read, then 204.
    c.send(&respmod(REQ, &head, &png, None, true)).await;
    assert_eq!(c.read().await.status, 204);
    // Neither: the response comes back as it came.
    c.send(&respmod(REQ, &head, &png, None, false)).await;
    let a = c.read().await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, png, "byte-identical");
    assert!(a.http_head.contains("Content-Type: image/png"), "{}", a.http_head);
    // Sniffed: no type, not HTML.
    let untyped = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", png.len());
    c.send(&respmod(REQ, &untyped, &png, Some(1024), true)).await;
    assert_eq!(c.read().await.status, 204);
    // Too large: past limits.max_rewrite_bytes.
    let big = IcapPith::start("", "[limits]\nmax_rewrite_bytes = 1000\n").await;
    let mut d = Client::connect(big.icap[0]).await;
    let page = big_page();
    d.send(&respmod(REQ, &html_head(page.len()), page.as_bytes(), Some(4096), true)).await;
    assert_eq!(d.read().await.status, 204);
    let chunked = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
    d.send(&respmod(REQ, chunked, page.as_bytes(), None, false)).await;
    let a = d.read().await;
    assert_eq!((a.status, a.body.as_slice()), (200, page.as_bytes()), "too large without 204: echoed whole");
    assert_eq!(pith.counters.rewritten.load(Ordering::Relaxed) + big.counters.rewritten.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn the_pass_profile_and_bodiless_responses_are_204() {
    let pith = IcapPith::start("profile = \"pass\"", "").await;
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(&respmod(REQ, &html_head(CLUTTERED.len()), CLUTTERED.as_bytes(), Some(4096), true)).await;
    assert_eq!(c.read().await.status, 204);
    let pith = IcapPith::start("", "").await;
    let mut c = Client::connect(pith.icap[0]).await;
    let head = "HTTP/1.1 304 Not Modified\r\n\r\n";
    let msg = format!("RESPMOD icap://127.0.0.1/respmod ICAP/1.0\r\nAllow: 204\r\nEncapsulated: req-hdr=0, res-hdr={}, null-body={}\r\n\r\n{REQ}{head}", REQ.len(), REQ.len() + head.len());
    c.send(msg.as_bytes()).await;
    assert_eq!(c.read().await.status, 204);
}

#[tokio::test]
async fn reqmod_is_not_offered() {
    let pith = IcapPith::start("", "").await;
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(format!("REQMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: req-hdr=0, null-body={}\r\n\r\n{REQ}", REQ.len()).as_bytes()).await;
    assert_eq!(c.read().await.status, 405);
    c.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert_eq!(c.read().await.status, 200, "still serving");
}

#[tokio::test]
async fn a_client_outside_the_allow_list_is_closed() {
    let pith = IcapPith::start("allow = [\"10.0.0.0/8\"]", "").await;
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert!(c.is_closed().await);
    assert_eq!(pith.counters.options.load(Ordering::Relaxed), 0);
}

/// Sends `bytes` on a fresh connection: the answer must be 400 and the connection closed,
/// and the service must go on serving others.
async fn assert_refused(pith: &IcapPith, bytes: &[u8]) {
    let mut c = Client::connect(pith.icap[0]).await;
    c.send(bytes).await;
    let a = c.read().await;
    assert_eq!(a.status, 400, "for {:?}", String::from_utf8_lossy(bytes));
    assert!(c.is_closed().await, "closed after a 400");
    let mut d = Client::connect(pith.icap[0]).await;
    d.send(b"OPTIONS icap://127.0.0.1/respmod ICAP/1.0\r\n\r\n").await;
    assert_eq!(d.read().await.status, 200, "still serving after {:?}", String::from_utf8_lossy(bytes));
}

#[tokio::test]
async fn malformed_messages_get_400() {
    let pith = IcapPith::start("", "[limits]\nmax_header_bytes = 8192\n").await;
    let head = html_head(CLUTTERED.len());
    let cases: Vec<Vec<u8>> = vec![
        b"GARBAGE\r\n\r\n".to_vec(),
        b"OPTIONS icap://127.0.0.1/ HTTP/1.1\r\n\r\n".to_vec(),
        b"OPTIONS icap://127.0.0.1/ ICAP/1.0\r\nno colon here\r\n\r\n".to_vec(),
        format!("OPTIONS icap://127.0.0.1/ ICAP/1.0\r\nX: {}\r\n\r\n", "a".repeat(9000)).into_bytes(),
        // Encapsulated offsets that lie: inside the request head, past the response head.
        format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: req-hdr=0, res-hdr=10, res-body={}\r\n\r\n{REQ}{head}0\r\n\r\n", REQ.len() + head.len()).into_bytes(),
        format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body={}\r\n\r\n{head}XXXX0\r\n\r\n", head.len() + 4).into_bytes(),
        format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: res-hdr=5, res-body=10\r\n\r\n{head}").into_bytes(),
        format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: req-hdr=0, null-body={}\r\n\r\n{REQ}", REQ.len()).into_bytes(),
        b"RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nPreview: lots\r\nEncapsulated: null-body=0\r\n\r\n".to_vec(),
        // Chunk sizes that lie: more bytes than said, fewer (the next request taken for the
        // rest of the chunk), not hex.
        [format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body={}\r\n\r\n{head}", head.len()).as_bytes(), b"5\r\nhello world\r\n0\r\n\r\n"].concat(),
        [format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body={}\r\n\r\n{head}", head.len()).as_bytes(), b"20\r\nshort\r\n0\r\n\r\nOPTIONS icap://127.0.0.1/ ICAP/1.0\r\n\r\n"].concat(),
        [format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body={}\r\n\r\n{head}", head.len()).as_bytes(), b"xyz\r\nhello\r\n0\r\n\r\n"].concat(),
    ];
    for case in &cases {
        assert_refused(&pith, case).await;
    }
    assert_eq!(pith.counters.malformed.load(Ordering::Relaxed), cases.len() as u64);
}

#[tokio::test]
async fn a_short_body_waits_out_its_timeout_and_closes() {
    let pith = IcapPith::start("", "[upstream]\nbody_idle_timeout_ms = 200\n").await;
    let head = html_head(CLUTTERED.len());
    let mut c = Client::connect(pith.icap[0]).await;
    // A chunk that says 0x100 bytes, then silence: the connection is closed after the idle time.
    c.send(&[format!("RESPMOD icap://127.0.0.1/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body={}\r\n\r\n{head}", head.len()).as_bytes(), b"100\r\nshort"].concat()).await;
    assert!(c.is_closed().await);
}

/// A head far over the limit (1 MB) is answered 400, and the answer reaches the client: the
/// service reads and drops what the client still sends before it closes, instead of closing
/// with unread bytes (which resets the connection and loses the answer).
#[tokio::test]
async fn an_oversized_head_gets_its_400_not_a_reset() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pith = IcapPith::start("", "[limits]\nmax_header_bytes = 8192\n").await;
    let stream = tokio::net::TcpStream::connect(pith.icap[0]).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let head = format!("OPTIONS icap://127.0.0.1/ ICAP/1.0\r\nX: {}\r\n\r\n", "a".repeat(1 << 20));
    let writer = tokio::spawn(async move {
        let _ = write.write_all(head.as_bytes()).await;
        write
    });
    let mut answer = Vec::new();
    let got = tokio::time::timeout(std::time::Duration::from_secs(20), read.read_to_end(&mut answer)).await.expect("answered in time");
    let text = String::from_utf8_lossy(&answer);
    assert!(got.is_ok(), "the connection ended cleanly, not by a reset: {got:?} after {text:?}");
    assert!(text.starts_with("ICAP/1.0 400"), "{text:?}");
    drop(writer.await);
}
