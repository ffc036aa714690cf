//! ICAP heads (RFC 3507 §4.3): the request line and header fields, the `Encapsulated` offsets
//! (§4.4) and `Preview` (§4.5), and the HTTP heads the offsets point at.
//!
//! Parsing is strict where framing depends on it (CRLF line ends, the `ICAP/1.0` version,
//! decimal offsets that start at 0 and grow, an HTTP head that ends exactly where the next
//! section starts) and lenient elsewhere (unknown headers are kept, names compare without case).

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::StatusCode;

use super::{excerpt, IcapError};

/// An ICAP method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// `OPTIONS`: what the service does.
    Options,
    /// `RESPMOD`: adapt a response.
    Respmod,
    /// `REQMOD`: adapt a request (pith offers none).
    Reqmod,
    /// Any other token.
    Other(String),
}

/// A parsed ICAP request head.
#[derive(Debug, Clone)]
pub struct IcapHead {
    /// The method.
    pub method: Method,
    /// The `icap://` URI as sent.
    pub uri: String,
    /// Every header field, names as sent, in order.
    pub headers: Vec<(String, String)>,
    /// The `Encapsulated` offsets, when the header is present.
    pub encapsulated: Option<Encapsulated>,
    /// `Preview: n`: the first `n` body bytes come first, then the client waits for
    /// `100 Continue` unless the preview ended with `ieof`.
    pub preview: Option<u64>,
    /// `Allow: 204`: the client keeps its copy, so "no change" may be answered without a body.
    pub allow_204: bool,
    /// `Connection: close`: the client will not send another request on this connection.
    pub close: bool,
}

