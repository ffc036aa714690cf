//! What an element's `class` and `id` say about it: weak evidence that it is content
//! (`article-body`, `entry-content`) or clutter (`comments`, `share-bar`, `related-posts`).
//!
//! Names are split into words at every character that is not a letter or digit and at
//! lower-to-upper case changes (`articleBody` → `article`, `body`), lower-cased in a stack
//! buffer, and each word is looked up in the tables below. Whole words, not substrings: a
//! substring test takes `ad` for clutter in `header`, `shadow` and `download`. Words that are
//! clutter only as a prefix (`comments`, `sharing`) are matched by stem. No allocation.

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
        if &**name == "class" || &**name == "id" {
            for_each_word(value, |w| bits |= classify(w));
        }
    }
    Hints(bits)
}

/// Calls `f` with each lower-cased word of a class or id list (words longer than the buffer
/// are cut, which only makes them match nothing).
fn for_each_word(value: &str, mut f: impl FnMut(&str)) {
    let mut buf = [0u8; 24];
    let mut len = 0usize;
    let mut prev_lower = false;
    let mut flush = |buf: &[u8; 24], len: &mut usize| {
        if *len > 0 {
            if let Ok(word) = std::str::from_utf8(&buf[..*len]) {
                f(word);
            }
            *len = 0;
        }
    };
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() {
            if b.is_ascii_uppercase() && prev_lower {
                flush(&buf, &mut len);
            }
            if len < buf.len() {
                buf[len] = b.to_ascii_lowercase();
                len += 1;
            }
            prev_lower = b.is_ascii_lowercase() || b.is_ascii_digit();
        } else {
            flush(&buf, &mut len);
            prev_lower = false;
        }
    }
    flush(&buf, &mut len);
}

/// The hint bits of one lower-case word.
fn classify(w: &str) -> u8 {
    const P: u8 = Hints::POSITIVE;
    const N: u8 = Hints::NEGATIVE;
    const U: u8 = Hints::UNLIKELY;
    const M: u8 = Hints::MAYBE;
    const S: u8 = Hints::SHARE;
    const X: u8 = Hints::META;
    const C: u8 = Hints::CAPTION;
    let exact = match w {
        "article" | "articles" | "articlebody" | "body" | "content" | "contents" | "main" => P | M,
        "entry" | "hentry" | "post" | "story" | "text" | "blog" | "prose" | "richtext" => P,
        "column" | "col" => M,
        "ad" | "ads" | "advert" | "advertisement" | "adsbygoogle" | "sponsor" | "sponsored" => N,
        "promo" | "promotion" | "outbrain" | "taboola" | "widget" | "widgets" | "tags" | "tag"
        | "shopping" | "scroll" | "gdpr" | "masthead" | "contact" | "skyscraper" => N,
        "meta" | "byline" | "author" | "authors" | "dateline" | "timestamp" | "published"
        | "date" | "updated" | "posted" | "pubdate" | "time" => N | X,
        "caption" | "figcaption" | "credit" | "credits" | "attribution" | "courtesy" => N | C,
        "related" | "recommended" | "recirc" | "trending" | "popular" | "newsletter"
        | "subscribe" | "subscription" | "signup" | "disqus" | "replies" => N | U,
        "header" | "footer" | "sidebar" | "menu" | "nav" | "navbar" | "navigation" | "banner"
        | "breadcrumb" | "breadcrumbs" | "pagination" | "pager" | "popup" | "modal" | "cookie"
        | "cookies" | "consent" | "combx" | "shoutbox" | "community" | "supplemental" | "rss"
        | "agegate" | "legends" | "remark" => N | U,
        "share" | "shares" | "sharing" | "social" | "sharedaddy" | "addthis" | "sharethis" => {
            N | U | S
        }
        _ => 0,
    };
    if exact != 0 {
        return exact;
    }
    if w.starts_with("comment") {
        N | U
    } else if w.starts_with("advert") || w.starts_with("sponsor") || w.starts_with("promo") {
        N
    } else if w.starts_with("social") || w.starts_with("share") {
        N | U | S
    } else {
        0
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
    }
}
