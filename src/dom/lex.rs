//! pith's HTML tokenizer: the WHATWG tokenization rules, written to skip over runs of plain
//! bytes with `memchr` instead of stepping one character at a time, feeding a tree builder:
//! pith's own (`super::direct`) for most pages, html5ever's (`super::build`) for the pages that
//! need a construction rule outside the former's subset.
//!
//! Why not html5ever's own tokenizer: on the development pages it took three fifths of the
//! parse (about 80 instructions per byte of stage-1 output). Text and attribute values without
//! character references are handed over as slices of the page, so a page costs few copies.
//! Tokens go to a [`Sink`]: pith's builder takes tags whose attributes borrow from the page;
//! html5ever's takes them through [`Tokens`], which makes its token types of them.
//!
//! Conformance: the states of the specification are all here, folded into straight-line code:
//! data, RCDATA, RAWTEXT, script data with its escaped and double-escaped states, PLAINTEXT,
//! tags and attributes, comments (with `<!-->`, `<!--->` and `--!>`), bogus comments, DOCTYPE
//! with its identifiers and force-quirks flag, CDATA sections in foreign content, and named and
//! numeric character references with their historical rules. Parse errors are not reported
//! (neither tree builder reports them). The tests compare the trees with those built through
//! html5ever's tokenizer, on crafted edge cases, on random markup and on every development page,
//! and `tests/html5lib.rs` runs the html5lib-tests tree-construction suite through the whole
//! parser.
//!
//! This file is the tokenizer itself; `names.rs` is its per-thread table of interned tag and
//! attribute names, `charref.rs` decodes character references, `doctype.rs` reads a DOCTYPE.

use std::borrow::Cow;
use std::cell::OnceCell;

use markup5ever::interface::{Attribute, QualName};
use markup5ever::tendril::StrTendril;
use markup5ever::{ns, LocalName};
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{TagKind, Token, TokenSink, TokenSinkResult};

use super::TagAttr;
pub(crate) use charref::attribute_char_ref;
use charref::{char_ref, RefIn};
use doctype::parse_doctype;
use names::{Names, NAMES};

mod charref;
mod doctype;
mod names;

/// The input stream preprocessing of the specification, done before [`run`]: a leading byte
/// order mark is dropped, and carriage returns are normalised (`\r\n` and lone `\r` become
/// `\n`). Apart from [`run`] so that the tokens, which borrow from the input, can outlive it.
pub(super) fn normalise(html: &str) -> Cow<'_, str> {
    let html = html.strip_prefix('\u{feff}').unwrap_or(html);
    if memchr::memchr(b'\r', html.as_bytes()).is_some() {
        Cow::Owned(html.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(html)
    }
}

/// Tokenizes `html` (as [`normalise`] leaves it) into `sink`, checking `stop` after every tag;
/// ends with the EOF token.
pub(super) fn run<'s, S: Sink<'s>>(html: &'s str, sink: &S, stop: impl Fn() -> bool) {
    let mut lexer = Lexer {
        src: html,
        bytes: html.as_bytes(),
        buf: OnceCell::new(),
        pos: 0,
        text: Pending::Empty,
        owned: String::new(),
        sink,
        names: NAMES.take().unwrap_or_else(Names::new),
    };
    lexer.data(&stop);
    lexer.flush();
    let _ = sink.token(Token::EOFToken);
    sink.end();
    NAMES.set(Some(lexer.names));
}

/// A start tag: html5ever's `Tag`, with attributes that borrow their values from the input
/// (`'s`) and carry their names as the tree keeps them. End tags come as a name alone
/// ([`Sink::end_tag`]).
pub(super) struct Tag<'s> {
    pub(super) kind: TagKind,
    pub(super) name: LocalName,
    pub(super) self_closing: bool,
    /// In order, without duplicates (the first of a name stays).
    pub(super) attrs: Vec<TagAttr<'s>>,
}

