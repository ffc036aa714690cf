//! What stage 1 asks of an element's attributes, the same whether the page streams through
//! lol_html ([`super`]) or a tree is built ([`super::tree`]): whether an attribute hides its
//! element, which URL attributes run code when followed and what scheme a URL has (character
//! references decoded by the tokenizer's own decoder), and what a `<meta>` declaring another
//! charset becomes. Pure functions over strings: no lol_html, no tree.

use encoding_rs::{Encoding, UTF_8};

use crate::dom::attribute_char_ref;
use crate::html::charset;

/// Where a URL runs when the link is followed, the form submitted, the frame loaded, or (in
/// the older browsers pith also serves, which ran a `javascript:` URL wherever one was loaded)
/// the image, background or stylesheet fetched: the (element, attribute) pairs `strip-url`
/// checks. A `data:` image is only an image, and `strip-url` names the schemes it removes.
pub(super) const URL_TARGETS: &[(&str, &str)] = &[
    ("a", "href"),
    ("a", "xlink:href"),
    ("area", "href"),
    ("form", "action"),
    ("button", "formaction"),
    ("input", "formaction"),
    ("input", "src"),
    ("iframe", "src"),
    ("frame", "src"),
    ("embed", "src"),
    ("object", "data"),
    ("object", "codebase"),
    ("applet", "codebase"),
    ("img", "src"),
    ("video", "poster"),
    ("body", "background"),
    ("table", "background"),
    ("td", "background"),
    ("link", "href"),
    ("base", "href"),
];

/// Whether an attribute name is one of [`URL_TARGETS`]' attributes: a cheap test on the name
/// before the (element, attribute) pairs are searched.
pub(super) fn is_url_attribute(name: &str) -> bool {
    matches!(name, "href" | "xlink:href" | "action" | "formaction" | "src" | "data" | "codebase" | "poster" | "background")
}

/// True when `attr` hides its element: `hidden` (except `hidden=until-found`, which find-in-page
/// reveals), or a `style` declaring `display: none` or `visibility: hidden`/`collapse`.
pub(super) fn hides(name: &str, value: &str) -> bool {
    match name {
        "hidden" => !value.trim().eq_ignore_ascii_case("until-found"),
        "style" => style_hides(value),
        _ => false,
    }
}

/// Reads the declarations of an inline style the way CSS does for these two properties: names
/// and keywords in any case, spaces anywhere, `!important` allowed. (`content-visibility` is a
/// different property: it hides nothing from the reader.)
pub(super) fn style_hides(style: &str) -> bool {
    // `display` and `visibility`, the two properties that can hide, both have a `y`; two
    // inline styles in three have none, and need no reading.
    if memchr::memchr2(b'y', b'Y', style.as_bytes()).is_none() {
        return false;
    }
    style.split(';').any(|declaration| {
        let Some((property, value)) = declaration.split_once(':') else {
            return false;
        };
        let value = value.trim();
        let value = match value
            .len()
            .checked_sub(10)
            .and_then(|at| value.get(at..).map(|tail| (at, tail)))
        {
            Some((at, tail)) if tail.eq_ignore_ascii_case("!important") => value[..at].trim_end(),
            _ => value,
        };
        match property.trim() {
            p if p.eq_ignore_ascii_case("display") => value.eq_ignore_ascii_case("none"),
            p if p.eq_ignore_ascii_case("visibility") => {
                value.eq_ignore_ascii_case("hidden") || value.eq_ignore_ascii_case("collapse")
            }
            _ => false,
        }
    })
}

/// What a `<meta charset>` naming `label` is rewritten to; `None` when it declares UTF-8.
pub(super) fn utf8_charset(label: &str) -> Option<&'static str> {
    (Encoding::for_label(label.trim().as_bytes()) != Some(UTF_8)).then_some("utf-8")
}

/// What the `content` of a `<meta http-equiv=content-type>` (absent: `None`) is rewritten to;
/// `None` when it declares UTF-8.
pub(super) fn utf8_content_type(content: Option<&str>) -> Option<&'static str> {
    (content.and_then(charset::from_content_type) != Some(UTF_8)).then_some("text/html; charset=utf-8")
}

/// The scheme of a URL as a browser reads it from an attribute: character references decoded
/// (by the tokenizer's own decoder, [`attribute_char_ref`]), leading spaces and control characters skipped, tabs and newlines ignored anywhere, ASCII
/// case folded. `None` for a relative URL (or anything that is not a scheme followed by `:`).
pub(super) fn url_scheme(value: &str) -> Option<Scheme> {
    if !value.contains([':', '&']) {
        return None;
    }
    scheme_of(decoded_chars(value))
}

