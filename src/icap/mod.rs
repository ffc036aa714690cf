//! ICAP (RFC 3507) as pith speaks it: the message syntax, without I/O.
//!
//! A proxy such as Squid sends each response it wants adapted to an ICAP service: an ICAP head
//! (`RESPMOD icap://host/path ICAP/1.0` and its headers), then the encapsulated HTTP request
//! and response heads at the byte offsets its `Encapsulated` header gives, then the response
//! body in HTTP/1.1 chunked form, possibly only a preview of it first. This module turns those
//! bytes into values and the service's answers back into bytes; the listener that reads them
//! from a socket and runs the proxy's pipeline on the page is [`crate::net::icap`].
//!
//! - [`head`]: the ICAP head, its `Encapsulated` offsets and `Preview`, and the HTTP heads
//!   they point at.
//! - [`chunked`]: ICAP bodies: chunk sizes, the `ieof` extension that ends a preview early,
//!   and the chunked form of the bodies pith sends back.
//!
//! The parsers are pure functions over byte slices that say "need more" or fail with an
//! [`IcapError`] naming what was wrong. Everything is bounded by the caller's limits, and a
//! size or offset is checked before it is used, so a lying peer gets a 400, never a panic or a
//! read past what it sent.

pub mod chunked;
pub mod head;

pub use chunked::{Chunk, ChunkParser};
pub use head::{Encapsulated, HttpHead, IcapHead, Method, Section};

/// What was wrong with an ICAP message. Each is answered `400 Bad Request` and the connection
/// closed: after a framing error nothing that follows can be trusted to start a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IcapError {
    /// The ICAP head is larger than the limit, or has more header fields than allowed.
    #[error("the ICAP head is larger than {limit} (bytes or fields)")]
    HeadTooLarge {
        /// The limit passed.
        limit: usize,
    },
    /// The request line is not `METHOD URI ICAP/1.0`.
    #[error("bad request line: {line:?}")]
    RequestLine {
        /// The line, cut to 100 bytes.
        line: String,
    },
    /// A header line without a colon, with a bad name, or not text.
    #[error("bad header line: {line:?}")]
    HeaderLine {
        /// The line, cut to 100 bytes.
        line: String,
    },
    /// The `Encapsulated` header is missing (where needed) or does not parse.
    #[error("bad Encapsulated header {value:?}: {why}")]
    Encapsulated {
        /// Its value, cut to 100 bytes.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The `Preview` header is not a number within the limit.
    #[error("bad Preview header {value:?}")]
    Preview {
        /// Its value, cut to 100 bytes.
        value: String,
    },
    /// An encapsulated HTTP head does not parse, or does not end where the offsets say.
    #[error("bad encapsulated HTTP head: {why}")]
    HttpHead {
        /// What is wrong with it.
        why: &'static str,
    },
    /// A chunk size line does not parse, is too long, or its size is too large.
    #[error("bad chunk size line: {line:?}")]
    ChunkSize {
        /// The line, cut to 100 bytes.
        line: String,
    },
    /// A chunk's data is not followed by CRLF: its size lied.
    #[error("chunk data of {size} bytes is not followed by CRLF")]
    ChunkData {
        /// The size the chunk claimed.
        size: u64,
    },
    /// The body is larger than the limit for a message read whole.
    #[error("the body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: u64,
    },
}

/// `text` cut to 100 bytes (at a character boundary) for an error message.
fn excerpt(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(&text[..text.len().min(100)]);
    text.into_owned()
}