/// What the tokenizer feeds: html5ever's tokens, except that tags come as [`Tag`]s and
/// character data as a string slice, so that a sink which copies them into buffers of its own
/// (the direct builder) gets no tendril made for them.
pub(super) trait Sink<'s> {
    /// A start tag; says whether the tokenizer switches to a raw-text state.
    fn tag(&self, tag: Tag<'s>) -> TokenSinkResult<()>;

    /// An end tag, by its name: its attributes are dropped by the specification, so it brings
    /// no vector to allocate, hand over and drop.
    fn end_tag(&self, name: LocalName, self_closing: bool) -> TokenSinkResult<()>;

    /// An empty vector for the attributes of a tag: the sink may hand back one a tag brought,
    /// so that tags after the first cost no allocation.
    fn spare(&self) -> Vec<TagAttr<'s>> {
        Vec::new()
    }

    /// Any token but a tag or character data; says whether the tokenizer switches to a
    /// raw-text state.
    fn token(&self, token: Token) -> TokenSinkResult<()>;

    /// A run of character data; `shared` makes it a tendril, sharing the input's buffer where
    /// the run is one slice of it.
    fn text(&self, text: &str, shared: impl FnOnce() -> StrTendril);

    /// A comment, as [`Sink::text`] hands over character data.
    fn comment(&self, text: &str, shared: impl FnOnce() -> StrTendril);

    /// Whether the adjusted current node is in a foreign namespace (`<![CDATA[` is then a
    /// CDATA section, not a bogus comment).
    fn in_foreign_content(&self) -> bool;

    /// The end of input, after the EOF token.
    fn end(&self);
}

/// html5ever's tree builder, or any [`TokenSink`], as a [`Sink`].
pub(super) struct Tokens<'t, T>(pub(super) &'t T);

impl<T: TokenSink> Sink<'_> for Tokens<'_, T> {
    fn tag(&self, tag: Tag<'_>) -> TokenSinkResult<()> {
        let attrs = tag
            .attrs
            .into_iter()
            .map(|a| Attribute {
                name: QualName::new(None, ns!(), a.name),
                value: StrTendril::from_slice(&a.value),
            })
            .collect();
        let (kind, name, self_closing) = (tag.kind, tag.name, tag.self_closing);
        let tag = html5ever::tokenizer::Tag { kind, name, self_closing, attrs, had_duplicate_attributes: false };
        self.token(Token::TagToken(tag))
    }

    fn end_tag(&self, name: LocalName, self_closing: bool) -> TokenSinkResult<()> {
        let kind = TagKind::EndTag;
        let attrs = Vec::new();
        let tag = html5ever::tokenizer::Tag { kind, name, self_closing, attrs, had_duplicate_attributes: false };
        self.token(Token::TagToken(tag))
    }

    fn token(&self, token: Token) -> TokenSinkResult<()> {
        match self.0.process_token(token, 0) {
            TokenSinkResult::RawData(kind) => TokenSinkResult::RawData(kind),
            TokenSinkResult::Plaintext => TokenSinkResult::Plaintext,
            _ => TokenSinkResult::Continue,
        }
    }

    fn text(&self, _text: &str, shared: impl FnOnce() -> StrTendril) {
        let _ = self.0.process_token(Token::CharacterTokens(shared()), 0);
    }

    fn comment(&self, _text: &str, shared: impl FnOnce() -> StrTendril) {
        let _ = self.0.process_token(Token::CommentToken(shared()), 0);
    }

    fn in_foreign_content(&self) -> bool {
        self.0.adjusted_current_node_present_but_not_in_html_namespace()
    }

    fn end(&self) {
        self.0.end();
    }
}

/// Where the lexer stands: the input as text and bytes, and the pending run of character data
/// (flushed as one token before anything else is emitted).
struct Lexer<'s, 'k, S> {
    src: &'s str,
    bytes: &'s [u8],
    /// The input as one tendril, which tendrils of its slices share; made when the sink first
    /// asks for such a tendril (html5ever's tree builder does, the direct builder never).
    buf: OnceCell<StrTendril>,
    pos: usize,
    text: Pending,
    /// The pending text when it is not one slice of the input ([`Pending::Owned`]); kept
    /// between runs so that its allocation is reused.
    owned: String,
    sink: &'k S,
    names: Names,
}

/// The pending run of character data.
#[derive(Clone, Copy, PartialEq)]
enum Pending {
    Empty,
    /// `src[start..end]`: most runs, which hold no reference and no NUL.
    Slice(usize, usize),
    /// In `Lexer::owned`.
    Owned,
}

/// How U+0000 is treated in a run of characters.
#[derive(Clone, Copy, PartialEq)]
enum Nul {
    /// In the data state: its own token, which the tree builder mostly drops.
    Token,
    /// Elsewhere: U+FFFD REPLACEMENT CHARACTER.
    Replace,
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b' ')
}

/// The longest text a tendril stores inline, without a buffer.
const INLINE: usize = 8;

/// Classes of the bytes that end a name or value inside a tag, so that the loops over names,
/// spaces and unquoted values test one table entry per byte instead of a chain of compares.
const SPACE: u8 = 1;
const SLASH: u8 = 2;
const GT: u8 = 4;
const EQ: u8 = 8;

