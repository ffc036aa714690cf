//! Which character encoding a page is in, and its transcoding to UTF-8.
//!
//! This module owns the decision, in the order the HTML standard gives: a byte order mark, then
//! the `Content-Type` header's `charset`, then the `<meta>` prescan of the first 1024 bytes,
//! then a guess. The guess differs from a browser's locale default on purpose: a page that
//! declares nothing but is valid UTF-8 is almost always UTF-8 today, and windows-1252 (what
//! browsers assume for Western locales, and a superset of ISO-8859-1) is the fallback. Stage 1
//! and everything after it work on UTF-8 only; the proxy serves UTF-8 and says so.

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// How many bytes the `<meta>` prescan looks at, as the HTML standard recommends.
const PRESCAN_BYTES: usize = 1024;

/// How many bytes the UTF-8 sniffer checks.
const SNIFF_BYTES: usize = 64 * 1024;

/// Where the encoding came from (reported in logs/headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharsetSource {
    /// A byte order mark at the start of the body; it overrides everything else.
    Bom,
    /// The `charset` parameter of the `Content-Type` header.
    Header,
    /// A `<meta charset>` or `<meta http-equiv="content-type">` in the first 1024 bytes.
    Meta,
    /// Nothing was declared, and the start of the page is valid UTF-8.
    Sniffed,
    /// Nothing was declared and the page is not UTF-8: windows-1252 was assumed.
    Default,
}

/// The encoding chosen for a page and the evidence for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    /// The encoding to decode the page with.
    pub encoding: &'static Encoding,
    /// Which evidence decided it.
    pub source: CharsetSource,
}

/// The `charset=` parameter of a `Content-Type` value, resolved with the WHATWG label table
/// (`Encoding::for_label`); `None` when it is absent or not a known label.
pub fn from_content_type(value: &str) -> Option<&'static Encoding> {
    value.split(';').skip(1).find_map(|param| {
        let (name, label) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        let label = label.trim().trim_matches(|c| c == '"' || c == '\'');
        Encoding::for_label(label.as_bytes())
    })
}

/// Chooses the encoding of `doc`: BOM first (a BOM wins over the header, as in the HTML
/// standard), then the header, then the `<meta>` prescan of the first 1024 bytes, then UTF-8 if
/// the first 64 KiB are valid UTF-8 (a multi-byte character cut at the end is allowed), else
/// windows-1252.
pub fn detect(content_type: Option<&str>, doc: &[u8]) -> Detected {
    let found = |encoding, source| Detected { encoding, source };
    if let Some((encoding, _)) = Encoding::for_bom(doc) {
        return found(encoding, CharsetSource::Bom);
    }
    if let Some(encoding) = content_type.and_then(from_content_type) {
        return found(encoding, CharsetSource::Header);
    }
    if let Some(encoding) = prescan(&doc[..doc.len().min(PRESCAN_BYTES)]) {
        return found(encoding, CharsetSource::Meta);
    }
    if is_utf8_prefix(&doc[..doc.len().min(SNIFF_BYTES)]) {
        return found(UTF_8, CharsetSource::Sniffed);
    }
    found(WINDOWS_1252, CharsetSource::Default)
}

/// Decodes the whole document to UTF-8 (BOM stripped, malformed sequences replaced by U+FFFD).
/// A BOM overrides `encoding`, as it does in [`detect`]. A page that is valid UTF-8 already
/// (most are) is borrowed, not copied.
pub fn to_utf8<'a>(doc: &'a [u8], encoding: &'static Encoding) -> Cow<'a, str> {
    let (text, _actual, _had_errors) = encoding.decode(doc);
    text
}

