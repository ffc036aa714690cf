//! ICAP bodies (RFC 3507 §4.4.1): HTTP/1.1 chunked coding, where a last chunk of
//! `0; ieof` says the preview was the whole body.
//!
//! [`ChunkParser`] is a push parser: the caller hands it what it has, takes the data and the
//! count of bytes used, and reads more when it says so. A chunk's size is checked before any
//! of its bytes are used, and the CRLF after its data is required: a peer whose sizes lie is
//! found at the first chunk that does not end where it said.

use super::{excerpt, IcapError};

/// The longest chunk size line (size and extensions) read.
pub const MAX_SIZE_LINE: usize = 1024;

/// The largest chunk size accepted: 1 TiB, far past any limit, and with no overflow in sums.
const MAX_CHUNK: u64 = 1 << 40;

/// What the parser found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// Body bytes (part or all of a chunk's data).
    Data(&'a [u8]),
    /// The last chunk: the body, or its preview, ended. `ieof` says the preview was all of it.
    End {
        /// `0; ieof`.
        ieof: bool,
    },
}

/// One step of parsing: the bytes used, and what they held, if anything yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<'a> {
    /// Bytes of the input used; the caller drops them before the next call.
    pub used: usize,
    /// What was found; `None` means more input is needed.
    pub chunk: Option<Chunk<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk size line.
    Size,
    /// Inside a chunk's data, this many bytes left; `size` is the chunk's, for errors.
    Data { left: u64, size: u64 },
    /// Expecting the CRLF after a chunk's data.
    DataEnd { size: u64 },
    /// After the last chunk's size line, expecting the empty line that ends the body.
    LastEnd { ieof: bool },
    /// The body ended.
    Done,
}

/// Parses one chunked body (or a preview, then its continuation after [`ChunkParser::reset`]).
#[derive(Debug, Clone)]
pub struct ChunkParser {
    state: State,
}

impl Default for ChunkParser {
    fn default() -> Self {
        ChunkParser { state: State::Size }
    }
}

impl ChunkParser {
    /// A parser at the start of a body.
    pub fn new() -> ChunkParser {
        ChunkParser::default()
    }

    /// True once the last chunk was read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Starts over, for the rest of a body after a preview.
    pub fn reset(&mut self) {
        self.state = State::Size;
    }

    /// Parses from `input`. Returns the bytes used and what they held: data, the end, or
    /// nothing yet (read more, then call again with what is left).
    pub fn step<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, IcapError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match self.state {
                State::Done => return Ok(Step { used, chunk: None }),
                State::Size => {
                    let window = &rest[..rest.len().min(MAX_SIZE_LINE)];
                    let Some(eol) = memchr::memmem::find(window, b"\r\n") else {
                        if window.len() >= MAX_SIZE_LINE {
                            return Err(IcapError::ChunkSize { line: excerpt(window) });
                        }
                        return Ok(Step { used, chunk: None });
                    };
                    let (size, ieof) = size_line(&window[..eol])?;
                    used += eol + 2;
                    self.state = if size == 0 { State::LastEnd { ieof } } else { State::Data { left: size, size } };
                }
                State::Data { left, size } => {
                    if rest.is_empty() {
                        return Ok(Step { used, chunk: None });
                    }
                    let take = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let left = left - take as u64;
                    self.state = if left == 0 { State::DataEnd { size } } else { State::Data { left, size } };
                    return Ok(Step { used: used + take, chunk: Some(Chunk::Data(&rest[..take])) });
                }
                State::DataEnd { .. } | State::LastEnd { .. } if rest.len() < 2 => return Ok(Step { used, chunk: None }),
                State::DataEnd { size } => {
                    if &rest[..2] != b"\r\n" {
                        return Err(IcapError::ChunkData { size });
                    }
                    used += 2;
                    self.state = State::Size;
                }
                State::LastEnd { ieof } => {
                    if &rest[..2] != b"\r\n" {
                        // Trailers are not offered (no `Allow: trailers`), so only CRLF may follow.
                        return Err(IcapError::ChunkSize { line: excerpt(rest) });
                    }
                    self.state = State::Done;
                    return Ok(Step { used: used + 2, chunk: Some(Chunk::End { ieof }) });
                }
            }
        }
    }
}

/// A chunk size line: hex digits, then extensions after `;` (`ieof` among them, or not).
fn size_line(line: &[u8]) -> Result<(u64, bool), IcapError> {
    let bad = || IcapError::ChunkSize { line: excerpt(line) };
    let text = std::str::from_utf8(line).map_err(|_| bad())?;
    let (digits, extensions) = text.split_once(';').unwrap_or((text, ""));
    let digits = digits.trim_end_matches([' ', '\t']);
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let size = u64::from_str_radix(digits, 16).map_err(|_| bad())?;
    if size > MAX_CHUNK || text.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return Err(bad());
    }
    let ieof = !extensions.is_empty() && extensions.split(';').any(|e| e.trim().eq_ignore_ascii_case("ieof"));
    Ok((size, ieof))
}

