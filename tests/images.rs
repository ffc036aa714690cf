//! Images through a profile with `images = "compress"`: a loopback origin serves images made
//! here, and a real client asks for them through pith with a browser's `Accept`.
//!
//! A WebP client gets WebP and a JPEG-only client JPEG, both smaller and at most
//! `image_max_width` wide, each kept in the cache under its own format class; whatever would
//! not be smaller, a decompression bomb, a truncated JPEG and an animation come back as the
//! origin sent them; and `keep` passes every byte untouched.

use std::io::Cursor;

use http::Method;
use image::{DynamicImage, ImageFormat};

use crate::common::got::send;
use crate::common::*;

const WEBP_ACCEPT: &str = "image/avif,image/webp,image/apng,image/*,*/*;q=0.8";
const JPEG_ACCEPT: &str = "image/png,image/*;q=0.8,*/*;q=0.5";

/// A gateway profile that compresses images to 640 pixels wide.
async fn gateway(limits: &str) -> Pith {
    let profile = "profile = \"gateway\"\n[profiles.gateway]\nrules = \"declutter\"\nimages = \"compress\"\nimage_max_width = 640\nimage_quality = 60\n";
    Pith::start(&format!("{profile}{limits}")).await
}

/// A photograph-like picture: smooth gradients, edges and fine noise.
fn photo(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(image::RgbImage::from_fn(width, height, |x, y| {
        let noise = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) % 17;
        let ring = ((x as i64 - width as i64 / 2).pow(2) + (y as i64 - height as i64 / 3).pow(2)) as u32 / 997 % 64;
        image::Rgb([((x * 200) / width + noise) as u8, ((y * 180) / height + ring) as u8, (ring * 3 + noise) as u8])
    }))
}

fn jpeg(image: &DynamicImage, quality: u8) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality).encode_image(image).expect("encodes");
    out
}

fn png(image: &DynamicImage) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png).expect("encodes");
    out.into_inner()
}

/// An origin serving `body` as `content_type` at `/img`.
async fn serving(content_type: &'static str, body: Vec<u8>) -> RunningOrigin {
    Origin::new()
        .route("/img", move |_| reply(&[("content-type", content_type), ("cache-control", "max-age=600"), ("etag", "\"i1\"")], body.clone()))
        .run()
        .await
}

async fn fetch(pith: &Pith, url: &str, accept: &str) -> (reqwest::header::HeaderMap, Vec<u8>) {
    let resp = pith.client().get(url).header("accept", accept).send().await.expect("the proxy answers");
    assert_eq!(resp.status(), 200);
    let headers = resp.headers().clone();
    (headers, resp.bytes().await.expect("a whole body").to_vec())
}

fn header<'h>(headers: &'h reqwest::header::HeaderMap, name: &str) -> &'h str {
    headers.get(name).map_or("", |v| v.to_str().expect("ASCII header"))
}

#[tokio::test]
async fn a_webp_client_gets_webp_and_a_jpeg_client_jpeg_each_kept_apart() {
    let original = jpeg(&photo(1600, 1000), 90);
    let origin = serving("image/jpeg", original.clone()).await;
    let pith = gateway("").await;
    let url = origin.url("/img");
    for (accept, format, content_type) in [(WEBP_ACCEPT, ImageFormat::WebP, "image/webp"), (JPEG_ACCEPT, ImageFormat::Jpeg, "image/jpeg")] {
        let (headers, body) = fetch(&pith, &url, accept).await;
        assert_eq!(header(&headers, "content-type"), content_type, "{headers:?}");
        assert_eq!(header(&headers, "content-length"), body.len().to_string());
        assert!(header(&headers, "vary").to_ascii_lowercase().contains("accept"), "{headers:?}");
        assert_eq!(header(&headers, "etag"), "W/\"i1\"", "the bytes are no longer the origin's");
        assert!(header(&headers, "x-pith").contains("to=640x400"), "{headers:?}");
        assert!(body.len() * 3 < original.len(), "{} bytes from {}", body.len(), original.len());
        assert_eq!(image::guess_format(&body).expect("an image"), format);
        let decoded = image::load_from_memory(&body).expect("decodes");
        assert_eq!((decoded.width(), decoded.height()), (640, 400), "scaled to image_max_width, shape kept");
    }
    assert_eq!(origin.count("/img"), 2, "one fetch per format class");
    for (accept, content_type) in [(WEBP_ACCEPT, "image/webp"), (JPEG_ACCEPT, "image/jpeg")] {
        let got = send(&pith.client(), Method::GET, &url, &[("accept", accept)]).await;
        assert_eq!(got.x_cache(), Some("HIT"));
        assert_eq!(got.header("content-type"), Some(content_type), "each class served its own bytes");
    }
    assert_eq!(origin.count("/img"), 2);
}