/// True when `bytes` is valid UTF-8, except perhaps for one incomplete character at the end
/// (where the sniffing window, or the body, was cut).
///
/// The valid prefix is measured by the validator the decoder uses, which takes a third of the
/// instructions of `str::from_utf8` on these 64 KiB; only what follows it, an invalid or cut
/// character, is handed to `from_utf8` to tell the two apart.
fn is_utf8_prefix(bytes: &[u8]) -> bool {
    let valid = Encoding::utf8_valid_up_to(bytes);
    match std::str::from_utf8(bytes.get(valid..).unwrap_or_default()) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// The WHATWG "prescan a byte stream to determine its encoding" over `head`.
fn prescan(head: &[u8]) -> Option<&'static Encoding> {
    let mut scanner = Scanner {
        bytes: head,
        pos: 0,
    };
    while scanner.pos < head.len() {
        let rest = &head[scanner.pos..];
        if rest.first() != Some(&b'<') {
            // Every step below starts at a `<`; text between tags is skipped in one search.
            scanner.pos += memchr::memchr(b'<', rest).unwrap_or(rest.len());
            continue;
        }
        if rest.starts_with(b"<!--") {
            // `-->` may share its dashes with `<!--`, so `<!-->` is a whole comment.
            let end = find(&rest[2..], b"-->")?;
            scanner.pos += 2 + end + 2;
        } else if starts_with_ignore_case(rest, b"<meta")
            && rest.get(5).is_some_and(|&b| is_space(b) || b == b'/')
        {
            scanner.pos += 5;
            if let Some(encoding) = scanner.meta()? {
                return Some(encoding);
            }
        } else if is_tag_start(rest) {
            scanner.skip_tag()?;
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") || rest.starts_with(b"<?") {
            scanner.pos += find(rest, b">")?;
        }
        scanner.pos += 1;
    }
    None
}

/// `<` or `</` followed by an ASCII letter: a start or end tag whose attributes must be skipped
/// (a `<meta` inside an attribute value is not a meta tag).
fn is_tag_start(rest: &[u8]) -> bool {
    match rest {
        [b'<', b'/', c, ..] | [b'<', c, ..] => c.is_ascii_alphabetic(),
        _ => false,
    }
}

/// A cursor over the prescan window. Methods return `None` when the bytes run out, which ends
/// the prescan without a result, as the standard says.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// What the standard's "get an attribute" step yields.
enum Attr {
    /// A name and a value, both ASCII-lowercased.
    Pair(Vec<u8>, Vec<u8>),
    /// The tag ended (`>`).
    End,
}

