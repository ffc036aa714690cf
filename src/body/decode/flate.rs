//! The deflate family: gzip members and HTTP `deflate` (zlib or raw), over flate2's
//! low-level inflater so that every stage knows where its stream ends.
//!
//! gzip framing (header, CRC-32 and size trailer, several members) is parsed here rather than by
//! flate2's gzip types, because those cannot say whether a failed trailer was cut short or wrong.

use flate2::{Crc, Decompress, FlushDecompress, Status};

use super::{corrupt, invalid, trailing, Emit, Sink, OUT_CHUNK};
use crate::body::{Coding, DecodeError};

/// How far an inflate run got.
enum Inflated {
    /// All input was consumed and the stream goes on.
    NeedsInput,
    /// The deflate stream ended after `consumed` bytes of the input.
    Ended { consumed: usize },
}

/// Runs `inflater` over `input` until it wants more or its stream ends, emitting each filled
/// piece of `out` at once. Shared by the gzip and deflate stages.
fn inflate(
    inflater: &mut Decompress,
    input: &[u8],
    out: &mut [u8],
    coding: Coding,
    emit: Emit<'_>,
) -> Result<Inflated, DecodeError> {
    let mut pos = 0;
    loop {
        let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
        let result = inflater.decompress(&input[pos..], out, FlushDecompress::None);
        let used = (inflater.total_in() - in_before) as usize;
        let made = (inflater.total_out() - out_before) as usize;
        pos += used;
        // What was decoded before an error goes on first (the counters include it), so that a
        // body both over the cap and corrupt gets the same verdict however it was chunked.
        if made > 0 {
            emit(&out[..made])?;
        }
        let status = result.map_err(|err| corrupt(coding, err.into()))?;
        if status == Status::StreamEnd {
            return Ok(Inflated::Ended { consumed: pos });
        }
        if used == 0 && made == 0 {
            // With room in `out`, no progress means the input is exhausted.
            return match pos == input.len() {
                true => Ok(Inflated::NeedsInput),
                false => Err(corrupt(coding, invalid("the deflate decoder stalled"))),
            };
        }
    }
}

/// Gzip (RFC 1952): members of header, raw deflate body and CRC-32/size trailer, one after
/// another. Several members are decoded as one body, as browsers and zlib do; anything after a
/// member that is not another member is corrupt.
pub(super) struct GzipStage {
    phase: GzipPhase,
    header: GzipHeader,
    inflater: Decompress,
    /// CRC-32 and length of the current member's decoded bytes.
    crc: Crc,
    trailer: [u8; 8],
    trailer_len: usize,
    out: Vec<u8>,
}

/// Which part of a member the next byte belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GzipPhase {
    Header,
    Body,
    Trailer,
}

impl Default for GzipStage {
    fn default() -> Self {
        GzipStage {
            phase: GzipPhase::Header,
            header: GzipHeader::default(),
            inflater: Decompress::new(false),
            crc: Crc::new(),
            trailer: [0; 8],
            trailer_len: 0,
            // Made on first use: a last stage inflates into the sink instead.
            out: Vec::new(),
        }
    }
}

impl GzipStage {
    pub(super) fn write(&mut self, mut input: &[u8], emit: Emit<'_>) -> Result<(), DecodeError> {
        while !input.is_empty() {
            let used = match self.phase {
                GzipPhase::Header => self.read_header(input)?,
                GzipPhase::Body => self.read_body(input, emit)?,
                GzipPhase::Trailer => self.read_trailer(input)?,
            };
            input = &input[used..];
        }
        Ok(())
    }

    /// As [`GzipStage::write`], for the last stage of a chain: inflates into the sink's buffer
    /// itself rather than through a piece of its own.
    pub(super) fn write_to_sink(
        &mut self,
        mut input: &[u8],
        sink: &mut Sink,
    ) -> Result<(), DecodeError> {
        while !input.is_empty() {
            let used = match self.phase {
                GzipPhase::Header => self.read_header(input)?,
                GzipPhase::Body => self.read_body_to_sink(input, sink)?,
                GzipPhase::Trailer => self.read_trailer(input)?,
            };
            input = &input[used..];
        }
        Ok(())
    }

