//! One image made smaller: decoded within bounds, scaled down, encoded as WebP or JPEG.
//!
//! The bounds come first. The header alone gives the dimensions; an image with more pixels
//! than `max_pixels` is never decoded, so a decompression bomb (a few KiB of PNG that would
//! inflate to 100 megapixels) costs a header read. The decoder's own allocation limit is set
//! from the same figure. A JPEG without its end marker is truncated: the decoder would paint
//! the missing rows grey, so it is left alone. Animated images (GIF, APNG, WebP) would lose
//! their motion, and SVG is already text; both are left alone too.
//!
//! What the client is sent is decided by [`transcode`]'s caller from the result: the
//! transcoded bytes only when they are smaller than the original (the never-larger rule lives
//! here, in [`transcode`], so no caller can forget it).
//!
//! Crates, chosen by measurement on photographs (docs/benchmarks.md, "Page weight"): `image`'s
//! decoders (its JPEG decoder is `zune-jpeg`), `fast_image_resize` to scale (SIMD
//! convolution; several times faster than `image`'s own resize), libwebp through the `webp`
//! crate to encode WebP, and `image`'s JPEG encoder.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

/// What an image is encoded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Lossy WebP: about a third smaller than JPEG at the same quality.
    Webp,
    /// Baseline JPEG, for clients that do not accept WebP.
    Jpeg,
}

impl Format {
    /// The Content-Type it is served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Webp => "image/webp",
            Format::Jpeg => "image/jpeg",
        }
    }

    /// WebP when the client's `Accept` names `image/webp` (with a non-zero q), else JPEG.
    /// Browsers that read WebP say so; `*/*` alone is not taken as a promise.
    pub fn for_accept(accept: Option<&str>) -> Format {
        let names_webp = accept.is_some_and(|a| {
            a.split(',').any(|item| {
                let mut parts = item.split(';');
                let media = parts.next().unwrap_or("").trim();
                let q = parts.filter_map(|p| p.trim().strip_prefix("q=")).find_map(|q| q.trim().parse::<f32>().ok()).unwrap_or(1.0);
                media.eq_ignore_ascii_case("image/webp") && q > 0.0
            })
        });
        if names_webp {
            Format::Webp
        } else {
            Format::Jpeg
        }
    }
}

/// What the transcoder is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The format to encode.
    pub format: Format,
    /// The widest result, in pixels; narrower images keep their width.
    pub max_width: u32,
    /// Encoder quality, 1–100.
    pub quality: u8,
    /// The most pixels decoded (`limits.image_max_pixels`).
    pub max_pixels: u64,
}

/// A smaller image.
#[derive(Debug)]
pub struct Transcoded {
    /// The encoded bytes.
    pub bytes: Vec<u8>,
    /// Their format.
    pub format: Format,
    /// The original's dimensions.
    pub from: (u32, u32),
    /// The result's dimensions.
    pub to: (u32, u32),
}

