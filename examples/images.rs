//! Photographs for the page-weight benchmark, and the transcoder's throughput.
//!
//! `cargo run --example images -- sizes OUT_DIR FILE...` writes each photograph at the widths
//! pages ask for (`OUT_DIR/<name>/<width>.jpg`, JPEG quality 85, as a site would serve them),
//! for `scripts/page-weight.sh`'s loopback origin.
//!
//! `cargo run --example images -- rate [--rounds N] FILE...` times the transcoder on each
//! file (decode, scale to 800 pixels wide, encode at quality 60) as WebP and as JPEG, one
//! thread, and prints megapixels of input per second; beside it, the two scalers the
//! transcoder could use (`fast_image_resize` and `image`'s own), which is how the scaler was
//! chosen. Build with the dev profile: the codecs are optimised there (Cargo.toml).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pith::images::transcode::{self, Format, Target};

const WIDTHS: [u32; 9] = [160, 320, 480, 640, 800, 1024, 1280, 1600, 2048];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("sizes") if args.len() >= 3 => sizes(Path::new(&args[1]), &args[2..]),
        Some("rate") => {
            let (rounds, files) = match args.get(1).map(String::as_str) {
                Some("--rounds") => (args.get(2).and_then(|n| n.parse().ok()).unwrap_or(3), &args[3.min(args.len())..]),
                _ => (3, &args[1..]),
            };
            rate(rounds, files)
        }
        _ => {
            eprintln!("usage: images sizes OUT_DIR FILE... | images rate [--rounds N] FILE...");
            std::process::exit(64);
        }
    }
}

fn sizes(out: &Path, files: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    for file in files {
        let photo = image::open(file)?.into_rgb8();
        let name = Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or("photo");
        let dir: PathBuf = out.join(name);
        std::fs::create_dir_all(&dir)?;
        for width in WIDTHS {
            let height = (u64::from(photo.height()) * u64::from(width) / u64::from(photo.width())).max(1) as u32;
            let scaled = image::imageops::resize(&photo, width, height, image::imageops::FilterType::CatmullRom);
            let mut jpeg = Vec::new();
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85).encode_image(&scaled)?;
            std::fs::write(dir.join(format!("{width}.jpg")), jpeg)?;
        }
        println!("{name}: {}x{} at {} widths", photo.width(), photo.height(), WIDTHS.len());
    }
    Ok(())
}

fn rate(rounds: u32, files: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut pixels = 0u64;
    let (mut webp, mut jpeg) = (Duration::ZERO, Duration::ZERO);
    let (mut fast, mut plain) = (Duration::ZERO, Duration::ZERO);
    let (mut bytes_in, mut webp_out, mut jpeg_out) = (0usize, 0usize, 0usize);
    for file in files {
        let data = std::fs::read(file)?;
        let decoded = image::load_from_memory(&data)?.into_rgb8();
        let (w, h) = (decoded.width(), decoded.height());
        let to = transcode::scaled_size(w, h, 800);
        for _ in 0..rounds {
            pixels += u64::from(w) * u64::from(h);
            bytes_in += data.len();
            for (format, total, out) in [(Format::Webp, &mut webp, &mut webp_out), (Format::Jpeg, &mut jpeg, &mut jpeg_out)] {
                let target = Target { format, max_width: 800, quality: 60, max_pixels: 100_000_000 };
                let start = Instant::now();
                let result = transcode::transcode(&data, &target);
                *total += start.elapsed();
                *out += result.map_or(data.len(), |t| t.bytes.len());
            }
            let start = Instant::now();
            let src = fast_image_resize::images::Image::from_vec_u8(w, h, decoded.as_raw().clone(), fast_image_resize::PixelType::U8x3)?;
            let mut dst = fast_image_resize::images::Image::new(to.0, to.1, fast_image_resize::PixelType::U8x3);
            let options = fast_image_resize::ResizeOptions::new().resize_alg(fast_image_resize::ResizeAlg::Convolution(fast_image_resize::FilterType::Lanczos3));
            fast_image_resize::Resizer::new().resize(&src, &mut dst, &options)?;
            fast += start.elapsed();
            let start = Instant::now();
            let _ = image::imageops::resize(&decoded, to.0, to.1, image::imageops::FilterType::Lanczos3);
            plain += start.elapsed();
        }
    }
    let mp = pixels as f64 / 1e6;
    let per_s = |d: Duration| mp / d.as_secs_f64().max(1e-9);
    println!("input: {} files x {rounds} rounds, {mp:.1} megapixels, {bytes_in} bytes", files.len());
    println!("transcode to WebP q60 <=800 px: {:.1} MP/s per core, {webp_out} bytes out ({:.1}% of input)", per_s(webp), 100.0 * webp_out as f64 / bytes_in as f64);
    println!("transcode to JPEG q60 <=800 px: {:.1} MP/s per core, {jpeg_out} bytes out ({:.1}% of input)", per_s(jpeg), 100.0 * jpeg_out as f64 / bytes_in as f64);
    println!("scale only, fast_image_resize Lanczos3: {:.1} MP/s; image::imageops Lanczos3: {:.1} MP/s", per_s(fast), per_s(plain));
    Ok(())
}
