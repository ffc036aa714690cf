//! Content that only scripts would show: an article held in `<noscript>` or in JSON-LD's
//! `articleBody`, while the visible page holds next to nothing (a tagline, a "loading…" shell).
//! A template script (`<script type="text/template">` and its kin) is never content: it is
//! markup with holes (`<# if ( data.x ) { #>`, `{{name}}`) that scripts fill, read aloud it is
//! code, and a page that shows it shows it filled in elsewhere.
//!
//! Reading mode sees the page as a browser without scripts would, with `<noscript>` hidden as
//! a browser with scripts hides it: such a page yields a few words. This module finds the
//! hidden copies; reading mode extracts from the largest one when it holds far more than what
//! the extractor kept of the visible page ([`is_far_more`]). The decision and the extraction
//! are the pipeline's; this module only finds and measures.
//!
//! Finding is gated and two-step, so that pages that need none of this pay next to nothing: a
//! visible result of an article's worth is never compared ([`MAX_VISIBLE`]); otherwise
//! [`largest_bytes`] is one case-insensitive search over the page's bytes, an upper bound on
//! what any hidden copy can hold, and only when that bound could beat the visible result does
//! [`find`] parse the page and read the copies as the tree builder sees them (raw text of
//! `<noscript>` and `<script>`, so `<noscript>` in a comment or a script string is not one).
//!
//! What each source gives:
//! - `<noscript>` holds HTML: a page (or a fragment) that is extracted as the visible page
//!   is, so its menus and footers go too.
//! - JSON-LD `articleBody` is the publisher's statement of the article: plain text (its line
//!   breaks become paragraphs) or, from some publishing systems, HTML. It is the article as it
//!   stands and is not extracted again.

use std::fmt;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use crate::dom::Tree;

/// A hidden copy must hold at least this many times the visible result's characters of non-link
/// text to replace it: a page that repeats its visible article in `<noscript>` (for crawlers)
/// keeps the visible one, while a post that is only in a template, beside a tagline, is taken.
pub const MIN_RATIO: u32 = 3;

/// Where a page's hidden copy was found; shown in the proxy's `x-pith` header as
/// `source=<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenSource {
    /// JSON-LD's `articleBody`.
    JsonLd,
    /// A `<noscript>` element.
    Noscript,
}

impl HiddenSource {
    /// True when the copy is the article itself, to be shown whole rather than extracted from.
    pub fn is_article(self) -> bool {
        self == HiddenSource::JsonLd
    }
}

impl fmt::Display for HiddenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HiddenSource::JsonLd => "json-ld",
            HiddenSource::Noscript => "noscript",
        })
    }
}

/// One hidden copy of (part of) a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// Where it was found.
    pub source: HiddenSource,
    /// The copy as HTML (plain text from JSON-LD is made paragraphs, escaped).
    pub html: String,
}

/// Whether a hidden copy whose extraction kept `hidden` characters of non-link text should
/// replace a visible result that kept `visible`: at least [`MIN_RATIO`] times as much, and at
/// least `min_content` (what reading mode asks of any main content).
pub fn is_far_more(hidden: u32, visible: u32, min_content: u32) -> bool {
    hidden >= min_content && hidden >= visible.saturating_mul(MIN_RATIO)
}

/// A visible result with this many characters of non-link text or more is an article's worth
/// (some 250 words) and is not compared with hidden copies: what this module is for is a page
/// that shows a tagline or a shell, and the search over the page's bytes costs about a tenth of
/// the reading path on a large page, too much to pay on every article.
pub const MAX_VISIBLE: u32 = 1500;

/// The least number of bytes a hidden copy needs to possibly replace a visible result that kept
/// `visible` characters (bytes are never fewer than the characters they spell, and markup only
/// adds to them); `None` when the visible result is not compared at all ([`MAX_VISIBLE`]).
pub fn bytes_needed(visible: u32, min_content: u32) -> Option<usize> {
    (visible < MAX_VISIBLE).then(|| visible.saturating_mul(MIN_RATIO).max(min_content) as usize)
}