impl Scanner<'_> {
    fn byte(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Reads the attributes of a `<meta` tag; `Some(Some(enc))` when it declares an encoding.
    fn meta(&mut self) -> Option<Option<&'static Encoding>> {
        let mut seen: Vec<Vec<u8>> = Vec::new();
        let (mut got_pragma, mut need_pragma, mut charset) = (false, None, None);
        while let Attr::Pair(name, value) = self.attribute()? {
            if seen.contains(&name) {
                continue;
            }
            match name.as_slice() {
                b"http-equiv" => got_pragma |= value == b"content-type",
                b"content" if charset.is_none() => {
                    if let Some(enc) = charset_from_meta_content(&value) {
                        charset = Some(enc);
                        need_pragma = Some(true);
                    }
                }
                b"charset" => {
                    charset = Encoding::for_label(&value);
                    need_pragma = Some(false);
                }
                _ => {}
            }
            seen.push(name);
        }
        let charset = match need_pragma {
            None => return Some(None),
            Some(true) if !got_pragma => return Some(None),
            _ => charset,
        };
        // A page cannot declare UTF-16 in ASCII bytes; the standard reads it as UTF-8.
        Some(charset.map(|enc| match enc.name() {
            "UTF-16LE" | "UTF-16BE" => UTF_8,
            "x-user-defined" => WINDOWS_1252,
            _ => enc,
        }))
    }

    /// Skips a tag name and its attributes.
    fn skip_tag(&mut self) -> Option<()> {
        while !self.byte().is_some_and(|b| is_space(b) || b == b'>') {
            self.pos += 1;
            self.byte()?;
        }
        while let Attr::Pair(..) = self.attribute()? {}
        Some(())
    }

    /// The standard's "get an attribute": leaves `pos` on the byte after the attribute.
    fn attribute(&mut self) -> Option<Attr> {
        while is_space(self.byte()?) || self.byte()? == b'/' {
            self.pos += 1;
        }
        if self.byte()? == b'>' {
            return Some(Attr::End);
        }
        let mut name = Vec::new();
        loop {
            match self.byte()? {
                b'=' if !name.is_empty() => {
                    self.pos += 1;
                    break;
                }
                b if is_space(b) => {
                    while is_space(self.byte()?) {
                        self.pos += 1;
                    }
                    if self.byte()? != b'=' {
                        return Some(Attr::Pair(name, Vec::new()));
                    }
                    self.pos += 1;
                    break;
                }
                b'/' | b'>' => return Some(Attr::Pair(name, Vec::new())),
                b => name.push(b.to_ascii_lowercase()),
            }
            self.pos += 1;
        }
        let value = self.attribute_value()?;
        Some(Attr::Pair(name, value))
    }

    /// The value part of "get an attribute", after the `=`.
    fn attribute_value(&mut self) -> Option<Vec<u8>> {
        while is_space(self.byte()?) {
            self.pos += 1;
        }
        let mut value = Vec::new();
        match self.byte()? {
            quote @ (b'"' | b'\'') => loop {
                self.pos += 1;
                match self.byte()? {
                    b if b == quote => {
                        self.pos += 1;
                        return Some(value);
                    }
                    b => value.push(b.to_ascii_lowercase()),
                }
            },
            b'>' => return Some(value),
            _ => {}
        }
        while !is_space(self.byte()?) && self.byte()? != b'>' {
            value.push(self.byte()?.to_ascii_lowercase());
            self.pos += 1;
        }
        Some(value)
    }
}

/// The standard's "extract a character encoding from a meta element" over a `content` value.
fn charset_from_meta_content(content: &[u8]) -> Option<&'static Encoding> {
    let mut pos = 0;
    loop {
        pos += find_ignore_case(&content[pos..], b"charset")? + b"charset".len();
        let rest = &content[pos..];
        let after_space = rest
            .iter()
            .position(|&b| !is_space(b))
            .unwrap_or(rest.len());
        if rest.get(after_space) != Some(&b'=') {
            continue;
        }
        let value = &rest[after_space + 1..];
        let value = &value[value
            .iter()
            .position(|&b| !is_space(b))
            .unwrap_or(value.len())..];
        let label = match value.first()? {
            &quote @ (b'"' | b'\'') => {
                let end = value[1..].iter().position(|&b| b == quote)?;
                &value[1..1 + end]
            }
            _ => {
                let end = value
                    .iter()
                    .position(|&b| is_space(b) || b == b';')
                    .unwrap_or(value.len());
                &value[..end]
            }
        };
        return Encoding::for_label(label);
    }
}

/// HTML's ASCII whitespace, as the prescan defines it.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