#[tokio::test]
async fn a_png_is_scaled_and_a_small_one_is_never_made_larger() {
    let wide = png(&photo(900, 300));
    let origin = serving("image/png", wide.clone()).await;
    let pith = gateway("").await;
    let (headers, body) = fetch(&pith, &origin.url("/img"), WEBP_ACCEPT).await;
    assert_eq!(header(&headers, "content-type"), "image/webp");
    assert!(body.len() < wide.len());
    assert_eq!(image::load_from_memory(&body).expect("decodes").width(), 640);

    // Black-and-white noise as PNG: deflate packs it, a lossy encoder at quality 60 cannot.
    let noise = DynamicImage::ImageLuma8(image::GrayImage::from_fn(64, 64, |x, y| image::Luma([if (x * 7 + y * 13 + x * y) % 5 < 2 { 0 } else { 255 }])));
    let tiny = png(&noise);
    let origin = serving("image/png", tiny.clone()).await;
    for accept in [WEBP_ACCEPT, JPEG_ACCEPT] {
        let (headers, body) = fetch(&pith, &origin.url("/img"), accept).await;
        assert!(body == tiny, "{accept}: the original ({} bytes), byte for byte; got {}", tiny.len(), body.len());
        assert_eq!(header(&headers, "content-type"), "image/png");
        assert_eq!(header(&headers, "etag"), "\"i1\"");
    }
}

/// A PNG whose header promises 10000 x 10000 pixels (1-bit grey) over a valid, tiny IDAT of
/// zero rows: decoded, it would be 100 megapixels.
fn png_bomb() -> Vec<u8> {
    use std::io::Write;
    let (width, height) = (10_000u32, 10_000u32);
    let row = 1 + width.div_ceil(8) as usize;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; row * 500];
    for _ in 0..height / 500 {
        z.write_all(&zeros).expect("compresses");
    }
    let idat = z.finish().expect("compresses");
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.finalize().to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[1, 0, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &idat);
    chunk(b"IEND", &[]);
    out
}

#[tokio::test]
async fn a_bomb_a_truncated_jpeg_and_an_animation_come_back_as_sent() {
    let pith = gateway("[limits]\nimage_max_pixels = 4000000\n").await;
    let bomb = png_bomb();
    assert!(bomb.len() < 200_000, "a bomb is small: {}", bomb.len());
    let photo_jpeg = jpeg(&photo(1200, 900), 90);
    let truncated = photo_jpeg[..photo_jpeg.len() / 2].to_vec();
    let mut gif = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
        for shade in [0u8, 120, 240] {
            let frame = image::RgbaImage::from_fn(700, 200, |x, _| image::Rgba([shade, (x % 256) as u8, 0, 255]));
            encoder.encode_frame(image::Frame::new(frame)).expect("encodes a frame");
        }
    }
    for (content_type, body) in [("image/png", bomb), ("image/jpeg", truncated), ("image/gif", gif)] {
        let origin = serving(content_type, body.clone()).await;
        let (headers, got) = fetch(&pith, &origin.url("/img"), WEBP_ACCEPT).await;
        assert_eq!(header(&headers, "content-type"), content_type);
        assert!(got == body, "{content_type}: the original ({} bytes), got {}", body.len(), got.len());
    }
}

#[tokio::test]
async fn an_image_over_image_max_bytes_streams_through() {
    let big = jpeg(&photo(1600, 1000), 95);
    let origin = serving("image/jpeg", big.clone()).await;
    let pith = gateway(&format!("[limits]\nimage_max_bytes = {}\n", big.len() / 2)).await;
    let (headers, body) = fetch(&pith, &origin.url("/img"), WEBP_ACCEPT).await;
    assert_eq!(header(&headers, "content-type"), "image/jpeg");
    assert!(body == big, "the original, byte for byte");
}

