//! Applying one content-coding to a body for the client.
//!
//! The proxy re-encodes every page it rewrites, on the response path, so the levels below are
//! chosen for speed on what it compresses: rewritten pages, 4 to 33 KB (mean 13.6 KB) on the 23
//! pages of `perf/gate-pages.txt`. Measured with `cargo run --release --example codecs` on those
//! pages (one thread, best of five rounds, a loaded two-core machine): output as a share of the
//! page, and CPU per page.
//!
//! | setting | size | µs per page |
//! |---|---:|---:|
//! | gzip 1 / **2** / 5 / 6 | 43.2% / 33.6% / 32.0% / 31.9% | 35 / 75 / 101 / 106 |
//! | brotli q3 / **q4** / q5 | 33.0% / 30.9% / 29.1% | 126 / 352 / 784 |
//! | zstd 1 / 3 / 6 | 34.0% / 33.0% / 31.8% | 38 / 50 / 127 |
//!
//! On a rewritten page, gzip 5 saved 220 bytes over gzip 2 for a third more time, and brotli q5
//! 250 bytes over q4 for twice the time; gzip 1 (zlib-rs's quick strategy) costs 35% more bytes.
//! Whole pages ([`encode_all`], what the proxy sends) are compressed by libdeflate at level 1
//! instead, smaller and faster than zlib-rs's level 2 (33.0% in 47 µs a page); the streaming
//! [`Encoder`] stays on zlib-rs.
//! Inflating the origin's page (gzip 6, mean 176 KB decoded) took 176 µs on the same run:
//! more than compressing the rewritten page, and already zlib-rs's.

use std::io::{self, Write};

use flate2::write::{GzEncoder, ZlibEncoder};
use flate2::Compression;

use super::{Coding, EncodeError};

/// gzip and deflate level 2, zlib-rs's fast strategy (no lazy matching): three quarters of level
/// 5's time on rewritten pages for 1.6 points of size; level 1 is twice as fast again but its
/// static codes make the page a third larger.
const FLATE_LEVEL: u32 = 2;

/// Brotli quality 4: less than half of quality 5's time on rewritten pages (352 against 784 µs
/// a page) for 1.8 points of size, and still 2.7 points smaller than gzip; below quality 4
/// brotli is no smaller than gzip 2 and slower.
const BROTLI_QUALITY: u32 = 4;

/// Brotli window of 2^20 = 1 MiB: pages fit in it (a wider window saved nothing on the sample),
/// and the encoder's memory per connection grows with the window.
const BROTLI_LGWIN: u32 = 20;

/// Brotli's internal buffer size for the writer: small, because output is collected per call.
const BROTLI_BUFFER: usize = 4096;

/// zstd level 3, the library's default. [`super::choose_encoding`] never picks zstd, so this
/// serves only callers that ask for it by name.
const ZSTD_LEVEL: i32 = 3;

/// Applies one content-coding, incrementally.
///
/// Output is whatever the codec has produced so far, which may be empty until enough input has
/// arrived; the call with `end` set returns the rest of the stream. After `end`, or after an
/// error, further calls fail.
pub struct Encoder {
    coding: Coding,
    inner: Inner,
    finished: bool,
}

impl std::fmt::Debug for Encoder {
    /// Shows the coding and whether the stream is finished; codec state is opaque.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("coding", &self.coding)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

/// The codec behind an [`Encoder`]; each writes into a `Vec` that `encode` empties every call.
enum Inner {
    Identity,
    Gzip(GzEncoder<Vec<u8>>),
    Deflate(ZlibEncoder<Vec<u8>>),
    /// `Option` because brotli's writer finishes its stream only when consumed.
    Brotli(Option<Box<brotli::CompressorWriter<Vec<u8>>>>),
    /// Created on first use, because creation can fail and [`Encoder::new`] cannot.
    Zstd(Option<zstd::stream::write::Encoder<'static, Vec<u8>>>),
}

impl Encoder {
    /// An encoder applying `coding`; identity is a pass-through. `deflate` is sent zlib-wrapped,
    /// as RFC 9110 defines it.
    ///
    /// Levels are chosen for a proxy that compresses every page it rewrites, on the response
    /// path (the module's table): gzip/deflate 2, brotli quality 4 with a 1 MiB window (wider
    /// windows saved nothing on pages and cost memory per connection), zstd 3 (the library
    /// default).
    pub fn new(coding: Coding) -> Encoder {
        let inner = match coding {
            Coding::Identity => Inner::Identity,
            Coding::Gzip => Inner::Gzip(GzEncoder::new(Vec::new(), Compression::new(FLATE_LEVEL))),
            Coding::Deflate => {
                Inner::Deflate(ZlibEncoder::new(Vec::new(), Compression::new(FLATE_LEVEL)))
            }
            Coding::Brotli => Inner::Brotli(Some(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                BROTLI_BUFFER,
                BROTLI_QUALITY,
                BROTLI_LGWIN,
            )))),
            Coding::Zstd => Inner::Zstd(None),
        };
        Encoder {
            coding,
            inner,
            finished: false,
        }
    }

