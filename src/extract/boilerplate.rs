//! The boilerplate remover: lines a page shows around its content, found by what they say, in
//! many languages (`filters/boilerplate.txt`):
//! "Advertisement" labels, comment, sharing and print controls, newsletter, follow and cookie
//! prompts, and the headings of related, recommended and trending lists with the lists they
//! open.
//!
//! Class names say the same on some pages and nothing on others (the `pith` extractor reads
//! them too); the words a person reads are there on every page. Only whole lines are judged:
//! a block element whose text is the line and nothing else. A sentence that mentions comments
//! or cookies is never touched, and a word inside a sentence is never cut out of it.
//!
//! One walk over the kept tree. A block with more text than a line can be is walked into; a
//! block with a line's worth is folded ([`fold`]) and looked up once; the first (outermost)
//! block that matches goes, with its content (the ad slot under its label goes with it). A
//! `section` phrase takes the block the line opens too, up to [`MAX_CLIMB`] levels up: the
//! heading is that block's first text, and the block holds neither the `protect`ed node (the
//! page's main content) nor half of the page's text left.
//!
//! Cost: the walk visits each kept node once and reads the statistics the parser made; only
//! blocks of at most [`MAX_PREFIXED`] characters are folded, and of most of them only the first
//! word, which no phrase starts with.

use std::sync::LazyLock;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{kept_stats_of, Keep};
use crate::dom::{NodeId, NodeKind, Tree};

/// The longest line matched exactly (characters of the parsed page).
pub const MAX_LINE: u32 = 120;

/// The longest line a phrase ending in ` *` is matched at the start of: a cookie notice or a
/// newsletter pitch is a long sentence.
pub const MAX_PREFIXED: u32 = 400;

/// How many levels above a `section` line the block it opens is looked for.
pub const MAX_CLIMB: usize = 3;

/// What a phrase says of the line that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The line goes.
    Label,
    /// The line goes, and the block it opens.
    Section,
}

/// The phrases of `filters/boilerplate.txt`, folded: whole lines, and the starts of lines
/// (by their first words, at most [`MAX_PREFIX_WORDS`]).
#[derive(Debug, Default)]
pub struct Phrases {
    lines: FxHashMap<Box<str>, Kind>,
    starts: FxHashMap<Box<str>, Kind>,
    /// The first word of every phrase: a line whose first word is none of them is read no
    /// further (most lines of a page), so only the first word of most is folded.
    firsts: FxHashSet<Box<str>>,
    /// The longest of `starts` (bytes): how much of a long line is folded.
    longest_start: usize,
}

/// What the phrases read in a folded line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// The whole line is a phrase.
    Line(Kind),
    /// The line starts with a phrase ending in ` *`.
    Start(Kind),
    /// No phrase reads it.
    Nothing,
}

/// The most words a phrase ending in ` *` may have.
const MAX_PREFIX_WORDS: usize = 6;

/// The built-in phrases, read once.
static PHRASES: LazyLock<Phrases> = LazyLock::new(|| Phrases::parse(BUILTIN).unwrap_or_default());

const BUILTIN: &str = include_str!("../../filters/boilerplate.txt");

