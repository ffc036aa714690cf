//! The address an `<img>` loads once a page's scripts are gone, and the one small candidate
//! of its `srcset` or `<picture>`.
//!
//! Lazy loaders leave `src` empty, a `data:` pixel or a spinner, and keep the real address in
//! an attribute their script reads (`data-src`, `data-lazy-src`, `data-original`,
//! `data-srcset`, `data-lazy-srcset`) or in a `<noscript>` copy of the image right after it.
//! Those are read in that order. A responsive image offers candidates by width (`480w`) or
//! density (`2x`); the one served is the smallest at least `max_width` wide, else the widest:
//! the transcoder then scales little, and a page never asks for two copies of one picture.
//!
//! Pure functions over [`Tree`]: the renderers ask, and write what they are told.

use crate::dom::{NodeId, Tree};

/// Attributes that hold a lazy image's real address, in the order they are trusted.
const LAZY_SRC: [&str; 3] = ["data-src", "data-lazy-src", "data-original"];

/// Attributes that hold candidate lists, the lazy ones first.
const SRCSETS: [&str; 3] = ["data-srcset", "data-lazy-srcset", "srcset"];

/// Image types the transcoder reads, for `<source type=…>`: a source of another type (AVIF,
/// SVG) is passed over when the picture offers one of these.
const READABLE_TYPES: [&str; 5] = ["image/jpeg", "image/jpg", "image/png", "image/gif", "image/webp"];

/// One candidate of a `srcset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate<'a> {
    /// The address as written.
    pub url: &'a str,
    /// Its width descriptor (`480w`).
    pub width: Option<u32>,
    /// Its density descriptor (`2x`); 1 when it has none.
    pub density: f32,
}

/// The candidates of a `srcset` value, in order; malformed ones are skipped. Follows the
/// shape of the HTML standard's parser: a URL runs to whitespace (trailing commas end it), its
/// descriptors to the next comma outside parentheses.
pub fn candidates(srcset: &str) -> Vec<Candidate<'_>> {
    let mut out = Vec::new();
    let mut rest = srcset;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == ',');
        if rest.is_empty() {
            return out;
        }
        let end = rest.find(|c: char| c.is_ascii_whitespace()).unwrap_or(rest.len());
        let (url, after) = rest.split_at(end);
        let (url, descriptors, next) = if url.ends_with(',') {
            (url.trim_end_matches(','), "", after)
        } else {
            let (d, next) = split_descriptors(after);
            (url, d, next)
        };
        rest = next;
        if let Some(candidate) = candidate(url, descriptors) {
            out.push(candidate);
        }
    }
}

/// The descriptors up to the next comma outside parentheses, and what follows it.
fn split_descriptors(s: &str) -> (&str, &str) {
    let mut depth = 0u32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => return (&s[..i], &s[i + 1..]),
            _ => {}
        }
    }
    (s, "")
}

fn candidate<'a>(url: &'a str, descriptors: &str) -> Option<Candidate<'a>> {
    if url.is_empty() {
        return None;
    }
    let (mut width, mut density) = (None, None);
    for d in descriptors.split_ascii_whitespace() {
        let (number, unit) = d.split_at(d.len() - 1);
        match unit {
            "w" => width = Some(number.parse::<u32>().ok().filter(|&w| w > 0)?),
            "x" => density = Some(number.parse::<f32>().ok().filter(|x| x.is_finite() && *x > 0.0)?),
            // A height alone says nothing of the width; anything else makes it invalid.
            "h" => {}
            _ => return None,
        }
    }
    if width.is_some() && density.is_some() {
        return None;
    }
    Some(Candidate { url, width, density: density.unwrap_or(1.0) })
}

/// The candidate served: the smallest at least `max_width` wide, else the widest. Widths are
/// the `w` descriptors, or the density times `shown_width` (the element's `width`) when the
/// list gives densities; with neither, the lowest density at least 1, else the highest.
pub fn choose<'a>(candidates: &[Candidate<'a>], max_width: u32, shown_width: Option<u32>) -> Option<Candidate<'a>> {
    let width_of = |c: &Candidate<'_>| c.width.or_else(|| shown_width.map(|w| (w as f32 * c.density).round() as u32));
    let sized: Vec<(u32, Candidate<'a>)> = candidates.iter().filter_map(|c| Some((width_of(c)?, *c))).collect();
    if !sized.is_empty() {
        let wide_enough = sized.iter().filter(|(w, _)| *w >= max_width).min_by_key(|(w, _)| *w);
        return wide_enough.or_else(|| sized.iter().max_by_key(|(w, _)| *w)).map(|(_, c)| *c);
    }
    let by_density = |a: &&Candidate<'_>, b: &&Candidate<'_>| a.density.total_cmp(&b.density);
    let at_least_one = candidates.iter().filter(|c| c.density >= 1.0).min_by(by_density);
    at_least_one.or_else(|| candidates.iter().max_by(by_density)).copied()
}