/// Appends `data` as one chunk (nothing for empty data: an empty chunk would end the body).
pub fn encode_chunk(data: &[u8], out: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The last chunk of a body pith sends.
pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Parses a whole chunked body in one go (tests and the fuzz target): its data and whether
/// it ended with `ieof`, or `None` when it is incomplete.
pub fn decode_all(input: &[u8], limit: u64) -> Result<Option<(Vec<u8>, bool, usize)>, IcapError> {
    let mut parser = ChunkParser::new();
    let (mut out, mut at) = (Vec::new(), 0);
    loop {
        let step = parser.step(&input[at..])?;
        at += step.used;
        match step.chunk {
            None => return Ok(None),
            Some(Chunk::Data(d)) => {
                if out.len() as u64 + d.len() as u64 > limit {
                    return Err(IcapError::BodyTooLarge { limit });
                }
                out.extend_from_slice(d);
            }
            Some(Chunk::End { ieof }) => return Ok(Some((out, ieof, at))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_decode() {
        let (data, ieof, used) = decode_all(b"5\r\nhello\r\n1;x=y\r\n \r\n0\r\n\r\nNEXT", 100).unwrap().unwrap();
        assert_eq!((data.as_slice(), ieof, used), (&b"hello "[..], false, 25));
    }

    #[test]
    fn ieof_is_seen() {
        assert!(decode_all(b"3\r\nabc\r\n0; ieof\r\n\r\n", 100).unwrap().unwrap().1);
        assert_eq!(decode_all(b"0;ieof\r\n\r\n", 100).unwrap().unwrap(), (Vec::new(), true, 10));
    }

    #[test]
    fn incomplete_bodies_ask_for_more() {
        for text in [&b""[..], b"5\r\nhel", b"5\r\nhello", b"5\r\nhello\r", b"5\r\nhello\r\n0\r\n", b"5\r\nhello\r\n0\r\n\r"] {
            assert_eq!(decode_all(text, 100).unwrap(), None, "{:?}", String::from_utf8_lossy(text));
        }
    }

    macro_rules! bad_body {
        ($name:ident, $text:expr) => {
            #[test]
            fn $name() {
                assert!(decode_all($text, 1 << 20).is_err());
            }
        };
    }

    bad_body!(size_too_short, b"3\r\nhello\r\n0\r\n\r\n");
    bad_body!(size_too_long, b"9\r\nhello\r\n0\r\n\r\nmore bytes");
    bad_body!(size_not_hex, b"zz\r\nhello\r\n0\r\n\r\n");
    bad_body!(size_negative, b"-5\r\nhello\r\n0\r\n\r\n");
    bad_body!(size_huge, b"ffffffffffffffffff\r\n");
    bad_body!(size_empty, b"\r\nhello\r\n");
    bad_body!(trailer_after_last, b"0\r\nX: y\r\n\r\n");

    #[test]
    fn body_past_limit() {
        assert_eq!(decode_all(b"5\r\nhello\r\n0\r\n\r\n", 3), Err(IcapError::BodyTooLarge { limit: 3 }));
    }

    #[test]
    fn an_endless_size_line_is_refused() {
        let line = vec![b'1'; MAX_SIZE_LINE + 1];
        assert!(decode_all(&line, 100).is_err());
        let mut ext = b"1;".to_vec();
        ext.extend(vec![b'a'; MAX_SIZE_LINE]);
        assert!(decode_all(&ext, 100).is_err());
    }

    #[test]
    fn encoded_bodies_decode_in_any_split() {
        let mut body = Vec::new();
        for piece in [&b"<html>"[..], b"", b"x".repeat(300).as_slice(), b"</html>"] {
            encode_chunk(piece, &mut body);
        }
        body.extend_from_slice(LAST_CHUNK);
        let want: Vec<u8> = [&b"<html>"[..], &b"x".repeat(300), b"</html>"].concat();
        // Byte by byte: every state must cope with input that stops anywhere.
        let (mut parser, mut got, mut pending, mut ended) = (ChunkParser::new(), Vec::new(), Vec::new(), false);
        for &b in &body {
            pending.push(b);
            loop {
                let step = parser.step(&pending).unwrap();
                let used = step.used;
                match step.chunk {
                    Some(Chunk::Data(d)) => got.extend_from_slice(d),
                    Some(Chunk::End { ieof }) => ended = !ieof,
                    None => {
                        pending.drain(..used);
                        break;
                    }
                }
                pending.drain(..used);
            }
        }
        assert!(ended && parser.is_done());
        assert_eq!(got, want);
    }
}