impl Phrases {
    /// The built-in phrases.
    pub fn builtin() -> &'static Phrases {
        &PHRASES
    }

    /// Parses the file's format (its header says it); the first bad line is the error.
    pub fn parse(text: &str) -> Result<Phrases, String> {
        let mut phrases = Phrases::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |what: &str| format!("boilerplate line {}: {what}: {line}", n + 1);
            let (head, list) = line.split_once(':').ok_or_else(|| bad("no colon"))?;
            let kind = match head.split_whitespace().next() {
                Some("label") => Kind::Label,
                Some("section") => Kind::Section,
                _ => return Err(bad("the kind is label or section")),
            };
            for phrase in list.split('|').map(str::trim) {
                let (start, words) = match phrase.strip_suffix(" *") {
                    Some(words) => (true, words),
                    None => (false, phrase),
                };
                let mut folded = String::new();
                fold(words, &mut folded);
                if folded.is_empty() || folded != words {
                    return Err(bad(&format!("`{phrase}` is not written folded (`{folded}`)")));
                }
                if start && folded.split(' ').count() > MAX_PREFIX_WORDS {
                    return Err(bad(&format!("`{phrase}` has more than {MAX_PREFIX_WORDS} words")));
                }
                if start {
                    phrases.longest_start = phrases.longest_start.max(folded.len());
                }
                phrases.firsts.insert(folded.split(' ').next().unwrap_or_default().into());
                let map = if start { &mut phrases.starts } else { &mut phrases.lines };
                // A line that is both a label and a section's heading is a section's.
                let slot = map.entry(folded.into()).or_insert(kind);
                if kind == Kind::Section {
                    *slot = kind;
                }
            }
        }
        Ok(phrases)
    }

    /// What the phrases read in a folded line; `chars` is its length in the page (a line
    /// longer than [`MAX_LINE`] is read by its start alone, up to [`MAX_PREFIXED`]).
    pub fn read(&self, folded: &str, chars: u32) -> Reading {
        if folded.is_empty() {
            return Reading::Nothing;
        }
        if chars <= MAX_LINE {
            if let Some(&kind) = self.lines.get(folded) {
                return Reading::Line(kind);
            }
        }
        if chars > MAX_PREFIXED {
            return Reading::Nothing;
        }
        // The line's starts of one, two, … words.
        let ends = folded.match_indices(' ').map(|(i, _)| i).chain(std::iter::once(folded.len()));
        ends.take(MAX_PREFIX_WORDS)
            .take_while(|&end| end <= self.longest_start)
            .find_map(|end| self.starts.get(&folded[..end]))
            .map_or(Reading::Nothing, |&kind| Reading::Start(kind))
    }
}

/// Folds text for comparison into `out`: lower case; each run of characters that are not
/// letters or digits one space, none at the ends; what parentheses or brackets hold left
/// out; words of digits alone left out ("5 Comments (3 new):" is `comments`).
pub fn fold(text: &str, out: &mut String) {
    let mut folder = Folder::new(out, usize::MAX);
    folder.push(text);
    folder.finish();
}

/// [`fold`] fed piece by piece (the text nodes of a block), stopping at the first word
/// boundary past `limit` bytes: the start of a long line is all a phrase can read of it.
struct Folder<'o> {
    out: &'o mut String,
    limit: usize,
    /// Where the word being written starts in `out`.
    word_start: usize,
    digits_only: bool,
    /// Open parentheses and brackets.
    depth: u32,
}

impl<'o> Folder<'o> {
    fn new(out: &'o mut String, limit: usize) -> Self {
        out.clear();
        Folder { out, limit, word_start: 0, digits_only: true, depth: 0 }
    }

    /// Whether enough is folded: past the limit, at a word's end.
    fn full(&self) -> bool {
        self.out.len() > self.limit && self.word_start == self.out.len()
    }

    fn push(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '(' | '[' => self.depth += 1,
                ')' | ']' => self.depth = self.depth.saturating_sub(1),
                _ if self.depth == 0 && c.is_alphanumeric() => {
                    if self.out.len() == self.word_start && !self.out.is_empty() {
                        self.out.push(' ');
                        self.word_start = self.out.len();
                    }
                    self.digits_only &= c.is_ascii_digit();
                    if c.is_ascii() {
                        self.out.push(c.to_ascii_lowercase());
                    } else {
                        self.out.extend(c.to_lowercase());
                    }
                    continue;
                }
                _ => {}
            }
            self.end_word();
            if self.full() {
                return;
            }
        }
    }

    /// Ends the word being written; a word of digits alone is taken out again.
    fn end_word(&mut self) {
        if self.out.len() > self.word_start && self.digits_only {
            self.out.truncate(self.word_start);
            if self.out.ends_with(' ') {
                self.out.pop();
            }
        }
        self.digits_only = true;
        self.word_start = self.out.len();
    }

    fn finish(mut self) {
        self.end_word();
    }
}