static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'\t' as usize] = SPACE;
    table[b'\n' as usize] = SPACE;
    table[0x0c] = SPACE;
    table[b' ' as usize] = SPACE;
    table[b'/' as usize] = SLASH;
    table[b'>' as usize] = GT;
    table[b'=' as usize] = EQ;
    table
};

/// Where the run of bytes from `at` that are in none of the classes `stop` ends.
fn run_end(bytes: &[u8], mut at: usize, stop: u8) -> usize {
    while let Some(&b) = bytes.get(at) {
        if CLASS[b as usize] & stop != 0 {
            break;
        }
        at += 1;
    }
    at
}

/// Where the run of spaces from `at` ends.
fn skip_spaces(bytes: &[u8], mut at: usize) -> usize {
    while let Some(&b) = bytes.get(at) {
        if CLASS[b as usize] != SPACE {
            break;
        }
        at += 1;
    }
    at
}

/// Whether `hay[at..]` starts with `word`, ASCII case-insensitively (`word` is lower case).
fn starts_ci(hay: &[u8], at: usize, word: &[u8]) -> bool {
    hay.get(at..at + word.len()).is_some_and(|s| s.eq_ignore_ascii_case(word))
}

impl<'s, S: Sink<'s>> Lexer<'s, '_, S> {
    /// `src[start..end]` as a tendril: stored inline when that short (as a shared slice of a
    /// few bytes would be), else sharing the input's buffer. The short case comes from a
    /// `&str`, which spares the UTF-8 check at both cuts that slicing a tendril makes.
    fn slice(&self, start: usize, end: usize) -> StrTendril {
        if end - start <= INLINE {
            StrTendril::from_slice(&self.src[start..end])
        } else {
            self.buf.get_or_init(|| StrTendril::from(self.src)).subtendril(start as u32, (end - start) as u32)
        }
    }

    /// Adds `src[start..end]` to the pending character data.
    fn push_text(&mut self, start: usize, end: usize) {
        if start == end {
            return;
        }
        match self.text {
            Pending::Empty => self.text = Pending::Slice(start, end),
            Pending::Slice(from, to) if to == start => self.text = Pending::Slice(from, end),
            Pending::Slice(from, to) => {
                self.owned.clear();
                self.owned.push_str(&self.src[from..to]);
                self.owned.push_str(&self.src[start..end]);
                self.text = Pending::Owned;
            }
            Pending::Owned => self.owned.push_str(&self.src[start..end]),
        }
    }

    fn push_str(&mut self, s: &str) {
        match self.text {
            Pending::Empty => self.owned.clear(),
            Pending::Slice(from, to) => {
                self.owned.clear();
                self.owned.push_str(&self.src[from..to]);
            }
            Pending::Owned => {}
        }
        self.owned.push_str(s);
        self.text = Pending::Owned;
    }

    fn flush(&mut self) {
        let sink = self.sink;
        match std::mem::replace(&mut self.text, Pending::Empty) {
            Pending::Empty => {}
            Pending::Slice(start, end) => sink.text(&self.src[start..end], || self.slice(start, end)),
            Pending::Owned => sink.text(&self.owned, || StrTendril::from_slice(&self.owned)),
        }
    }

    fn emit(&mut self, token: Token) -> TokenSinkResult<()> {
        self.flush();
        self.sink.token(token)
    }

    /// Text from `pos` up to `end`: NULs handled per `nul`, references decoded when `refs`.
    fn text_run(&mut self, end: usize, nul: Nul, refs: bool) {
        while self.pos < end {
            let hay = &self.bytes[self.pos..end];
            let found = if refs { memchr::memchr2(b'&', 0, hay) } else { memchr::memchr(0, hay) };
            let Some(i) = found else {
                self.push_text(self.pos, end);
                self.pos = end;
                return;
            };
            self.push_text(self.pos, self.pos + i);
            self.pos += i;
            if self.bytes[self.pos] == 0 {
                self.pos += 1;
                match nul {
                    Nul::Token => {
                        let _ = self.emit(Token::NullCharacterToken);
                    }
                    Nul::Replace => self.push_str("\u{fffd}"),
                }
            } else {
                self.reference(RefIn::Text, end);
            }
        }
    }

    /// Reads a character reference at `pos` (an `&`) into the pending text.
    fn reference(&mut self, mode: RefIn, end: usize) {
        let (chars, used) = char_ref(self.src, end, self.pos, mode);
        let mut out = [0u8; 8];
        let mut n = 0;
        for c in chars.into_iter().flatten() {
            n += c.encode_utf8(&mut out[n..]).len();
        }
        if used == 0 {
            self.push_text(self.pos, self.pos + 1);
            self.pos += 1;
        } else {
            // `out` holds whole UTF-8 sequences only.
            self.push_str(std::str::from_utf8(&out[..n]).unwrap_or("\u{fffd}"));
            self.pos += used;
        }
    }

