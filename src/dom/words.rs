//! Words as the tree counts them and the text renderer writes them: runs of characters between
//! Unicode whitespace, exactly as [`str::split_whitespace`] splits, but faster on real pages.
//!
//! Page text is mostly ASCII, and only five lead bytes can start a non-ASCII whitespace
//! character, so every other byte is classified without decoding. Statistics and the text
//! renderer both scan all visible text, which made the general Unicode check measurable.

/// The words of `text`: the same items as `text.split_whitespace()`.
pub fn words(text: &str) -> Words<'_> {
    Words { text, pos: 0 }
}

/// The iterator returned by [`words`].
#[derive(Clone, Debug)]
pub struct Words<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let len = self.text.len();
        let mut i = self.pos;
        loop {
            if i >= len {
                self.pos = len;
                return None;
            }
            let (width, space) = char_at(self.text, i);
            if !space {
                break;
            }
            i += width;
        }
        let start = i;
        while i < len {
            let (width, space) = char_at(self.text, i);
            if space {
                break;
            }
            i += width;
        }
        self.pos = i;
        self.text.get(start..i)
    }
}

/// The width of the character starting at byte `i` (a character boundary) and whether it is
/// whitespace. Characters are sized by their lead byte alone; only the lead bytes 0xC2, 0xE1,
/// 0xE2 and 0xE3 can start non-ASCII whitespace, and [`is_wide_space`] tells by the bytes.
#[inline]
fn char_at(text: &str, i: usize) -> (usize, bool) {
    let bytes = text.as_bytes();
    match bytes[i] {
        b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' => (1, true),
        0..=0x7F => (1, false),
        0xC2 => (2, is_wide_space(bytes, i)),
        0xE1..=0xE3 => (3, is_wide_space(bytes, i)),
        0xF0.. => (4, false),
        0xE0.. => (3, false),
        _ => (2, false),
    }
}

/// Whether the character whose lead byte is at `i` is whitespace outside ASCII, told by its
/// encoding without decoding it: U+0085 and U+00A0 (lead 0xC2), U+1680 (0xE1), U+2000–U+200A,
/// U+2028, U+2029, U+202F and U+205F (0xE2) and U+3000 (0xE3) are all there are. Curly quotes
/// and dashes share the lead byte 0xE2, so this runs often on real text.
#[inline]
pub(super) fn is_wide_space(bytes: &[u8], i: usize) -> bool {
    let at = |k: usize| bytes.get(i + k).copied().unwrap_or(0);
    match at(0) {
        0xC2 => matches!(at(1), 0x85 | 0xA0),
        0xE1 => at(1) == 0x9A && at(2) == 0x80,
        0xE2 => match at(1) {
            0x80 => matches!(at(2), 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF),
            0x81 => at(2) == 0x9F,
            _ => false,
        },
        0xE3 => at(1) == 0x80 && at(2) == 0x80,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splits_like_the_standard_library() {
        let samples = [
            "",
            "   ",
            "one",
            "  two  words ",
            "tab\tnew\nline\r\x0Bvt\x0Cff",
            "nbsp\u{a0}nel\u{85}ogham\u{1680}en\u{2002}ideo\u{3000}end",
            "narrow\u{202f}math\u{205f}line\u{2028}para\u{2029}",
            "no-break-but-not-space: \u{200b}zero\u{feff}width",
            "naïve café 日本語 😀 ok",
            "\x1c\x1d\x1e\x1f",
        ];
        for text in samples {
            let ours: Vec<_> = words(text).collect();
            let std: Vec<_> = text.split_whitespace().collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }

    #[test]
    fn wide_spaces_are_told_by_their_bytes() {
        for c in (0x80..=0x10FFFF).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf).as_bytes();
            let (width, space) = char_at(c.encode_utf8(&mut [0u8; 4]), 0);
            assert_eq!((width, space), (c.len_utf8(), c.is_whitespace()), "{c:?}");
            assert_eq!(is_wide_space(bytes, 0), c.is_whitespace(), "{c:?}");
        }
    }

    proptest! {
        #[test]
        fn any_text_splits_like_the_standard_library(text in "\\PC*|[ \\t\\n\u{a0}\u{2000}-\u{3000}a-zé]*") {
            let ours: Vec<_> = words(&text).collect();
            let std: Vec<_> = text.split_whitespace().collect();
            prop_assert_eq!(ours, std);
        }
    }
}