/// Why an image is served as the origin sent it.
#[derive(Debug, thiserror::Error)]
pub enum Untouched {
    /// Not JPEG, PNG, GIF or WebP (SVG, AVIF, ICO, …) by its first bytes.
    #[error("not an image the transcoder reads")]
    Unsupported,
    /// More than one frame: transcoding would keep only the first.
    #[error("animated")]
    Animated,
    /// Its header promises more pixels than `limits.image_max_pixels`.
    #[error("{width}x{height} is more than the {max} pixels decoded")]
    TooManyPixels {
        /// Width from the header.
        width: u32,
        /// Height from the header.
        height: u32,
        /// The bound.
        max: u64,
    },
    /// A JPEG without its end-of-image marker.
    #[error("truncated JPEG")]
    Truncated,
    /// The decoder refused it.
    #[error("undecodable: {0}")]
    Undecodable(#[source] image::ImageError),
    /// Scaling failed (an invariant of the sizes computed here; reported, never a panic).
    #[error("scaling failed: {0}")]
    Scale(String),
    /// The encoder failed (WebP has a 16383-pixel side limit).
    #[error("encoding failed: {0}")]
    Encode(String),
    /// The rewrite memory budget had no room for decoding it (the proxy's verdict).
    #[error("no room in the rewrite memory budget")]
    NoMemory,
    /// The result was not smaller than the original.
    #[error("the result ({result} bytes) is not smaller than the original ({original} bytes)")]
    NotSmaller {
        /// Bytes of the original.
        original: usize,
        /// Bytes of the result.
        result: usize,
    },
}

/// The image in `data` as `target` asks, when that is smaller than `data`.
pub fn transcode(data: &[u8], target: &Target) -> Result<Transcoded, Untouched> {
    let format = image::guess_format(data).map_err(|_| Untouched::Unsupported)?;
    if !matches!(format, ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::Gif | ImageFormat::WebP) {
        return Err(Untouched::Unsupported);
    }
    let (width, height) = dimensions(data, format)?;
    if u64::from(width) * u64::from(height) > target.max_pixels {
        return Err(Untouched::TooManyPixels { width, height, max: target.max_pixels });
    }
    if format == ImageFormat::Jpeg && !has_jpeg_end(data) {
        return Err(Untouched::Truncated);
    }
    if is_animated(data, format)? {
        return Err(Untouched::Animated);
    }
    let image = decode(data, format, target.max_pixels)?;
    let to = scaled_size(width, height, target.max_width);
    let (pixels, alpha) = scale(image, to)?;
    let bytes = encode(&pixels, alpha, to, target)?;
    if bytes.len() >= data.len() {
        return Err(Untouched::NotSmaller { original: data.len(), result: bytes.len() });
    }
    Ok(Transcoded { bytes, format: target.format, from: (width, height), to })
}

/// The pixels an image's header promises; `None` when it is not an image read here.
pub fn pixels(data: &[u8]) -> Option<u64> {
    let format = image::guess_format(data).ok()?;
    let (w, h) = dimensions(data, format).ok()?;
    Some(u64::from(w) * u64::from(h))
}

fn reader(data: &[u8], format: ImageFormat) -> ImageReader<Cursor<&[u8]>> {
    let mut reader = ImageReader::new(Cursor::new(data));
    reader.set_format(format);
    reader
}

/// Width and height from the header alone.
fn dimensions(data: &[u8], format: ImageFormat) -> Result<(u32, u32), Untouched> {
    reader(data, format).into_dimensions().map_err(Untouched::Undecodable)
}

/// Whether the last KiB holds the end-of-image marker. Entropy-coded data never holds
/// `FF D9` (a data `FF` is followed by `00`), so a file cut short has none near its end.
fn has_jpeg_end(data: &[u8]) -> bool {
    let tail = &data[data.len().saturating_sub(1024)..];
    tail.windows(2).any(|w| w == [0xFF, 0xD9])
}

fn is_animated(data: &[u8], format: ImageFormat) -> Result<bool, Untouched> {
    use image::AnimationDecoder;
    let cursor = Cursor::new(data);
    match format {
        ImageFormat::Png => image::codecs::png::PngDecoder::new(cursor).and_then(|d| d.is_apng()).map_err(Untouched::Undecodable),
        ImageFormat::WebP => image::codecs::webp::WebPDecoder::new(cursor).map(|d| d.has_animation()).map_err(Untouched::Undecodable),
        // A second frame decoded is bounded like the first: the dimensions were checked.
        ImageFormat::Gif => {
            let decoder = image::codecs::gif::GifDecoder::new(cursor).map_err(Untouched::Undecodable)?;
            Ok(decoder.into_frames().take(2).count() > 1)
        }
        _ => Ok(false),
    }
}

/// Decodes with the pixel bound as the decoder's own limits: the header was checked, and a
/// decoder that allocates more than the pixels need fails rather than grows.
fn decode(data: &[u8], format: ImageFormat, max_pixels: u64) -> Result<DynamicImage, Untouched> {
    let mut limits = Limits::default();
    // Sixteen-bit RGBA is the largest a decoder writes, plus room for its own buffers.
    limits.max_alloc = Some(max_pixels.saturating_mul(8).saturating_add(16 << 20));
    let mut reader = reader(data, format);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(Untouched::Undecodable)?;
    // The decoder's own view of the size must agree with what was checked.
    let (w, h) = decoder.dimensions();
    if u64::from(w) * u64::from(h) > max_pixels {
        return Err(Untouched::TooManyPixels { width: w, height: h, max: max_pixels });
    }
    DynamicImage::from_decoder(decoder).map_err(Untouched::Undecodable)
}

/// At most `max_width` wide, the aspect ratio kept, never larger than the original.
pub fn scaled_size(width: u32, height: u32, max_width: u32) -> (u32, u32) {
    if width <= max_width || max_width == 0 {
        return (width, height);
    }
    let h = (u64::from(height) * u64::from(max_width) + u64::from(width) / 2) / u64::from(width);
    (max_width, u32::try_from(h).unwrap_or(u32::MAX).max(1))
}

/// The image at `to`, as 8-bit RGB or RGBA (`true`) rows.
fn scale(image: DynamicImage, to: (u32, u32)) -> Result<(Vec<u8>, bool), Untouched> {
    use fast_image_resize::{images::Image, FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
    let alpha = image.color().has_alpha();
    let (width, height) = (image.width(), image.height());
    let (pixels, kind) = if alpha { (image.into_rgba8().into_raw(), PixelType::U8x4) } else { (image.into_rgb8().into_raw(), PixelType::U8x3) };
    if (width, height) == to {
        return Ok((pixels, alpha));
    }
    let src = Image::from_vec_u8(width, height, pixels, kind).map_err(|e| Untouched::Scale(e.to_string()))?;
    let mut dst = Image::new(to.0, to.1, kind);
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
    Resizer::new().resize(&src, &mut dst, &options).map_err(|e| Untouched::Scale(e.to_string()))?;
    Ok((dst.into_vec(), alpha))
}

fn encode(pixels: &[u8], alpha: bool, (width, height): (u32, u32), target: &Target) -> Result<Vec<u8>, Untouched> {
    let quality = target.quality.clamp(1, 100);
    match target.format {
        Format::Webp => {
            let encoder = if alpha { webp::Encoder::from_rgba(pixels, width, height) } else { webp::Encoder::from_rgb(pixels, width, height) };
            let mut config = webp::WebPConfig::new().map_err(|()| Untouched::Encode("libwebp refused its default configuration".to_string()))?;
            config.quality = f32::from(quality);
            config.alpha_compression = 1;
            // 0 fastest … 6 smallest; 4 is libwebp's own default trade.
            config.method = 4;
            let out = encoder.encode_advanced(&config).map_err(|e| Untouched::Encode(format!("{e:?}")))?;
            Ok(out.to_vec())
        }
        Format::Jpeg => {
            let rgb;
            let pixels = if alpha {
                rgb = flatten_on_white(pixels);
                &rgb[..]
            } else {
                pixels
            };
            let mut out = Vec::new();
            image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
                .encode(pixels, width, height, image::ExtendedColorType::Rgb8)
                .map_err(|e| Untouched::Encode(e.to_string()))?;
            Ok(out)
        }
    }
}

/// RGBA rows as RGB over white: JPEG has no alpha, and a page's background is mostly white.
fn flatten_on_white(rgba: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rgba.len() / 4 * 3);
    for p in rgba.chunks_exact(4) {
        let a = u16::from(p[3]);
        for &c in &p[..3] {
            out.push(((u16::from(c) * a + 255 * (255 - a) + 127) / 255) as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A photograph-like gradient with noise, so the codecs have something to compress.
    fn photo(width: u32, height: u32) -> image::RgbImage {
        image::RgbImage::from_fn(width, height, |x, y| {
            let n = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) % 23;
            image::Rgb([((x * 255) / width) as u8, ((y * 255) / height) as u8, (n * 7) as u8])
        })
    }

    fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).expect("encodes");
        out.into_inner()
    }

    fn target(format: Format) -> Target {
        Target { format, max_width: 800, quality: 60, max_pixels: 40_000_000 }
    }

    #[test]
    fn accept_decides_the_format() {
        assert_eq!(Format::for_accept(Some("image/avif,image/webp,image/apng,image/*,*/*;q=0.8")), Format::Webp);
        assert_eq!(Format::for_accept(Some("image/webp;q=0")), Format::Jpeg);
        assert_eq!(Format::for_accept(Some("*/*")), Format::Jpeg);
        assert_eq!(Format::for_accept(None), Format::Jpeg);
    }

    #[test]
    fn sizes_scale_down_never_up() {
        assert_eq!(scaled_size(1600, 1200, 800), (800, 600));
        assert_eq!(scaled_size(640, 480, 800), (640, 480));
        assert_eq!(scaled_size(10_000, 1, 800), (800, 1));
    }

    #[test]
    fn a_large_png_becomes_a_small_webp_and_jpeg() {
        let png = encoded(&DynamicImage::ImageRgb8(photo(1600, 1000)), ImageFormat::Png);
        for format in [Format::Webp, Format::Jpeg] {
            let out = transcode(&png, &target(format)).expect("transcodes");
            assert_eq!(out.to, (800, 500));
            assert!(out.bytes.len() < png.len());
            let back = image::load_from_memory(&out.bytes).expect("the result decodes");
            assert_eq!((back.width(), back.height()), (800, 500));
            let guessed = image::guess_format(&out.bytes).expect("a known format");
            assert_eq!(guessed, if format == Format::Webp { ImageFormat::WebP } else { ImageFormat::Jpeg });
        }
    }

    #[test]
    fn never_larger() {
        // A tiny flat JPEG at low quality: re-encoding cannot beat it.
        let flat = DynamicImage::ImageRgb8(image::RgbImage::from_pixel(16, 16, image::Rgb([200, 10, 10])));
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 10).encode_image(&flat).expect("encodes");
        let high = Target { quality: 100, ..target(Format::Jpeg) };
        assert!(matches!(transcode(&jpeg, &high), Err(Untouched::NotSmaller { .. })), "{:?}", transcode(&jpeg, &high).map(|t| t.bytes.len()));
    }