    /// Inflates into the spare room of the sink's buffer, grown as needed but never past one
    /// byte over the cap, so output past the cap is seen without being kept: what was decoded
    /// over the cap is cut off again and the cap reported, as [`Sink::accept`] refuses a piece.
    /// When the buffer already has more room than the cap allows (a caller's buffer sized
    /// larger), the pieces of [`GzipStage::read_body`] are used.
    fn read_body_to_sink(&mut self, input: &[u8], sink: &mut Sink) -> Result<usize, DecodeError> {
        let mut pos = 0;
        loop {
            let room = sink.limit - sink.total;
            let allowed = usize::try_from(room)
                .unwrap_or(usize::MAX)
                .saturating_add(1);
            let out = &mut sink.out;
            if out.capacity() - out.len() < OUT_CHUNK.min(allowed) {
                // Doubling, as `Vec` grows, but within the cap.
                out.reserve_exact(out.len().max(2 * OUT_CHUNK).min(allowed));
            }
            if out.capacity() - out.len() > allowed {
                return self
                    .read_body_pieces(&input[pos..], sink)
                    .map(|used| pos + used);
            }
            let before = out.len();
            let (in_before, out_before) = (self.inflater.total_in(), self.inflater.total_out());
            let result = self
                .inflater
                .decompress_vec(&input[pos..], out, FlushDecompress::None);
            let used = (self.inflater.total_in() - in_before) as usize;
            let made = (self.inflater.total_out() - out_before) as usize;
            pos += used;
            // What was decoded before an error is counted first, as in `inflate`.
            if made as u64 > room {
                out.truncate(before);
                return Err(DecodeError::LimitExceeded { limit: sink.limit });
            }
            sink.total += made as u64;
            self.crc.update(&out[before..]);
            let status = result.map_err(|err| corrupt(Coding::Gzip, err.into()))?;
            if status == Status::StreamEnd {
                self.phase = GzipPhase::Trailer;
                self.trailer_len = 0;
                return Ok(pos);
            }
            if used == 0 && made == 0 {
                // With room in the buffer, no progress means the input is exhausted.
                return match pos == input.len() {
                    true => Ok(pos),
                    false => Err(corrupt(
                        Coding::Gzip,
                        invalid("the deflate decoder stalled"),
                    )),
                };
            }
        }
    }

    /// [`GzipStage::read_body`] into the sink.
    fn read_body_pieces(&mut self, input: &[u8], sink: &mut Sink) -> Result<usize, DecodeError> {
        self.read_body(input, &mut |piece| sink.accept(piece))
    }

    /// Complete when between members: nothing of a next one has arrived. That is also the
    /// state of an empty body.
    pub(super) fn is_complete(&self) -> bool {
        self.phase == GzipPhase::Header && !self.header.is_started()
    }

    fn read_header(&mut self, input: &[u8]) -> Result<usize, DecodeError> {
        for (i, &byte) in input.iter().enumerate() {
            let done = self
                .header
                .push(byte)
                .map_err(|msg| corrupt(Coding::Gzip, invalid(msg)))?;
            if done {
                self.phase = GzipPhase::Body;
                self.inflater.reset(false);
                self.crc.reset();
                return Ok(i + 1);
            }
        }
        Ok(input.len())
    }

    fn read_body(&mut self, input: &[u8], emit: Emit<'_>) -> Result<usize, DecodeError> {
        if self.out.is_empty() {
            self.out = vec![0; OUT_CHUNK];
        }
        let GzipStage {
            inflater, crc, out, ..
        } = self;
        let mut count = |piece: &[u8]| {
            crc.update(piece);
            emit(piece)
        };
        match inflate(inflater, input, out, Coding::Gzip, &mut count)? {
            Inflated::NeedsInput => Ok(input.len()),
            Inflated::Ended { consumed } => {
                self.phase = GzipPhase::Trailer;
                self.trailer_len = 0;
                Ok(consumed)
            }
        }
    }

