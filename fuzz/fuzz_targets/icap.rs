//! An ICAP request as pith's ICAP service reads it (`src/icap/`): the ICAP head, its
//! `Encapsulated` offsets, the HTTP heads they point at, and the chunked body after them.
//!
//! Input: the raw bytes of an ICAP message (the seeds are RESPMOD and OPTIONS requests as
//! Squid sends them, with CRLF line ends).
//!
//! Properties:
//! - arbitrary bytes never panic;
//! - a head parsed took no more bytes than were given, and its `Encapsulated` sections lie in
//!   order within the head limit, the body entry last;
//! - an encapsulated response head that parses writes back to a head that parses to the same
//!   status and fields;
//! - the chunked body decodes to the same bytes and the same end fed whole or in pieces (the
//!   pieces' sizes taken from the input itself);
//! - any bytes, written as chunks in any split and ended, decode back to themselves.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pith::icap::chunked::{decode_all, encode_chunk, LAST_CHUNK};
use pith::icap::head::{parse_head, parse_http_head, write_http_response_head};
use pith::icap::{Chunk, ChunkParser, Section};

const LIMIT: usize = 8192;
const FIELDS: usize = 100;
const BODY_LIMIT: u64 = 1 << 20;

/// The body fed to a parser in pieces of the sizes `sizes` cycles through.
fn decode_in_pieces(body: &[u8], sizes: &[u8]) -> Result<Option<(Vec<u8>, bool)>, pith::icap::IcapError> {
    let mut parser = ChunkParser::new();
    let (mut out, mut pending, mut fed) = (Vec::new(), Vec::new(), 0usize);
    let mut turn = 0;
    loop {
        let step = parser.step(&pending)?;
        let used = step.used;
        match step.chunk {
            Some(Chunk::Data(d)) => {
                if out.len() as u64 + d.len() as u64 > BODY_LIMIT {
                    return Err(pith::icap::IcapError::BodyTooLarge { limit: BODY_LIMIT });
                }
                out.extend_from_slice(d);
                pending.drain(..used);
            }
            Some(Chunk::End { ieof }) => return Ok(Some((out, ieof))),
            None => {
                pending.drain(..used);
                if fed == body.len() {
                    return Ok(None);
                }
                let size = usize::from(sizes.get(turn % sizes.len().max(1)).copied().unwrap_or(7)).max(1);
                turn += 1;
                let next = (fed + size).min(body.len());
                pending.extend_from_slice(&body[fed..next]);
                fed = next;
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // Any bytes as a payload: written as chunks and ended, they decode back.
    let mut encoded = Vec::new();
    for piece in data.chunks(usize::from(data.first().copied().unwrap_or(1)).max(1)) {
        encode_chunk(piece, &mut encoded);
    }
    encoded.extend_from_slice(LAST_CHUNK);
    let round = decode_all(&encoded, BODY_LIMIT).expect("pith's own chunks parse").expect("and are complete");
    assert_eq!((round.0.as_slice(), round.1, round.2), (data, false, encoded.len()));

    let Ok(Some((head, used))) = parse_head(data, LIMIT, FIELDS) else { return };
    assert!(used <= data.len());
    let rest = &data[used..];
    let Some(enc) = head.encapsulated else { return };
    assert!(enc.body.is_body() && enc.body_offset <= LIMIT);
    for range in [&enc.req_hdr, &enc.res_hdr].into_iter().flatten() {
        assert!(range.start < range.end && range.end <= enc.body_offset, "{range:?} past {}", enc.body_offset);
    }
    if let (Some(a), Some(b)) = (&enc.req_hdr, &enc.res_hdr) {
        assert!(a.end <= b.start);
    }
    if rest.len() < enc.body_offset {
        return;
    }
    if let Some(r) = &enc.req_hdr {
        let _ = parse_http_head(&rest[r.clone()], true, FIELDS);
    }
    if let Some(r) = &enc.res_hdr {
        if let Ok(res) = parse_http_head(&rest[r.clone()], false, FIELDS) {
            let status = http::StatusCode::from_u16(res.status).expect("a parsed status is valid");
            let written = write_http_response_head(status, &res.headers);
            let again = parse_http_head(&written, false, FIELDS).expect("a written head parses");
            assert_eq!((again.status, &again.headers), (res.status, &res.headers));
        }
    }
    if enc.body == Section::NullBody {
        return;
    }
    let body = &rest[enc.body_offset..];
    let whole = decode_all(body, BODY_LIMIT).map(|o| o.map(|(d, ieof, _)| (d, ieof)));
    let pieces = decode_in_pieces(body, &data[..data.len().min(8)]);
    match (whole, pieces) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the split changed the body"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("whole: {a:?}, in pieces: {b:?}"),
    }
});
