//! What the fuzz targets share: reading control bytes off the end of an input, cutting bytes
//! into chunks, and the text property the extractors are held to.
//!
//! The targets live in `fuzz_targets/`, one file each; this library keeps their common parts
//! small and unit-tested, so that a failing target points at pith and not at its own harness.

#![forbid(unsafe_code)]

/// Splits a fuzz input into the part a target works on and `N` control bytes taken from its end
/// (zero-padded when the input is shorter than `N`, which is then all control).
///
/// The end rather than the start, because the seeds are plain documents (a page, a config file,
/// a compressed stream) whose first bytes matter most (a byte-order mark, a doctype, a magic
/// number) while their last few rarely do; a seed stays a readable file.
pub fn split_control<const N: usize>(data: &[u8]) -> (&[u8], [u8; N]) {
    let at = data.len().saturating_sub(N);
    let (body, tail) = data.split_at(at);
    let mut control = [0u8; N];
    control[..tail.len()].copy_from_slice(tail);
    (body, control)
}

/// Cut positions in `0..=len`, one per control byte scaled to the length, in ascending order.
/// Equal positions (empty chunks) are kept: a streaming API must cope with an empty write.
pub fn cuts(len: usize, control: &[u8]) -> Vec<usize> {
    let mut cuts: Vec<usize> = control
        .iter()
        .map(|&b| len * usize::from(b) / 255)
        .collect();
    cuts.sort_unstable();
    cuts
}

/// `data` cut at `cuts` (ascending; positions past the end are clamped): one more chunk than
/// cuts, concatenating back to `data`.
pub fn chunks<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &cut in cuts {
        let cut = cut.clamp(start, data.len());
        out.push(&data[start..cut]);
        start = cut;
    }
    out.push(&data[start..]);
    out
}

/// Checks that `kept` is what is left of `whole` after pieces of it were removed and the rest
/// re-spaced: its non-whitespace characters occur in `whole`, in the same order. Returns the
/// 1-based number of the first line of `kept` that breaks this.
///
/// Why this and not "every line of `kept` is a line of `whole`": taking an inline element out
/// of a paragraph (`a <span>ad</span> b`) joins the text around it, and whitespace collapses
/// differently once neighbours are gone; neither alters a character that was kept.
pub fn kept_text_violation(kept: &str, whole: &str) -> Option<usize> {
    let mut hay = whole.chars().filter(|c| !c.is_whitespace());
    for (number, line) in kept.lines().enumerate() {
        let found = line
            .chars()
            .filter(|c| !c.is_whitespace())
            .all(|c| hay.any(|h| h == c));
        if !found {
            return Some(number + 1);
        }
    }
    None
}

/// Where two strings first differ, with some context from each: a readable panic message for
/// long pages that differ in one place.
pub fn difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let window = |s: &str| {
        let mut start = at.saturating_sub(300);
        while !s.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 300).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        format!("{:?}", &s[start..end])
    };
    format!(
        "first difference at byte {at} (lengths {} and {}):\n  {}\n  {}",
        a.len(),
        b.len(),
        window(a),
        window(b)
    )
}

/// ASCII case-insensitive substring test, for skipping inputs a property does not cover.
pub fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty()
        || haystack
            .windows(needle.len())
            .any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_come_off_the_end() {
        assert_eq!(split_control::<2>(b"abcd"), (&b"ab"[..], *b"cd"));
        assert_eq!(split_control::<4>(b"ab"), (&b""[..], [b'a', b'b', 0, 0]));
    }

    #[test]
    fn cuts_scale_and_sort() {
        assert_eq!(cuts(100, &[255, 0, 51]), vec![0, 20, 100]);
        assert_eq!(cuts(0, &[7, 9]), vec![0, 0]);
    }

    #[test]
    fn chunks_concatenate_back() {
        let data = b"hello world";
        let parts = chunks(data, &[0, 5, 5, 20]);
        assert_eq!(parts, vec![&b""[..], b"hello", b"", b" world", b""]);
        assert_eq!(parts.concat(), data);
    }

    macro_rules! kept {
        ($($name:ident: $kept:expr, $whole:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(kept_text_violation($kept, $whole), $want);
            }
        )*};
    }

    kept! {
        kept_identical: "a b\nc\n", "a b\nc\n" => None;
        kept_removed_inline_joins: "foo bar\n", "foo ad bar\n" => None;
        kept_respaced: "x\ty\n", "x y\n" => None;
        kept_altered_char: "one\ntwo\n", "one\ntwx\n" => Some(2);
        kept_reordered: "b\na\n", "a\nb\n" => Some(2);
        kept_added_text: "note\n", "" => Some(1);
    }

    #[test]
    fn difference_points_at_the_first_change() {
        let report = difference("<p>same</p><b>x</b>", "<p>same</p><i>x</i>");
        assert!(report.starts_with("first difference at byte 12 (lengths 19 and 19)"), "{report}");
        assert!(difference("ab", "abc").starts_with("first difference at byte 2"));
        assert!(difference("é", "è").contains("byte 0"));
    }

    #[test]
    fn case_insensitive_search() {
        assert!(contains_ignore_case(b"<META charset>", b"meta"));
        assert!(!contains_ignore_case(b"<met", b"meta"));
    }
}