/// The address an `<img>` should load: the chosen candidate of its `<picture>` sources and its
/// own candidate lists, else its lazy or plain `src`, else the `src` of a `<noscript>` copy
/// right after it. `None` when it names no image (a `data:` pixel alone is no image).
pub fn source(tree: &Tree, img: NodeId, max_width: u32) -> Option<String> {
    let copied = || {
        let copy = noscript_copy(tree, img)?;
        let img = copy.html_elements_named(&markup5ever::local_name!("img")).next()?;
        own_source(&copy, img, max_width)
    };
    own_source(tree, img, max_width).or_else(copied).or_else(|| inline_picture(tree, img))
}

/// A `data:` image larger than a lazy loader's placeholder pixel (a transparent GIF is under
/// 100 characters): a real picture written into the page.
fn inline_picture(tree: &Tree, img: NodeId) -> Option<String> {
    const PLACEHOLDER_CHARS: usize = 256;
    tree.attr(img, "src").map(str::trim).filter(|s| s.len() > PLACEHOLDER_CHARS).map(str::to_string)
}

fn own_source(tree: &Tree, img: NodeId, max_width: u32) -> Option<String> {
    let mut lists: Vec<&str> = picture_sources(tree, img).collect();
    lists.extend(SRCSETS.iter().filter_map(|a| tree.attr(img, a)));
    let all: Vec<Candidate<'_>> = lists.iter().flat_map(|l| candidates(l)).filter(|c| is_address(c.url)).collect();
    let shown = tree.attr(img, "width").and_then(|w| w.trim().parse::<u32>().ok()).filter(|&w| w > 0);
    if let Some(chosen) = choose(&all, max_width, shown) {
        return Some(chosen.url.to_string());
    }
    LAZY_SRC.iter().chain(&["src"]).filter_map(|a| tree.attr(img, a)).map(str::trim).find(|s| is_address(s)).map(str::to_string)
}

/// The candidate lists of the `<source>` elements of the `<picture>` an image is in, those of
/// a type the transcoder reads or of no stated type (an AVIF or SVG source is passed over: the
/// image's own `src` is the readable fallback).
fn picture_sources<'t>(tree: &'t Tree, img: NodeId) -> impl Iterator<Item = &'t str> + 't {
    let picture = tree.parent(img).filter(|&p| tree.tag(p) == Some("picture"));
    picture
        .into_iter()
        .flat_map(move |p| tree.children(p))
        .filter(move |&s| tree.tag(s) == Some("source"))
        .filter(move |&s| tree.attr(s, "type").is_none_or(|t| READABLE_TYPES.iter().any(|r| t.trim().eq_ignore_ascii_case(r))))
        .filter_map(move |s| ["data-srcset", "srcset"].iter().find_map(|a| tree.attr(s, a)))
}

/// Whether `s` names an image to fetch: not empty, not a `data:` placeholder.
fn is_address(s: &str) -> bool {
    let s = s.trim();
    !s.is_empty() && !s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:"))
}

/// The `<noscript>` right after an image (whitespace between), parsed: lazy loaders put the
/// real `<img>` there for browsers without scripts.
fn noscript_copy(tree: &Tree, img: NodeId) -> Option<Tree> {
    let mut next = tree.next_sibling(img);
    while let Some(n) = next {
        if tree.text(n).is_some_and(|t| t.trim().is_empty()) {
            next = tree.next_sibling(n);
            continue;
        }
        if tree.tag(n) != Some("noscript") {
            return None;
        }
        return noscript_tree(tree, n);
    }
    None
}

/// A `<noscript>`'s content parsed as HTML (the tree keeps it as raw text), when it holds an
/// `<img>`.
pub fn noscript_tree(tree: &Tree, noscript: NodeId) -> Option<Tree> {
    let text: String = tree.children(noscript).filter_map(|c| tree.text(c)).collect();
    if !text.contains("<img") && !text.contains("<IMG") {
        return None;
    }
    let copy = Tree::parse(&text);
    let has_img = copy.html_elements_named(&markup5ever::local_name!("img")).next().is_some();
    has_img.then_some(copy)
}

/// Whether `node` is the `<source>` of a `<picture>`: once its image has a chosen `src`, the
/// browser would prefer the source, so it is left out.
pub fn is_picture_source(tree: &Tree, node: NodeId) -> bool {
    tree.tag(node) == Some("source") && tree.parent(node).is_some_and(|p| tree.tag(p) == Some("picture"))
}

