//! Byte ranges answered from a complete kept response (RFC 9110 §14).
//!
//! A client resuming a download or a media player seeking asks for a part of a response. When
//! the whole response is kept and fresh, the part is cut from it instead of asking the origin,
//! which on a shared slow link is the point of the cache. What is honoured: one range of the
//! `bytes` unit (`a-b`, `a-`, `-n`), with `If-Range` compared strongly (an ETag that is not
//! weak and equal, or the exact `Last-Modified` date). Anything else (several ranges, another
//! unit, a range that does not parse, an `If-Range` that does not match) is ignored and the
//! whole response is served, which §14.2 allows; a single range that starts past the end is
//! unsatisfiable (416).

use http::header::{self, HeaderMap, HeaderValue};

/// What a request's `Range` asks of a kept response of `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The whole response: no `Range`, or one that is ignored.
    Whole,
    /// A part (a 206).
    Bytes {
        /// The first byte's offset.
        first: u64,
        /// The last byte's offset, within the body.
        last: u64,
    },
    /// A range that starts at or past the end (a 416).
    Unsatisfiable,
}

/// The part of a kept response of `len` bytes with `validators` (its `ETag` and
/// `Last-Modified` as served) that `request` asks for.
pub fn part(request: &HeaderMap, len: u64, etag: Option<&HeaderValue>, last_modified: Option<&HeaderValue>) -> Part {
    let Some(range) = request.get(header::RANGE) else { return Part::Whole };
    if let Some(if_range) = request.get(header::IF_RANGE) {
        if !if_range_matches(if_range, etag, last_modified) {
            return Part::Whole;
        }
    }
    let Some(spec) = range.to_str().ok().and_then(|r| strip_unit(r.trim())) else { return Part::Whole };
    if spec.contains(',') {
        return Part::Whole;
    }
    let Some((first, last)) = spec.split_once('-') else { return Part::Whole };
    let (first, last) = (first.trim(), last.trim());
    match (digits(first), digits(last)) {
        // `-n`: the last n bytes.
        (None, Some(n)) if first.is_empty() => {
            if n == 0 || len == 0 {
                return Part::Unsatisfiable;
            }
            Part::Bytes { first: len.saturating_sub(n), last: len - 1 }
        }
        (Some(a), None) if last.is_empty() => from(a, len.saturating_sub(1), len),
        (Some(a), Some(b)) if a <= b => from(a, b.min(len.saturating_sub(1)), len),
        _ => Part::Whole,
    }
}

fn from(first: u64, last: u64, len: u64) -> Part {
    if first >= len {
        Part::Unsatisfiable
    } else {
        Part::Bytes { first, last }
    }
}

/// The range set after `bytes=`, the unit in any case.
fn strip_unit(range: &str) -> Option<&str> {
    let (unit, spec) = range.split_once('=')?;
    unit.trim().eq_ignore_ascii_case("bytes").then_some(spec)
}

/// A run of ASCII digits as a number; `None` for anything else (signs, spaces inside, overflow).
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `If-Range` by strong comparison (RFC 9110 §13.1.5): a strong ETag equal to the kept one,
/// or a date equal to its `Last-Modified`. A weak ETag never matches.
fn if_range_matches(if_range: &HeaderValue, etag: Option<&HeaderValue>, last_modified: Option<&HeaderValue>) -> bool {
    let given = if_range.as_bytes();
    if given.starts_with(b"\"") {
        return etag.is_some_and(|e| e.as_bytes() == given);
    }
    if given.starts_with(b"W/") {
        return false;
    }
    last_modified.is_some_and(|lm| lm.as_bytes() == given)
}

/// The `Content-Range` of a part of `len` bytes, or of an unsatisfiable range.
pub fn content_range(part: Part, len: u64) -> HeaderValue {
    let text = match part {
        Part::Bytes { first, last } => format!("bytes {first}-{last}/{len}"),
        Part::Whole | Part::Unsatisfiable => format!("bytes */{len}"),
    };
    HeaderValue::from_str(&text).expect("digits and ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(n, v)| (n.parse().unwrap(), HeaderValue::from_str(v).unwrap())).collect()
    }

    const ETAG: &str = "\"v1\"";
    const LM: &str = "Tue, 01 Sep 2026 10:00:00 GMT";

    fn part_of(pairs: &[(&str, &str)], len: u64) -> Part {
        part(&ask(pairs), len, Some(&HeaderValue::from_static(ETAG)), Some(&HeaderValue::from_static(LM)))
    }

    macro_rules! ranges {
        ($($name:ident: $range:expr, $len:expr => $expect:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(part_of(&[("range", $range)], $len), $expect);
            }
        )*};
    }

    ranges! {
        first_bytes: "bytes=0-9", 100 => Part::Bytes { first: 0, last: 9 };
        middle: "bytes=10-19", 100 => Part::Bytes { first: 10, last: 19 };
        open_end: "bytes=90-", 100 => Part::Bytes { first: 90, last: 99 };
        suffix: "bytes=-5", 100 => Part::Bytes { first: 95, last: 99 };
        suffix_longer_than_body: "bytes=-500", 100 => Part::Bytes { first: 0, last: 99 };
        last_past_end_is_clipped: "bytes=50-1000", 100 => Part::Bytes { first: 50, last: 99 };
        unit_in_any_case: "Bytes=0-0", 100 => Part::Bytes { first: 0, last: 0 };
        spaces_around: "bytes= 1 - 2 ", 100 => Part::Bytes { first: 1, last: 2 };
        first_past_end: "bytes=100-", 100 => Part::Unsatisfiable;
        first_past_end_closed: "bytes=200-300", 100 => Part::Unsatisfiable;
        zero_suffix: "bytes=-0", 100 => Part::Unsatisfiable;
        empty_body: "bytes=0-", 0 => Part::Unsatisfiable;
        several_ranges_served_whole: "bytes=0-1,5-6", 100 => Part::Whole;
        other_unit: "items=0-1", 100 => Part::Whole;
        reversed: "bytes=9-1", 100 => Part::Whole;
        signs: "bytes=+1-2", 100 => Part::Whole;
        no_dash: "bytes=12", 100 => Part::Whole;
        overflow: "bytes=99999999999999999999999-", 100 => Part::Whole;
        nothing: "bytes=-", 100 => Part::Whole;
    }

    #[test]
    fn no_range_is_whole() {
        assert_eq!(part_of(&[], 100), Part::Whole);
    }

    #[test]
    fn if_range_compares_strongly() {
        let r = ("range", "bytes=0-9");
        let bytes = Part::Bytes { first: 0, last: 9 };
        assert_eq!(part_of(&[r, ("if-range", ETAG)], 100), bytes);
        assert_eq!(part_of(&[r, ("if-range", "\"v2\"")], 100), Part::Whole, "another representation");
        assert_eq!(part_of(&[r, ("if-range", "W/\"v1\"")], 100), Part::Whole, "weak tags never match");
        assert_eq!(part_of(&[r, ("if-range", LM)], 100), bytes);
        assert_eq!(part_of(&[r, ("if-range", "Wed, 02 Sep 2026 10:00:00 GMT")], 100), Part::Whole);
        assert_eq!(part(&ask(&[r, ("if-range", ETAG)]), 100, None, None), Part::Whole, "nothing to compare with");
    }

    #[test]
    fn content_range_values() {
        assert_eq!(content_range(Part::Bytes { first: 0, last: 9 }, 100), "bytes 0-9/100");
        assert_eq!(content_range(Part::Unsatisfiable, 100), "bytes */100");
    }
}