/// An upper bound on the size of the largest hidden copy in `page`, in bytes, from one search
/// over its bytes: the content of each `<noscript>`, and the value of each
/// `"articleBody"`. 0 on a page without any.
pub fn largest_bytes(page: &str) -> usize {
    static OPENINGS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(["<noscript", "\"articleBody\""])
            .expect("two literal patterns always build")
    });
    let bytes = page.as_bytes();
    let mut largest = 0;
    for found in OPENINGS.find_iter(bytes) {
        let rest = &bytes[found.end()..];
        let size = match found.pattern().as_usize() {
            0 => element_content(rest, b"</noscript"),
            _ => json_string_bytes(rest),
        };
        largest = largest.max(size);
    }
    largest
}

/// The hidden copies of `page` that hold at least `min_bytes` bytes, largest first. Parses the
/// page, so callers check [`largest_bytes`] first.
pub fn find(page: &str, min_bytes: usize) -> Vec<Hidden> {
    let tree = Tree::parse(page);
    let mut found = Vec::new();
    for id in tree.descendants(tree.root()) {
        let source = match tree.tag(id) {
            Some("noscript") => HiddenSource::Noscript,
            Some("script") => match tree.attr(id, "type").map(|t| t.trim().to_ascii_lowercase()) {
                Some(t) if t == "application/ld+json" => HiddenSource::JsonLd,
                _ => continue,
            },
            _ => continue,
        };
        let text: String = tree.children(id).filter_map(|c| tree.text(c)).collect();
        let html = match source {
            HiddenSource::JsonLd => match longest_article_body(&text) {
                Some(body) => article_html(&body),
                None => continue,
            },
            _ => text,
        };
        if html.len() >= min_bytes && !html.trim().is_empty() {
            found.push(Hidden { source, html });
        }
    }
    found.sort_by_key(|h| std::cmp::Reverse(h.html.len()));
    found
}

/// The longest `"articleBody"` string value in a JSON-LD block (a block may describe several
/// works, in `@graph` or nested).
fn longest_article_body(json: &str) -> Option<String> {
    let needle = "\"articleBody\"";
    let mut longest: Option<String> = None;
    let mut from = 0;
    while let Some(at) = json[from..].find(needle) {
        from += at + needle.len();
        let rest = json[from..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else { continue };
        let Some(value) = json_string(rest.trim_start()) else { continue };
        if longest.as_ref().is_none_or(|l| value.len() > l.len()) {
            longest = Some(value);
        }
    }
    longest
}

/// An `articleBody` as HTML: kept as it is when it is HTML already (some publishing systems put
/// the body's markup there), else each line a paragraph, escaped.
fn article_html(body: &str) -> String {
    let lower = body.to_ascii_lowercase();
    if lower.contains("</p>") || lower.contains("<br") {
        return body.to_string();
    }
    let mut html = String::with_capacity(body.len() + 64);
    for line in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        html.push_str("<p>");
        for c in line.chars() {
            match c {
                '&' => html.push_str("&amp;"),
                '<' => html.push_str("&lt;"),
                '>' => html.push_str("&gt;"),
                c => html.push(c),
            }
        }
        html.push_str("</p>");
    }
    html
}

/// Decodes the JSON string at the start of `text` (escapes resolved, line breaks kept); `None`
/// when `text` does not start with a whole string.
fn json_string(text: &str) -> Option<String> {
    let body = text.strip_prefix('"')?;
    let mut out = String::with_capacity(body.len().min(64 * 1024));
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                'r' => {}
                't' => out.push(' '),
                'b' | 'f' => {}
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16).ok()?;
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// Bytes from after an opening tag's name to its end tag `end` (case-insensitive), or to the
/// end of the page when it never ends.
fn element_content(rest: &[u8], end: &[u8]) -> usize {
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&rest[from..], b"</") {
        let at = from + at;
        if rest.get(at..at + end.len()).is_some_and(|n| n.eq_ignore_ascii_case(end)) {
            return at;
        }
        from = at + 2;
    }
    rest.len()
}

