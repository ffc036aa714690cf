//! Raw HTTP/1.1 over TCP, for requests a well-behaved client will not send (malformed lines,
//! hop-by-hop headers, pipelined keep-alive) and for reading responses byte for byte.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Guard against a hung test: no single raw read may wait longer than this. It is a ceiling
/// for a broken build, never a measurement.
pub const GUARD: Duration = Duration::from_secs(20);

/// A parsed response.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// The first value of a header (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as (lossy) text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A client connection speaking raw HTTP/1.1.
pub struct RawClient {
    reader: BufReader<TcpStream>,
}

impl RawClient {
    /// Connects to `addr`.
    pub async fn connect(addr: SocketAddr) -> RawClient {
        let stream = TcpStream::connect(addr).await.expect("connect to the proxy");
        RawClient { reader: BufReader::new(stream) }
    }

    /// Writes bytes as they are.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).await.expect("write to the proxy");
    }

    /// Reads one response; `head_only` for the answer to a HEAD or CONNECT request.
    pub async fn read_response(&mut self, head_only: bool) -> RawResponse {
        tokio::time::timeout(GUARD, read_response(&mut self.reader, head_only)).await.expect("a response within the guard time")
    }

    /// The connection itself, e.g. to speak another protocol after CONNECT.
    pub fn into_inner(self) -> BufReader<TcpStream> {
        self.reader
    }
}

/// Sends one request on a fresh connection and reads the response.
pub async fn exchange(addr: SocketAddr, request: &[u8]) -> RawResponse {
    let mut client = RawClient::connect(addr).await;
    client.send(request).await;
    client.read_response(false).await
}

/// Reads a response head and body from `reader`.
pub async fn read_response<R: AsyncBufRead + Unpin>(reader: &mut R, head_only: bool) -> RawResponse {
    let head = read_head(reader).await;
    let mut lines = head.lines();
    let status_line = lines.next().expect("a status line");
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut response = RawResponse { status, headers, body: Vec::new() };
    if head_only || status / 100 == 1 || status == 204 || status == 304 {
        return response;
    }
    if response.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        response.body = read_chunked(reader).await.expect("a complete chunked body");
    } else if let Some(len) = response.header("content-length") {
        let mut body = vec![0; len.parse().expect("numeric Content-Length")];
        reader.read_exact(&mut body).await.expect("the whole Content-Length body");
        response.body = body;
    } else {
        reader.read_to_end(&mut response.body).await.expect("a body ended by close");
    }
    response
}

/// Reads a message head up to and including the blank line; returns it without the blank line.
pub async fn read_head<R: AsyncBufRead + Unpin>(reader: &mut R) -> String {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).await.expect("read a head line");
        assert!(n > 0, "connection closed inside a message head; got so far: {head:?}");
        if line == "\r\n" || line == "\n" {
            return head;
        }
        head.push_str(&line);
    }
}

/// Reads one chunk of a chunked body: `Some(data)`, or `None` for the last chunk (its trailer
/// section consumed too). An error means the framing was broken or cut short.
pub async fn read_chunk<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut size_line = String::new();
    if reader.read_line(&mut size_line).await? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let size_text = size_line.trim().split(';').next().unwrap_or("");
    let size = usize::from_str_radix(size_text, 16).map_err(|_| std::io::Error::other(format!("bad chunk size {size_line:?}")))?;
    if size == 0 {
        loop {
            let mut trailer = String::new();
            if reader.read_line(&mut trailer).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if trailer == "\r\n" {
                return Ok(None);
            }
        }
    }
    let mut data = vec![0; size + 2];
    reader.read_exact(&mut data).await?;
    data.truncate(size);
    Ok(Some(data))
}

/// Reads a whole chunked body.
pub async fn read_chunked<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = read_chunk(reader).await? {
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Encodes `data` as one chunk.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// An absolute-form request with a matching Host header and `extra` header lines (each ending
/// in CRLF), no body.
pub fn request(method: &str, url: &str, extra: &str) -> Vec<u8> {
    let uri: http::Uri = url.parse().expect("an absolute URL");
    let host = uri.authority().expect("a URL with a host").as_str();
    format!("{method} {url} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n").into_bytes()
}
