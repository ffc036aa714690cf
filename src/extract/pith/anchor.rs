//! The article the page marks as its own: the `<article>` element that holds the page's title
//! heading.
//!
//! A page says what its story is called twice: in its metadata (`og:title`, `<title>`) and in
//! the heading over the story. The heading whose words the title repeats is the story's, and
//! the `<article>` element around it is the story (HTML: "a self-contained composition").
//! Every other `<article>` on that page, beside it or inside it, is another composition:
//! a teaser of another story, a related post, a comment. [`find`] returns that element; the
//! analysis leaves the other articles out of scoring.
//!
//! Matching is by words, case-insensitive, punctuation at the ends of words ignored: the
//! heading's words must appear as one run in the title, and cover at least three words or
//! half of the title (a site-name heading inside "Story | Site" covers too little). Among
//! several matching headings the one covering most of the title wins. Two word buffers per
//! page, nothing per node.

use crate::dom::{words, NodeId, NodeKind, Ns, Tree};
use markup5ever::local_name;

/// The page's title as its metadata states it: the words of `og:title` and of `<title>`.
pub struct Title<'t> {
    og: Vec<&'t str>,
    title: Vec<&'t str>,
    /// The range of visible characters a block repeating the title can have.
    chars: (u32, u32),
}

/// The most words of a block compared with the title; a longer block is not the title.
const MAX_TITLE_WORDS: usize = 48;

impl<'t> Title<'t> {
    /// Reads the title from the head (none when the page has no head).
    pub fn of(tree: &'t Tree) -> Title<'t> {
        let (og, title) = tree.head().map_or((None, None), |h| titles(tree, h));
        let len = |t: Option<&str>| t.map_or(0, |t| t.chars().count() as u32);
        let (a, b) = (len(og), len(title));
        let shorter = if a == 0 || b == 0 { a.max(b) } else { a.min(b) };
        Title {
            og: og.map(title_words).unwrap_or_default(),
            title: title.map(title_words).unwrap_or_default(),
            // A third of the shorter title at least (a site name may be cut from either end),
            // the longer one at most, with room for spacing: a cheap test before the words.
            chars: (shorter / 3, a.max(b) + 16),
        }
    }

    /// How many title words `words` covers as one run (0: it is not the title).
    fn coverage(&self, words: &[&str]) -> usize {
        coverage(words, &self.og).max(coverage(words, &self.title))
    }

    /// The most words a block repeating the title can have.
    fn longest(&self) -> usize {
        self.og.len().max(self.title.len())
    }

    /// Whether the element's text is the page's title again, whole or for at least half of
    /// it: the reading page shows the title once, as its own heading.
    pub fn is_repeated_by(&self, tree: &Tree, id: NodeId) -> bool {
        let chars = tree.stats(id).text_chars;
        if self.longest() == 0 || chars < self.chars.0 || chars > self.chars.1 {
            return false;
        }
        let mut buf = [""; MAX_TITLE_WORDS];
        let mut n = 0;
        for d in tree.descendants(id) {
            let Some(text) = tree.text(d).filter(|_| tree.is_shown(d)) else {
                continue;
            };
            for w in words(text).map(trim_word).filter(|w| !w.is_empty()) {
                if n == MAX_TITLE_WORDS {
                    return false;
                }
                // Most blocks fail on their first word: no need to read them further.
                if n == 0 && !self.og.iter().chain(&self.title).any(|t| same_word(t, w)) {
                    return false;
                }
                buf[n] = w;
                n += 1;
            }
        }
        let words = &buf[..n];
        let half_of = |t: &[&str]| n * 2 >= t.len() && coverage(words, t) > 0;
        n >= 3 && (half_of(&self.og) || half_of(&self.title))
    }
}

/// The `<article>` element holding the page's title heading, when there is one.
pub fn find(tree: &Tree, title: &Title) -> Option<NodeId> {
    let heading = heading(tree, title)?;
    let article = tree.ancestors(heading).find(|&p| {
        tree.element(p).is_some_and(|e| e.ns == Ns::Html && e.name == local_name!("article"))
    })?;
    // An article holding little besides its heading wraps the title alone (the story is
    // elsewhere): no anchor then.
    let s = tree.stats(article);
    let text = s.text_chars.saturating_sub(s.link_text_chars);
    (text >= MIN_ANCHOR_TEXT).then_some(article)
}

/// The page's title heading: the shown `<h1>` or `<h2>` whose words are a run of the title's
/// covering most of it; an `<h1>` wins over an `<h2>` of the same length.
pub fn heading(tree: &Tree, title: &Title) -> Option<NodeId> {
    let longest = title.longest();
    if longest == 0 {
        return None;
    }
    let body = tree.body()?;
    let mut heading: Vec<&str> = Vec::new();
    let mut best: Option<(usize, NodeId)> = None;
    for id in tree.descendants(body) {
        let Some(e) = tree.element(id) else { continue };
        let h1 = matches!(e.name, local_name!("h1"));
        if e.ns != Ns::Html || !(h1 || matches!(e.name, local_name!("h2"))) || !tree.is_shown(id) {
            continue;
        }
        // A heading longer than both titles cannot be a run of either.
        if tree.stats(id).words as usize > 2 * longest {
            continue;
        }
        heading.clear();
        for d in tree.descendants(id) {
            if let Some(text) = tree.text(d) {
                heading.extend(words(text).map(trim_word).filter(|w| !w.is_empty()));
            }
        }
        let covered = title.coverage(&heading);
        // An h1 counts a little more than an h2 of the same length.
        let rank = covered * 2 + usize::from(h1);
        if covered > 0 && best.is_none_or(|(b, _)| rank > b) {
            best = Some((rank, id));
        }
    }
    best.map(|(_, heading)| heading)
}

/// The least non-link text (characters) of an article that is the story, not its title.
const MIN_ANCHOR_TEXT: u32 = 250;

/// `og:title` and the `<title>` text, from the head.
fn titles(tree: &Tree, head: NodeId) -> (Option<&str>, Option<&str>) {
    let (mut og, mut title) = (None, None);
    for id in tree.descendants(head) {
        match tree.tag(id) {
            Some("meta") if og.is_none() => {
                let key = tree.attr(id, "property").or_else(|| tree.attr(id, "name"));
                if key.is_some_and(|k| k.eq_ignore_ascii_case("og:title")) {
                    og = tree.attr(id, "content");
                }
            }
            Some("title") if title.is_none() => {
                title = tree.children(id).find_map(|c| match tree.kind(c) {
                    NodeKind::Text(span) => Some(tree.str(*span)),
                    _ => None,
                });
            }
            _ => {}
        }
    }
    (og, title)
}

fn title_words(text: &str) -> Vec<&str> {
    words(text)
        .map(trim_word)
        .filter(|w| !w.is_empty())
        .collect()
}

fn trim_word(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric())
}

