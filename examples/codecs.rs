//! Bytes against time for the codings pith sends: how its compression levels were chosen.
//!
//! `cargo run --release --example codecs -- [--rounds N] FILE...` compresses each file (pages as
//! pith rewrote them: `curl -x` through a declutter listener) with gzip levels 1 to 6, brotli
//! qualities 1 to 6 and zstd levels 1 to 6, one thread, through [`pith::body`]'s own encoder
//! settings where they apply, and prints per setting: output as a share of the input, and
//! microseconds of CPU per page (the best of N rounds, so other load on the machine adds little).
//! Then the inflate side: gzip level 6 bodies (what nginx's gzip_static serves here) decoded by
//! pith's [`pith::body::Decoder`], by flate2's `GzDecoder` and by libdeflate (whole buffer, its
//! output sized from the gzip trailer), in microseconds per page; last, libdeflate's levels 1 to
//! 6 with a compressor made per page ([`pith::body::encode_all`] keeps one per thread).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use flate2::Compression;
use pith::body::{Coding, Decoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 5;
    if args.first().map(String::as_str) == Some("--rounds") && args.len() >= 2 {
        rounds = args[1].parse()?;
        args.drain(..2);
    }
    let pages: Vec<Vec<u8>> = args.iter().map(std::fs::read).collect::<Result<_, _>>()?;
    if pages.is_empty() {
        return Err("give the pages to compress as arguments".into());
    }
    let input: usize = pages.iter().map(Vec::len).sum();
    println!(
        "{} pages, {} bytes, mean {} bytes; best of {rounds} rounds",
        pages.len(),
        input,
        input / pages.len()
    );
    println!("| setting | size | µs per page |");
    println!("|---|---:|---:|");
    let mut settings: Vec<(String, Codec)> = Vec::new();
    for level in 1..=6 {
        settings.push((format!("gzip {level}"), Box::new(move |p| gzip(p, level))));
    }
    for quality in 1..=6 {
        settings.push((
            format!("brotli q{quality}"),
            Box::new(move |p| brotli(p, quality)),
        ));
    }
    for level in 1..=6 {
        settings.push((
            format!("zstd {level}"),
            Box::new(move |p| zstd::encode_all(p, level).unwrap_or_default()),
        ));
    }
    for (name, encode) in &settings {
        let (bytes, time) = best(rounds, &pages, |p| encode(p).len());
        println!(
            "| {name} | {:.1}% | {:.0} |",
            100.0 * bytes as f64 / input as f64,
            per_page(time, pages.len())
        );
    }
    let zipped: Vec<Vec<u8>> = pages.iter().map(|p| gzip(p, 6)).collect();
    let (bytes, time) = best(rounds, &zipped, |z| {
        let mut out = Vec::new();
        let mut decoder = Decoder::new(&[Coding::Gzip], 64 << 20);
        decoder
            .decode_into(z, true, &mut out)
            .map(|()| out.len())
            .unwrap_or(0)
    });
    assert_eq!(bytes, input, "the decoder gives the pages back");
    println!(
        "| inflate gzip 6 (pith's Decoder) | | {:.0} |",
        per_page(time, pages.len())
    );
    let (bytes, time) = best(rounds, &zipped, |z| {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(z)
            .read_to_end(&mut out)
            .map(|_| out.len())
            .unwrap_or(0)
    });
    assert_eq!(bytes, input);
    println!(
        "| inflate gzip 6 (flate2 GzDecoder, zlib-rs) | | {:.0} |",
        per_page(time, pages.len())
    );
    let (bytes, time) = best(rounds, &zipped, |z| {
        let size = u32::from_le_bytes(z[z.len() - 4..].try_into().unwrap()) as usize;
        let mut out = vec![0u8; size];
        libdeflater::Decompressor::new()
            .gzip_decompress(z, &mut out)
            .unwrap_or(0)
    });
    assert_eq!(bytes, input);
    println!(
        "| inflate gzip 6 (libdeflate, whole buffer) | | {:.0} |",
        per_page(time, pages.len())
    );
    for level in 1..=6 {
        let (bytes, time) = best(rounds, &pages, |p| {
            let mut c =
                libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap());
            let mut out = vec![0u8; c.gzip_compress_bound(p.len())];
            c.gzip_compress(p, &mut out).unwrap_or(0)
        });
        println!(
            "| libdeflate gzip {level} | {:.1}% | {:.0} |",
            100.0 * bytes as f64 / input as f64,
            per_page(time, pages.len())
        );
    }
    Ok(())
}

/// One setting of one codec: a page in, its encoded bytes out.
type Codec = Box<dyn Fn(&[u8]) -> Vec<u8>>;

fn gzip(page: &[u8], level: u32) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::new(level));
    e.write_all(page)
        .and_then(|()| e.finish())
        .unwrap_or_default()
}

fn brotli(page: &[u8], quality: u32) -> Vec<u8> {
    let mut w = brotli::CompressorWriter::new(Vec::new(), 4096, quality, 20);
    let _ = w.write_all(page);
    w.into_inner()
}

/// Total output bytes of one round, and the fastest round's time.
fn best(rounds: usize, pages: &[Vec<u8>], f: impl Fn(&[u8]) -> usize) -> (usize, Duration) {
    let mut fastest = Duration::MAX;
    let mut bytes = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        bytes = pages.iter().map(|p| f(p)).sum();
        fastest = fastest.min(start.elapsed());
    }
    (bytes, fastest)
}

fn per_page(time: Duration, pages: usize) -> f64 {
    time.as_secs_f64() * 1e6 / pages as f64
}