    /// The data state, to the end of input (or until `stop` says so).
    fn data(&mut self, stop: &impl Fn() -> bool) {
        let len = self.bytes.len();
        while self.pos < len {
            let hay = &self.bytes[self.pos..];
            let Some(i) = memchr::memchr3(b'<', b'&', 0, hay) else {
                self.push_text(self.pos, len);
                self.pos = len;
                break;
            };
            self.push_text(self.pos, self.pos + i);
            self.pos += i;
            match self.bytes[self.pos] {
                b'&' => self.reference(RefIn::Text, len),
                0 => self.text_run(self.pos + 1, Nul::Token, false),
                _ => {
                    if self.markup() && stop() {
                        return;
                    }
                }
            }
        }
    }

    /// Markup at `pos` (a `<`). Returns whether a tag was emitted.
    fn markup(&mut self) -> bool {
        let at = self.pos;
        match self.bytes.get(at + 1).copied() {
            Some(b) if b.is_ascii_alphabetic() => return self.tag(TagKind::StartTag, at + 1),
            Some(b'/') => match self.bytes.get(at + 2).copied() {
                Some(b) if b.is_ascii_alphabetic() => return self.tag(TagKind::EndTag, at + 2),
                Some(b'>') => self.pos = at + 3,
                Some(_) => self.bogus_comment(at + 2),
                None => {
                    self.push_text(at, at + 2);
                    self.pos = at + 2;
                }
            },
            Some(b'!') => self.declaration(at + 2),
            Some(b'?') => self.bogus_comment(at + 1),
            _ => {
                self.push_text(at, at + 1);
                self.pos = at + 1;
            }
        }
        false
    }

    /// `<!` seen, `pos` just after it: a comment, a DOCTYPE, a CDATA section or a bogus comment.
    fn declaration(&mut self, at: usize) {
        if self.bytes[at..].starts_with(b"--") {
            self.comment(at + 2);
        } else if starts_ci(self.bytes, at, b"doctype") {
            self.doctype(at + 7);
        } else if self.bytes[at..].starts_with(b"[CDATA[") && self.sink.in_foreign_content() {
            let start = at + 7;
            let end = memchr::memmem::find(&self.bytes[start..], b"]]>").map_or(self.bytes.len(), |i| start + i);
            self.pos = start;
            self.text_run(end, Nul::Token, false);
            self.pos = (end + 3).min(self.bytes.len());
        } else {
            self.bogus_comment(at);
        }
    }

    /// A comment whose content starts at `start` (after `<!--`).
    fn comment(&mut self, start: usize) {
        let rest = &self.bytes[start..];
        let (content_end, next) = if rest.first() == Some(&b'>') {
            (start, start + 1)
        } else if rest.starts_with(b"->") {
            (start, start + 2)
        } else {
            let mut from = start;
            loop {
                match memchr::memmem::find(&self.bytes[from..], b"--") {
                    None => {
                        // At end of input a last single dash is the start of an end, not content.
                        let len = self.bytes.len();
                        let end = if len > start && self.bytes[len - 1] == b'-' { len - 1 } else { len };
                        break (end, len);
                    }
                    Some(i) => {
                        let dash = from + i;
                        // A run of dashes before `>` ends the comment at its last two.
                        let mut j = dash + 2;
                        while self.bytes.get(j) == Some(&b'-') {
                            j += 1;
                        }
                        match self.bytes.get(j) {
                            Some(b'>') => break (j - 2, j + 1),
                            Some(b'!') if self.bytes.get(j + 1) == Some(&b'>') => break (j - 2, j + 2),
                            None => break (j.saturating_sub(2).max(start), j),
                            _ => from = j,
                        }
                    }
                }
            }
        };
        self.pos = next;
        self.emit_comment(start, content_end);
    }

    /// A bogus comment: everything from `start` up to the next `>`.
    fn bogus_comment(&mut self, start: usize) {
        let end = memchr::memchr(b'>', &self.bytes[start..]).map_or(self.bytes.len(), |i| start + i);
        self.pos = (end + 1).min(self.bytes.len());
        self.emit_comment(start, end);
    }