/// How many title words the heading covers: its length when its words are one run of the
/// title's and long enough to name the story (three words, or half the title), else 0.
fn coverage(heading: &[&str], title: &[&str]) -> usize {
    let n = heading.len();
    if n == 0 || n > title.len() || (n < 3 && n * 2 < title.len()) {
        return 0;
    }
    let found = title
        .windows(n)
        .any(|run| run.iter().zip(heading).all(|(a, b)| same_word(a, b)));
    if found {
        n
    } else {
        0
    }
}

fn same_word(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor_text(html: &str) -> Option<String> {
        let tree = Tree::parse(html);
        find(&tree, &Title::of(&tree)).map(|a| {
            let mut t = String::new();
            for d in tree.descendants(a) {
                if let Some(x) = tree.text(d) {
                    t.push_str(x);
                }
            }
            t
        })
    }

    #[test]
    fn the_article_holding_the_title_heading() {
        let html = "<head><title>Bridge reopens after repairs | City News</title></head><body>\
            <article><h2>Other story</h2></article><article><h1>Bridge reopens after repairs</h1>\
            <p>Text.</p></article><article><h2>Bridge</h2></article></body>";
        let body = "A paragraph of the story. ".repeat(20);
        let html = html.replace("Text.", &body);
        assert_eq!(
            anchor_text(&html),
            Some(format!("Bridge reopens after repairs{body}"))
        );
    }

    #[test]
    fn a_site_name_heading_or_no_article_gives_none() {
        let site = "<head><title>Bridge reopens after repairs on Monday | City News</title></head>\
            <body><article><h1>City News</h1></article></body>";
        assert_eq!(anchor_text(site), None);
        let bare = "<head><meta property=og:title content='Bridge reopens'></head>\
            <body><div><h1>Bridge reopens</h1></div></body>";
        assert_eq!(anchor_text(bare), None);
        assert_eq!(anchor_text(""), None);
    }
}