    fn read_trailer(&mut self, input: &[u8]) -> Result<usize, DecodeError> {
        let take = input.len().min(self.trailer.len() - self.trailer_len);
        self.trailer[self.trailer_len..self.trailer_len + take].copy_from_slice(&input[..take]);
        self.trailer_len += take;
        if self.trailer_len == self.trailer.len() {
            self.check_trailer()?;
            self.phase = GzipPhase::Header;
            self.header = GzipHeader::default();
        }
        Ok(take)
    }

    /// The trailer holds the CRC-32 and the length mod 2^32 of the member's decoded bytes.
    fn check_trailer(&self) -> Result<(), DecodeError> {
        let [c0, c1, c2, c3, s0, s1, s2, s3] = self.trailer;
        if u32::from_le_bytes([c0, c1, c2, c3]) != self.crc.sum() {
            return Err(corrupt(
                Coding::Gzip,
                invalid("the CRC-32 checksum does not match"),
            ));
        }
        if u32::from_le_bytes([s0, s1, s2, s3]) != self.crc.amount() {
            return Err(corrupt(
                Coding::Gzip,
                invalid("the recorded length does not match"),
            ));
        }
        Ok(())
    }
}

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xe0;

/// Fields of a gzip member header, in the order they appear; optional ones only when flagged.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum HeaderPart {
    /// Magic, method, flags, mtime, extra flags, OS: 10 bytes.
    #[default]
    Fixed,
    /// Length of the extra field: 2 bytes.
    ExtraLen,
    Extra,
    /// Zero-terminated file name.
    Name,
    /// Zero-terminated comment.
    Comment,
    /// CRC-16 of the header so far: 2 bytes.
    HeaderCrc,
    Done,
}

/// A byte-at-a-time gzip header parser, so a header split across chunks at any point needs no
/// buffering, and a long name or extra field costs no memory.
#[derive(Debug, Default)]
struct GzipHeader {
    part: HeaderPart,
    /// Bytes seen in the current part.
    count: usize,
    flags: u8,
    /// Extra-field bytes still to skip.
    extra_left: usize,
    stored_crc: u16,
    /// CRC-32 of the header bytes, for the optional CRC-16.
    crc: Crc,
}

impl GzipHeader {
    fn is_started(&self) -> bool {
        self.part != HeaderPart::Fixed || self.count > 0
    }

