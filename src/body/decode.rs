//! Undoing content-codings with a cap on the decoded size.
//!
//! A [`Decoder`] is a chain of stages, one per coding, ending in a [`Sink`] that counts every
//! decoded byte against the cap. Each stage drives its codec's low-level streaming API with a
//! fixed 16 KiB output buffer and hands each piece on at once, so no single step can expand far:
//! a gzip or brotli bomb stops at the first piece past the cap, whatever the ratio of the input.
//! A gzip stage that is the last one inflates into the sink's buffer directly instead, never
//! given room for more than one byte past the cap.
//! Memory is the cap plus, per stage, one buffer and the codec's window: 32 KiB for deflate, at
//! most 16 MiB for brotli and 8 MiB for zstd (larger windows are refused).
//!
//! The low-level APIs (rather than the codecs' `Write` adapters) are used because they report
//! what happened: the adapters return the same error for a body cut short and for a corrupt one
//! (brotli says "Invalid Data" for both; a gzip trailer cut short reads as a checksum error), and
//! they flush into their writer when dropped. Here every stage knows whether its stream ended,
//! so [`DecodeError::Truncated`] and [`DecodeError::Corrupt`] are never confused.

use std::io;

use brotli::{BrotliDecompressStream, BrotliResult, BrotliState, HeapAlloc, HuffmanCode};
use zstd::stream::raw::{DParameter, Operation};

use super::{Coding, DecodeError};

mod flate;

use flate::{DeflateStage, GzipStage};

/// Size of each stage's output buffer, so also the largest piece checked against the cap at once.
const OUT_CHUNK: usize = 16 * 1024;

/// Largest zstd window accepted: 8 MiB (log 23), the bound RFC 9659 sets for the `zstd`
/// content-coding and the one browsers enforce. Without it a frame could demand 128 MiB.
const ZSTD_WINDOW_LOG_MAX: u32 = 23;

/// Where a stage sends its output: the next stage, or the sink.
type Emit<'a> = &'a mut dyn FnMut(&[u8]) -> Result<(), DecodeError>;

/// Undoes a list of content-codings, incrementally, with a cap on the decoded size.
///
/// An empty body (no bytes at all before `end`) decodes to nothing under any coding: servers
/// send zero-length bodies with `Content-Encoding: gzip` for 204-like answers, and refusing them
/// would break pages for no safety gain. A stream that has started must be complete at `end`.
///
/// With stacked codings the cap also applies to each intermediate stream (see `forward`), so
/// time spent is bounded as well as memory.
///
/// After an error the decoder is spent: later calls return the same error again.
pub struct Decoder {
    /// Stage 0 undoes the coding applied last.
    stages: Vec<Stage>,
    sink: Sink,
    state: State,
}

impl std::fmt::Debug for Decoder {
    /// Shows the stages, in decoding order, and the count against the cap; codec state is opaque.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stages: Vec<Coding> = self.stages.iter().map(Stage::coding).collect();
        f.debug_struct("Decoder")
            .field("stages", &stages)
            .field("total_out", &self.sink.total)
            .field("limit", &self.sink.limit)
            .finish_non_exhaustive()
    }
}

/// Where a [`Decoder`] is in its life.
enum State {
    Open,
    Ended,
    Failed(DecodeError),
}

impl Decoder {
    /// Undoes `codings` (as returned by [`super::parse_content_encoding`], i.e. in the order they
    /// were applied; decoding runs in reverse). `limit` caps the total decoded output in bytes.
    pub fn new(codings: &[Coding], limit: u64) -> Decoder {
        Decoder {
            stages: codings
                .iter()
                .rev()
                .filter_map(|&c| Stage::new(c))
                .collect(),
            sink: Sink {
                out: Vec::new(),
                total: 0,
                limit,
            },
            state: State::Open,
        }
    }

    /// Push shape: feeds the next input chunk and returns the bytes decoded so far from it.
    /// `end` says this is the last chunk (it may be empty): then the stream must be complete,
    /// else [`DecodeError::Truncated`].
    pub fn decode(&mut self, input: &[u8], end: bool) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        self.decode_into(input, end, &mut out)?;
        Ok(out)
    }

    /// As [`Decoder::decode`], but appends the decoded bytes to `out`: a caller gathering a
    /// whole body spares a copy of every byte (and, for an identity body, copies it once).
    /// After an error `out` may hold part of the chunk's output.
    pub fn decode_into(
        &mut self,
        input: &[u8],
        end: bool,
        out: &mut Vec<u8>,
    ) -> Result<(), DecodeError> {
        match &self.state {
            State::Failed(err) => return Err(replay(err)),
            State::Ended if input.is_empty() => return Ok(()),
            State::Ended => return Err(self.after_end()),
            State::Open => {}
        }
        // The sink writes straight into the caller's buffer for the length of this call.
        std::mem::swap(&mut self.sink.out, out);
        let result = push(&mut self.stages, &mut self.sink, input).and_then(|()| match end {
            true => self.stages.iter().try_for_each(Stage::finish),
            false => Ok(()),
        });
        std::mem::swap(&mut self.sink.out, out);
        match result {
            Ok(()) => {
                if end {
                    self.state = State::Ended;
                }
                Ok(())
            }
            Err(err) => {
                self.state = State::Failed(replay(&err));
                Err(err)
            }
        }
    }

    /// Total decoded bytes produced so far; never more than the limit.
    pub fn total_out(&self) -> u64 {
        self.sink.total
    }

    /// The error for bytes fed after the last chunk: the caller has lost track of the body.
    fn after_end(&self) -> DecodeError {
        DecodeError::Corrupt {
            coding: self.stages.first().map_or(Coding::Identity, Stage::coding),
            source: invalid("data arrived after the end of the body"),
        }
    }
}