fn starts_with_ignore_case(haystack: &[u8], prefix: &[u8]) -> bool {
    haystack
        .get(..prefix.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{GBK, ISO_8859_2, SHIFT_JIS, UTF_16BE, UTF_16LE, WINDOWS_1251};

    /// `detects!(name, content_type, document_bytes, ENCODING, Source)`
    macro_rules! detects {
        ($name:ident, $ct:expr, $doc:expr, $enc:expr, $src:ident) => {
            #[test]
            fn $name() {
                let doc: &[u8] = $doc;
                let got = detect($ct, doc);
                assert_eq!(
                    (got.encoding.name(), got.source),
                    ($enc.name(), CharsetSource::$src),
                    "document: {:?}",
                    String::from_utf8_lossy(doc)
                );
            }
        };
    }

    detects!(
        header_charset,
        Some("text/html; charset=ISO-8859-2"),
        b"<p>x</p>",
        ISO_8859_2,
        Header
    );
    detects!(
        header_quoted,
        Some("text/html;charset=\"Shift_JIS\""),
        b"<p>x</p>",
        SHIFT_JIS,
        Header
    );
    detects!(
        header_beats_meta,
        Some("text/html; charset=utf-8"),
        b"<meta charset=koi8-r>",
        UTF_8,
        Header
    );
    detects!(
        header_unknown_label_falls_through,
        Some("text/html; charset=bogus"),
        b"<meta charset=gbk>",
        GBK,
        Meta
    );
    detects!(
        header_without_charset,
        Some("text/html"),
        b"<p>caf\xc3\xa9</p>",
        UTF_8,
        Sniffed
    );
    detects!(
        bom_utf8_beats_header,
        Some("text/html; charset=windows-1252"),
        b"\xEF\xBB\xBF<p>x",
        UTF_8,
        Bom
    );
    detects!(bom_utf16le, None, b"\xFF\xFE<\0p\0>\0", UTF_16LE, Bom);
    detects!(bom_utf16be, None, b"\xFE\xFF\0<\0p\0>", UTF_16BE, Bom);
    detects!(
        meta_charset,
        None,
        b"<!doctype html><meta charset=\"windows-1251\"><p>x",
        WINDOWS_1251,
        Meta
    );
    detects!(
        meta_charset_unquoted,
        None,
        b"<html><head><META CHARSET=gbk>",
        GBK,
        Meta
    );
    detects!(
        meta_http_equiv,
        None,
        b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">",
        SHIFT_JIS,
        Meta
    );
    detects!(
        meta_content_first,
        None,
        b"<meta content='text/html;charset=iso-8859-2' http-equiv=content-type>",
        ISO_8859_2,
        Meta
    );
    detects!(
        meta_content_without_pragma_ignored,
        None,
        b"<meta name=x content=\"charset=koi8-r\"><p>a",
        UTF_8,
        Sniffed
    );
    detects!(
        meta_in_comment_ignored,
        None,
        b"<!-- <meta charset=koi8-r> --><p>a",
        UTF_8,
        Sniffed
    );
    detects!(
        meta_after_short_comment,
        None,
        b"<!--><meta charset=gbk>",
        GBK,
        Meta
    );
    detects!(
        meta_in_attribute_ignored,
        None,
        b"<div title=\"<meta charset=koi8-r>\"><p>a",
        UTF_8,
        Sniffed
    );
    detects!(
        meta_utf16_means_utf8,
        None,
        b"<meta charset=utf-16le><p>\xe9",
        UTF_8,
        Meta
    );
    detects!(
        meta_unknown_label_ignored,
        None,
        b"<meta charset=nonsense><p>\xe9</p>",
        WINDOWS_1252,
        Default
    );
    detects!(
        meta_first_wins,
        None,
        b"<meta charset=gbk><meta charset=koi8-r>",
        GBK,
        Meta
    );
    detects!(
        sniff_valid_utf8,
        None,
        "<p>héllo wörld</p>".as_bytes(),
        UTF_8,
        Sniffed
    );
    detects!(sniff_ascii, None, b"<p>hello</p>", UTF_8, Sniffed);
    detects!(
        fallback_windows_1252,
        None,
        b"<p>caf\xe9</p>",
        WINDOWS_1252,
        Default
    );
    detects!(empty_document, None, b"", UTF_8, Sniffed);

    #[test]
    fn meta_beyond_1024_bytes_is_not_seen() {
        let mut doc = format!("<p>{}</p>", "a".repeat(PRESCAN_BYTES)).into_bytes();
        doc.extend_from_slice(b"<meta charset=gbk><p>\xe9</p>");
        assert_eq!(detect(None, &doc).source, CharsetSource::Default);
    }

    #[test]
    fn sniff_allows_a_character_cut_by_the_window() {
        let mut doc = "a".repeat(SNIFF_BYTES - 1).into_bytes();
        doc.extend_from_slice("é and more".as_bytes()); // é straddles the 64 KiB boundary
        assert_eq!(
            detect(None, &doc),
            Detected {
                encoding: UTF_8,
                source: CharsetSource::Sniffed
            }
        );
    }

    #[test]
    fn content_type_parameters() {
        assert_eq!(from_content_type("text/html; charset=UTF-8"), Some(UTF_8));
        assert_eq!(
            from_content_type("text/html; foo=bar; Charset = 'latin1' "),
            Some(WINDOWS_1252)
        );
        assert_eq!(from_content_type("text/html"), None);
        assert_eq!(
            from_content_type("charset=utf-8"),
            None,
            "the media type is not a parameter"
        );
        assert_eq!(from_content_type("text/html; charset=no-such-thing"), None);
    }

    #[test]
    fn windows_1251_page_decodes() {
        let text =
            "<html><head><meta charset=\"windows-1251\"></head><body>Привет, мир</body></html>";
        let (bytes, _, unmappable) = WINDOWS_1251.encode(text);
        assert!(!unmappable);
        let detected = detect(Some("text/html"), &bytes);
        assert_eq!(
            detected,
            Detected {
                encoding: WINDOWS_1251,
                source: CharsetSource::Meta
            }
        );
        assert_eq!(to_utf8(&bytes, detected.encoding), text);
    }

    #[test]
    fn shift_jis_page_decodes() {
        let text = "<html><body><p>日本語のテキスト、カタカナ</p></body></html>";
        let (bytes, _, unmappable) = SHIFT_JIS.encode(text);
        assert!(!unmappable);
        assert_ne!(&bytes[..], text.as_bytes());
        let detected = detect(Some("text/html; charset=Shift_JIS"), &bytes);
        assert_eq!(detected.source, CharsetSource::Header);
        assert_eq!(to_utf8(&bytes, detected.encoding), text);
    }

    #[test]
    fn utf16le_with_bom_decodes_without_the_bom() {
        let text = "<p>Ünïcödé</p>";
        let mut bytes = vec![0xFF, 0xFE];
        bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        let detected = detect(Some("text/html; charset=windows-1252"), &bytes);
        assert_eq!(detected.encoding, UTF_16LE);
        assert_eq!(to_utf8(&bytes, detected.encoding), text);
    }

    #[test]
    fn utf8_bom_is_stripped_and_malformed_bytes_replaced() {
        assert_eq!(
            to_utf8(b"\xEF\xBB\xBF<p>a\xffb</p>", UTF_8),
            "<p>a\u{FFFD}b</p>"
        );
        assert_eq!(to_utf8(b"caf\xe9", WINDOWS_1252), "café");
    }

    #[test]
    fn truncated_meta_ends_the_prescan() {
        assert_eq!(prescan(b"<meta charset=\"gbk"), None);
        assert_eq!(prescan(b"<!-- unterminated <meta charset=gbk>"), None);
    }

    proptest::proptest! {
        /// The sniff answers as `str::from_utf8` on the whole window would: valid, or valid
        /// but for a character cut at the end.
        #[test]
        fn utf8_prefix_is_what_from_utf8_says(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::num::u8::ANY,
                    // Leads, continuations and a surrogate's lead, so that most inputs hold
                    // characters, whole or cut.
                    proptest::sample::select(vec![
                        b'a', 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xED, 0xA0
                    ]),
                ],
                0..40,
            )
        ) {
            let expected = match std::str::from_utf8(&bytes) {
                Ok(_) => true,
                Err(e) => e.error_len().is_none(),
            };
            proptest::prop_assert_eq!(is_utf8_prefix(&bytes), expected);
        }
    }
}