    #[test]
    fn bombs_and_truncated_files_are_left_alone() {
        let png = encoded(&DynamicImage::ImageRgb8(photo(400, 300)), ImageFormat::Png);
        let small = Target { max_pixels: 100_000, ..target(Format::Webp) };
        assert!(matches!(transcode(&png, &small), Err(Untouched::TooManyPixels { width: 400, height: 300, .. })));
        let jpeg = encoded(&DynamicImage::ImageRgb8(photo(400, 300)), ImageFormat::Jpeg);
        assert!(matches!(transcode(&jpeg[..jpeg.len() / 2], &target(Format::Webp)), Err(Untouched::Truncated)));
        assert!(matches!(transcode(&png[..png.len() / 2], &target(Format::Webp)), Err(Untouched::Undecodable(_))));
        assert!(matches!(transcode(b"<svg xmlns='http://www.w3.org/2000/svg'/>", &target(Format::Webp)), Err(Untouched::Unsupported)));
        assert!(matches!(transcode(b"", &target(Format::Webp)), Err(Untouched::Unsupported)));
    }

    #[test]
    fn animations_are_left_alone() {
        let mut gif = Vec::new();
        {
            let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
            for shade in [0u8, 255] {
                let frame = image::RgbaImage::from_pixel(64, 64, image::Rgba([shade, 0, 0, 255]));
                encoder.encode_frame(image::Frame::new(frame)).expect("encodes a frame");
            }
        }
        assert!(matches!(transcode(&gif, &target(Format::Webp)), Err(Untouched::Animated)));
    }
}