/// Decodes a whole buffer: a convenience for tests, `pith extract` and cached bodies.
pub fn decode_all(codings: &[Coding], input: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
    Decoder::new(codings, limit).decode(input, true)
}

/// Feeds `data` to the first stage, whose output feeds the rest, ending in the sink.
fn push(stages: &mut [Stage], sink: &mut Sink, data: &[u8]) -> Result<(), DecodeError> {
    match stages.split_first_mut() {
        None => sink.accept(data),
        // The last stage of a gzip body (most compressed pages) inflates straight into the
        // caller's buffer: no piece to copy, and zlib-rs copies its window once a call rather
        // than once a piece.
        Some((
            Stage {
                codec: Codec::Gzip(stage),
                ..
            },
            [],
        )) if !data.is_empty() => stage.write_to_sink(data, sink),
        Some((stage, rest)) => stage.write(data, &mut |piece| forward(rest, sink, piece)),
    }
}

/// Hands one stage's output to the next, capping it like the final output. Without this a
/// stacked body could keep a stage busy on gigabytes that never reach the sink, such as an
/// endless gzip file name inside an outer gzip. The cost: a stacked body whose inner stream is
/// incompressible and within a few bytes of the cap is refused.
///
/// The part of a piece that fits under the cap is handed on before the limit is reported, so
/// the next stage always judges the same first `limit` bytes, however the body was cut: a
/// stacked body that is both too big and corrupt within those bytes is corrupt, whether the
/// outer stage's output came in one piece or in many.
fn forward(stages: &mut [Stage], sink: &mut Sink, piece: &[u8]) -> Result<(), DecodeError> {
    let Some(next) = stages.first_mut() else {
        return push(stages, sink, piece);
    };
    let room = sink.limit.saturating_sub(next.taken);
    if piece.len() as u64 <= room {
        next.taken += piece.len() as u64;
        return push(stages, sink, piece);
    }
    next.taken = sink.limit.saturating_add(1);
    // `room` < `piece.len()`, so it fits in usize.
    push(stages, sink, &piece[..room as usize])?;
    Err(DecodeError::LimitExceeded { limit: sink.limit })
}

/// Re-creates an error for a spent decoder. `io::Error` cannot be cloned, so the cause keeps its
/// kind and message but not its own chain.
fn replay(err: &DecodeError) -> DecodeError {
    match err {
        DecodeError::Unsupported { coding } => DecodeError::Unsupported {
            coding: coding.clone(),
        },
        DecodeError::Corrupt { coding, source } => DecodeError::Corrupt {
            coding: *coding,
            source: io::Error::new(source.kind(), source.to_string()),
        },
        DecodeError::Truncated { coding } => DecodeError::Truncated { coding: *coding },
        DecodeError::LimitExceeded { limit } => DecodeError::LimitExceeded { limit: *limit },
    }
}

/// An `InvalidData` cause with a fixed message.
fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A [`DecodeError::Corrupt`] for `coding`.
fn corrupt(coding: Coding, source: io::Error) -> DecodeError {
    DecodeError::Corrupt { coding, source }
}

/// The end of the chain: collects decoded bytes for the caller and enforces the cap.
struct Sink {
    /// The caller's buffer while a `decode_into` call runs; empty between calls.
    out: Vec<u8>,
    /// Bytes accepted over the decoder's life; never above `limit`.
    total: u64,
    limit: u64,
}

impl Sink {
    /// Takes one piece, or refuses it whole if it would cross the cap, so memory never holds
    /// more than `limit` decoded bytes.
    fn accept(&mut self, piece: &[u8]) -> Result<(), DecodeError> {
        let len = piece.len() as u64;
        if len > self.limit - self.total {
            return Err(DecodeError::LimitExceeded { limit: self.limit });
        }
        self.total += len;
        self.out.extend_from_slice(piece);
        Ok(())
    }
}

/// One decoding step of the chain.
struct Stage {
    codec: Codec,
    /// Bytes received from the stage before, capped by [`forward`]. The first stage reads the
    /// body itself, which is not counted.
    taken: u64,
}

/// The codec of a stage. An enum rather than trait objects: the set is closed, and the decoder
/// stays `Send` without bounds on every codec.
enum Codec {
    Gzip(Box<GzipStage>),
    Deflate(Box<DeflateStage>),
    Brotli(Box<BrotliStage>),
    Zstd(Box<ZstdStage>),
}