impl IcapHead {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A section named in `Encapsulated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// `req-hdr`: the HTTP request head.
    ReqHdr,
    /// `res-hdr`: the HTTP response head.
    ResHdr,
    /// `req-body`: a request body follows, chunked.
    ReqBody,
    /// `res-body`: a response body follows, chunked.
    ResBody,
    /// `opt-body`: an OPTIONS body follows, chunked.
    OptBody,
    /// `null-body`: no body.
    NullBody,
}

impl Section {
    fn from_name(name: &str) -> Option<Section> {
        Some(match name {
            "req-hdr" => Section::ReqHdr,
            "res-hdr" => Section::ResHdr,
            "req-body" => Section::ReqBody,
            "res-body" => Section::ResBody,
            "opt-body" => Section::OptBody,
            "null-body" => Section::NullBody,
            _ => return None,
        })
    }

    /// True for the body entries, one of which ends every `Encapsulated` list.
    pub fn is_body(self) -> bool {
        matches!(self, Section::ReqBody | Section::ResBody | Section::OptBody | Section::NullBody)
    }
}

/// The `Encapsulated` header, checked: offsets from 0, growing, each header section at most
/// once and in order, and exactly one body entry, last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encapsulated {
    /// The HTTP request head's bytes, as a range of the encapsulated part.
    pub req_hdr: Option<std::ops::Range<usize>>,
    /// The HTTP response head's bytes.
    pub res_hdr: Option<std::ops::Range<usize>>,
    /// The body entry.
    pub body: Section,
    /// Where the body starts: the length of the header sections together.
    pub body_offset: usize,
}

impl Encapsulated {
    /// Parses a header value such as `req-hdr=0, res-hdr=137, res-body=296`. An offset past
    /// `limit` is refused: the heads it would ask for are larger than pith reads.
    pub fn parse(value: &str, limit: usize) -> Result<Encapsulated, IcapError> {
        let bad = |why| IcapError::Encapsulated { value: excerpt(value.as_bytes()), why };
        let mut entries: Vec<(Section, usize)> = Vec::new();
        for entry in value.split(',') {
            let (name, offset) = entry.trim().split_once('=').ok_or_else(|| bad("an entry is not name=offset"))?;
            let section = Section::from_name(name.trim()).ok_or_else(|| bad("unknown section name"))?;
            let offset = offset.trim();
            if offset.is_empty() || offset.len() > 10 || !offset.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("an offset is not a decimal number"));
            }
            let offset: usize = offset.parse().map_err(|_| bad("an offset is not a decimal number"))?;
            if offset > limit {
                return Err(bad("an offset is past the head size limit"));
            }
            entries.push((section, offset));
        }
        let Some(&(body, body_offset)) = entries.last() else { return Err(bad("empty")) };
        if !body.is_body() {
            return Err(bad("the last entry is not a body (req-body, res-body, opt-body or null-body)"));
        }
        let heads = &entries[..entries.len() - 1];
        if heads.iter().any(|(s, _)| s.is_body()) {
            return Err(bad("a body entry is not last"));
        }
        if entries[0].1 != 0 {
            return Err(bad("the first offset is not 0"));
        }
        if entries.windows(2).any(|w| w[1].1 <= w[0].1) {
            return Err(bad("offsets do not grow"));
        }
        let (mut req_hdr, mut res_hdr) = (None, None);
        for (i, &(section, start)) in heads.iter().enumerate() {
            let range = start..entries[i + 1].1;
            // res-hdr comes after req-hdr, and each at most once.
            if res_hdr.is_some() || (section == Section::ReqHdr && req_hdr.is_some()) {
                return Err(bad("a head section repeats or comes out of order"));
            }
            if section == Section::ReqHdr {
                req_hdr = Some(range);
            } else {
                res_hdr = Some(range);
            }
        }
        Ok(Encapsulated { req_hdr, res_hdr, body, body_offset })
    }
}

/// Parses the ICAP head at the start of `buf`: `Ok(None)` while it is incomplete, else the
/// head and the bytes it took. Empty lines before the request line are skipped (RFC 9112
/// §2.2). `limit` bounds the head's bytes and the `Encapsulated` offsets; `max_fields` its
/// header fields.
pub fn parse_head(buf: &[u8], limit: usize, max_fields: usize) -> Result<Option<(IcapHead, usize)>, IcapError> {
    let mut start = 0;
    while buf[start..].starts_with(b"\r\n") {
        start += 2;
        if start > limit {
            return Err(IcapError::HeadTooLarge { limit });
        }
    }
    let window = &buf[start..buf.len().min(start + limit)];
    let Some(end) = memchr::memmem::find(window, b"\r\n\r\n") else {
        return if window.len() >= limit { Err(IcapError::HeadTooLarge { limit }) } else { Ok(None) };
    };
    let mut lines = window[..end].split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let first = lines.next().unwrap_or_default();
    let (method, uri) = request_line(first)?;
    let mut headers = Vec::new();
    for line in lines {
        if headers.len() >= max_fields {
            return Err(IcapError::HeadTooLarge { limit: max_fields });
        }
        headers.push(field(line)?);
    }
    // Every line but the last was split at "\n"; a bare LF inside would have left a "\r"-less
    // line that `field` accepts, so the head's line ends are checked as a whole here.
    if window[..end].windows(2).filter(|w| w[1] == b'\n').any(|w| w[0] != b'\r') || window.first() == Some(&b'\n') {
        return Err(IcapError::HeaderLine { line: "a line ends in a bare LF".to_string() });
    }
    let mut head = IcapHead { method, uri, headers, encapsulated: None, preview: None, allow_204: false, close: false };
    if let Some(v) = head.header("encapsulated") {
        head.encapsulated = Some(Encapsulated::parse(v, limit)?);
    }
    if let Some(v) = head.header("preview") {
        let n = v.trim();
        let ok = !n.is_empty() && n.len() <= 10 && n.bytes().all(|b| b.is_ascii_digit());
        head.preview = Some(n.parse().ok().filter(|_| ok).ok_or_else(|| IcapError::Preview { value: excerpt(v.as_bytes()) })?);
    }
    head.allow_204 = list_has(&head, "allow", "204");
    head.close = list_has(&head, "connection", "close");
    Ok(Some((head, start + end + 4)))
}

/// True when a comma-separated header `name` (every occurrence) lists `token`.
fn list_has(head: &IcapHead, name: &str, token: &str) -> bool {
    head.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).flat_map(|(_, v)| v.split(',')).any(|t| t.trim().eq_ignore_ascii_case(token))
}

fn request_line(line: &[u8]) -> Result<(Method, String), IcapError> {
    let bad = || IcapError::RequestLine { line: excerpt(line) };
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let mut parts = text.split(' ');
    let (Some(method), Some(uri), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else { return Err(bad()) };
    if version != "ICAP/1.0" || uri.is_empty() || method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase() || b == b'-') {
        return Err(bad());
    }
    if !uri.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad());
    }
    let method = match method {
        "OPTIONS" => Method::Options,
        "RESPMOD" => Method::Respmod,
        "REQMOD" => Method::Reqmod,
        other => Method::Other(other.to_string()),
    };
    Ok((method, uri.to_string()))
}

/// One `name: value` line; the name a token, the value visible text (obsolete line folding is
/// refused, as RFC 9112 §5.2 allows).
fn field(line: &[u8]) -> Result<(String, String), IcapError> {
    let bad = || IcapError::HeaderLine { line: excerpt(line) };
    let colon = line.iter().position(|&b| b == b':').ok_or_else(bad)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || HeaderName::from_bytes(name).is_err() {
        return Err(bad());
    }
    let value = std::str::from_utf8(value).map_err(|_| bad())?.trim_matches([' ', '\t']);
    if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return Err(bad());
    }
    Ok((String::from_utf8_lossy(name).into_owned(), value.to_string()))
}

/// An encapsulated HTTP head: the start line's parts and the header fields.
#[derive(Debug, Clone)]
pub struct HttpHead {
    /// A request's method, or empty for a response.
    pub method: String,
    /// A request's target, or empty for a response.
    pub target: String,
    /// A response's status, or 0 for a request.
    pub status: u16,
    /// The header fields.
    pub headers: HeaderMap,
}

/// Parses an encapsulated HTTP head that must fill `bytes` exactly, ending in an empty line
/// (the offsets say where it ends: anything after its blank line means they lied).
pub fn parse_http_head(bytes: &[u8], is_request: bool, max_fields: usize) -> Result<HttpHead, IcapError> {
    let bad = |why| IcapError::HttpHead { why };
    let end = memchr::memmem::find(bytes, b"\r\n\r\n").ok_or(bad("no blank line ends it"))?;
    if end + 4 != bytes.len() {
        return Err(bad("it does not end where the next section starts"));
    }
    let mut lines = bytes[..end].split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let first = std::str::from_utf8(lines.next().unwrap_or_default()).map_err(|_| bad("the start line is not text"))?;
    let mut head = HttpHead { method: String::new(), target: String::new(), status: 0, headers: HeaderMap::new() };
    let mut parts = first.splitn(3, ' ');
    let (a, b, c) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next());
    if is_request {
        let version = c.ok_or(bad("the request line has no version"))?;
        if !matches!(version, "HTTP/1.0" | "HTTP/1.1") || a.is_empty() || b.is_empty() || http::Method::from_bytes(a.as_bytes()).is_err() {
            return Err(bad("the request line is not METHOD TARGET HTTP/1.x"));
        }
        (head.method, head.target) = (a.to_string(), b.to_string());
    } else {
        if !matches!(a, "HTTP/1.0" | "HTTP/1.1") || b.len() != 3 {
            return Err(bad("the status line is not HTTP/1.x CODE REASON"));
        }
        head.status = StatusCode::from_bytes(b.as_bytes()).map_err(|_| bad("the status code is not three digits"))?.as_u16();
    }
    for line in lines {
        if head.headers.len() >= max_fields {
            return Err(bad("too many header fields"));
        }
        let (name, value) = field(line).map_err(|_| bad("a header line does not parse"))?;
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("a header name does not parse"))?;
        let value = HeaderValue::from_str(&value).map_err(|_| bad("a header value does not parse"))?;
        head.headers.append(name, value);
    }
    Ok(head)
}

/// An HTTP/1.1 response head as bytes, ending in its blank line: the ICAP service's
/// encapsulated heads and the proxy's interim (1xx) responses are written by this one function.
pub fn write_http_response_head(status: StatusCode, headers: &HeaderMap) -> Vec<u8> {
    let reason = match status.as_u16() {
        103 => "Early Hints",
        code => status.canonical_reason().unwrap_or(if code < 200 { "Informational" } else { "Unknown" }),
    };
    let mut out = format!("HTTP/1.1 {} {reason}\r\n", status.as_str()).into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 8192;

    fn head(text: &str) -> Result<Option<(IcapHead, usize)>, IcapError> {
        parse_head(text.as_bytes(), LIMIT, 100)
    }

    #[test]
    fn respmod_head_parses() {
        let text = "RESPMOD icap://127.0.0.1:1344/respmod ICAP/1.0\r\nHost: 127.0.0.1\r\nEncapsulated: req-hdr=0, res-hdr=40, res-body=90\r\nPreview: 1024\r\nAllow: 204, trailers\r\n\r\nrest";
        let (h, used) = head(text).unwrap().unwrap();
        assert_eq!(h.method, Method::Respmod);
        assert_eq!(h.uri, "icap://127.0.0.1:1344/respmod");
        assert_eq!(used, text.len() - 4);
        assert_eq!((h.preview, h.allow_204, h.close), (Some(1024), true, false));
        let e = h.encapsulated.unwrap();
        assert_eq!((e.req_hdr, e.res_hdr, e.body, e.body_offset), (Some(0..40), Some(40..90), Section::ResBody, 90));
    }

    #[test]
    fn incomplete_head_asks_for_more() {
        assert!(head("OPTIONS icap://x/ ICAP/1.0\r\nHost: x\r\n").unwrap().is_none());
        assert!(head("").unwrap().is_none());
    }

    #[test]
    fn leading_empty_lines_are_skipped() {
        let (h, used) = head("\r\n\r\nOPTIONS icap://x/ ICAP/1.0\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.method, used), (Method::Options, 4 + 30));
    }

    macro_rules! bad_head {
        ($name:ident, $text:expr) => {
            #[test]
            fn $name() {
                let err = head($text).unwrap_err();
                assert!(!err.to_string().is_empty());
            }
        };
    }

    bad_head!(http_version, "OPTIONS icap://x/ HTTP/1.1\r\n\r\n");
    bad_head!(lower_case_method, "options icap://x/ ICAP/1.0\r\n\r\n");
    bad_head!(two_spaces, "OPTIONS  icap://x/ ICAP/1.0\r\n\r\n");
    bad_head!(no_colon, "OPTIONS icap://x/ ICAP/1.0\r\nHost\r\n\r\n");
    bad_head!(bad_name, "OPTIONS icap://x/ ICAP/1.0\r\nHo st: x\r\n\r\n");
    bad_head!(bare_lf, "OPTIONS icap://x/ ICAP/1.0\nHost: x\r\n\r\n");
    bad_head!(control_in_value, "OPTIONS icap://x/ ICAP/1.0\r\nHost: a\x01b\r\n\r\n");
    bad_head!(preview_not_number, "RESPMOD icap://x/ ICAP/1.0\r\nPreview: -1\r\n\r\n");
    bad_head!(preview_huge, "RESPMOD icap://x/ ICAP/1.0\r\nPreview: 99999999999999999999\r\n\r\n");
    bad_head!(encapsulated_not_growing, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: req-hdr=0, res-hdr=0, res-body=5\r\n\r\n");
    bad_head!(encapsulated_not_from_zero, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-hdr=3, res-body=5\r\n\r\n");
    bad_head!(encapsulated_no_body, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-hdr=0\r\n\r\n");
    bad_head!(encapsulated_body_first, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-body=0, res-hdr=5\r\n\r\n");
    bad_head!(encapsulated_past_limit, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body=99999\r\n\r\n");
    bad_head!(encapsulated_negative, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-body=-5\r\n\r\n");
    bad_head!(encapsulated_unknown, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: foo=0, null-body=5\r\n\r\n");
    bad_head!(encapsulated_repeat, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-hdr=0, res-hdr=3, null-body=5\r\n\r\n");
    bad_head!(encapsulated_order, "RESPMOD icap://x/ ICAP/1.0\r\nEncapsulated: res-hdr=0, req-hdr=3, null-body=5\r\n\r\n");

    #[test]
    fn head_past_the_limit_is_refused() {
        let text = format!("OPTIONS icap://x/ ICAP/1.0\r\nX: {}\r\n", "a".repeat(LIMIT));
        assert_eq!(head(&text).unwrap_err(), IcapError::HeadTooLarge { limit: LIMIT });
        let many = format!("OPTIONS icap://x/ ICAP/1.0\r\n{}\r\n", "X: y\r\n".repeat(101));
        assert!(matches!(head(&many).unwrap_err(), IcapError::HeadTooLarge { .. }));
    }

    #[test]
    fn http_heads_parse_and_must_fill_their_section() {
        let req = parse_http_head(b"GET http://example.test/a HTTP/1.1\r\nHost: example.test\r\n\r\n", true, 100).unwrap();
        assert_eq!((req.method.as_str(), req.target.as_str()), ("GET", "http://example.test/a"));
        let res = parse_http_head(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", false, 100).unwrap();
        assert_eq!(res.status, 200);
        assert_eq!(res.headers["content-type"], "text/html");
        assert!(parse_http_head(b"HTTP/1.1 200 OK\r\n\r\nextra", false, 100).is_err(), "an offset past the head");
        assert!(parse_http_head(b"HTTP/1.1 200 OK\r\nA: b\r\n", false, 100).is_err(), "an offset inside the head");
        assert!(parse_http_head(b"HTTP/1.1 2000 OK\r\n\r\n", false, 100).is_err());
        assert!(parse_http_head(b"ICAP/1.0 200 OK\r\n\r\n", false, 100).is_err());
        assert!(parse_http_head(b"GET /\r\n\r\n", true, 100).is_err());
        assert!(parse_http_head(b"HTTP/1.1 200 OK\r\nA: b\r\nC: d\r\n\r\n", false, 1).is_err());
    }

    #[test]
    fn response_head_round_trips() {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("text/html"));
        let bytes = write_http_response_head(StatusCode::OK, &h);
        assert_eq!(bytes, b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n");
        assert_eq!(parse_http_head(&bytes, false, 10).unwrap().headers, h);
    }
}
