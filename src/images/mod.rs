//! Images for a low-bandwidth gateway: what a page's `<img>` becomes, and image responses
//! made smaller.
//!
//! On a de-cluttered article the images are most of the bytes that remain, so a profile says
//! what happens to them ([`Policy`], the profile key `images`). This module owns two pure
//! parts; the proxy's side (reading an image response, the blocking pool, the cache key) is in
//! `net::images`.
//!
//! - [`page`]: over a [`crate::dom::Tree`], the address an `<img>` should load. Pages that load
//!   their images by script keep the real address in `data-src`, `data-srcset`,
//!   `data-lazy-src` or a `<noscript>` copy; with the scripts gone, that address becomes the
//!   `src`. From `srcset` and `<picture>` the smallest candidate at least `image_max_width`
//!   wide is chosen, so the transcoder has little to scale and the browser one file to fetch.
//! - [`transcode`]: bytes in, smaller bytes out (JPEG, PNG, static GIF, WebP in; WebP or JPEG
//!   out), with the decoder bounded in pixels and bytes before any pixel is allocated.

pub mod page;
pub mod transcode;

/// What a profile does with images (`images = "keep" | "compress" | "placeholder" | "none"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Policy {
    /// Markup and image bytes as the origin sent them.
    #[default]
    Keep,
    /// Lazy images made real, one small candidate chosen, and image responses transcoded.
    Compress,
    /// Each image a small link (its alt text) to the compressed image: loaded on a tap.
    Placeholder,
    /// Images left out of the page.
    None,
}

impl Policy {
    /// Every policy, as the config spells it.
    pub const ALL: [Policy; 4] = [Policy::Keep, Policy::Compress, Policy::Placeholder, Policy::None];

    /// The config's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Keep => "keep",
            Policy::Compress => "compress",
            Policy::Placeholder => "placeholder",
            Policy::None => "none",
        }
    }

    /// The policy the config calls `name`.
    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Whether image responses are transcoded: a placeholder's link loads the compressed image
    /// too.
    pub fn is_transcoding(self) -> bool {
        matches!(self, Policy::Compress | Policy::Placeholder)
    }
}

/// A profile's image settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Images {
    /// What happens to images.
    pub policy: Policy,
    /// The widest image served, in CSS pixels; wider ones are scaled down (never up).
    pub max_width: u32,
    /// Encoder quality, 1–100, for WebP and JPEG.
    pub quality: u8,
    /// Whether a page asks pith for an image at the width it shows it
    /// ([`page::WIDTH_PARAMETER`]). Off for the ICAP service: there another proxy fetches the
    /// images, and the origin would see the hint.
    pub width_hints: bool,
}

/// The default `image_max_width`: a phone's screen at 2× density, or a desktop column.
pub const DEFAULT_MAX_WIDTH: u32 = 800;

/// The default `image_quality`: photographs still look like themselves at a third of the
/// bytes of quality 85.
pub const DEFAULT_QUALITY: u8 = 60;

impl Default for Images {
    fn default() -> Self {
        Images { policy: Policy::Keep, max_width: DEFAULT_MAX_WIDTH, quality: DEFAULT_QUALITY, width_hints: true }
    }
}