    /// Push shape: feeds the next chunk and returns the encoded bytes produced so far. `end`
    /// finishes the stream (the chunk may be empty); an empty body still gets a valid stream.
    pub fn encode(&mut self, input: &[u8], end: bool) -> Result<Vec<u8>, EncodeError> {
        if self.finished {
            let source = io::Error::other("the encoder has already finished its stream");
            return Err(EncodeError::Io {
                coding: self.coding,
                source,
            });
        }
        let result = self.run(input, end);
        self.finished = end || result.is_err();
        result.map_err(|source| EncodeError::Io {
            coding: self.coding,
            source,
        })
    }

    fn run(&mut self, input: &[u8], end: bool) -> io::Result<Vec<u8>> {
        match &mut self.inner {
            Inner::Identity => Ok(input.to_vec()),
            Inner::Gzip(encoder) => {
                encoder.write_all(input)?;
                if end {
                    encoder.try_finish()?;
                }
                Ok(std::mem::take(encoder.get_mut()))
            }
            Inner::Deflate(encoder) => {
                encoder.write_all(input)?;
                if end {
                    encoder.try_finish()?;
                }
                Ok(std::mem::take(encoder.get_mut()))
            }
            Inner::Brotli(slot) => run_brotli(slot, input, end),
            Inner::Zstd(slot) => run_zstd(slot, input, end),
        }
    }
}

/// Brotli's writer finishes its stream when consumed, so `end` takes it out of its slot. Its
/// finishing step reports no error; writing into a `Vec` gives it none to report.
fn run_brotli(
    slot: &mut Option<Box<brotli::CompressorWriter<Vec<u8>>>>,
    input: &[u8],
    end: bool,
) -> io::Result<Vec<u8>> {
    let Some(writer) = slot.as_mut() else {
        return Err(io::Error::other("the brotli stream is already finished"));
    };
    writer.write_all(input)?;
    if !end {
        return Ok(std::mem::take(writer.get_mut()));
    }
    Ok(slot.take().map(|w| w.into_inner()).unwrap_or_default())
}

/// zstd's encoder is created on first use; an empty body still gets one frame.
fn run_zstd(
    slot: &mut Option<zstd::stream::write::Encoder<'static, Vec<u8>>>,
    input: &[u8],
    end: bool,
) -> io::Result<Vec<u8>> {
    let encoder = match slot {
        Some(encoder) => encoder,
        None => slot.insert(zstd::stream::write::Encoder::new(Vec::new(), ZSTD_LEVEL)?),
    };
    encoder.write_all(input)?;
    if end {
        encoder.do_finish()?;
    }
    Ok(std::mem::take(encoder.get_mut()))
}

/// Encodes a whole buffer: what the proxy does to every page it rewrites.
///
/// gzip and deflate go through libdeflate at level 1, with one compressor per thread made once
/// and reused: on the 23 rewritten gate pages it gives 33.0% of the size in 47 µs a page
/// against zlib-rs level 2's 33.6% in 71 µs (`cargo run --release --example codecs`), and a
/// compressor kept per thread spares allocating and zeroing zlib's 300 KiB of state per page.
/// The other codings use [`Encoder`].
pub fn encode_all(coding: Coding, input: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let out = match coding {
        Coding::Identity => return Ok(input.to_vec()),
        Coding::Gzip | Coding::Deflate => whole_flate(coding, input),
        Coding::Brotli | Coding::Zstd => Encoder::new(coding).encode(input, true),
    };
    COMPRESSIONS.with(|count| count.set(count.get() + 1));
    out
}

/// libdeflate's level 1 (its hash-table matcher): smaller than zlib-rs's level 2 on rewritten
/// pages and faster (the module's table and [`encode_all`]).
const WHOLE_FLATE_LEVEL: i32 = 1;