/// [`url_scheme`] of a value whose character references are already decoded (a tree's).
pub(super) fn decoded_url_scheme(value: &str) -> Option<Scheme> {
    if !value.contains(':') {
        return None;
    }
    scheme_of(value.chars())
}

/// A URL scheme as [`url_scheme`] reads it: lowercase ASCII, at most 32 bytes (longer is no
/// scheme). Kept on the stack: every absolute URL of a link has its scheme read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scheme {
    bytes: [u8; 32],
    len: usize,
}

impl Scheme {
    /// Whether the scheme is one of `schemes` (lowercase), compared as bytes: through
    /// [`Deref`](std::ops::Deref) each comparison would check the bytes are UTF-8 first.
    pub(super) fn is_one_of(&self, schemes: &[String]) -> bool {
        let bytes = self.bytes.get(..self.len).unwrap_or_default();
        schemes.iter().any(|scheme| scheme.as_bytes() == bytes)
    }
}

impl std::ops::Deref for Scheme {
    type Target = str;

    fn deref(&self) -> &str {
        // Only ASCII letters, digits, `+`, `-` and `.` are ever stored.
        std::str::from_utf8(self.bytes.get(..self.len).unwrap_or_default()).unwrap_or_default()
    }
}

/// The scheme the characters of a URL attribute start with, read as [`url_scheme`] says.
pub(crate) fn scheme_of(chars: impl Iterator<Item = char>) -> Option<Scheme> {
    let mut scheme = Scheme { bytes: [0; 32], len: 0 };
    for c in chars {
        match c {
            '\t' | '\n' | '\r' => {}
            c if scheme.len == 0 && c <= ' ' => {}
            ':' => return (scheme.len != 0).then_some(scheme),
            c if c.is_ascii_alphabetic()
                || (scheme.len != 0 && (c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))) =>
            {
                let slot = scheme.bytes.get_mut(scheme.len)?;
                *slot = c.to_ascii_lowercase() as u8;
                scheme.len += 1;
            }
            _ => return None,
        }
    }
    None
}

/// The characters of a raw attribute value, its character references decoded as the tokenizer
/// decodes them in an attribute ([`attribute_char_ref`]); read lazily, since a scheme is read
/// from the first few characters alone.
pub(crate) fn decoded_chars(value: &str) -> impl Iterator<Item = char> + '_ {
    let (mut rest, mut second) = (value, None);
    std::iter::from_fn(move || {
        if let Some(c) = second.take() {
            return Some(c);
        }
        let c = rest.chars().next()?;
        let (decoded, len) = match c {
            '&' => match attribute_char_ref(rest) {
                ([Some(first), next], len) if len > 0 => {
                    second = next;
                    (first, len)
                }
                _ => ('&', 1),
            },
            c => (c, c.len_utf8()),
        };
        rest = rest.get(len..).unwrap_or("");
        Some(decoded)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_schemes() {
        let cases = [
            ("javascript:x", Some("javascript")),
            ("  \u{1}JavaScript:x", Some("javascript")),
            ("jav&#x09;ascript:x", Some("javascript")),
            ("&#0000106&#0000097vascript:x", Some("javascript")),
            ("vbscript&colon;x", Some("vbscript")),
            ("https://example.org/a:b", Some("https")),
            ("/relative:colon", None),
            ("?q=a:b", None),
            ("1http:x", None),
            ("no-colon-at-all", None),
            ("&unknown;javascript:x", None),
            ("java&Tab;script&colon;x", Some("javascript")),
            // A reference may stand for two characters; both are read.
            ("&fjlig;ord:x", Some("fjord")),
            // In an attribute, a legacy name followed by a letter stays as written.
            ("&ampjavascript:x", None),
        ];
        let listed = ["javascript".to_string(), "vbscript".to_string()];
        for (value, expected) in cases {
            assert_eq!(url_scheme(value).as_deref(), expected, "{value:?}");
            let one_of = url_scheme(value).is_some_and(|s| s.is_one_of(&listed));
            assert_eq!(one_of, expected.is_some_and(|s| listed.iter().any(|l| l == s)), "{value:?}");
        }
    }

    #[test]
    fn styles_are_read_for_display_and_visibility_alone() {
        assert!(!style_hides("color: red; width: 1px"));
        assert!(!style_hides("displa: none; visibilit: hidden"));
        assert!(style_hides("color: red; DISPLAY : none"));
        assert!(style_hides("visibilitY:hidden"));
    }
}
