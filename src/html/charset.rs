//! Which character encoding a page is in, and its transcoding to UTF-8.
//!
//! This module owns the decision, in the order the HTML standard gives: a byte order mark, then
//! the `Content-Type` header's `charset`, then the `<meta>` prescan of the first 1024 bytes,
//! then a guess. The guess differs from a browser's locale default on purpose: a page that
//! declares nothing but is valid UTF-8 is almost always UTF-8 today, and windows-1252 (what
//! browsers assume for Western locales, and a superset of ISO-8859-1) is the fallback. Stage 1
//! and everything after it work on UTF-8 only; the proxy serves UTF-8 and says so.
//!
//! A guess is only tentative. A browser's tree builder that meets a `<meta>` declaring another
//! encoding later in the page "changes the encoding": it decodes the page again with the
//! declared one. Because the whole page is here before it is decoded, the same happens up front
//! (`late_meta`): the rest of the page is scanned for the first `<meta>` the tree builder
//! would act on, skipping what its tokenizer never reads as tags (comments, attribute values,
//! the raw text of `<script>`, `<style>`, `<noscript>`, `<title>`, …).
//!
//! One deliberate departure: a page that is valid UTF-8 throughout and not plain ASCII is read
//! as UTF-8 whatever a `<meta>`, early or late, says, because such a declaration is far more
//! often stale (a page re-saved or re-served as UTF-8) than the bytes are a legacy encoding that
//! happens to be valid UTF-8. The header (and `pith extract --charset`) is still obeyed: it is
//! the transport's word, and the way to override the bytes.

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
    /// A `<meta>` after the first 1024 bytes declared another encoding than the guess, which
    /// was then changed to it (the HTML standard's "change the encoding").
    LateMeta,
    /// A `<meta>` declared a legacy encoding, but the page is valid UTF-8 with non-ASCII text
    /// throughout: UTF-8 was kept.
    ValidUtf8,
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
/// windows-1252; a guess is then changed by a later `<meta>` (`late_meta`). A `<meta>` that
/// declares a legacy encoding for a page that is valid, non-ASCII UTF-8 throughout is
/// overruled ([`CharsetSource::ValidUtf8`]).
pub fn detect(content_type: Option<&str>, doc: &[u8]) -> Detected {
    let found = |encoding, source| Detected { encoding, source };
    if let Some((encoding, _)) = Encoding::for_bom(doc) {
        return found(encoding, CharsetSource::Bom);
    }
    if let Some(encoding) = content_type.and_then(from_content_type) {
        return found(encoding, CharsetSource::Header);
    }
    if let Some(encoding) = prescan(&doc[..doc.len().min(PRESCAN_BYTES)]) {
        return meta_declared(encoding, doc, CharsetSource::Meta);
    }
    let guess = match is_utf8_prefix(&doc[..doc.len().min(SNIFF_BYTES)]) {
        true => found(UTF_8, CharsetSource::Sniffed),
        false => found(WINDOWS_1252, CharsetSource::Default),
    };
    // No later <meta> can change this guess (see `meta_declared`), so none is looked for.
    if guess.encoding == UTF_8 && is_utf8_text(doc) {
        return guess;
    }
    // The standard's "change the encoding": another encoding than the guess; the same one
    // makes the guess certain.
    match late_meta(doc) {
        Some(encoding) if encoding != guess.encoding => {
            meta_declared(encoding, doc, CharsetSource::LateMeta)
        }
        _ => guess,
    }
}

/// What a `<meta>` declaring `encoding` decides: that encoding, unless the page is valid UTF-8
/// with non-ASCII text throughout. A page in a legacy encoding with any real amount of
/// non-ASCII text is never valid UTF-8 by chance, while pages re-saved or re-served as UTF-8
/// with their old `<meta>` left in are common; decoding those as declared garbles every
/// non-ASCII character.
fn meta_declared(encoding: &'static Encoding, doc: &[u8], source: CharsetSource) -> Detected {
    if encoding != UTF_8 && is_utf8_text(doc) {
        return Detected {
            encoding: UTF_8,
            source: CharsetSource::ValidUtf8,
        };
    }
    Detected { encoding, source }
}

/// True when the whole of `doc` is valid UTF-8 and not plain ASCII.
fn is_utf8_text(doc: &[u8]) -> bool {
    !doc.is_ascii() && Encoding::utf8_valid_up_to(doc) == doc.len()
}