thread_local! {
    /// This thread's gzip/deflate compressor, made on first use and kept: libdeflate's
    /// compressor holds no stream state between calls, only its tables (198 KiB at level 1,
    /// `sizeof` of its level-1 state). Threads that compress: the async workers, and the
    /// blocking pool's threads that rewrite pages over 512 KiB, which exit when idle.
    static FLATE: std::cell::RefCell<Option<libdeflater::Compressor>> = const { std::cell::RefCell::new(None) };
    /// Bodies compressed by [`encode_all`] on this thread.
    static COMPRESSIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many bodies [`encode_all`] compressed on the calling thread: a test's proxy running on
/// the test's own runtime thread shows whether serving a request compressed anything.
pub fn compressions_on_this_thread() -> u64 {
    COMPRESSIONS.with(|count| count.get())
}

/// gzip (RFC 1952) or zlib-wrapped deflate of the whole input, with this thread's compressor.
fn whole_flate(coding: Coding, input: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let failed = |what: &str| EncodeError::Io {
        coding,
        source: io::Error::other(format!("libdeflate: {what}")),
    };
    FLATE.with(|slot| {
        let mut slot = slot
            .try_borrow_mut()
            .map_err(|_| failed("the compressor is busy"))?;
        let compressor = match slot.as_mut() {
            Some(compressor) => compressor,
            None => {
                let level = libdeflater::CompressionLvl::new(WHOLE_FLATE_LEVEL)
                    .map_err(|_| failed("no such level"))?;
                slot.insert(libdeflater::Compressor::new(level))
            }
        };
        let gzip = coding == Coding::Gzip;
        let bound = match gzip {
            true => compressor.gzip_compress_bound(input.len()),
            false => compressor.zlib_compress_bound(input.len()),
        };
        let mut out = vec![0; bound];
        let written = match gzip {
            true => compressor.gzip_compress(input, &mut out),
            false => compressor.zlib_compress(input, &mut out),
        }
        .map_err(|_| failed("the output outgrew its bound"))?;
        out.truncate(written);
        // The body may be kept in the cache: no room beyond it.
        out.shrink_to_fit();
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;
    use crate::body::decode_all;

    const ALL: [Coding; 5] = [
        Coding::Identity,
        Coding::Gzip,
        Coding::Deflate,
        Coding::Brotli,
        Coding::Zstd,
    ];

    /// Decodes with the codec libraries directly, so the encoder is checked independently of
    /// pith's decoder.
    fn library_decode(coding: Coding, encoded: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Identity => out.extend_from_slice(encoded),
            Coding::Gzip => {
                flate2::read::GzDecoder::new(encoded)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Deflate => {
                flate2::read::ZlibDecoder::new(encoded)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Brotli => {
                brotli::Decompressor::new(encoded, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Zstd => out = zstd::decode_all(encoded).unwrap(),
        }
        out
    }

    fn page() -> Vec<u8> {
        (0..3000)
            .map(|i| format!("<li><a href=\"/item/{i}\">item {}</a></li>\n", i * 17 % 541))
            .collect::<String>()
            .into_bytes()
    }

    /// Encodes `data` in chunks of `size` bytes and collects every call's output.
    fn encode_in_chunks(coding: Coding, data: &[u8], size: usize) -> Vec<u8> {
        let mut encoder = Encoder::new(coding);
        let mut out = Vec::new();
        for chunk in data.chunks(size) {
            out.extend(encoder.encode(chunk, false).unwrap());
        }
        out.extend(encoder.encode(&[], true).unwrap());
        out
    }

    #[test]
    fn every_coding_round_trips_through_the_libraries() {
        let data = page();
        for coding in ALL {
            let encoded = encode_in_chunks(coding, &data, 1000);
            assert!(library_decode(coding, &encoded) == data, "{coding} differs");
            assert!(decode_all(&[coding], &encoded, u64::MAX).unwrap() == data);
        }
    }

    #[test]
    fn pages_shrink_to_a_fraction() {
        let data = page();
        for coding in [Coding::Gzip, Coding::Deflate, Coding::Brotli, Coding::Zstd] {
            let encoded = encode_all(coding, &data).unwrap();
            assert!(
                encoded.len() * 5 < data.len(),
                "{coding}: {} of {}",
                encoded.len(),
                data.len()
            );
        }
        let gzip = encode_all(Coding::Gzip, &data).unwrap().len();
        let brotli = encode_all(Coding::Brotli, &data).unwrap().len();
        assert!(
            brotli < gzip,
            "brotli {brotli} should beat gzip {gzip} on a page"
        );
    }

    #[test]
    fn identity_passes_each_chunk_through() {
        let mut encoder = Encoder::new(Coding::Identity);
        assert_eq!(encoder.encode(b"abc", false).unwrap(), b"abc");
        assert_eq!(encoder.encode(b"", false).unwrap(), b"");
        assert_eq!(encoder.encode(b"def", true).unwrap(), b"def");
    }

    #[test]
    fn empty_body_gets_a_valid_stream() {
        for coding in ALL {
            let encoded = encode_all(coding, b"").unwrap();
            assert_eq!(encoded.is_empty(), coding == Coding::Identity, "{coding}");
            assert_eq!(library_decode(coding, &encoded), b"");
        }
    }

    #[test]
    fn encoding_after_the_end_fails() {
        for coding in ALL {
            let mut encoder = Encoder::new(coding);
            encoder.encode(b"body", true).unwrap();
            let err = encoder.encode(b"more", false).unwrap_err();
            let EncodeError::Io { coding: got, .. } = &err;
            assert_eq!(*got, coding);
            assert!(err
                .to_string()
                .starts_with(&format!("{coding} encoding of the body failed")));
        }
    }

    #[test]
    fn encoder_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Encoder>();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn any_split_round_trips(
            data in prop::collection::vec(any::<u8>(), 0..20_000),
            coding in prop::sample::select(ALL.to_vec()),
            cuts in prop::collection::vec(any::<Index>(), 0..10),
        ) {
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(data.len() + 1)).collect();
            points.sort_unstable();
            let mut encoder = Encoder::new(coding);
            let (mut encoded, mut last) = (Vec::new(), 0);
            for point in points {
                encoded.extend(encoder.encode(&data[last..point], false).unwrap());
                last = point;
            }
            encoded.extend(encoder.encode(&data[last..], true).unwrap());
            prop_assert!(library_decode(coding, &encoded) == data);
        }
    }
}
