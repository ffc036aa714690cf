//! The DOCTYPE token: its name, public and system identifiers and force-quirks flag, read
//! after the `<!DOCTYPE` keyword.

use html5ever::tokenizer::Doctype;
use markup5ever::tendril::StrTendril;

use super::names::lower_name;
use super::{is_space, starts_ci};

/// Parses a DOCTYPE from `src[start..]` (after the keyword); returns it and where input resumes.
pub(super) fn parse_doctype(src: &str, start: usize) -> (Doctype, usize) {
    let bytes = src.as_bytes();
    let len = bytes.len();
    let mut doctype = Doctype::default();
    let skip = |mut i: usize| {
        while i < len && is_space(bytes[i]) {
            i += 1;
        }
        i
    };
    let bogus = |i: usize| memchr::memchr(b'>', &bytes[i..]).map_or(len, |k| i + k + 1);
    let mut i = skip(start);
    match bytes.get(i) {
        None => {
            doctype.force_quirks = true;
            return (doctype, len);
        }
        Some(b'>') => {
            doctype.force_quirks = true;
            return (doctype, i + 1);
        }
        _ => {}
    }
    let name_start = i;
    while i < len && !is_space(bytes[i]) && bytes[i] != b'>' {
        i += 1;
    }
    doctype.name = Some(StrTendril::from_slice(&lower_name(&src[name_start..i])));
    i = skip(i);
    match bytes.get(i) {
        None => {
            doctype.force_quirks = true;
            return (doctype, len);
        }
        Some(b'>') => return (doctype, i + 1),
        _ => {}
    }
    let public = starts_ci(bytes, i, b"public");
    if !public && !starts_ci(bytes, i, b"system") {
        doctype.force_quirks = true;
        return (doctype, bogus(i));
    }
    i = skip(i + 6);
    let mut ids = 0;
    loop {
        match bytes.get(i).copied() {
            None => {
                doctype.force_quirks = true;
                return (doctype, len);
            }
            Some(b'>') => {
                // A keyword without its identifier is an error that forces quirks.
                if ids == 0 {
                    doctype.force_quirks = true;
                }
                return (doctype, i + 1);
            }
            Some(q @ (b'"' | b'\'')) if ids < 2 && (ids == 0 || public) => {
                let from = i + 1;
                let mut end = from;
                while end < len && bytes[end] != q && bytes[end] != b'>' {
                    end += 1;
                }
                let id = Some(StrTendril::from_slice(&src[from..end].replace('\0', "\u{fffd}")));
                if public && ids == 0 {
                    doctype.public_id = id;
                } else {
                    doctype.system_id = id;
                }
                ids += 1;
                match bytes.get(end) {
                    Some(&b) if b == q => i = skip(end + 1),
                    // `>` inside the identifier, or end of input: abrupt end.
                    Some(_) => {
                        doctype.force_quirks = true;
                        return (doctype, end + 1);
                    }
                    None => {
                        doctype.force_quirks = true;
                        return (doctype, len);
                    }
                }
            }
            Some(_) => {
                // Garbage after the system identifier is ignored; anywhere else it forces quirks.
                let after_system = if public { ids == 2 } else { ids == 1 };
                if !after_system {
                    doctype.force_quirks = true;
                }
                return (doctype, bogus(i));
            }
        }
    }
}
