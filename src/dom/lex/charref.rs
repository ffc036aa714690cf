//! Character references (`&amp;`, `&#x41;`, `&fjlig;`) as the tokenizer decodes them in text
//! and in attribute values, with their historical rules: the one decoder pith has.

use markup5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};

/// How `&` is read: in text, or in an attribute value (where `&amp=` and `&ampx` stay as
/// written, for historical reasons).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum RefIn {
    Text,
    Attribute,
}

/// Decodes the character reference at the start of `value` (an `&`) as the tokenizer does
/// inside an attribute value: up to two characters and the bytes used, 0 when it is not a
/// reference (the `&` is then text). The one decoder pith has: stage 1 reads URL schemes
/// through it, so it sees an attribute exactly as the tree and the browser do.
pub(crate) fn attribute_char_ref(value: &str) -> ([Option<char>; 2], usize) {
    char_ref(value, value.len(), 0, RefIn::Attribute)
}

/// Decodes the character reference at `src[at]` (an `&`) that ends before `end` at the
/// latest: up to two characters and the bytes used, 0 when it is not a reference (the `&` is
/// then text).
pub(super) fn char_ref(src: &str, end: usize, at: usize, mode: RefIn) -> ([Option<char>; 2], usize) {
    const NONE: ([Option<char>; 2], usize) = ([None, None], 0);
    let bytes = src.as_bytes().get(..end).unwrap_or_default();
    match bytes.get(at + 1).copied() {
        None | Some(b'\t' | b'\n' | b'\x0c' | b' ' | b'<' | b'&') => NONE,
        Some(b'#') => numeric_ref(bytes, at),
        Some(_) => named_ref(src, bytes, at, mode),
    }
}

fn numeric_ref(bytes: &[u8], at: usize) -> ([Option<char>; 2], usize) {
    let hex = matches!(bytes.get(at + 2), Some(b'x' | b'X'));
    let digits = if hex { at + 3 } else { at + 2 };
    let mut i = digits;
    let mut value: u32 = 0;
    let mut too_big = false;
    while let Some(d) = bytes.get(i).and_then(|&b| (b as char).to_digit(if hex { 16 } else { 10 })) {
        value = match value.checked_mul(if hex { 16 } else { 10 }).and_then(|v| v.checked_add(d)) {
            Some(v) => v,
            None => {
                too_big = true;
                value
            }
        };
        i += 1;
    }
    if i == digits {
        return ([None, None], 0);
    }
    if bytes.get(i) == Some(&b';') {
        i += 1;
    }
    let c = match value {
        _ if too_big => '\u{fffd}',
        n if n > 0x10ffff => '\u{fffd}',
        0 | 0xd800..=0xdfff => '\u{fffd}',
        0x80..=0x9f => C1_REPLACEMENTS[(value - 0x80) as usize].unwrap_or_else(|| char::from_u32(value).unwrap_or('\u{fffd}')),
        n => char::from_u32(n).unwrap_or('\u{fffd}'),
    };
    ([Some(c), None], i - at)
}

/// A named reference: `bytes` is `src` cut where the reference must end.
fn named_ref(src: &str, bytes: &[u8], at: usize, mode: RefIn) -> ([Option<char>; 2], usize) {
    let start = at + 1;
    let mut end = start;
    let mut found: Option<(usize, (u32, u32))> = None;
    // The table holds every prefix of every name ((0, 0) for prefixes that are not names), so
    // the longest match is found by extending one byte at a time.
    while let Some(&b) = bytes.get(end) {
        if !(b.is_ascii_alphanumeric() || b == b';') {
            break;
        }
        end += 1;
        // Names are ASCII, so the slice is cut at characters (and not checked again as UTF-8).
        let Some(key) = src.get(start..end) else { break };
        match NAMED_ENTITIES.get(key) {
            Some(&m) => {
                if m.0 != 0 {
                    found = Some((end, m));
                }
                if b == b';' {
                    break;
                }
            }
            None => break,
        }
    }
    let Some((matched_end, (c1, c2))) = found else { return ([None, None], 0) };
    let last = bytes[matched_end - 1];
    if mode == RefIn::Attribute && last != b';' {
        if let Some(&next) = bytes.get(matched_end) {
            if next == b'=' || next.is_ascii_alphanumeric() {
                return ([None, None], 0);
            }
        }
    }
    let second = if c2 == 0 { None } else { char::from_u32(c2) };
    ([char::from_u32(c1), second], matched_end - at)
}