    /// A comment whose content is `src[start..end]`, with U+0000 replaced by U+FFFD.
    fn emit_comment(&mut self, start: usize, end: usize) {
        self.flush();
        let raw = &self.src[start..end];
        if memchr::memchr(0, raw.as_bytes()).is_none() {
            self.sink.comment(raw, || self.slice(start, end));
        } else {
            let text = raw.replace('\0', "\u{fffd}");
            self.sink.comment(&text, || StrTendril::from_slice(&text));
        }
    }

    /// A tag whose name starts at `start`. Returns whether it was emitted (false at end of
    /// input inside the tag, where the specification drops it).
    fn tag(&mut self, kind: TagKind, start: usize) -> bool {
        let i = run_end(self.bytes, start, SPACE | SLASH | GT);
        let name = self.names.get(self.src, start, i);
        self.pos = i;
        if kind == TagKind::EndTag {
            // An end tag's attributes are read past and dropped: no vector for them.
            let Some(self_closing) = self.attributes(|_, _| ()) else { return false };
            self.flush();
            let _ = self.sink.end_tag(name, self_closing);
            return true;
        }
        // The sink's spare vector, asked for at the first attribute (put in place of an empty
        // vector, that one's drop would be a call per tag).
        let mut attrs: Option<Vec<TagAttr<'s>>> = None;
        let Some(self_closing) = self.attributes(|lexer, attr| {
            let attrs = attrs.get_or_insert_with(|| lexer.sink.spare());
            if !attrs.iter().any(|a| a.name == attr.name) {
                attrs.push(attr);
            }
        }) else {
            return false;
        };
        self.flush();
        let attrs = attrs.unwrap_or_default();
        let result = self.sink.tag(Tag { kind, name: name.clone(), self_closing, attrs });
        match result {
            TokenSinkResult::RawData(RawKind::Rcdata) => self.raw_text(&name, true),
            TokenSinkResult::RawData(RawKind::Rawtext) => self.raw_text(&name, false),
            TokenSinkResult::RawData(_) => self.script_data(),
            TokenSinkResult::Plaintext => {
                let len = self.bytes.len();
                self.text_run(len, Nul::Replace, false);
            }
            _ => {}
        }
        true
    }

    /// The rest of a tag from `pos` (after its name): each attribute to `each`, then whether
    /// the tag is self-closing; `None` at end of input inside the tag.
    fn attributes(&mut self, mut each: impl FnMut(&Self, TagAttr<'s>)) -> Option<bool> {
        loop {
            self.pos = skip_spaces(self.bytes, self.pos);
            match self.bytes.get(self.pos).copied() {
                None => return None,
                Some(b'>') => {
                    self.pos += 1;
                    return Some(false);
                }
                Some(b'/') => {
                    self.pos += 1;
                    if self.bytes.get(self.pos) == Some(&b'>') {
                        self.pos += 1;
                        return Some(true);
                    }
                }
                Some(_) => {
                    let Some(attr) = self.attribute() else {
                        self.pos = self.bytes.len();
                        return None;
                    };
                    each(self, attr);
                }
            }
        }
    }

    /// One attribute at `pos` (not a space, `/` or `>`); `None` at end of input.
    fn attribute(&mut self) -> Option<TagAttr<'s>> {
        let len = self.bytes.len();
        let start = self.pos;
        // A leading `=` belongs to the name.
        let i = run_end(self.bytes, start + 1, SPACE | SLASH | GT | EQ);
        let name = self.names.get(self.src, start, i);
        self.pos = skip_spaces(self.bytes, i);
        let value = if self.bytes.get(self.pos) == Some(&b'=') {
            self.pos = skip_spaces(self.bytes, self.pos + 1);
            match self.bytes.get(self.pos).copied() {
                None => return None,
                Some(q @ (b'"' | b'\'')) => {
                    // One search finds the closing quote of most values and shows them free of
                    // references and NULs, so that they need no second look.
                    let from = self.pos + 1;
                    let first = from + memchr::memchr3(q, b'&', 0, &self.bytes[from..])?;
                    let (end, value) = if self.bytes[first] == q {
                        (first, Cow::Borrowed(&self.src[from..first]))
                    } else {
                        let end = first + memchr::memchr(q, &self.bytes[first..])?;
                        (end, self.value(from, end))
                    };
                    self.pos = end + 1;
                    value
                }
                Some(b'>') => Cow::Borrowed(""),
                Some(_) => {
                    let from = self.pos;
                    let end = run_end(self.bytes, from, SPACE | GT);
                    if end == len {
                        return None;
                    }
                    let value = self.value(from, end);
                    self.pos = end;
                    value
                }
            }
        } else {
            Cow::Borrowed("")
        };
        Some(TagAttr { name, value })
    }

