//! Content-codings done independently of pith (flate2, brotli, zstd directly), to build origin
//! bodies and to check what pith sent.

use std::io::{Read, Write};

use flate2::Compression;

/// gzip (RFC 1952).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).expect("gzip into memory");
    enc.finish().expect("gzip into memory")
}

/// `deflate` as the RFC defines it: zlib-wrapped (RFC 1950).
pub fn zlib(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).expect("zlib into memory");
    enc.finish().expect("zlib into memory")
}

/// `deflate` as some servers send it: raw DEFLATE (RFC 1951), no zlib wrapper.
pub fn raw_deflate(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).expect("deflate into memory");
    enc.finish().expect("deflate into memory")
}

/// Brotli.
pub fn br(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        enc.write_all(data).expect("brotli into memory");
    }
    out
}

/// Zstandard.
pub fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).expect("zstd into memory")
}

/// Undoes gzip.
pub fn gunzip(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data).read_to_end(&mut out).expect("valid gzip from pith");
    out
}

/// Undoes brotli.
pub fn unbr(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(data, 4096).read_to_end(&mut out).expect("valid brotli from pith");
    out
}
