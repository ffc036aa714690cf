//! Text as a reader hears it: what the renderers do to each text before writing it.
//!
//! - Soft hyphens (U+00AD) go: they mark where a word may break across lines, and a word
//!   holding one is not the word to a search, a copy or a speech synthesiser that spells it.
//! - The text is NFC-normalised: a letter and its combining accent become the one composed
//!   character, so `é` is one letter however the page wrote it.
//!
//! ASCII text, most of every page, is returned as it is after one scan.

use std::borrow::Cow;

use icu_normalizer::ComposingNormalizerBorrowed;

/// The soft hyphen, U+00AD.
const SOFT_HYPHEN: char = '\u{ad}';

/// `text` as a reader hears it: soft hyphens removed, NFC-normalised.
pub fn heard(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let nfc = ComposingNormalizerBorrowed::new_nfc();
    let text: Cow<'_, str> = if text.contains(SOFT_HYPHEN) {
        Cow::Owned(text.replace(SOFT_HYPHEN, ""))
    } else {
        Cow::Borrowed(text)
    };
    if nfc.is_normalized(&text) {
        return text;
    }
    Cow::Owned(nfc.normalize(&text).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_hyphens_go() {
        assert_eq!(heard("Donau\u{ad}dampf\u{ad}schiff"), "Donaudampfschiff");
        assert_eq!(heard("\u{ad}"), "");
    }

    #[test]
    fn text_is_composed() {
        // e + combining acute accent, A + combining ring above.
        assert_eq!(
            heard("caf\u{65}\u{301} \u{41}\u{30a}ngstr\u{f6}m"),
            "café Ångström"
        );
        assert!(matches!(heard("café"), Cow::Borrowed(_)));
    }

    #[test]
    fn ascii_is_untouched() {
        assert!(matches!(
            heard("plain text, as is"),
            Cow::Borrowed("plain text, as is")
        ));
    }
}
