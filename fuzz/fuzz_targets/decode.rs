//! The content decoders (gzip, deflate as zlib and raw, br, zstd, stacked) on arbitrary bytes
//! and on streams encoded from arbitrary bytes.
//!
//! Input: a payload followed by 4 control bytes: the mode and coding stack, two cut positions,
//! and the cap on decoded bytes (and, in round trips, zlib or raw deflate).
//!
//! Properties, for every coding stack:
//! - arbitrary bytes never panic and never yield more than the cap, counted over every piece a
//!   streaming decoder returns (and by `total_out`);
//! - chunking-invariant: the input fed whole and in three chunks (cut anywhere) gives the same
//!   bytes, or the same kind of error (one exception: with zstd or brotli in the stack, a body
//!   both over the cap and corrupt may be reported as either); a spent decoder repeats its
//!   error;
//! - round trip: the payload encoded (with pith's encoder, fed in chunks, or as raw deflate)
//!   decodes to the payload, whole and in chunks, when it fits the cap, and is refused as over
//!   the limit when it does not; a strict prefix of the stream never decodes cleanly.

#![no_main]

use std::io::Write;
use std::mem::discriminant;

use flate2::write::DeflateEncoder;
use flate2::Compression;
use libfuzzer_sys::fuzz_target;
use pith::body::{decode_all, Coding, DecodeError, Decoder, Encoder};
use pith_fuzz::{chunks, cuts, split_control};

use Coding::{Brotli, Deflate, Gzip, Identity, Zstd};

/// Coding stacks in the order they were applied, as `Content-Encoding` lists them.
const STACKS: &[&[Coding]] = &[
    &[Gzip],
    &[Deflate],
    &[Brotli],
    &[Zstd],
    &[Identity],
    &[],
    &[Gzip, Brotli],
    &[Brotli, Gzip],
    &[Deflate, Zstd, Gzip],
    &[Gzip, Gzip],
    &[Zstd, Deflate],
    &[Identity, Brotli, Identity],
];

fuzz_target!(|data: &[u8]| {
    let (payload, control) = split_control::<4>(data);
    let stack = STACKS[usize::from(control[0] & 0x7f) % STACKS.len()];
    let round_trip = control[0] & 0x80 != 0;
    let limit = match control[3] % 4 {
        0 => 64,
        1 => 4096,
        2 => 1 << 20,
        _ => payload.len() as u64,
    };
    if round_trip {
        check_round_trip(stack, payload, limit, control);
    } else {
        check_arbitrary(stack, payload, limit, &cuts(payload.len(), &control[1..3]));
    }
});

/// Arbitrary bytes: bounded output, same result whole and chunked.
fn check_arbitrary(stack: &[Coding], input: &[u8], limit: u64, at: &[usize]) {
    let whole = decode_all(stack, input, limit);
    if let Ok(out) = &whole {
        assert!(out.len() as u64 <= limit, "{stack:?}: {} bytes over the {limit}-byte cap", out.len());
    }
    let chunked = decode_chunks(stack, input, limit, at);
    same_result(stack, at, &whole, &chunked);
}

/// Feeds `input` cut at `at`, checking the cap on the way; the concatenated output or the
/// first error.
fn decode_chunks(stack: &[Coding], input: &[u8], limit: u64, at: &[usize]) -> Result<Vec<u8>, DecodeError> {
    let mut decoder = Decoder::new(stack, limit);
    let mut out = Vec::new();
    let parts = chunks(input, at);
    let last = parts.len() - 1;
    for (i, part) in parts.into_iter().enumerate() {
        let result = decoder.decode(part, i == last);
        assert!(decoder.total_out() <= limit, "{stack:?}: total_out over the cap");
        match result {
            Ok(piece) => out.extend(piece),
            Err(err) => {
                let again = decoder.decode(b"", true).expect_err("a spent decoder keeps failing");
                assert_eq!(discriminant(&again), discriminant(&err), "{stack:?}: replayed error differs");
                return Err(err);
            }
        }
        assert!(out.len() as u64 <= limit, "{stack:?}: {} bytes over the {limit}-byte cap", out.len());
    }
    Ok(out)
}