impl Stage {
    /// The stage undoing `coding`; identity needs none.
    fn new(coding: Coding) -> Option<Stage> {
        let codec = match coding {
            Coding::Identity => return None,
            Coding::Gzip => Codec::Gzip(Box::default()),
            Coding::Deflate => Codec::Deflate(Box::default()),
            Coding::Brotli => Codec::Brotli(Box::default()),
            Coding::Zstd => Codec::Zstd(Box::default()),
        };
        Some(Stage { codec, taken: 0 })
    }

    fn coding(&self) -> Coding {
        match self.codec {
            Codec::Gzip(_) => Coding::Gzip,
            Codec::Deflate(_) => Coding::Deflate,
            Codec::Brotli(_) => Coding::Brotli,
            Codec::Zstd(_) => Coding::Zstd,
        }
    }

    /// Decodes as much of `input` as possible, sending output to `emit` piece by piece.
    fn write(&mut self, input: &[u8], emit: Emit<'_>) -> Result<(), DecodeError> {
        if input.is_empty() {
            return Ok(());
        }
        match &mut self.codec {
            Codec::Gzip(stage) => stage.write(input, emit),
            Codec::Deflate(stage) => stage.write(input, emit),
            Codec::Brotli(stage) => stage.write(input, emit),
            Codec::Zstd(stage) => stage.write(input, emit),
        }
    }

    /// Checks that the stream is complete: every stage drains its output as it goes, so all
    /// that is left at the end is to tell a finished stream from a cut one.
    fn finish(&self) -> Result<(), DecodeError> {
        let complete = match &self.codec {
            Codec::Gzip(stage) => stage.is_complete(),
            Codec::Deflate(stage) => stage.is_complete(),
            Codec::Brotli(stage) => stage.is_complete(),
            Codec::Zstd(stage) => stage.is_complete(),
        };
        match complete {
            true => Ok(()),
            false => Err(DecodeError::Truncated {
                coding: self.coding(),
            }),
        }
    }
}

/// Bytes after the end of a stream are corrupt: either the length framing is wrong or someone
/// appended data, and guessing which would hide it.
fn trailing(coding: Coding, rest: &[u8]) -> Result<(), DecodeError> {
    match rest.is_empty() {
        true => Ok(()),
        false => Err(corrupt(
            coding,
            invalid("data follows the end of the stream"),
        )),
    }
}

/// The brotli decoder state with heap allocators.
type BrotliDecoderState = BrotliState<HeapAlloc<u8>, HeapAlloc<u32>, HeapAlloc<HuffmanCode>>;

/// Brotli (RFC 7932), through the decoder's streaming call.
struct BrotliStage {
    state: BrotliDecoderState,
    started: bool,
    ended: bool,
    total: usize,
    out: Vec<u8>,
}

impl Default for BrotliStage {
    fn default() -> Self {
        let mut state = BrotliState::new(
            HeapAlloc::new(0),
            HeapAlloc::new(0),
            HeapAlloc::new(HuffmanCode::default()),
        );
        // The crate accepts large-window streams by default; HTTP `br` is RFC 7932 only, whose
        // window is at most 16 MiB. A large window would let a tiny body claim up to 1 GiB.
        state.large_window = false;
        BrotliStage {
            state,
            started: false,
            ended: false,
            total: 0,
            out: vec![0; OUT_CHUNK],
        }
    }
}

impl BrotliStage {
    fn write(&mut self, mut input: &[u8], emit: Emit<'_>) -> Result<(), DecodeError> {
        if self.ended {
            return trailing(Coding::Brotli, input);
        }
        self.started = true;
        loop {
            let (mut avail_in, mut in_offset) = (input.len(), 0);
            let (mut avail_out, mut out_offset) = (self.out.len(), 0);
            let result = BrotliDecompressStream(
                &mut avail_in,
                &mut in_offset,
                input,
                &mut avail_out,
                &mut out_offset,
                &mut self.out,
                &mut self.total,
                &mut self.state,
            );
            input = &input[in_offset..];
            if out_offset > 0 {
                emit(&self.out[..out_offset])?;
            }
            match result {
                BrotliResult::NeedsMoreOutput => {}
                BrotliResult::NeedsMoreInput if input.is_empty() => return Ok(()),
                BrotliResult::NeedsMoreInput if in_offset > 0 || out_offset > 0 => {}
                BrotliResult::NeedsMoreInput => {
                    return Err(corrupt(
                        Coding::Brotli,
                        invalid("the brotli decoder stalled"),
                    ))
                }
                BrotliResult::ResultSuccess => {
                    self.ended = true;
                    return trailing(Coding::Brotli, input);
                }
                BrotliResult::ResultFailure => {
                    let code = format!("{:?}", self.state.error_code);
                    return Err(corrupt(
                        Coding::Brotli,
                        io::Error::new(io::ErrorKind::InvalidData, code),
                    ));
                }
            }
        }
    }