/// The encoding declared by the first `<meta charset>` or `<meta http-equiv=content-type>`
/// anywhere in `doc` that names a known encoding (UTF-16 read as UTF-8 and x-user-defined as
/// windows-1252, as the standard says), as the tree builder meets them: what the tokenizer
/// reads as text is skipped, the raw text of `<script>` and its kind included. Cheap on pages
/// that never say `charset`: one case-insensitive search decides that.
fn late_meta(doc: &[u8]) -> Option<&'static Encoding> {
    static CHARSET: std::sync::LazyLock<aho_corasick::AhoCorasick> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(["charset"])
                .expect("one literal pattern always builds")
        });
    CHARSET.find(doc)?;
    scan(doc, Tokenizer::TreeBuilder)
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
    scan(head, Tokenizer::Prescan)
}

/// Which tokenizer's view of the bytes [`scan`] takes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tokenizer {
    /// The standard's prescan: every `<meta` outside comments and attribute values counts.
    Prescan,
    /// What the tree builder meets: as the prescan, and the content of raw-text elements is
    /// text, not tags.
    TreeBuilder,
}

/// Elements whose content the tokenizer reads as text up to their end tag (scripting on, so
/// `<noscript>` too); `<plaintext>` has no end tag, so the rest of the page is text.
const RAW_TEXT: [&[u8]; 10] = [
    b"script",
    b"style",
    b"noscript",
    b"title",
    b"textarea",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"plaintext",
];