    /// Takes the next header byte; `Ok(true)` once the header is complete.
    fn push(&mut self, byte: u8) -> Result<bool, &'static str> {
        if self.part != HeaderPart::HeaderCrc {
            self.crc.update(&[byte]);
        }
        self.count += 1;
        let part_done = match self.part {
            HeaderPart::Fixed => {
                self.check_fixed(byte)?;
                self.count == 10
            }
            HeaderPart::ExtraLen => {
                self.extra_left |= usize::from(byte) << (8 * (self.count - 1));
                self.count == 2
            }
            HeaderPart::Extra => {
                self.extra_left -= 1;
                self.extra_left == 0
            }
            HeaderPart::Name | HeaderPart::Comment => byte == 0,
            HeaderPart::HeaderCrc => {
                self.stored_crc |= u16::from(byte) << (8 * (self.count - 1));
                self.count == 2 && self.check_header_crc()?
            }
            HeaderPart::Done => true,
        };
        if part_done {
            self.advance();
        }
        Ok(self.part == HeaderPart::Done)
    }

    /// Checks byte `count - 1` of the fixed part: magic `1f 8b`, method 8 (deflate), and no
    /// reserved flag, which RFC 1952 says must make a decoder give up.
    fn check_fixed(&mut self, byte: u8) -> Result<(), &'static str> {
        match (self.count, byte) {
            (1, 0x1f) | (2, 0x8b) | (3, 8) => Ok(()),
            (1 | 2, _) => Err("not a gzip stream (wrong magic bytes)"),
            (3, _) => Err("unknown compression method in the gzip header"),
            (4, flags) if flags & FRESERVED != 0 => Err("reserved flags set in the gzip header"),
            (4, flags) => {
                self.flags = flags;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The CRC-16 is the low half of the CRC-32 of the header bytes before it.
    fn check_header_crc(&self) -> Result<bool, &'static str> {
        match (self.crc.sum() & 0xffff) as u16 == self.stored_crc {
            true => Ok(true),
            false => Err("the gzip header checksum does not match"),
        }
    }

    /// Moves to the next part the flags call for.
    fn advance(&mut self) {
        const ORDER: [HeaderPart; 7] = [
            HeaderPart::Fixed,
            HeaderPart::ExtraLen,
            HeaderPart::Extra,
            HeaderPart::Name,
            HeaderPart::Comment,
            HeaderPart::HeaderCrc,
            HeaderPart::Done,
        ];
        let current = ORDER.iter().position(|&p| p == self.part).unwrap_or(0);
        let wanted = |part: &&HeaderPart| match part {
            HeaderPart::Fixed => false,
            HeaderPart::ExtraLen => self.flags & FEXTRA != 0,
            HeaderPart::Extra => self.extra_left > 0,
            HeaderPart::Name => self.flags & FNAME != 0,
            HeaderPart::Comment => self.flags & FCOMMENT != 0,
            HeaderPart::HeaderCrc => self.flags & FHCRC != 0,
            HeaderPart::Done => true,
        };
        self.part = ORDER[current + 1..]
            .iter()
            .find(wanted)
            .copied()
            .unwrap_or(HeaderPart::Done);
        self.count = 0;
    }
}

/// HTTP `deflate`: RFC 9110 means zlib-wrapped (RFC 1950), but many servers send raw deflate
/// (RFC 1951). The first two bytes decide, as browsers do: a valid zlib header (method 8, window
/// at most 32 KiB, check bits a multiple of 31) means zlib. Raw deflate practically never looks
/// like one, since that would need a non-final stored block with non-zero padding bits.
pub(super) struct DeflateStage {
    /// The first byte, held while waiting for the second to sniff the format.
    head: Option<u8>,
    /// Created once the format is known.
    inflater: Option<Decompress>,
    ended: bool,
    out: Vec<u8>,
}

impl Default for DeflateStage {
    fn default() -> Self {
        DeflateStage {
            head: None,
            inflater: None,
            ended: false,
            out: vec![0; OUT_CHUNK],
        }
    }
}

impl DeflateStage {
    pub(super) fn write(&mut self, mut input: &[u8], emit: Emit<'_>) -> Result<(), DecodeError> {
        if self.inflater.is_none() {
            let head = self.head.take();
            let (first, second) = match (head, input) {
                (Some(first), [second, ..]) => (first, *second),
                (None, [first, second, ..]) => {
                    input = &input[1..];
                    (*first, *second)
                }
                _ => {
                    self.head = head.or(input.first().copied());
                    return Ok(());
                }
            };
            self.inflater = Some(Decompress::new(is_zlib_header(first, second)));
            self.inflate(&[first], emit)?;
        }
        self.inflate(input, emit)
    }

    pub(super) fn is_complete(&self) -> bool {
        self.ended || (self.inflater.is_none() && self.head.is_none())
    }

    fn inflate(&mut self, input: &[u8], emit: Emit<'_>) -> Result<(), DecodeError> {
        let Some(inflater) = self.inflater.as_mut() else {
            return Ok(());
        };
        if self.ended {
            return trailing(Coding::Deflate, input);
        }
        match inflate(inflater, input, &mut self.out, Coding::Deflate, emit)? {
            Inflated::NeedsInput => Ok(()),
            Inflated::Ended { consumed } => {
                self.ended = true;
                trailing(Coding::Deflate, &input[consumed..])
            }
        }
    }
}