#[tokio::test]
async fn keep_passes_images_untouched() {
    let original = jpeg(&photo(1600, 1000), 90);
    let origin = serving("image/jpeg", original.clone()).await;
    let pith = Pith::start("").await;
    let (headers, body) = fetch(&pith, &origin.url("/img"), WEBP_ACCEPT).await;
    assert!(body == original, "byte for byte");
    assert_eq!(header(&headers, "content-type"), "image/jpeg");
    assert!(headers.get("x-pith").is_none());
}

#[tokio::test]
async fn a_gateway_page_loads_lazy_images_without_scripts() {
    let page = "<html><head><title>Harbour</title></head><body><article><h1>Harbour</h1>\
                <p>The ferry left at dawn, and the harbour was quiet for the first time in weeks; \
                the fishermen mended their nets and the gulls had the quay to themselves.</p>\
                <img src='data:image/gif;base64,R0lGODlhAQABAAAAACw=' data-src='/ferry.jpg' \
                data-srcset='/ferry-480.jpg 480w, /ferry-960.jpg 960w, /ferry-1920.jpg 1920w' alt='The ferry'>\
                <p>By noon the wind had turned, and the boats came back one by one, low in the water \
                with the morning's catch.</p></article></body></html>";
    let origin = Origin::new().route("/story", move |_| reply(&[("content-type", "text/html")], page)).run().await;
    let pith = gateway("").await;
    let html = pith.client().get(origin.url("/story")).send().await.unwrap().text().await.unwrap();
    assert!(
        html.contains(r#"<img src="/ferry-960.jpg" alt="The ferry" loading="lazy" decoding="async">"#),
        "the smallest candidate at least 640 wide, made the src: {html}"
    );
    assert!(!html.contains("data-src"), "{html}");
}

#[tokio::test]
async fn a_thumbnail_is_asked_for_at_its_width_and_the_origin_never_sees_the_hint() {
    let page = "<html><head><title>Harbour</title></head><body><article><h1>Harbour</h1>\
                <p>The ferry left at dawn, and the harbour was quiet for the first time in weeks; \
                the fishermen mended their nets and the gulls had the quay to themselves.</p>\
                <img src='/img?size=large' width='120' alt='The quay'></article></body></html>";
    let original = jpeg(&photo(1600, 1000), 90);
    let origin = Origin::new()
        .route("/story", move |_| reply(&[("content-type", "text/html")], page))
        .route("/img", move |_| reply(&[("content-type", "image/jpeg"), ("cache-control", "max-age=600")], original.clone()))
        .run()
        .await;
    let pith = gateway("").await;
    let html = pith.client().get(origin.url("/story")).send().await.unwrap().text().await.unwrap();
    let src = "/img?size=large&pith-width=240";
    assert!(html.contains(r#"src="/img?size=large&amp;pith-width=240""#), "shown 120 px wide: asked for at 240: {html}");
    let (headers, body) = fetch(&pith, &origin.url(src), WEBP_ACCEPT).await;
    assert!(header(&headers, "x-pith").contains("to=240x150"), "{headers:?}");
    let got = image::load_from_memory(&body).expect("an image");
    assert_eq!((got.width(), got.height()), (240, 150));
    let asked: Vec<String> = origin.received().iter().map(|r| r.uri.to_string()).collect();
    assert!(asked.iter().any(|u| u == "/img?size=large"), "the page's own address: {asked:?}");
    assert!(!asked.iter().any(|u| u.contains("pith-width")), "{asked:?}");
    // The full-width copy is another entry, not the thumbnail.
    let (headers, _) = fetch(&pith, &origin.url("/img?size=large"), WEBP_ACCEPT).await;
    assert!(header(&headers, "x-pith").contains("to=640x400"), "{headers:?}");
}

/// A width hint of 0, or one that is not a width, is no hint: the image is still bounded by
/// the profile's `image_max_width`, never served at its full size.
#[tokio::test]
async fn a_zero_or_malformed_width_hint_is_ignored() {
    let origin = serving("image/jpeg", jpeg(&photo(1600, 1000), 90)).await;
    let pith = gateway("").await;
    for hint in ["pith-width=0", "pith-width=000", "pith-width=-1", "pith-width=99999999", "pith-width=1e3", "pith-width="] {
        let (headers, body) = fetch(&pith, &origin.url(&format!("/img?{hint}")), JPEG_ACCEPT).await;
        let got = image::load_from_memory(&body).expect("an image");
        assert!(got.width() <= 640, "{hint}: {}x{} {headers:?}", got.width(), got.height());
    }
}

/// An origin serving the same JPEG under any path (each path its own cache entry).
async fn many_images(original: Vec<u8>) -> RunningOrigin {
    let mut origin = Origin::new();
    for i in 0..20 {
        let body = original.clone();
        origin = origin.route(&format!("/img{i}"), move |_| reply(&[("content-type", "image/jpeg"), ("cache-control", "max-age=600")], body.clone()));
    }
    origin.run().await
}

fn client_at(pith: &Pith, from: &str) -> reqwest::Client {
    pith.client_builder().local_address(from.parse::<std::net::IpAddr>().unwrap()).build().unwrap()
}

/// Transcoding takes clients in turn: one client's burst of 16 images does not hold up
/// another client's one image behind all of them.
#[tokio::test]
async fn clients_take_turns_at_transcoding() {
    let origin = many_images(jpeg(&photo(1600, 1000), 90)).await;
    let pith = gateway("").await;
    let (greedy, other) = (client_at(&pith, "127.0.0.1"), client_at(&pith, "127.0.0.2"));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut burst = Vec::new();
    for i in 0..16 {
        let (client, url, done) = (greedy.clone(), origin.url(&format!("/img{i}")), done.clone());
        burst.push(tokio::spawn(async move {
            let resp = client.get(&url).header("accept", JPEG_ACCEPT).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            resp.bytes().await.unwrap();
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        }));
    }
    // Once the burst is queued, the other client asks for one image.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while crate::common::got::metric(&greedy, "pith_image_waits_total").await < 8 {
        assert!(std::time::Instant::now() < deadline, "the burst never queued");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let resp = other.get(origin.url("/img19")).header("accept", JPEG_ACCEPT).send().await.unwrap();
    assert!(resp.headers().get("x-pith").is_some_and(|v| v.to_str().unwrap().contains("to=640x400")), "{:?}", resp.headers());
    resp.bytes().await.unwrap();
    let position = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    for task in burst {
        task.await.unwrap();
    }
    assert!(position <= 10, "the other client's image came {position}th of 17: it waited behind the burst");
}

/// An image that waited past `limits.image_wait_ms` for its turn gets a small placeholder,
/// never the untranscoded bytes, and the placeholder is not kept: asked again, the image
/// comes. `/metrics` counts both.
#[tokio::test]
async fn an_image_that_waits_too_long_gets_a_placeholder_never_the_original() {
    let original = jpeg(&photo(1600, 1000), 90);
    let origin = many_images(original.clone()).await;
    let pith = gateway("[limits]\nimage_wait_ms = 1\n").await;
    let client = pith.client();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (client, url) = (client.clone(), origin.url(&format!("/img{i}")));
        tasks.push(tokio::spawn(async move {
            let resp = client.get(&url).header("accept", JPEG_ACCEPT).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let headers = resp.headers().clone();
            (url, headers, resp.bytes().await.unwrap().to_vec())
        }));
    }
    let mut placeheld = Vec::new();
    for task in tasks {
        let (url, headers, body) = task.await.unwrap();
        assert!(body.len() < original.len() / 2, "{url}: {} bytes, never the original {}", body.len(), original.len());
        if header(&headers, "content-type") == "image/gif" {
            assert!(body.len() < 100, "a small placeholder");
            assert_eq!(header(&headers, "cache-control"), "no-store");
            placeheld.push(url);
        } else {
            assert_eq!(image::load_from_memory(&body).expect("an image").width(), 640);
        }
    }
    assert!(!placeheld.is_empty(), "16 images at once with a 1 ms wait: some waited");
    let placeholders = crate::common::got::metric(&client, "pith_image_placeholders_total").await;
    assert_eq!(placeholders, placeheld.len() as u64);
    assert!(crate::common::got::metric(&client, "pith_image_waits_total").await >= placeholders);
    // Alone now, the image is transcoded: the placeholder was never kept.
    let (headers, body) = fetch(&pith, &placeheld[0], JPEG_ACCEPT).await;
    assert_eq!(header(&headers, "content-type"), "image/jpeg", "{headers:?}");
    assert_eq!(image::load_from_memory(&body).expect("an image").width(), 640);
}