    fn is_complete(&self) -> bool {
        self.ended || !self.started
    }
}

/// Zstandard (RFC 8878). Several frames in a row are one body, as the format allows.
struct ZstdStage {
    /// Created on first input, because creation can fail and [`Decoder::new`] cannot.
    decoder: Option<zstd::stream::raw::Decoder<'static>>,
    /// The last frame seen has been decoded and flushed entirely.
    frame_done: bool,
    out: Vec<u8>,
}

impl Default for ZstdStage {
    fn default() -> Self {
        ZstdStage {
            decoder: None,
            frame_done: false,
            out: vec![0; OUT_CHUNK],
        }
    }
}

impl ZstdStage {
    fn write(&mut self, mut input: &[u8], emit: Emit<'_>) -> Result<(), DecodeError> {
        let decoder = match &mut self.decoder {
            Some(decoder) => decoder,
            None => self
                .decoder
                .insert(new_zstd().map_err(|e| corrupt(Coding::Zstd, e))?),
        };
        loop {
            let status = decoder
                .run_on_buffers(input, &mut self.out)
                .map_err(|err| corrupt(Coding::Zstd, err))?;
            input = &input[status.bytes_read..];
            if status.bytes_written > 0 {
                emit(&self.out[..status.bytes_written])?;
            }
            let progressed = status.bytes_read > 0 || status.bytes_written > 0;
            if progressed {
                // A call without progress reports on the next frame, not the last one.
                self.frame_done = status.remaining == 0;
            } else if !input.is_empty() {
                return Err(corrupt(Coding::Zstd, invalid("the zstd decoder stalled")));
            }
            if input.is_empty() && status.bytes_written < self.out.len() {
                return Ok(());
            }
        }
    }

    fn is_complete(&self) -> bool {
        self.frame_done || self.decoder.is_none()
    }
}