    /// An attribute value: references decoded (attribute rules), NULs replaced.
    fn value(&mut self, start: usize, end: usize) -> Cow<'s, str> {
        let raw = &self.bytes[start..end];
        if memchr::memchr2(b'&', 0, raw).is_none() {
            return Cow::Borrowed(&self.src[start..end]);
        }
        let mut out = String::with_capacity(end - start);
        let mut i = start;
        while i < end {
            match memchr::memchr2(b'&', 0, &self.bytes[i..end]) {
                None => {
                    out.push_str(&self.src[i..end]);
                    break;
                }
                Some(k) => {
                    out.push_str(&self.src[i..i + k]);
                    i += k;
                    if self.bytes[i] == 0 {
                        out.push('\u{fffd}');
                        i += 1;
                        continue;
                    }
                    let (chars, used) = char_ref(self.src, end, i, RefIn::Attribute);
                    if used == 0 {
                        out.push('&');
                        i += 1;
                    } else {
                        out.extend(chars.into_iter().flatten());
                        i += used;
                    }
                }
            }
        }
        Cow::Owned(out)
    }

    /// Where the appropriate end tag `</name` (followed by a space, `/` or `>`) starts, at or
    /// after `from`.
    fn find_end_tag(&self, from: usize, name: &str) -> Option<usize> {
        let name = name.as_bytes();
        let mut at = from;
        while let Some(i) = memchr::memmem::find(&self.bytes[at..], b"</") {
            let lt = at + i;
            let after = lt + 2 + name.len();
            if starts_ci(self.bytes, lt + 2, name)
                && self.bytes.get(after).is_some_and(|&b| is_space(b) || b == b'/' || b == b'>')
            {
                return Some(lt);
            }
            at = lt + 2;
        }
        None
    }

    /// RCDATA (`refs`: `<title>`, `<textarea>`) or RAWTEXT (`<style>`, `<xmp>`, …) up to the
    /// element's end tag.
    fn raw_text(&mut self, name: &LocalName, refs: bool) {
        let end = self.find_end_tag(self.pos, name).unwrap_or(self.bytes.len());
        self.text_run(end, Nul::Replace, refs);
        if end < self.bytes.len() {
            self.tag(TagKind::EndTag, end + 2);
        }
    }

    /// Script data up to `</script>`, following the escaped (`<!--`) and double-escaped
    /// (`<!-- <script>`) states in which a `</script>` does not end the script.
    fn script_data(&mut self) {
        let end = script_end(self.bytes, self.pos).unwrap_or(self.bytes.len());
        self.text_run(end, Nul::Replace, false);
        if end < self.bytes.len() {
            self.tag(TagKind::EndTag, end + 2);
        }
    }

    /// A DOCTYPE whose content starts at `start` (after `<!DOCTYPE`).
    fn doctype(&mut self, start: usize) {
        let (doctype, next) = parse_doctype(self.src, start);
        self.pos = next;
        let _ = self.emit(Token::DoctypeToken(doctype));
    }
}