/// Removes the boilerplate lines (and the blocks `section` lines open) of the kept tree under
/// `root`, never `protect` or a block holding it, nor what `keep` (a site rule) keeps; returns
/// the removed roots in document order.
pub fn remove(tree: &mut Tree, root: NodeId, protect: Option<NodeId>, keep: &Keep, phrases: &Phrases) -> Vec<NodeId> {
    let mut found: Vec<(NodeId, Kind)> = Vec::new();
    let mut folded = String::new();
    // The last block no phrase read, and its length.
    let mut unread: Option<(NodeId, u32)> = None;
    let mut walk = tree.walk(root);
    while let Some(id) = walk.next() {
        let chars = tree.stats(id).text_chars;
        if chars == 0 {
            walk.skip_children();
            continue;
        }
        if chars > MAX_PREFIXED || id == root || !tree.is_block_node(id) || !tree.is_shown(id) {
            continue;
        }
        // A block holding nothing but a block no phrase read (`div > p`) reads the same.
        if unread.is_some_and(|(u, c)| c == chars && tree.parent(id) == Some(u)) {
            unread = Some((id, chars));
            continue;
        }
        // The first word first: most lines start with none a phrase starts with.
        fold_kept(tree, id, 0, &mut folded);
        if !phrases.firsts.contains(folded.as_str()) {
            unread = Some((id, chars));
            continue;
        }
        let limit = if chars <= MAX_LINE { usize::MAX } else { phrases.longest_start };
        fold_kept(tree, id, limit, &mut folded);
        match phrases.read(&folded, chars) {
            Reading::Line(kind) => {
                found.push((id, kind));
                walk.skip_children();
            }
            // A block of several lines ("Sign up for …" above a list of plans) is read line
            // by line, below.
            Reading::Start(kind) if !holds_lines(tree, id) => {
                found.push((id, kind));
                walk.skip_children();
            }
            Reading::Start(_) => {}
            Reading::Nothing => unread = Some((id, chars)),
        }
    }
    if found.is_empty() {
        return Vec::new();
    }
    let page_chars = kept_stats_of(tree, root).text_chars;
    let mut removed = Vec::with_capacity(found.len());
    for (line, kind) in found {
        if tree.is_removed(line) || keep.contains(line) || protect.is_some_and(|p| tree.holds(line, p)) {
            continue;
        }
        let block = match kind {
            Kind::Label => line,
            Kind::Section => opened_block(tree, line, root, protect, keep, page_chars),
        };
        tree.remove(block);
        removed.push(block);
    }
    // A section's block may hold a line found before it.
    removed.sort_unstable_by_key(|id| id.index());
    removed.dedup();
    removed.retain(|&id| tree.parent(id).is_none_or(|p| !tree.is_removed(p)));
    removed
}

/// The text of `id` left after removals, folded ([`Folder`]) into `out` up to `limit` bytes;
/// text nodes apart are words apart.
fn fold_kept(tree: &Tree, id: NodeId, limit: usize, out: &mut String) {
    let mut folder = Folder::new(out, limit);
    for d in tree.walk(id) {
        if let NodeKind::Text(span) = tree.kind(d) {
            folder.push(tree.str(*span));
            folder.end_word();
            if folder.full() {
                break;
            }
        }
    }
    folder.finish();
}

/// The highest block within [`MAX_CLIMB`] levels above `line` whose first text is `line`'s,
/// below `root`, holding neither `protect` nor half of `page_chars`; `line` itself when
/// there is none.
fn opened_block(tree: &Tree, line: NodeId, root: NodeId, protect: Option<NodeId>, keep: &Keep, page_chars: u32) -> NodeId {
    let mut block = line;
    for parent in tree.ancestors(line).take(MAX_CLIMB) {
        let opens = parent != root
            && !keep.contains(parent)
            && protect.is_none_or(|p| !tree.holds(parent, p))
            && first_text(tree, parent).is_some_and(|t| tree.holds(line, t))
            && u64::from(kept_stats_of(tree, parent).text_chars) * 2 < u64::from(page_chars);
        if !opens {
            break;
        }
        block = parent;
    }
    block
}

/// Whether a block holds blocks with text of their own: several lines, not one.
fn holds_lines(tree: &Tree, id: NodeId) -> bool {
    tree.walk(id).skip(1).any(|d| tree.is_block_node(d) && tree.stats(d).text_chars > 0)
}