/// A zstd decoder with the HTTP window bound.
fn new_zstd() -> io::Result<zstd::stream::raw::Decoder<'static>> {
    let mut decoder = zstd::stream::raw::Decoder::new()?;
    decoder.set_parameter(DParameter::WindowLogMax(ZSTD_WINDOW_LOG_MAX))?;
    Ok(decoder)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::{Compress, Compression, FlushCompress};
    use proptest::prelude::*;
    use proptest::sample::{select, Index};

    use super::*;

    const ALL: [Coding; 4] = [Coding::Gzip, Coding::Deflate, Coding::Brotli, Coding::Zstd];
    const MIB: usize = 1024 * 1024;

    /// Reference bytes, made with the codec libraries directly rather than with pith's encoder.
    fn reference(coding: Coding, data: &[u8]) -> Vec<u8> {
        match coding {
            Coding::Identity => data.to_vec(),
            Coding::Gzip => {
                let mut e = GzEncoder::new(Vec::new(), Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Coding::Deflate => {
                let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Coding::Brotli => {
                let mut out = Vec::new();
                let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                e.write_all(data).unwrap();
                drop(e);
                out
            }
            Coding::Zstd => zstd::encode_all(data, 3).unwrap(),
        }
    }

    /// Applies `codings` in order, as a server would.
    fn apply(codings: &[Coding], data: &[u8]) -> Vec<u8> {
        codings
            .iter()
            .fold(data.to_vec(), |acc, &c| reference(c, &acc))
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A page-like text larger than several output buffers, with enough variety to not be
    /// trivially compressible.
    fn page() -> Vec<u8> {
        (0..4000)
            .map(|i| {
                format!(
                    "<p class=\"c{}\">item {} of the list</p>\n",
                    i % 7,
                    i * 31 % 997
                )
            })
            .collect::<String>()
            .into_bytes()
    }

    macro_rules! known_bytes {
        ($($name:ident: $codings:expr, $input:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let got = decode_all(&$codings, $input, 1024).unwrap();
                assert_eq!(got, $want);
            }
        )*};
    }

    known_bytes! {
        known_gzip: [Coding::Gzip],
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x07\x00\x86\xa6\x10\x36\x05\x00\x00\x00"
            => b"hello";
        known_zlib_deflate: [Coding::Deflate], b"\x78\x9c\xcb\x48\xcd\xc9\xc9\x07\x00\x06\x2c\x02\x15" => b"hello";
        known_raw_deflate: [Coding::Deflate], b"\xcb\x48\xcd\xc9\xc9\x07\x00" => b"hello";
        known_brotli: [Coding::Brotli], b"\x8f\x02\x80\x68\x65\x6c\x6c\x6f\x0a\x03" => b"hello\n";
        known_zstd: [Coding::Zstd], b"\x28\xb5\x2f\xfd\x00\x58\x29\x00\x00\x68\x65\x6c\x6c\x6f" => b"hello";
        known_zstd_with_checksum: [Coding::Zstd],
            b"\x28\xb5\x2f\xfd\x04\x58\x29\x00\x00\x68\x65\x6c\x6c\x6f\xa3\x6d\x9f\x88" => b"hello";
        known_identity: [Coding::Identity], b"hello" => b"hello";
        known_no_coding: [], b"hello" => b"hello";
    }

    #[test]
    fn every_coding_round_trips() {
        let data = page();
        for coding in ALL {
            let got = decode_all(&[coding], &reference(coding, &data), u64::MAX).unwrap();
            assert!(got == data, "{coding} round trip differs");
        }
    }

    #[test]
    fn stacked_codings_round_trip() {
        let data = page();
        let stacks: [&[Coding]; 5] = [
            &[Coding::Gzip, Coding::Brotli],
            &[Coding::Brotli, Coding::Gzip],
            &[Coding::Deflate, Coding::Zstd, Coding::Gzip],
            &[Coding::Gzip, Coding::Gzip],
            &[Coding::Identity, Coding::Zstd, Coding::Identity],
        ];
        for stack in stacks {
            let got = decode_all(stack, &apply(stack, &data), u64::MAX).unwrap();
            assert!(got == data, "{stack:?} round trip differs");
        }
    }

    #[test]
    fn raw_and_zlib_deflate_both_decode_at_any_pace() {
        let data = page();
        for encoded in [raw_deflate(&data), reference(Coding::Deflate, &data)] {
            assert_eq!(
                decode_all(&[Coding::Deflate], &encoded, u64::MAX).unwrap(),
                data
            );
            let mut decoder = Decoder::new(&[Coding::Deflate], u64::MAX);
            let mut got = Vec::new();
            for byte in encoded.chunks(1) {
                got.extend(decoder.decode(byte, false).unwrap());
            }
            got.extend(decoder.decode(&[], true).unwrap());
            assert_eq!(got, data);
        }
    }

    #[test]
    fn multi_member_gzip_decodes_as_one_body() {
        let mut body = reference(Coding::Gzip, b"first member, ");
        body.extend(reference(Coding::Gzip, b""));
        body.extend(reference(Coding::Gzip, b"second member"));
        let got = decode_all(&[Coding::Gzip], &body, 1024).unwrap();
        assert_eq!(got, b"first member, second member");
    }

    #[test]
    fn gzip_optional_header_fields_are_skipped_byte_by_byte() {
        let mut e = flate2::GzBuilder::new()
            .filename("page.html")
            .comment("a comment")
            .extra(vec![7; 300])
            .write(Vec::new(), Compression::fast());
        e.write_all(b"body").unwrap();
        let encoded = e.finish().unwrap();
        let mut decoder = Decoder::new(&[Coding::Gzip], 1024);
        let mut got = Vec::new();
        for byte in encoded.chunks(1) {
            got.extend(decoder.decode(byte, false).unwrap());
        }
        got.extend(decoder.decode(&[], true).unwrap());
        assert_eq!(got, b"body");
    }

    /// `data` encoded with `coding`, with the byte at `at` (negative: from the end) replaced.
    fn damaged(coding: Coding, data: &[u8], at: isize, byte: u8) -> Vec<u8> {
        let mut encoded = reference(coding, data);
        let index = if at < 0 {
            encoded.len() - at.unsigned_abs()
        } else {
            at as usize
        };
        encoded[index] = byte;
        encoded
    }

    fn with_tail(mut encoded: Vec<u8>, tail: &[u8]) -> Vec<u8> {
        encoded.extend_from_slice(tail);
        encoded
    }

    macro_rules! corrupt {
        ($($name:ident: $coding:expr, $input:expr;)*) => {$(
            #[test]
            fn $name() {
                let result = decode_all(&[$coding], AsRef::<[u8]>::as_ref(&$input), u64::MAX);
                match result {
                    Err(err @ DecodeError::Corrupt { coding, .. }) => {
                        assert_eq!(coding, $coding);
                        assert!(err.to_string().starts_with(&format!("invalid {coding} data: ")));
                    }
                    other => panic!("expected Corrupt, got {other:?}"),
                }
            }
        )*};
    }

    corrupt! {
        corrupt_gzip_magic: Coding::Gzip, damaged(Coding::Gzip, b"text", 1, 0x8c);
        corrupt_gzip_method: Coding::Gzip, damaged(Coding::Gzip, b"text", 2, 7);
        corrupt_gzip_reserved_flag: Coding::Gzip, damaged(Coding::Gzip, b"text", 3, 0x20);
        corrupt_gzip_crc: Coding::Gzip, damaged(Coding::Gzip, b"text", -8, 0);
        corrupt_gzip_length: Coding::Gzip, damaged(Coding::Gzip, b"text", -1, 1);
        corrupt_gzip_body: Coding::Gzip, damaged(Coding::Gzip, b"text", 10, 0xff);
        corrupt_gzip_trailing_garbage: Coding::Gzip, with_tail(reference(Coding::Gzip, b"t"), b"junk");
        corrupt_gzip_trailing_zeros: Coding::Gzip, with_tail(reference(Coding::Gzip, b"t"), &[0; 4]);
        corrupt_zlib_adler: Coding::Deflate, damaged(Coding::Deflate, b"text", -1, 0);
        corrupt_deflate_trailing: Coding::Deflate, with_tail(raw_deflate(b"text"), b"x");
        corrupt_deflate_garbage: Coding::Deflate, [0xff; 64];
        corrupt_brotli_garbage: Coding::Brotli, b"this is not brotli at all";
        corrupt_brotli_trailing: Coding::Brotli, with_tail(reference(Coding::Brotli, b"t"), b"x");
        corrupt_zstd_garbage: Coding::Zstd, b"this is not zstd at all";
        corrupt_zstd_trailing: Coding::Zstd, with_tail(reference(Coding::Zstd, b"t"), b"junk");
        corrupt_zstd_checksum: Coding::Zstd,
            b"\x28\xb5\x2f\xfd\x04\x58\x29\x00\x00\x68\x65\x6c\x6c\x6f\xa3\x6d\x9f\x89";
    }

    #[test]
    fn zstd_window_above_the_http_bound_is_rejected() {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        e.set_parameter(zstd::stream::raw::CParameter::WindowLog(24))
            .unwrap();
        e.write_all(&page()).unwrap();
        let encoded = e.finish().unwrap();
        let result = decode_all(&[Coding::Zstd], &encoded, u64::MAX);
        assert!(matches!(
            result,
            Err(DecodeError::Corrupt {
                coding: Coding::Zstd,
                ..
            })
        ));
    }

    #[test]
    fn brotli_large_window_is_rejected() {
        let params = brotli::enc::BrotliEncoderParams {
            large_window: true,
            lgwin: 26,
            quality: 1,
            ..Default::default()
        };
        let mut encoded = Vec::new();
        brotli::BrotliCompress(&mut &page()[..], &mut encoded, &params).unwrap();
        let result = decode_all(&[Coding::Brotli], &encoded, u64::MAX);
        assert!(matches!(
            result,
            Err(DecodeError::Corrupt {
                coding: Coding::Brotli,
                ..
            })
        ));
    }

    /// Every strict, non-empty prefix of `encoded` must end as Truncated for `outer`.
    fn assert_every_prefix_truncated(codings: &[Coding], encoded: &[u8], outer: Coding) {
        for cut in 1..encoded.len() {
            let mut decoder = Decoder::new(codings, u64::MAX);
            decoder.decode(&encoded[..cut], false).unwrap();
            match decoder.decode(&[], true) {
                Err(DecodeError::Truncated { coding }) => assert_eq!(coding, outer),
                other => panic!("{codings:?} cut at {cut}/{}: got {other:?}", encoded.len()),
            }
        }
    }

    #[test]
    fn cut_streams_are_truncated_never_accepted() {
        let data = b"a short page that is cut somewhere".repeat(20);
        for coding in ALL {
            assert_every_prefix_truncated(&[coding], &reference(coding, &data), coding);
        }
        assert_every_prefix_truncated(&[Coding::Deflate], &raw_deflate(&data), Coding::Deflate);
        let stack = [Coding::Gzip, Coding::Brotli];
        assert_every_prefix_truncated(&stack, &apply(&stack, &data), Coding::Brotli);
    }

    #[test]
    fn cut_second_gzip_member_is_truncated() {
        let mut body = reference(Coding::Gzip, b"one");
        body.extend(&reference(Coding::Gzip, b"two")[..5]);
        let result = decode_all(&[Coding::Gzip], &body, 64);
        assert!(matches!(
            result,
            Err(DecodeError::Truncated {
                coding: Coding::Gzip
            })
        ));
    }

    #[test]
    fn empty_body_decodes_to_nothing_under_any_coding() {
        let stacks: [&[Coding]; 6] = [
            &[Coding::Gzip],
            &[Coding::Deflate],
            &[Coding::Brotli],
            &[Coding::Zstd],
            &[Coding::Gzip, Coding::Brotli],
            &[],
        ];
        for stack in stacks {
            let mut decoder = Decoder::new(stack, 16);
            assert_eq!(decoder.decode(&[], false).unwrap(), b"");
            assert_eq!(decoder.decode(&[], true).unwrap(), b"", "{stack:?}");
        }
    }

    /// Found by fuzzing: a gzip stream inside gzip whose inner bytes are not gzip, decoded
    /// under a 64-byte cap, was over the cap fed whole but corrupt fed in three pieces.
    #[test]
    fn a_stacked_body_over_the_cap_gets_one_verdict_however_it_is_cut() {
        let hex = "1f8b0800000000000203010f01f0fe28b52ffd0058310800789c8dd54b8ac3301084e17d4e217201bb5b6a3dc0f15d32799080f802f626b70fccb84c1643d1fb4298ef37d2705b1ed338fc3ccfef717885d3749ce7c317000000";
        let body: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let stack = [Coding::Gzip, Coding::Gzip];
        let whole = decode_all(&stack, &body, 64);
        let mut decoder = Decoder::new(&stack, 64);
        let chunked = [&body[..27], &body[27..89], &body[89..]]
            .iter()
            .enumerate()
            .try_for_each(|(i, part)| decoder.decode(part, i == 2).map(drop));
        assert!(
            matches!(whole, Err(DecodeError::Corrupt { .. })),
            "{whole:?}"
        );
        assert!(
            matches!(chunked, Err(DecodeError::Corrupt { .. })),
            "{chunked:?}"
        );
    }

    #[test]
    fn limit_is_inclusive() {
        let data = vec![b'x'; 1000];
        for coding in ALL {
            let encoded = reference(coding, &data);
            assert_eq!(decode_all(&[coding], &encoded, 1000).unwrap(), data);
            let over = decode_all(&[coding], &encoded, 999);
            assert!(
                matches!(over, Err(DecodeError::LimitExceeded { limit: 999 })),
                "{coding}"
            );
        }
        let identity = decode_all(&[], &data, 999);
        assert!(matches!(
            identity,
            Err(DecodeError::LimitExceeded { limit: 999 })
        ));
    }

    /// Raw deflate of `prefix` then `mib` MiB of `byte`: the sync-flushed blocks for 1 MiB of
    /// `byte` are repeated, which is valid because they only refer back to `byte`s (`prefix`
    /// must not contain it). Building a 200 MiB bomb this way takes milliseconds.
    fn deflate_run(prefix: &[u8], byte: u8, mib: usize) -> Vec<u8> {
        assert!(!prefix.contains(&byte));
        let mut compress = Compress::new(Compression::best(), false);
        let mut raw = Vec::with_capacity(64 * 1024);
        compress
            .compress_vec(prefix, &mut raw, FlushCompress::Sync)
            .unwrap();
        let mut chunk = Vec::with_capacity(64 * 1024);
        compress
            .compress_vec(&vec![byte; MIB], &mut chunk, FlushCompress::Sync)
            .unwrap();
        raw.extend(chunk.repeat(mib));
        raw.extend([0x03, 0x00]); // final empty block
        raw
    }

    fn deflate_bomb(mib: usize) -> Vec<u8> {
        deflate_run(&[], 0, mib)
    }

    /// A 200 MiB gzip bomb in one member (its trailer is never reached).
    fn gzip_bomb() -> Vec<u8> {
        let mut body = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        body.extend(deflate_bomb(200));
        body.extend([0; 8]);
        body
    }

    /// Feeds `body` in 64 KiB chunks and expects the cap to stop it with the output bounded.
    fn assert_bomb_stopped(codings: &[Coding], body: &[u8], limit: u64) {
        let mut decoder = Decoder::new(codings, limit);
        let mut held = 0;
        let mut result = Ok(Vec::new());
        for chunk in body.chunks(64 * 1024) {
            result = decoder.decode(chunk, false);
            match &result {
                Ok(out) => held += out.len(),
                Err(_) => break,
            }
        }
        assert!(
            matches!(result, Err(DecodeError::LimitExceeded { limit: l }) if l == limit),
            "{codings:?}: got {result:?}"
        );
        assert!(decoder.total_out() <= limit && held as u64 <= limit);
        assert!(
            decoder.total_out() > limit - OUT_CHUNK as u64,
            "stopped too early"
        );
        let again = decoder.decode(b"more", true);
        assert!(
            matches!(again, Err(DecodeError::LimitExceeded { .. })),
            "spent decoder"
        );
    }

    #[test]
    fn gzip_bomb_stops_at_the_limit() {
        let bomb = gzip_bomb();
        assert!(bomb.len() < MIB, "the bomb is small: {} bytes", bomb.len());
        assert_bomb_stopped(&[Coding::Gzip], &bomb, MIB as u64);
        // In one call too: a single huge input must not expand past the cap either.
        let result = decode_all(&[Coding::Gzip], &bomb, MIB as u64);
        assert!(matches!(result, Err(DecodeError::LimitExceeded { .. })));
    }

    #[test]
    fn deflate_bomb_stops_at_the_limit() {
        let mut zlib = vec![0x78, 0x01];
        zlib.extend(deflate_bomb(200));
        assert_bomb_stopped(&[Coding::Deflate], &zlib, MIB as u64);
        assert_bomb_stopped(&[Coding::Deflate], &deflate_bomb(200), MIB as u64);
    }

    #[test]
    fn zstd_bomb_stops_at_the_limit() {
        let frame = zstd::encode_all(&vec![0; 4 * MIB][..], 1).unwrap();
        assert_bomb_stopped(&[Coding::Zstd], &frame.repeat(50), MIB as u64);
    }

    #[test]
    fn brotli_bomb_stops_at_the_limit() {
        let body = reference(Coding::Brotli, &vec![0; 16 * MIB]);
        assert_bomb_stopped(&[Coding::Brotli], &body, MIB as u64);
    }

    #[test]
    fn stacked_bomb_is_bounded_in_the_middle_too() {
        // The inner gzip stream alone is 200 MiB of output, behind a small brotli layer.
        let body = reference(Coding::Brotli, &gzip_bomb());
        assert_bomb_stopped(&[Coding::Gzip, Coding::Brotli], &body, MIB as u64);
        let double = reference(Coding::Gzip, &gzip_bomb());
        assert_bomb_stopped(&[Coding::Gzip, Coding::Gzip], &double, MIB as u64);
    }

    #[test]
    fn stacked_bomb_without_final_output_is_bounded() {
        // The outer gzip decodes to an inner gzip header whose file name never ends: 200 MiB
        // that the inner stage swallows without output, so only the intermediate cap stops it.
        let inner_header = [0x1f, 0x8b, 8, 0x08 /* FNAME */, 0, 0, 0, 0, 0, 0xff];
        let mut body = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        body.extend(deflate_run(&inner_header, b'a', 200));
        let mut decoder = Decoder::new(&[Coding::Gzip, Coding::Gzip], MIB as u64);
        let result = decoder.decode(&body, false);
        assert!(
            matches!(result, Err(DecodeError::LimitExceeded { .. })),
            "{result:?}"
        );
        assert_eq!(decoder.total_out(), 0);
    }

    #[test]
    fn spent_decoder_repeats_its_error() {
        let mut decoder = Decoder::new(&[Coding::Gzip], 1024);
        let first = decoder.decode(b"not gzip", false).unwrap_err();
        let second = decoder
            .decode(&reference(Coding::Gzip, b"ok"), true)
            .unwrap_err();
        assert_eq!(first.to_string(), second.to_string());
        assert!(matches!(
            second,
            DecodeError::Corrupt {
                coding: Coding::Gzip,
                ..
            }
        ));
    }

    #[test]
    fn data_after_the_end_is_corrupt() {
        let mut decoder = Decoder::new(&[Coding::Brotli], 1024);
        let out = decoder
            .decode(&reference(Coding::Brotli, b"done"), true)
            .unwrap();
        assert_eq!(out, b"done");
        assert_eq!(decoder.decode(&[], true).unwrap(), b"");
        let late = decoder.decode(b"late", false);
        assert!(matches!(
            late,
            Err(DecodeError::Corrupt {
                coding: Coding::Brotli,
                ..
            })
        ));
        assert_eq!(decoder.total_out(), 4);
    }

    #[test]
    fn decoder_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Decoder>();
    }

    /// A body, either arbitrary bytes or a long page-like run that fills several buffers.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..3000),
            prop::collection::vec(select(b"<p>ab \n".to_vec()), 0..40_000),
        ]
    }

    fn stack() -> impl Strategy<Value = Vec<Coding>> {
        prop::collection::vec(select(ALL.to_vec()), 1..3)
    }

    /// Feeds `input` cut at `cuts`, then ends it.
    fn decode_split(
        codings: &[Coding],
        input: &[u8],
        cuts: &[Index],
        limit: u64,
    ) -> Result<Vec<u8>, DecodeError> {
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut decoder = Decoder::new(codings, limit);
        let (mut out, mut last) = (Vec::new(), 0);
        for point in points {
            out.extend(decoder.decode(&input[last..point], false)?);
            last = point;
        }
        out.extend(decoder.decode(&input[last..], true)?);
        assert!(decoder.total_out() <= limit);
        Ok(out)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn any_split_decodes_to_the_same_bytes(
            data in body(),
            codings in stack(),
            cuts in prop::collection::vec(any::<Index>(), 0..12),
        ) {
            let encoded = apply(&codings, &data);
            let whole = decode_all(&codings, &encoded, u64::MAX).unwrap();
            prop_assert!(whole == data);
            let split = decode_split(&codings, &encoded, &cuts, u64::MAX).unwrap();
            prop_assert!(split == data);
        }

        #[test]
        fn any_strict_prefix_is_truncated(data in body(), coding in select(ALL.to_vec()), cut in any::<Index>()) {
            let encoded = reference(coding, &data);
            // A one-byte stream (brotli's empty body) has no strict prefix but the empty one.
            prop_assume!(encoded.len() > 1);
            let cut = 1 + cut.index(encoded.len() - 1);
            let result = decode_all(&[coding], &encoded[..cut], u64::MAX);
            prop_assert!(
                matches!(result, Err(DecodeError::Truncated { coding: c }) if c == coding),
                "cut at {}/{}: {:?}", cut, encoded.len(), result
            );
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            noise in prop::collection::vec(any::<u8>(), 0..4096),
            codings in stack(),
            keep in any::<Index>(),
            cuts in prop::collection::vec(any::<Index>(), 0..6),
        ) {
            // A valid head followed by noise reaches deeper into each decoder than noise alone.
            let valid = apply(&codings, b"<html><body>some page text</body></html>");
            let mut input = valid[..keep.index(valid.len() + 1)].to_vec();
            input.extend(&noise);
            let _ = decode_split(&codings, &input, &cuts, 64 * 1024);
            let _ = decode_split(&codings, &noise, &cuts, 64 * 1024);
        }
    }
}
