//! What an element's `class` and `id` say about it: weak evidence that it is content
//! (`article-body`, `entry-content`) or clutter (`comments`, `share-bar`, `related-posts`).
//!
//! Names are split into words at every character that is not a letter or digit and at
//! lower-to-upper case changes (`articleBody` → `article`, `body`), lower-cased in a stack
//! buffer, and each word is looked up in the words of `filters/reader-names.txt` (English and
//! ten other languages; data, not code). Whole words, not substrings: a substring test takes
//! `ad` for clutter in `header`, `shadow` and `download`. Words that are clutter only as a
//! prefix (`comments`, `sharebar`) are matched by stem. No allocation, and most words are
//! turned away by one table lookup on their first letter and length: this runs on every
//! element of the page, so it was the extractor's largest cost.

use std::sync::LazyLock;

use markup5ever::local_name;

use crate::dom::{NodeId, Tree};

/// The hints of one element, as bits.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Hints(u8);

impl Hints {
    /// Names that announce content: article, body, content, entry, post, story, text, main.
    pub const POSITIVE: u8 = 1;
    /// Names that announce what surrounds content: comments, sharing, related links, ads,
    /// widgets, promotions, metadata.
    pub const NEGATIVE: u8 = 2;
    /// Names of regions that are never the article: site header and footer, menus,
    /// sidebars, comment threads, pop-ups, cookie banners, breadcrumbs, pagination.
    pub const UNLIKELY: u8 = 4;
    /// Names that may be part of an article's layout even beside an unlikely name
    /// (`main`, `article`, `content`, `column`, `body`).
    pub const MAYBE: u8 = 8;
    /// Sharing and social buttons: removed inside the content when short.
    pub const SHARE: u8 = 16;
    /// Bylines, datelines, credits, captions' credits: metadata lines the reading page shows
    /// apart (or not at all), not article text.
    pub const META: u8 = 32;
    /// Captions and image credits: the picture's, not the article's text.
    pub const CAPTION: u8 = 64;
    /// Comments and replies: on a forum's thread, the posts themselves.
    pub const THREAD: u8 = 128;

    /// Whether any of `bits` is set.
    pub fn has(self, bits: u8) -> bool {
        self.0 & bits != 0
    }

    /// The class weight of the element: +25 for a content name, −25 for a clutter name, for
    /// `class` and `id` together as one list of words (a name saying both cancels out).
    pub fn weight(self) -> i32 {
        let mut w = 0;
        if self.has(Hints::POSITIVE) {
            w += 25;
        }
        if self.has(Hints::NEGATIVE) {
            w -= 25;
        }
        w
    }

    /// Whether the element is one of the regions that are never the article.
    pub fn is_unlikely(self) -> bool {
        self.has(Hints::UNLIKELY) && !self.has(Hints::MAYBE)
    }
}

/// The hints of an element's `class` and `id` attributes.
pub fn of(tree: &Tree, id: NodeId) -> Hints {
    let mut bits = 0u8;
    for (name, value) in tree.attrs(id) {
        if *name == local_name!("class") || *name == local_name!("id") {
            for_each_word(value, |w| bits |= classify(w));
        }
    }
    Hints(bits)
}

/// The longest word looked up; longer ones are cut, which only makes them match nothing.
const MAX_WORD: usize = 24;

/// Calls `f` with each lower-cased word of a class or id list, as ASCII bytes.
fn for_each_word(value: &str, mut f: impl FnMut(&[u8])) {
    let mut buf = [0u8; MAX_WORD];
    let mut len = 0usize;
    let mut prev_lower = false;
    for &b in value.as_bytes() {
        let kind = BYTE_KIND[b as usize];
        if kind == SEPARATOR || (kind == UPPER && prev_lower) {
            if len > 0 {
                f(&buf[..len]);
                len = 0;
            }
            if kind == SEPARATOR {
                prev_lower = false;
                continue;
            }
        }
        if len < MAX_WORD {
            buf[len] = if kind == UPPER { b | 0x20 } else { b };
            len += 1;
        }
        prev_lower = kind == LOWER;
    }
    if len > 0 {
        f(&buf[..len]);
    }
}

const SEPARATOR: u8 = 0;
const LOWER: u8 = 1; // lower-case letters and digits
const UPPER: u8 = 2;

/// What each byte is to [`for_each_word`]: a table, as this loop reads every byte of every
/// class and id on the page.
const BYTE_KIND: [u8; 256] = {
    let mut t = [SEPARATOR; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = if c.is_ascii_uppercase() {
            UPPER
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            LOWER
        } else {
            SEPARATOR
        };
        b += 1;
    }
    t
};

/// The hint bits of one lower-case word ([`Names`], from `filters/reader-names.txt`).
fn classify(w: &[u8]) -> u8 {
    NAMES.classify(w)
}

/// The words of `filters/reader-names.txt`, read once.
static NAMES: LazyLock<Names> = LazyLock::new(|| Names::parse(BUILTIN_NAMES).unwrap_or_default());

/// The built-in names file.
const BUILTIN_NAMES: &str = include_str!("../../../filters/reader-names.txt");

/// Class and id words: whole words, sorted, and stems, with a filter per first letter (a bit
/// per length a word or stem could match) so most words are turned away by one lookup.
#[derive(Default, Debug)]
struct Names {
    filter: [u32; 26],
    words: Vec<(Box<[u8]>, u8)>,
    stems: Vec<(Box<[u8]>, u8)>,
}