/// Attributes an image written with a chosen `src` drops: the candidate lists and lazy
/// addresses it was chosen from, and the loading hints it gets anew.
pub fn is_replaced_attribute(name: &str) -> bool {
    matches!(name, "src" | "srcset" | "sizes" | "loading" | "decoding")
        || LAZY_SRC.contains(&name)
        || SRCSETS.contains(&name)
}

/// The query parameter by which a page pith wrote asks pith's transcoder for an image no wider
/// than it is shown (`…?pith-width=192`). Only pith reads it: [`without_width`] takes it off
/// before the request leaves for the origin, and the cache keeps the smaller image under the
/// address that asked for it. Anyone may write it; it can only make an image smaller.
pub const WIDTH_PARAMETER: &str = "pith-width";

/// The narrowest width a hint may ask for: smaller thumbnails are not worth a separate copy.
const MIN_HINTED_WIDTH: u32 = 32;

/// `src` with a width hint appended as its last query parameter (before any fragment).
pub fn with_width(src: &str, width: u32) -> String {
    let (address, fragment) = src.split_once('#').map_or((src, None), |(a, f)| (a, Some(f)));
    let joiner = if address.contains('?') { '&' } else { '?' };
    let mut out = format!("{address}{joiner}{WIDTH_PARAMETER}={}", width.max(MIN_HINTED_WIDTH));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// The width hint a URL carries as its last query parameter, and the URL without it as the
/// origin wrote it; `None` when it carries none (or a malformed one or a width of 0, which are
/// left alone: a hint can only make an image smaller, and 0 would read as no bound at all).
pub fn without_width(url: &str) -> Option<(u32, String)> {
    let (address, fragment) = url.split_once('#').map_or((url, None), |(a, f)| (a, Some(f)));
    let at = address.rfind(WIDTH_PARAMETER)?;
    let separator = *address.as_bytes().get(at.checked_sub(1)?)?;
    let value = address[at + WIDTH_PARAMETER.len()..].strip_prefix('=')?;
    if !matches!(separator, b'?' | b'&') || value.is_empty() || value.len() > 5 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let width = value.parse().ok().filter(|&w: &u32| w > 0)?;
    // `a?pith-width=N` was `a`; `a?b&pith-width=N` was `a?b`.
    let mut out = address[..at - 1].to_string();
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    Some((width, out))
}

/// The width to ask the transcoder for an image shown `shown` CSS pixels wide: twice that, for
/// screens of two device pixels per CSS pixel, when that is under the profile's `max_width`.
pub fn hinted_width(shown: u32, max_width: u32) -> Option<u32> {
    let wanted = shown.saturating_mul(2);
    (shown > 0 && wanted < max_width).then_some(wanted.max(MIN_HINTED_WIDTH))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_img(t: &Tree) -> NodeId {
        t.html_elements_named(&markup5ever::local_name!("img")).next().expect("the fixture has an img")
    }

    fn src_of(html: &str, max: u32) -> Option<String> {
        let t = Tree::parse(html);
        source(&t, first_img(&t), max)
    }

    macro_rules! chooses {
        ($name:ident, $srcset:expr, $max:expr, $shown:expr, $expect:expr) => {
            #[test]
            fn $name() {
                let all = candidates($srcset);
                assert_eq!(choose(&all, $max, $shown).map(|c| c.url), $expect, "{:?}", all);
            }
        };
    }

    chooses!(smallest_wide_enough, "a.jpg 320w, b.jpg 800w, c.jpg 1600w, d.jpg 1024w", 800, None, Some("b.jpg"));
    chooses!(next_wider, "a.jpg 320w, c.jpg 1600w, d.jpg 1024w", 800, None, Some("d.jpg"));
    chooses!(widest_when_all_narrow, "a.jpg 320w, b.jpg 640w", 800, None, Some("b.jpg"));
    chooses!(density_with_width, "a.jpg, b.jpg 2x, c.jpg 3x", 800, Some(400), Some("b.jpg"));
    chooses!(density_alone, "b.jpg 2x, a.jpg 1x, c.jpg 0.5x", 800, None, Some("a.jpg"));
    chooses!(below_one, "c.jpg 0.5x, d.jpg 0.75x", 800, None, Some("d.jpg"));
    chooses!(commas_in_urls, "/i/a,b.jpg 100w,/i/c.jpg 900w", 800, None, Some("/i/c.jpg"));
    chooses!(trailing_comma_url, "a.jpg,, b.jpg 900w", 800, None, Some("b.jpg"));
    chooses!(inner_comma_is_the_url, "a.jpg,b.jpg 900w", 800, None, Some("a.jpg,b.jpg"));
    chooses!(invalid_skipped, "a.jpg 12q, b.jpg 0w, c.jpg 300w 2x, d.jpg 10w", 800, None, Some("d.jpg"));
    chooses!(empty, " , ,", 800, None, None);

    #[test]
    fn descriptors_are_read() {
        assert_eq!(
            candidates("a.jpg 480w, b.jpg 1.5x ,c.jpg"),
            vec![
                Candidate { url: "a.jpg", width: Some(480), density: 1.0 },
                Candidate { url: "b.jpg", width: None, density: 1.5 },
                Candidate { url: "c.jpg", width: None, density: 1.0 },
            ]
        );
    }

    #[test]
    fn width_hints_round_trip() {
        for url in ["https://e.example/a.jpg", "https://e.example/a.jpg?x=1&y", "/a.jpg?", "a.jpg#top", "a?q=pith-width"] {
            let hinted = with_width(url, 192);
            assert_eq!(without_width(&hinted), Some((192, url.to_string())), "{hinted}");
        }
        assert_eq!(with_width("a.jpg?x=1#f", 192), "a.jpg?x=1&pith-width=192#f");
        assert_eq!(with_width("a.jpg", 3), "a.jpg?pith-width=32", "never tinier than a thumbnail");
        for plain in ["a.jpg", "a.jpg?xpith-width=9", "a.jpg?pith-width=", "a.jpg?pith-width=1x", "a.jpg?pith-width=9&b", "a?pith-width=1234567", "a.jpg?pith-width=0", "a.jpg?pith-width=00000", "a.jpg?pith-width=-5", "a.jpg?pith-width=%31"] {
            assert_eq!(without_width(plain), None, "{plain}");
        }
        assert_eq!(hinted_width(96, 800), Some(192));
        assert_eq!(hinted_width(400, 800), None, "as wide as the profile's own bound");
        assert_eq!(hinted_width(0, 800), None);
    }

    #[test]
    fn lazy_addresses_are_promoted() {
        assert_eq!(src_of("<img src='data:image/gif;base64,R0l' data-src='/real.jpg'>", 800).as_deref(), Some("/real.jpg"));
        assert_eq!(src_of("<img src='/spinner.gif' data-lazy-src='/real.jpg'>", 800).as_deref(), Some("/real.jpg"));
        assert_eq!(src_of("<img data-original=' /o.jpg '>", 800).as_deref(), Some("/o.jpg"));
        assert_eq!(src_of("<img src=/plain.jpg>", 800).as_deref(), Some("/plain.jpg"));
        assert_eq!(src_of("<img src='data:image/gif;base64,R0l'>", 800), None, "a pixel is no image");
        let inline = format!("data:image/png;base64,{}", "A".repeat(400));
        assert_eq!(src_of(&format!("<img src='{inline}'>"), 800), Some(inline), "a picture in the page is one");
        assert_eq!(
            src_of("<img src=x.gif data-srcset='/s.jpg 400w, /m.jpg 900w' srcset='data:image/gif;base64,R0 1w'>", 800).as_deref(),
            Some("/m.jpg"),
            "the lazy list, its placeholder list ignored"
        );
    }

    #[test]
    fn noscript_copy_is_read() {
        let html = "<p><img class=lazy src='data:image/gif;base64,R0l'>\n <noscript><img src='/ns.jpg' srcset='/ns-400.jpg 400w, /ns-1200.jpg 1200w'></noscript></p>";
        assert_eq!(src_of(html, 800).as_deref(), Some("/ns-1200.jpg"));
        assert_eq!(src_of("<img><noscript><p>enable scripts</p></noscript>", 800), None);
        assert_eq!(src_of("<img><span></span><noscript><img src=/far.jpg></noscript>", 800), None, "only right after it");
    }

    #[test]
    fn picture_sources_are_pooled() {
        let html = "<picture><source type=image/avif srcset='/a.avif 900w'><source type=image/webp srcset='/w-500.webp 500w, /w-1000.webp 1000w'><img src=/fallback.jpg srcset='/f-820.jpg 820w'></picture>";
        assert_eq!(src_of(html, 800).as_deref(), Some("/f-820.jpg"), "the smallest wide enough of every readable list");
        let html = "<picture><source type=image/avif srcset='/a.avif 900w'><img src=/fallback.jpg></picture>";
        assert_eq!(src_of(html, 800).as_deref(), Some("/fallback.jpg"), "a type the transcoder cannot read is passed over");
        let t = Tree::parse(html);
        let source = t.html_elements_named(&markup5ever::local_name!("source")).next().expect("a source");
        assert!(is_picture_source(&t, source));
    }
}