/// The prescan's loop over `head`, seen as `tokenizer` sees it.
fn scan(head: &[u8], tokenizer: Tokenizer) -> Option<&'static Encoding> {
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
            let name = scanner.pos + 1;
            scanner.skip_tag()?;
            if tokenizer == Tokenizer::TreeBuilder {
                scanner.skip_raw_text(name)?;
            }
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

    /// When the tag whose name starts at `name` opens a raw-text element ([`RAW_TEXT`]), moves
    /// from its `>` (where [`Scanner::skip_tag`] leaves `pos`) to the `<` of its end tag.
    /// `None` when the text runs to the end of the bytes.
    fn skip_raw_text(&mut self, name: usize) -> Option<()> {
        let tag = &self.bytes[name..];
        let len = tag
            .iter()
            .position(|&b| is_space(b) || b == b'/' || b == b'>')
            .unwrap_or(tag.len());
        let tag = &tag[..len];
        if !RAW_TEXT.iter().any(|raw| tag.eq_ignore_ascii_case(raw)) {
            return Some(());
        }
        if tag.eq_ignore_ascii_case(b"plaintext") {
            return None;
        }
        let mut from = self.pos;
        loop {
            let at = from + find(&self.bytes[from..], b"</")?;
            let after = at + 2 + tag.len();
            let ends = self
                .bytes
                .get(at + 2..after)
                .is_some_and(|n| n.eq_ignore_ascii_case(tag))
                && self
                    .bytes
                    .get(after)
                    .is_none_or(|&b| is_space(b) || b == b'/' || b == b'>');
            if ends {
                self.pos = at;
                return Some(());
            }
            from = at + 2;
        }
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
    memchr::memmem::find(haystack, needle)
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
    use encoding_rs::{GBK, ISO_8859_2, KOI8_R, SHIFT_JIS, UTF_16BE, UTF_16LE, WINDOWS_1251};

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
        meta_on_valid_utf8_text_is_overruled,
        None,
        "<meta charset=gb2312><p>你好，世界</p>".as_bytes(),
        UTF_8,
        ValidUtf8
    );
    detects!(
        meta_on_ascii_text_is_obeyed,
        None,
        b"<meta charset=gb2312><p>hello</p>",
        GBK,
        Meta
    );
    detects!(
        header_on_valid_utf8_text_is_obeyed,
        Some("text/html; charset=gbk"),
        "<p>你好，世界</p>".as_bytes(),
        GBK,
        Header
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

    /// `padding` bytes of ASCII text, then `tail`: a page whose `<meta>` the prescan misses.
    fn late(tail: &[u8]) -> Vec<u8> {
        let mut doc = format!(
            "<html><head><title>t</title></head><body><p>{}</p>",
            "a".repeat(PRESCAN_BYTES)
        )
        .into_bytes();
        doc.extend_from_slice(tail);
        doc
    }

    /// `changes!(name, content_type, tail_after_1024_bytes, ENCODING, Source)`
    macro_rules! changes {
        ($name:ident, $ct:expr, $tail:expr, $enc:expr, $src:ident) => {
            #[test]
            fn $name() {
                let doc = late($tail);
                assert_eq!(
                    prescan(&doc[..PRESCAN_BYTES]),
                    None,
                    "the prescan must not see it"
                );
                let got = detect($ct, &doc);
                assert_eq!(
                    (got.encoding.name(), got.source),
                    ($enc.name(), CharsetSource::$src),
                    "tail: {:?}",
                    String::from_utf8_lossy($tail)
                );
            }
        };
    }

    changes!(
        late_meta_changes_the_fallback,
        None,
        b"<meta charset=gbk><p>\xc4\xe3</p>",
        GBK,
        LateMeta
    );
    changes!(
        late_meta_changes_an_ascii_sniff,
        None,
        b"<meta charset=shift_jis><p>x</p>",
        SHIFT_JIS,
        LateMeta
    );
    changes!(
        late_http_equiv_in_capitals,
        None,
        b"<META HTTP-EQUIV=Content-Type CONTENT='text/html; CHARSET=gb2312'><p>\xc4\xe3</p>",
        GBK,
        LateMeta
    );
    changes!(
        late_meta_same_as_the_guess_keeps_it,
        None,
        b"<meta charset=latin1><p>\xe9</p>",
        WINDOWS_1252,
        Default
    );
    changes!(
        late_utf16_means_utf8,
        None,
        b"<meta charset=utf-16be><p>\xe9</p>",
        UTF_8,
        LateMeta
    );
    changes!(
        late_x_user_defined_means_windows_1252,
        None,
        b"<meta charset=x-user-defined><p>x</p>",
        WINDOWS_1252,
        LateMeta
    );
    changes!(
        late_meta_after_an_unknown_label,
        None,
        b"<meta charset=bogus><meta charset=koi8-r><p>\xe9</p>",
        KOI8_R,
        LateMeta
    );
    changes!(
        late_first_meta_wins,
        None,
        b"<meta charset=gbk><meta charset=koi8-r><p>\xe9</p>",
        GBK,
        LateMeta
    );
    changes!(
        late_meta_in_body_counts,
        None,
        b"<div><svg><meta charset=gbk></svg></div><p>\xe9</p>",
        GBK,
        LateMeta
    );
    changes!(
        header_is_certain,
        Some("text/html; charset=iso-8859-2"),
        b"<meta charset=gbk><p>\xe9</p>",
        ISO_8859_2,
        Header
    );
    changes!(
        valid_utf8_text_stays_utf8,
        None,
        "<meta charset=windows-1252><p>café</p>".as_bytes(),
        UTF_8,
        Sniffed
    );
    changes!(
        late_meta_in_a_script_is_text,
        None,
        b"<script>document.write('<meta charset=gbk>')</script><p>\xe9</p>",
        WINDOWS_1252,
        Default
    );
    changes!(
        late_meta_after_a_script_counts,
        None,
        b"<script type=module>if (a</b) x('</scripts>')</SCRIPT ><meta charset=gbk>\xe9",
        GBK,
        LateMeta
    );
    changes!(
        late_meta_in_a_title_is_text,
        None,
        b"<title><meta charset=gbk></title>\xe9!",
        WINDOWS_1252,
        Default
    );
    changes!(
        late_meta_in_noscript_is_text,
        None,
        b"<noscript><meta charset=gbk></noscript>\xe9!",
        WINDOWS_1252,
        Default
    );
    changes!(
        late_meta_in_a_comment_is_not_seen,
        None,
        b"<!-- <meta charset=gbk> -->\xe9!",
        WINDOWS_1252,
        Default
    );
    changes!(
        late_meta_in_an_attribute_is_not_seen,
        None,
        b"<a title='<meta charset=gbk>'>\xe9</a>",
        WINDOWS_1252,
        Default
    );
    changes!(
        plaintext_runs_to_the_end,
        None,
        b"<plaintext></plaintext><meta charset=gbk>\xe9!",
        WINDOWS_1252,
        Default
    );

    #[test]
    fn a_gb2312_page_with_its_meta_after_1024_bytes_decodes() {
        let head = format!(
            "<html><head><script>{}</script>",
            "var tracking = 1;\n".repeat(80)
        );
        let page = format!("{head}<meta http-equiv=\"Content-Type\" content=\"text/html; charset=gb2312\"><title>中文网页</title></head><body><p>你好，世界。这是一个测试页面。</p></body></html>");
        let (bytes, _, unmappable) = GBK.encode(&page);
        assert!(!unmappable);
        assert!(head.len() > PRESCAN_BYTES);
        let detected = detect(Some("text/html"), &bytes);
        assert_eq!(
            detected,
            Detected {
                encoding: GBK,
                source: CharsetSource::LateMeta
            }
        );
        assert_eq!(to_utf8(&bytes, detected.encoding), page);
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
