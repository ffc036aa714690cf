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
/// whitespace. Only the lead bytes 0xC2 (U+0085, U+00A0), 0xE1 (U+1680), 0xE2 (U+2000–U+205F)
/// and 0xE3 (U+3000) can start non-ASCII whitespace; other characters are sized by their lead
/// byte alone.
#[inline]
fn char_at(text: &str, i: usize) -> (usize, bool) {
    match text.as_bytes()[i] {
        b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' => (1, true),
        0..=0x7F => (1, false),
        0xC2 | 0xE1 | 0xE2 | 0xE3 => match text.get(i..).and_then(|rest| rest.chars().next()) {
            Some(c) => (c.len_utf8(), c.is_whitespace()),
            None => (1, false),
        },
        0xF0.. => (4, false),
        0xE0.. => (3, false),
        _ => (2, false),
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

    proptest! {
        #[test]
        fn any_text_splits_like_the_standard_library(text in "\\PC*|[ \\t\\n\u{a0}\u{2000}-\u{3000}a-zé]*") {
            let ours: Vec<_> = words(&text).collect();
            let std: Vec<_> = text.split_whitespace().collect();
            prop_assert_eq!(ours, std);
        }
    }
}