fn same_result(
    stack: &[Coding],
    at: &[usize],
    whole: &Result<Vec<u8>, DecodeError>,
    chunked: &Result<Vec<u8>, DecodeError>,
) {
    match (whole, chunked) {
        (Ok(a), Ok(b)) => assert!(a == b, "{stack:?}: chunking at {at:?} changed the output"),
        (Err(a), Err(b)) if discriminant(a) == discriminant(b) => {}
        // zstd and brotli drop the output they decoded in the call that fails, so a body both
        // over the cap and corrupt is judged by where the chunks end (see the README).
        (Err(a), Err(b)) if drops_output_on_error(stack) && corrupt_or_over(a) && corrupt_or_over(b) => {}
        (a, b) => panic!("{stack:?}: chunking at {at:?} changed the outcome: {a:?} vs {b:?}"),
    }
}

fn drops_output_on_error(stack: &[Coding]) -> bool {
    stack.iter().any(|c| matches!(c, Zstd | Brotli))
}

fn corrupt_or_over(err: &DecodeError) -> bool {
    matches!(err, DecodeError::Corrupt { .. } | DecodeError::LimitExceeded { .. })
}

/// Encodes `payload` with each coding of `stack` in turn, as a server would.
fn encode_stack(stack: &[Coding], payload: &[u8], at: &[usize], raw_deflate: bool) -> Vec<u8> {
    let mut data = payload.to_vec();
    for &coding in stack {
        data = if coding == Deflate && raw_deflate {
            let mut encoder = DeflateEncoder::new(Vec::new(), Compression::fast());
            encoder.write_all(&data).expect("writing to a Vec");
            encoder.finish().expect("writing to a Vec")
        } else {
            let mut encoder = Encoder::new(coding);
            let mut out = Vec::new();
            let cut: Vec<usize> = at.iter().map(|&c| c.min(data.len())).collect();
            for part in chunks(&data, &cut) {
                out.extend(encoder.encode(part, false).expect("encoding into memory"));
            }
            out.extend(encoder.encode(b"", true).expect("encoding into memory"));
            out
        };
    }
    data
}

/// Control bytes 1 and 2 cut the payload for the encoder, then the stream for the decoder, and
/// byte 2 also places the cut of the truncated stream.
fn check_round_trip(stack: &[Coding], payload: &[u8], limit: u64, control: [u8; 4]) {
    let at = cuts(payload.len(), &control[1..3]);
    let encoded = encode_stack(stack, payload, &at, control[3] & 4 != 0);
    let stacked = stack.iter().filter(|&&c| c != Identity).count() > 1;
    let whole = decode_all(stack, &encoded, limit);
    match &whole {
        Ok(out) => assert!(out == payload, "{stack:?}: round trip changed the payload"),
        // The cap also bounds each intermediate stream, so a stacked body whose inner stream
        // is larger than the payload may be refused below the payload's size (documented).
        Err(DecodeError::LimitExceeded { .. }) if payload.len() as u64 > limit || stacked => {}
        Err(err) => panic!("{stack:?}: round trip of {} bytes under a {limit}-byte cap: {err:?}", payload.len()),
    }
    let cut_encoded = cuts(encoded.len(), &control[1..3]);
    let chunked = decode_chunks(stack, &encoded, limit, &cut_encoded);
    same_result(stack, &cut_encoded, &whole, &chunked);

    if stack.iter().any(|&c| c != Identity) && encoded.len() > 1 {
        let prefix = &encoded[..1 + (encoded.len() - 1) * usize::from(control[2]) / 256];
        match decode_all(stack, prefix, limit) {
            Err(DecodeError::Truncated { .. } | DecodeError::LimitExceeded { .. }) => {}
            other => panic!("{stack:?}: a cut-short stream of {} bytes gave {other:?}", prefix.len()),
        }
    }
}