/// The first kept text node under `id` with more than white space.
fn first_text(tree: &Tree, id: NodeId) -> Option<NodeId> {
    tree.walk(id).find(|&d| tree.text(d).is_some_and(|t| !t.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> String {
        let mut out = String::new();
        fold(text, &mut out);
        out
    }

    #[test]
    fn folding_keeps_the_words_alone() {
        assert_eq!(folded("  5 Comments (3 new):"), "comments");
        assert_eq!(folded("SIGN UP FOR OUR NEWSLETTER"), "sign up for our newsletter");
        assert_eq!(folded("You may also like..."), "you may also like");
        assert_eq!(folded("Don't miss"), "don t miss");
        assert_eq!(folded("Das könnte Sie auch interessieren"), "das könnte sie auch interessieren");
        assert_eq!(folded("РЕКЛАМА"), "реклама");
        assert_eq!(folded("相关文章："), "相关文章");
        assert_eq!(folded("Top 10 stories"), "top stories");
        assert_eq!(folded("(ad)"), "");
    }

    #[test]
    fn the_shipped_file_parses_and_names_every_language() {
        let phrases = Phrases::parse(BUILTIN).expect("the built-in file parses");
        for lang in ["en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "zh", "ja"] {
            assert!(BUILTIN.lines().any(|l| l.split(':').next().is_some_and(|h| h.ends_with(&format!(" {lang}")))), "{lang}");
        }
        assert_eq!(phrases.read("advertisement", 13), Reading::Line(Kind::Label));
        assert_eq!(phrases.read("anzeige", 7), Reading::Line(Kind::Label));
        assert_eq!(phrases.read("you may also like", 17), Reading::Line(Kind::Section));
        assert_eq!(phrases.read("comments", 8), Reading::Line(Kind::Section), "a section wins over a label");
        assert_eq!(phrases.read("we use cookies to improve your experience", 41), Reading::Start(Kind::Label));
        assert_eq!(phrases.read("more from the los angeles times", 31), Reading::Start(Kind::Section));
        assert_eq!(phrases.read("advertisement", MAX_LINE + 1), Reading::Nothing, "too long to be a label");
        assert_eq!(phrases.read("cookies are only an association mechanism", 41), Reading::Nothing);
        assert_eq!(phrases.read("read more about ad blocking here", 33), Reading::Nothing);
        assert_eq!(phrases.read("sign up for our newsletter monthly month", 44), Reading::Start(Kind::Label));
        assert_eq!(phrases.read("subscribe tomorrow", 18), Reading::Nothing, "whole words");
        assert!(Phrases::parse("label en: Advertisement").is_err(), "phrases are written folded");
        assert!(Phrases::parse("banner en: x").is_err());
    }

    fn kept(tree: &Tree) -> String {
        crate::render::text::render(tree)
    }

    const PROSE: &str = "A paragraph of the article, long enough to be prose, with a sentence or two in it. It says what the page is for.";

    #[test]
    fn whole_lines_go_and_sentences_stay() {
        let html = format!(
            "<body><main><p>{PROSE}</p><div class=slot><p>ADVERTISEMENT</p><img src=ad.gif></div>\
             <p>{PROSE} Read the comments below.</p><p>5 <a href=#c>Comments</a></p>\
             <p>Subscribe to our newsletter for the latest news.</p></main></body>"
        );
        let mut tree = Tree::parse(&html);
        let body = tree.body().expect("body");
        let removed = remove(&mut tree, body, None, &Keep::none(), Phrases::builtin());
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert_eq!(kept(&tree), format!("{PROSE}\n{PROSE} Read the comments below.\n"));
    }

    #[test]
    fn a_section_heading_takes_the_block_it_opens_but_never_the_content() {
        let html = format!(
            "<body><div id=page><article><h2>Comments</h2><p>{PROSE}</p><p>{PROSE}</p></article>\
             <div class=more><div class=head><h3>You may also like</h3></div><ul><li><a href=/a>Another story</a></li></ul></div></div></body>"
        );
        let mut tree = Tree::parse(&html);
        let body = tree.body().expect("body");
        let article = tree.descendants(body).find(|&d| tree.tag(d) == Some("article")).expect("article");
        let removed = remove(&mut tree, body, Some(article), &Keep::none(), Phrases::builtin());
        let names: Vec<_> = removed.iter().map(|&id| tree.attr(id, "class").or(tree.tag(id)).unwrap_or("")).collect();
        assert_eq!(names, ["h2", "more"], "the heading alone inside the protected article; the related block whole");
        assert_eq!(kept(&tree), format!("{PROSE}\n{PROSE}\n"));

        // Without the protection, a block holding half the page's text still stays.
        let mut tree = Tree::parse(&html);
        let body = tree.body().expect("body");
        remove(&mut tree, body, None, &Keep::none(), Phrases::builtin());
        assert_eq!(kept(&tree), format!("{PROSE}\n{PROSE}\n"), "the heading goes, not the article");
    }
}