/// Bytes of the JSON string value after a key (`: "…"`), escapes counted as written; 0 when no
/// string follows.
fn json_string_bytes(rest: &[u8]) -> usize {
    let start = rest.iter().position(|&b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b':'));
    let Some(start) = start.filter(|&s| rest[s] == b'"') else { return 0 };
    let mut escaped = false;
    for (i, &b) in rest[start + 1..].iter().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => return i,
            _ => {}
        }
    }
    rest.len() - start - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    const POST: &str = "The whole post is here, in several sentences of prose that nobody sees without scripts.";

    #[test]
    fn noscript_content_is_found_as_html() {
        let page = format!("<body><p>Tagline</p><noscript><div class=post><p>{POST}</p></div></noscript><noscript><img src=px></noscript></body>");
        assert!(largest_bytes(&page) >= POST.len());
        let found = find(&page, 20);
        assert_eq!(found, [Hidden { source: HiddenSource::Noscript, html: format!("<div class=post><p>{POST}</p></div>") }], "the pixel is too small");
    }

    #[test]
    fn template_scripts_are_never_content() {
        for t in ["text/template", "TEXT/X-Template", "text/html", "text/x-handlebars-template"] {
            let page = format!("<body><script type='{t}'><# if ( data.post ) {{ #><article><p>{POST}</p></article><# }} #></script></body>");
            assert_eq!(largest_bytes(&page), 0, "{t}");
            assert!(find(&page, 20).is_empty(), "{t}");
        }
    }

    #[test]
    fn json_ld_article_body_becomes_paragraphs() {
        let page = concat!(
            "<head><script type=\"application/ld+json\">{\"@graph\":[{\"@type\":\"NewsArticle\",\"articleBody\":",
            "\"First paragraph, \\\"quoted\\\" & <b>safe</b>.\\r\\nSecond \\u00e9t\\u00e9 paragraph.\\n\\n\"},",
            "{\"articleBody\": \"short\"}]}</script></head><body><p>Tagline</p></body>"
        );
        assert!(largest_bytes(page) > 40);
        let found = find(page, 20);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].source.is_article());
        assert_eq!(found[0].html, "<p>First paragraph, \"quoted\" &amp; &lt;b&gt;safe&lt;/b&gt;.</p><p>Second été paragraph.</p>");
    }

    #[test]
    fn json_ld_article_body_in_html_stays_html() {
        let page = "<script type=application/ld+json>{\"articleBody\":\"<p>One paragraph.</p><p>Two.</p>\"}</script>";
        assert_eq!(find(page, 10)[0].html, "<p>One paragraph.</p><p>Two.</p>");
    }

    #[test]
    fn copies_in_comments_or_code_are_not_copies() {
        let page = format!("<!-- <noscript><p>{POST}</p></noscript> --><script>document.write('<noscript><p>{POST}</p></noscript>')</script><p>x</p>");
        assert!(find(&page, 10).is_empty());
    }

    #[test]
    fn pages_without_hidden_copies_measure_zero() {
        assert_eq!(largest_bytes("<p>Just a page with <script src=a.js></script> code.</p>"), 0);
        assert_eq!(largest_bytes(""), 0);
        // Cut short: the bound runs to the end of the page.
        assert_eq!(largest_bytes("<noscript>abc"), 4);
        assert_eq!(largest_bytes("{\"articleBody\" : \"a\\\"b\""), 4);
    }

    #[test]
    fn far_more_means_three_times_and_enough() {
        assert!(is_far_more(900, 300, 250));
        assert!(!is_far_more(899, 300, 250));
        assert!(!is_far_more(200, 0, 250), "too little to be an article");
        assert_eq!(bytes_needed(0, 250), Some(250));
        assert_eq!(bytes_needed(1000, 250), Some(3000));
        assert_eq!(bytes_needed(MAX_VISIBLE, 250), None, "an article's worth is not compared");
    }
}