/// Where the `</script` that ends script data starting at `from` is, if any.
fn script_end(bytes: &[u8], from: usize) -> Option<usize> {
    #[derive(PartialEq)]
    enum State {
        Plain,
        Escaped,
        Double,
    }
    let delimited = |at: usize| bytes.get(at).is_some_and(|&b| is_space(b) || b == b'/' || b == b'>');
    let mut state = State::Plain;
    let mut at = from;
    loop {
        let i = match state {
            State::Plain => at + memchr::memchr(b'<', &bytes[at..])?,
            _ => at + memchr::memchr2(b'<', b'-', &bytes[at..])?,
        };
        match (&state, bytes[i]) {
            (State::Plain | State::Escaped, b'<') if starts_ci(bytes, i + 1, b"/script") && delimited(i + 8) => {
                return Some(i)
            }
            (State::Plain, _) if bytes[i + 1..].starts_with(b"!--") => {
                state = State::Escaped;
                // `<!-->` and `<!--->` leave the escape at once: the dashes count for `-->`.
                at = i + 2;
                continue;
            }
            (State::Escaped, b'<') if starts_ci(bytes, i + 1, b"script") && delimited(i + 7) => {
                state = State::Double;
                at = i + 7;
                continue;
            }
            (State::Double, b'<') if starts_ci(bytes, i + 1, b"/script") && delimited(i + 8) => {
                state = State::Escaped;
                at = i + 8;
                continue;
            }
            (State::Escaped | State::Double, b'-') if bytes[i..].starts_with(b"-->") => {
                state = State::Plain;
                at = i + 3;
                continue;
            }
            _ => {}
        }
        at = i + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build, parse, NodeKind, Tree, MAX_DEPTH};
    use proptest::prelude::*;

    #[test]
    fn remembered_names_are_the_names_interned() {
        let mut names = super::Names::new();
        let mut written: Vec<String> = [
            "div", "DIV", "Div", "a", "class", "data-x\0y", "fifteen-bytes-x", "sixteen-bytes-xy",
            "data-Long-NAME\0-x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // More names than slots, so that slots are taken over and asked again (long ones too).
        written.extend((0..600).map(|i| format!("n{i}")));
        written.extend((0..200).map(|i| format!("data-long-name-{i}")));
        for round in 0..3 {
            for raw in &written {
                let expected = super::LocalName::from(&*super::names::lower_name(raw));
                // Alone (the key is copied) and inside longer input (the key is loaded and
                // masked), with different bytes after it each time.
                assert_eq!(names.get(raw, 0, raw.len()), expected, "{raw:?} in round {round}");
                let padded = format!("<{raw} x=\"{}\">", "y".repeat(round * 7));
                assert_eq!(names.get(&padded, 1, 1 + raw.len()), expected, "{padded:?} in round {round}");
            }
        }
    }

    /// One line per node: depth, kind, name, attributes in order, text.
    fn dump(tree: &Tree) -> String {
        let mut out = String::new();
        for i in 0..tree.len() {
            let Some(id) = tree.node_at(i) else { continue };
            let mut depth = 0;
            let mut up = tree.parent(id);
            while let Some(p) = up {
                depth += 1;
                up = tree.parent(p);
            }
            let line = match tree.kind(id) {
                NodeKind::Document => "#document".to_string(),
                NodeKind::Doctype(span) => format!("<!DOCTYPE {}>", tree.str(*span)),
                NodeKind::Element(e) => {
                    let attrs: Vec<String> = tree.attrs(id).map(|(n, v)| format!("{n}={v:?}")).collect();
                    format!("<{:?}:{} {}>", e.ns, e.name, attrs.join(" "))
                }
                NodeKind::Text(span) => format!("{:?}", tree.str(*span)),
                NodeKind::Comment(span) => format!("<!--{:?}-->", tree.str(*span)),
            };
            out.push_str(&format!("{}{line}\n", "  ".repeat(depth)));
        }
        out
    }

    fn same_tree(html: &str) {
        let ours = parse::parse(html, MAX_DEPTH);
        let reference = build::parse_reference(html, MAX_DEPTH);
        assert_eq!(dump(&ours), dump(&reference), "input: {html:?}");
    }

    macro_rules! same_trees {
        ($($name:ident: $html:expr,)*) => {$(
            #[test]
            fn $name() {
                same_tree($html);
            }
        )*};
    }

    same_trees! {
        text_and_implied_elements: "hello <b>world</b>",
        implied_end_tags: "<p>a<p>b<ul><li>one<li>two</ul><table><tr><td>x<td>y</table>",
        attributes_all_forms: "<div id=a class='b c' data-x=\"1\" hidden checked=checked =odd x=y/z>t</div>",
        duplicate_and_upper_case_attributes: "<DIV ID=a id=b Class=C>t</DIV>",
        self_closing_and_void: "<br/><img src=x.png /><p/>after<svg><circle r=1 /></svg>",
        missing_spaces_between_attributes: "<a href=\"x\"title='y'>l</a>",
        slash_inside_tag: "<a / href=x / >l</a>",
        entities_in_text: "&amp; &lt;b&gt; &copy &notit; &notin; &#65;&#x42;&#X43 &#0; &#x110000; &#128; &#xD800; &unknown; & &; &#; &#x;",
        entities_in_attributes: "<a href='?a=1&amp;b=2&copy=3&copyx &copy; &#38;' title=&quot;x&quot;>l</a>",
        comments: "<!----><!--x--><!-->a<!--->b<!--c--!>d<!--e---><!--f-- g-->h<!--unterminated",
        bogus_comments: "<?xml version='1.0'?><!x y><!-x></ x><x></>z",
        lone_less_than: "a < b <3 <= c <",
        doctype_html5: "<!DOCTYPE html><p>x",
        doctype_legacy: "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\" \"http://www.w3.org/TR/html4/loose.dtd\"><table><p>x</table>",
        doctype_quirks: "<!DOCTYPE html PUBLIC \"-//W3O//DTD W3 HTML Strict 3.0//EN//\"><table><p>x</table>",
        doctype_missing_name: "<!DOCTYPE><table><p>x</table>",
        doctype_system_garbage: "<!DOCTYPE html SYSTEM \"about:legacy-compat\" junk><table><p>x</table>",
        doctype_bad_keyword: "<!doctype html bogus><table><p>x</table>",
        doctype_abrupt: "<!DOCTYPE html PUBLIC \"abc><p>x",
        raw_text_elements: "<style>a < b { x: '</p>' }</style><title>a &amp; <b> </title><textarea>x &lt; <p></textarea><xmp><b></xmp>",
        raw_text_end_tag_case_and_attrs: "<title>t</TITLE foo=bar><style>s</styles></style >x",
        noscript_and_iframe: "<noscript><p>a</p></noscript><iframe><b>x</b></iframe><noembed><i>y</i></noembed>",
        script_plain: "<script>if (a < b) document.write('</p>')</script>after",
        script_escaped: "<script><!-- x </script> y",
        script_double_escaped: "<script><!-- <script> </script> still --> </script>after",
        script_escape_closes_at_once: "<script><!--></script>a<script><!---></script>b",
        script_unterminated: "<script>never ends <!-- <script>",
        plaintext: "<plaintext><b>all & text</b>",
        nul_bytes: "a\0b<p\0x a\0=\"v\0\">c\0</p><!--\0--><title>\0</title>",
        carriage_returns: "a\r\nb\rc<p title='x\r\ny'>d</p>",
        byte_order_mark: "\u{feff}<p>x",
        svg_and_cdata: "<svg><![CDATA[a<b]]><foreignObject><p>x</p></foreignObject></svg><![CDATA[y]]>",
        math: "<math><mi>x</mi><annotation-xml encoding='text/html'><p>y</p></annotation-xml></math>",
        eof_inside_tag: "<p>text<a href='x",
        eof_inside_unquoted_value: "<p>text<a href=x",
        eof_inside_quoted_value_with_reference: "<p>text<a title='a &amp; b",
        quoted_values_with_and_without_references: "<a title='x &amp; y' href=\"a&b=c\" data-x='&' lang='en' class=\"\0\">t</a>",
        eof_after_lt_slash: "text</",
        template: "<template><tr><td>x</td></tr></template><p>y",
        misnested_formatting: "<b>1<i>2</b>3</i><p><b>x<p>y</b>",
        table_foster_parenting: "<table>text<tr><td>a</td></tr>more</table>",
        head_elements: "<meta charset=utf-8><title>T</title><link rel=x><p>body",
        uncommon_names: "<my-element data-ünï=ö>x</my-element><a:b c:d=e>y</a:b>",
    }

    #[test]
    fn deep_pages_stop_at_the_limit_like_the_reference() {
        let html = "<div>".repeat(400);
        let ours = parse::parse(&html, MAX_DEPTH);
        let reference = build::parse_reference(&html, MAX_DEPTH);
        assert!(ours.truncated && reference.truncated);
    }

    #[test]
    fn every_development_page_gives_the_same_tree() {
        for (path, html) in crate::dom::tests::bench_page_files() {
            let (ours, reference) = (parse::parse(&html, MAX_DEPTH), build::parse_reference(&html, MAX_DEPTH));
            assert!(dump(&ours) == dump(&reference), "{} parses differently", path.display());
        }
    }

    /// Markup-ish strings: tags, attributes, references, comments and raw text in any order.
    fn markup() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-z &;#<>/=\"'!?\\-x0-9\\r\\n\0]{0,12}",
            Just("<p>".to_string()),
            Just("</p>".to_string()),
            Just("<td>".to_string()),
            Just("<table>".to_string()),
            Just("<script>".to_string()),
            Just("</script>".to_string()),
            Just("<!--".to_string()),
            Just("-->".to_string()),
            Just("<title>".to_string()),
            Just("</title>".to_string()),
            Just("<style>".to_string()),
            Just("<svg>".to_string()),
            Just("<![CDATA[".to_string()),
            Just("]]>".to_string()),
            Just("&amp".to_string()),
            Just("&notin;".to_string()),
            Just("<a href=".to_string()),
            Just("<!DOCTYPE html".to_string()),
            Just("<b>".to_string()),
            Just("</b>".to_string()),
        ];
        prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn random_markup_gives_the_same_tree(html in markup()) {
            let ours = parse::parse(&html, MAX_DEPTH);
            let reference = build::parse_reference(&html, MAX_DEPTH);
            prop_assert_eq!(dump(&ours), dump(&reference), "input: {:?}", html);
        }
    }
}