/// Whether `cmf`, `flg` open a zlib stream (RFC 1950 §2.2).
fn is_zlib_header(cmf: u8, flg: u8) -> bool {
    cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::GzEncoder;
    use flate2::Compression;

    use super::*;
    use crate::body::decode_all;

    #[test]
    fn zlib_header_check() {
        assert!(is_zlib_header(0x78, 0x9c));
        assert!(is_zlib_header(0x78, 0x01));
        assert!(is_zlib_header(0x78, 0xda));
        assert!(!is_zlib_header(0x78, 0x9d), "check bits wrong");
        assert!(!is_zlib_header(0xcb, 0x48), "raw deflate of 'hello'");
        assert!(!is_zlib_header(0x88, 0x1c), "window above 32 KiB");
    }

    /// A gzip member with a hand-made FHCRC header, which the library encoders do not write.
    fn gzip_with_header_crc(flip: bool) -> Vec<u8> {
        let mut header = vec![0x1f, 0x8b, 8, FHCRC, 0, 0, 0, 0, 0, 0xff];
        let mut crc = Crc::new();
        crc.update(&header);
        let crc16 = (crc.sum() & 0xffff) as u16 ^ u16::from(flip);
        header.extend(crc16.to_le_bytes());
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(b"checked").unwrap();
        header.extend(&encoder.finish().unwrap()[10..]);
        header
    }

    #[test]
    fn gzip_header_crc_is_checked() {
        let good = decode_all(&[Coding::Gzip], &gzip_with_header_crc(false), 64).unwrap();
        assert_eq!(good, b"checked");
        let bad = decode_all(&[Coding::Gzip], &gzip_with_header_crc(true), 64);
        assert!(matches!(
            bad,
            Err(DecodeError::Corrupt {
                coding: Coding::Gzip,
                ..
            })
        ));
    }

    #[test]
    fn header_parts_follow_the_flags() {
        let mut header = GzipHeader::default();
        let fixed = [0x1f, 0x8b, 8, FEXTRA | FNAME, 0, 0, 0, 0, 0, 3];
        for byte in fixed {
            assert!(!header.push(byte).unwrap());
        }
        assert_eq!(header.part, HeaderPart::ExtraLen);
        for byte in [2, 0, b'x', b'y', b'n', b'a', b'm', b'e'] {
            assert!(!header.push(byte).unwrap());
        }
        assert_eq!(header.part, HeaderPart::Name);
        assert!(header.push(0).unwrap(), "the name's zero ends the header");
    }

    /// Raw deflate: a stored block of 200 bytes, then a block of the reserved type 3.
    fn stored_then_invalid() -> Vec<u8> {
        let mut data = vec![0x00, 200, 0, !200, 0xff];
        data.extend(std::iter::repeat_n(b'x', 200));
        data.push(0x07);
        data
    }

    #[test]
    fn over_the_cap_before_corruption_is_the_same_verdict_at_any_pace() {
        let data = stored_then_invalid();
        let whole = decode_all(&[Coding::Deflate], &data, 64);
        assert!(
            matches!(whole, Err(DecodeError::LimitExceeded { limit: 64 })),
            "{whole:?}"
        );
        let mut decoder = crate::body::Decoder::new(&[Coding::Deflate], 64);
        let first = decoder.decode(&data[..100], false);
        assert!(
            matches!(first, Err(DecodeError::LimitExceeded { limit: 64 })),
            "{first:?}"
        );
        let roomy = decode_all(&[Coding::Deflate], &data, 1024);
        assert!(
            matches!(
                roomy,
                Err(DecodeError::Corrupt {
                    coding: Coding::Deflate,
                    ..
                })
            ),
            "{roomy:?}"
        );
    }
}