impl Names {
    /// Parses the file's format (its header says it); the first bad line is the error.
    fn parse(text: &str) -> Result<Names, String> {
        let mut names = Names::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |what: &str| format!("reader-names line {}: {what}: {line}", n + 1);
            let (kinds, words) = line.split_once(':').ok_or_else(|| bad("no colon"))?;
            let mut bits = 0u8;
            for kind in kinds.split(',').map(str::trim) {
                bits |= match kind {
                    "clutter" => Hints::NEGATIVE,
                    "never" => Hints::UNLIKELY,
                    "meta" => Hints::META,
                    "share" => Hints::SHARE,
                    "content" => Hints::POSITIVE,
                    "maybe" => Hints::MAYBE,
                    "caption" => Hints::CAPTION,
                    "thread" => Hints::THREAD,
                    _ => return Err(bad("unknown kind")),
                };
            }
            for word in words.split_ascii_whitespace() {
                let (stem, w) = match word.strip_suffix('*') {
                    Some(w) => (true, w),
                    None => (false, word),
                };
                let w = w.as_bytes();
                let ok = !w.is_empty()
                    && w.len() < 32
                    && w[0].is_ascii_lowercase()
                    && w.iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
                if !ok {
                    return Err(bad("a word is lower-case ASCII letters and digits"));
                }
                let slot = &mut names.filter[usize::from(w[0] - b'a')];
                if stem {
                    *slot |= u32::MAX << w.len();
                    names.stems.push((w.into(), bits));
                } else {
                    *slot |= 1 << w.len();
                    names.words.push((w.into(), bits));
                }
            }
        }
        names.words.sort_unstable();
        Ok(names)
    }

    fn classify(&self, w: &[u8]) -> u8 {
        let Some(&first) = w.first() else { return 0 };
        if !first.is_ascii_lowercase() || w.len() >= 32 {
            return 0;
        }
        if self.filter[usize::from(first - b'a')] & (1 << w.len()) == 0 {
            return 0;
        }
        if let Ok(i) = self.words.binary_search_by(|(k, _)| k.as_ref().cmp(w)) {
            return self.words[i].1;
        }
        self.stems
            .iter()
            .find(|(k, _)| w.starts_with(k))
            .map_or(0, |&(_, bits)| bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(attrs: &str) -> Hints {
        let tree = Tree::parse(&format!("<body><div {attrs}>x</div>"));
        let body = tree.body().expect("body");
        let div = tree.first_child(body).expect("div");
        of(&tree, div)
    }

    const P: u8 = Hints::POSITIVE;
    const N: u8 = Hints::NEGATIVE;
    const U: u8 = Hints::UNLIKELY;
    const M: u8 = Hints::MAYBE;
    const S: u8 = Hints::SHARE;
    const X: u8 = Hints::META;
    const C: u8 = Hints::CAPTION;
    const T: u8 = Hints::THREAD;

    #[test]
    fn english_words_and_stems_carry_their_kinds() {
        for (w, bits) in [
            (&b"article"[..], P | M),
            (b"entry", P),
            (b"column", M),
            (b"ad", N),
            (b"sidebar", N | U),
            (b"share", N | U | S),
            (b"byline", N | X),
            (b"figcaption", N | C),
            (b"commentlist", N | U | T),
            (b"replies", N | U | T),
            (b"relatedposts", N | U),
            (b"sharebar", N | U | S),
            (b"advertorial", N),
            (b"wrapper", 0),
            (b"", 0),
        ] {
            assert_eq!(classify(w), bits, "{}", String::from_utf8_lossy(w));
        }
    }

    #[test]
    fn words_split_at_separators_and_case_changes() {
        let mut seen = Vec::new();
        for_each_word("articleBody  post_2-col MAIN x9Y", |w| {
            seen.push(String::from_utf8_lossy(w).into_owned())
        });
        assert_eq!(
            seen,
            ["article", "body", "post", "2", "col", "main", "x9", "y"]
        );
    }

    #[test]
    fn the_names_file_parses_and_its_words_are_found() {
        let names = Names::parse(BUILTIN_NAMES).expect("the built-in names parse");
        assert!(names.words.len() > 180, "{}", names.words.len());
        for (w, bits) in &names.words {
            assert_eq!(names.classify(w), *bits, "{}", String::from_utf8_lossy(w));
        }
        assert!(Names::parse("clutter kommentar").is_err());
        assert!(Names::parse("sometimes: kommentar").is_err());
        assert!(Names::parse("clutter: Kommentar").is_err());
        let one = Names::parse("never, clutter: kommentar*").expect("parses");
        assert_eq!(one.classify(b"kommentarliste"), N | U);
        assert_eq!(one.classify(b"kommentiert"), 0);
    }

    macro_rules! hinted {
        ($($name:ident: $attrs:expr => $weight:expr, $unlikely:expr;)*) => {$(
            #[test]
            fn $name() {
                let h = hints($attrs);
                assert_eq!((h.weight(), h.is_unlikely()), ($weight, $unlikely), "{}", $attrs);
            }
        )*};
    }

    hinted! {
        content_names: "class='entry-content'" => 25, false;
        camel_case_splits: "itemprop=x class='articleBody'" => 25, false;
        comments_by_stem: "id=comments-area" => -25, true;
        sidebar_beside_main_is_kept: "class='main sidebar'" => 0, false;
        ad_is_a_word_not_a_substring: "class='header-shadow download'" => -25, true;
        plain_names_say_nothing: "class='wrapper x12'" => 0, false;
        share_bar: "class='share-tools'" => -25, true;
        german_comments: "id=kommentare" => -25, true;
        german_author_box: "class='autorin-box'" => -25, false;
        french_related: "class='liens-similaires'" => -25, true;
        polish_footer: "class='stopka'" => -25, true;
        chinese_content: "class='zhengwen'" => 25, false;
        italian_share: "class='condividi'" => -25, true;
    }
}
