//! The charset a page is served in, for old browsers that know only Latin-1, Windows-1252 or
//! ASCII (`charset` of a listener), and the transliteration of what that charset lacks.
//!
//! pith writes every page in UTF-8. A device from before UTF-8 shows each byte of a
//! multi-byte character as a character of its own, so "café" arrives as "cafÃ©". Encoding the
//! page for the device fixes that for the characters its charset has; for the others, a
//! page of `?` in their place would be as unreadable. So a character the charset lacks is
//! first looked up in a small table of ASCII spellings (`filters/translit.txt`: curly quotes,
//! dashes, ellipsis, currency signs, Latin letters with diacritics), and only then, in HTML,
//! written as a numeric character reference (`&#8364;`), which a browser that has the glyph
//! shows; in plain text, where there is no such thing, it becomes `?`.

use std::collections::HashMap;
use std::sync::LazyLock;

/// The charset of served pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum OutCharset {
    /// UTF-8, as pith writes pages: nothing changes.
    #[default]
    Utf8,
    /// ISO-8859-1 (Latin-1): U+0000–U+00FF, without the C1 controls.
    Latin1,
    /// Windows-1252: Latin-1 with curly quotes, dashes, the euro sign and a few letters in
    /// place of the C1 controls.
    Windows1252,
    /// US-ASCII.
    Ascii,
}

/// Windows-1252's bytes 0x80–0x9F; `None` where the code page has no character.
const CP1252_HIGH: [Option<char>; 32] = [
    Some('€'), None, Some('‚'), Some('ƒ'), Some('„'), Some('…'), Some('†'), Some('‡'),
    Some('ˆ'), Some('‰'), Some('Š'), Some('‹'), Some('Œ'), None, Some('Ž'), None,
    None, Some('‘'), Some('’'), Some('“'), Some('”'), Some('•'), Some('–'), Some('—'),
    Some('˜'), Some('™'), Some('š'), Some('›'), Some('œ'), None, Some('ž'), Some('Ÿ'),
];

impl OutCharset {
    /// Every value the config accepts, as written there.
    pub const NAMES: [&'static str; 4] = ["utf-8", "iso-8859-1", "windows-1252", "us-ascii"];

    /// The charset a config value names (case-insensitive); `None` for any other.
    pub fn from_name(name: &str) -> Option<OutCharset> {
        match name.to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Some(OutCharset::Utf8),
            "iso-8859-1" | "latin1" | "latin-1" => Some(OutCharset::Latin1),
            "windows-1252" | "cp1252" => Some(OutCharset::Windows1252),
            "us-ascii" | "ascii" => Some(OutCharset::Ascii),
            _ => None,
        }
    }

    /// Its name in `Content-Type` and `<meta charset>`.
    pub fn name(self) -> &'static str {
        match self {
            OutCharset::Utf8 => "utf-8",
            OutCharset::Latin1 => "iso-8859-1",
            OutCharset::Windows1252 => "windows-1252",
            OutCharset::Ascii => "us-ascii",
        }
    }

    /// The byte `c` is in this charset, when it has one (never asked of UTF-8).
    fn byte(self, c: char) -> Option<u8> {
        let code = c as u32;
        match self {
            OutCharset::Utf8 | OutCharset::Ascii => (code < 0x80).then_some(code as u8),
            OutCharset::Latin1 => (code < 0x80 || (0xA0..=0xFF).contains(&code)).then_some(code as u8),
            OutCharset::Windows1252 if code < 0x80 || (0xA0..=0xFF).contains(&code) => Some(code as u8),
            OutCharset::Windows1252 => CP1252_HIGH.iter().position(|&h| h == Some(c)).map(|i| 0x80 + i as u8),
        }
    }

    /// `text` (UTF-8) in this charset. In `html`, a character neither the charset nor the
    /// table has becomes a numeric character reference; in text, `?`.
    pub fn encode(self, text: &str, html: bool) -> Vec<u8> {
        if self == OutCharset::Utf8 {
            return text.as_bytes().to_vec();
        }
        let mut out = Vec::with_capacity(text.len());
        for c in text.chars() {
            if let Some(b) = self.byte(c) {
                out.push(b);
            } else if let Some(ascii) = TABLE.get(&c) {
                out.extend_from_slice(ascii.as_bytes());
            } else if html {
                out.extend_from_slice(format!("&#{};", c as u32).as_bytes());
            } else {
                out.push(b'?');
            }
        }
        out
    }
}

/// `filters/translit.txt`, built into the binary.
const TRANSLIT: &str = include_str!("../../filters/translit.txt");

/// The table: a character and its ASCII spelling. Lines that are not one character, a tab and
/// ASCII are skipped (the file is checked by a test, so none are).
static TABLE: LazyLock<HashMap<char, String>> = LazyLock::new(|| parse(TRANSLIT).0);

/// The table in `text` and the numbers of the lines that are not well formed.
fn parse(text: &str) -> (HashMap<char, String>, Vec<usize>) {
    let (mut table, mut bad) = (HashMap::new(), Vec::new());
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((from, to)) = line.split_once('\t') else {
            bad.push(n + 1);
            continue;
        };
        let mut chars = from.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            bad.push(n + 1);
            continue;
        };
        let to = to.replace("\\s", " ");
        if !to.is_ascii() {
            bad.push(n + 1);
            continue;
        }
        table.insert(c, to);
    }
    (table, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_is_well_formed() {
        let (table, bad) = parse(TRANSLIT);
        assert!(bad.is_empty(), "malformed lines in filters/translit.txt: {bad:?}");
        assert!(table.len() > 200, "{}", table.len());
    }

    macro_rules! encodes {
        ($name:ident, $charset:expr, $html:expr, $input:expr, $expect:expr) => {
            #[test]
            fn $name() {
                assert_eq!($charset.encode($input, $html), $expect.to_vec());
            }
        };
    }

    encodes!(utf8_untouched, OutCharset::Utf8, true, "café “x”", "café “x”".as_bytes());
    encodes!(latin1_keeps_its_own, OutCharset::Latin1, true, "café", b"caf\xe9");
    encodes!(latin1_quotes_and_dashes, OutCharset::Latin1, true, "“a”—b… ‘c’", b"\"a\"--b... 'c'");
    encodes!(latin1_letters_outside, OutCharset::Latin1, true, "Łódź, Dvořák", b"L\xf3dz, Dvor\xe1k");
    encodes!(latin1_euro, OutCharset::Latin1, false, "5 €", b"5 EUR");
    encodes!(cp1252_has_curly_quotes, OutCharset::Windows1252, true, "“a” – €", b"\x93a\x94 \x96 \x80");
    encodes!(ascii_letters, OutCharset::Ascii, true, "Ærø café naïve straße", b"AEro cafe naive strasse");
    encodes!(html_reference_for_the_rest, OutCharset::Ascii, true, "東京", b"&#26481;&#20140;");
    encodes!(text_question_mark_for_the_rest, OutCharset::Ascii, false, "東 é", b"? e");
    encodes!(nbsp_in_ascii_is_a_space, OutCharset::Ascii, true, "a\u{a0}b", b"a b");

    #[test]
    fn names_round_trip() {
        for name in OutCharset::NAMES {
            assert_eq!(OutCharset::from_name(name).map(OutCharset::name), Some(name));
        }
        assert_eq!(OutCharset::from_name("koi8-r"), None);
    }
}
