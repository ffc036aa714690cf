//! `link-ratio`: link/text-ratio removal of container blocks, after "Extracting The Main
//! Content From a Webpage" and its implementation HTML::ContentExtractor (Perl, 2007), with
//! the thresholds configured from the page's own averages.
//!
//! # The algorithm
//!
//! The page is walked bottom-up (children before their parents, as the original's depth-first
//! recursion deletes them), and each *container* element is judged on what is left of it:
//!
//! - its ratio of links to non-link words above [`Params::ratio_factor`] (1.3) × the page's
//!   own ratio: a block much more link-laden than the page is navigation;
//! - or fewer non-link words than [`Params::length_factor`] (1.0) × the page's mean block text,
//!   unless it is a paragraph or a top heading (`p`, `h1`, `h2`, `h3`), which the original
//!   spares from this test;
//! - or its remaining text holds one of the [`Params::spam_words`] ("all rights reserved").
//!
//! A judged block that fails goes with its subtree, so its parent is then judged without it. An
//! `<a>` that is a direct child of `<body>` goes first, as in the original.
//!
//! # Thresholds from page averages
//!
//! The original ships fixed thresholds (0.05 links per word, 20 words). Configured from the
//! page instead:
//!
//! - *the page's ratio* is the body's links ÷ its non-link words, the measure the original
//!   already takes of the whole page to tell index pages (it calls a page an index above 0.3);
//! - *the page's mean block text* is the mean, over the containers that hold non-link text of
//!   their own (not through a nested container), of that text in words: the size of a typical
//!   text block of this page, which plays the part of the original's 20 words.
//!
//! # Counting, as the original does and where we fixed it
//!
//! - Containers are the original's list: table, form, div, td, tr, tbody, thead, tfoot, th,
//!   col, colgroup, span, iframe, center, ul, h1, h2, h3, p. HTML5 gives the role of `div` to
//!   section, article, aside, nav, header, footer and main, and `ol` and `dl` are lists like
//!   `ul`; a literal port of a 2007 list misses them, so we add them (`main` and `article`
//!   included: they are judged on their remaining text like any block). List items are not
//!   added: the original judges a list whole, never its items.
//! - Links are `<a href>` elements. Words: each run of non-space characters is one, except that
//!   characters of scripts written without spaces (Han, kana, Thai, full-width forms) count one
//!   each, which is what the original's tokenizer intends. Its tokenizer also splits Latin words
//!   at every accented letter ("café" is two words); we do not.
//! - Only visible text counts: the original parses hidden elements' text as text; we skip it
//!   (it never reaches the reader either way).
//! - The original compares its lower-cased text with "All rights reserved", so its spam test
//!   never fires; we compare ignoring ASCII case, as intended.
//!
//! One forward and one reverse pass over the tree; no recursion.

use markup5ever::local_name;

use crate::dom::{words, Element, NodeId, NodeKind, Ns, Tree};

/// Parameters, defaulting to the published values.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// A block goes when its links ÷ non-link words exceeds this multiple of the page's ratio.
    pub ratio_factor: f64,
    /// A block goes when its non-link words are fewer than this multiple of the page's mean
    /// block text (paragraphs and top headings excepted).
    pub length_factor: f64,
    /// Phrases whose presence in a block's remaining text removes it (ASCII case ignored).
    pub spam_words: Vec<String>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            ratio_factor: 1.3,
            length_factor: 1.0,
            spam_words: vec!["all rights reserved".to_string()],
        }
    }
}

/// Removes the link-laden, short and spam blocks (contract in [`super::algorithm`]).
pub fn extract(tree: &mut Tree, params: &Params) {
    let Some(body) = tree.body() else { return };
    let direct: Vec<NodeId> = tree
        .children(body)
        .filter(|&c| tree.element(c).is_some_and(|e| e.name == local_name!("a")))
        .collect();
    for id in direct {
        tree.remove(id);
    }
    let counts = Counts::of(tree, body, params);
    let limits = Limits::of(tree, body, &counts, params);
    for id in judge(tree, body, &counts, &limits) {
        tree.remove(id);
    }
}

/// Per node: its own non-link words (text nodes), whether its own text holds a spam phrase,
/// and the container that owns its text.
struct Counts {
    words: Vec<u32>,
    spam: Vec<bool>,
}

impl Counts {
    fn of(tree: &Tree, body: NodeId, params: &Params) -> Counts {
        let n = tree.len();
        let (mut words, mut spam) = (vec![0u32; n], vec![false; n]);
        for id in tree.descendants(body) {
            let Some(text) = tree.text(id) else { continue };
            if !tree.is_shown(id) || tree.is_removed(id) {
                continue;
            }
            if !tree.is_in_link(id) {
                words[id.index()] = count_words(text);
            }
            spam[id.index()] = params
                .spam_words
                .iter()
                .any(|w| contains_ignore_ascii_case(text, w));
        }
        Counts { words, spam }
    }
}

/// The page's thresholds.
struct Limits {
    ratio: f64,
    min_words: f64,
}

impl Limits {
    fn of(tree: &Tree, body: NodeId, counts: &Counts, params: &Params) -> Limits {
        // Words each container owns directly: text whose nearest container is that one.
        let mut owner = vec![u32::MAX; tree.len()];
        let mut owned = vec![0u32; tree.len()];
        let (mut page_words, mut page_links) = (0u64, 0u64);
        for id in tree.descendants(body) {
            let parent_owner = tree.parent(id).map_or(u32::MAX, |p| owner[p.index()]);
            let is_container = tree.element(id).is_some_and(is_container);
            owner[id.index()] = if is_container && id != body {
                id.index() as u32
            } else {
                parent_owner
            };
            let w = counts.words[id.index()];
            page_words += u64::from(w);
            if let Some(slot) = owned.get_mut(parent_owner as usize) {
                *slot += w;
            }
            if tree.is_shown(id) && is_link(tree, id) && !tree.is_removed(id) {
                page_links += 1;
            }
        }
        let blocks: Vec<u32> = owned.into_iter().filter(|&w| w > 0).collect();
        let mean = if blocks.is_empty() {
            0.0
        } else {
            blocks.iter().map(|&w| f64::from(w)).sum::<f64>() / blocks.len() as f64
        };
        Limits {
            ratio: params.ratio_factor * ratio(page_links, page_words),
            min_words: params.length_factor * mean,
        }
    }
}

/// Links per non-link word; 1 when there are no words, as in the original.
fn ratio(links: u64, words: u64) -> f64 {
    if words == 0 {
        1.0
    } else {
        links as f64 / words as f64
    }
}

/// The bottom-up pass: returns the containers that fail, outermost last.
fn judge(tree: &Tree, body: NodeId, counts: &Counts, limits: &Limits) -> Vec<NodeId> {
    let start = body.index();
    let end = start + tree.descendants(body).len();
    let size = end - start;
    // Remaining (words, links, spam) per node, summed from its kept children.
    let mut words = vec![0u64; size];
    let mut links = vec![0u64; size];
    let mut spam = vec![false; size];
    let mut found = Vec::new();
    for i in (start..end).rev() {
        let Some(id) = tree.node_at(i) else { continue };
        let k = i - start;
        if tree.is_removed(id) || !tree.is_shown(id) {
            continue;
        }
        words[k] += u64::from(counts.words[i]);
        spam[k] |= counts.spam[i];
        if let Some(e) = tree.element(id) {
            if tree.is_content_hidden(id) {
                continue;
            }
            if is_link(tree, id) {
                links[k] += 1;
            }
            if id != body && is_container(e) && fails(e, words[k], links[k], spam[k], limits) {
                found.push(id);
                continue;
            }
        }
        if let Some(p) = tree.parent(id).filter(|p| p.index() >= start) {
            let pk = p.index() - start;
            words[pk] += words[k];
            links[pk] += links[k];
            spam[pk] |= spam[k];
        }
    }
    found
}

/// The original's three tests, with the page's thresholds.
fn fails(e: &Element, words: u64, links: u64, spam: bool, limits: &Limits) -> bool {
    let spared = matches!(
        e.name,
        local_name!("p") | local_name!("h1") | local_name!("h2") | local_name!("h3")
    );
    ((words as f64) < limits.min_words && !spared) || ratio(links, words) > limits.ratio || spam
}

/// Whether an element is one of the blocks this algorithm judges (see the module doc).
fn is_container(e: &Element) -> bool {
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("table")
                | local_name!("form")
                | local_name!("div")
                | local_name!("td")
                | local_name!("tr")
                | local_name!("tbody")
                | local_name!("thead")
                | local_name!("tfoot")
                | local_name!("th")
                | local_name!("col")
                | local_name!("colgroup")
                | local_name!("span")
                | local_name!("iframe")
                | local_name!("center")
                | local_name!("ul")
                | local_name!("h1")
                | local_name!("h2")
                | local_name!("h3")
                | local_name!("p")
                | local_name!("section")
                | local_name!("article")
                | local_name!("aside")
                | local_name!("nav")
                | local_name!("header")
                | local_name!("footer")
                | local_name!("main")
                | local_name!("ol")
                | local_name!("dl")
        )
}

fn is_link(tree: &Tree, id: NodeId) -> bool {
    matches!(tree.kind(id), NodeKind::Element(e) if e.name == local_name!("a"))
        && tree.attr(id, "href").is_some()
}

/// Words as the original's tokenizer means them: runs of non-space characters, except that
/// each character of a script written without spaces is a word of its own.
pub fn count_words(text: &str) -> u32 {
    let mut count = 0u32;
    for word in words(text) {
        if word.is_ascii() {
            count += 1;
            continue;
        }
        let mut in_run = false;
        for c in word.chars() {
            if is_unspaced_script(c) {
                count += 1;
                in_run = false;
            } else if !in_run {
                count += 1;
                in_run = true;
            }
        }
    }
    count
}

/// Han, kana, CJK punctuation and symbols, Thai, Lao and full-width forms.
fn is_unspaced_script(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0EFF}'
        | '\u{2E80}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FF00}'..='\u{FFEF}'
        | '\u{20000}'..='\u{2FFFF}')
}

/// Whether `hay` contains `needle`, ASCII letters compared without case. No allocation.
fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    !needle.is_empty()
        && hay.len() >= needle.len()
        && hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::text::render;

    fn run(html: &str) -> String {
        let mut tree = Tree::parse(html);
        extract(&mut tree, &Params::default());
        render(&tree)
    }

    const P1: &str = "The council met on Tuesday evening to discuss the new budget for the \
        coming year, and most members agreed that the library should stay open longer.";
    const P2: &str = "Residents who spoke at the meeting asked for more buses on weekends, \
        and the council promised to publish a plan before the end of the month.";

    #[test]
    fn link_heavy_blocks_go_prose_stays() {
        let menu = "<li><a href=/a>World</a></li><li><a href=/b>Sport</a></li>\
                    <li><a href=/c>Culture</a></li><li><a href=/d>Travel</a></li>";
        let html = format!(
            "<div id=page><ul id=menu>{menu}</ul>\
             <div id=story><p>{P1}</p><p>{P2} See <a href=/x>the plan</a>.</p></div></div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2} See the plan.\n"));
    }

    #[test]
    fn blocks_shorter_than_the_mean_go_paragraphs_stay() {
        let html = format!(
            "<div><div id=byline>By a reporter</div><p>{P1}</p><p>Short one.</p><p>{P2}</p></div>"
        );
        assert_eq!(run(&html), format!("{P1}\nShort one.\n{P2}\n"));
    }

    #[test]
    fn threshold_follows_the_page_average() {
        // A block with one link per 15 words survives on a link-rich page and goes on a page
        // where links are rarer than that.
        let block = "<div id=b>one two three four five six seven eight nine ten eleven twelve \
                     thirteen fourteen fifteen <a href=/l>link</a></div>";
        let linked = "<div>alpha beta gamma delta epsilon zeta eta theta iota kappa \
                      <a href=/1>a</a> <a href=/2>b</a></div>";
        let plain = "<div>alpha beta gamma delta epsilon zeta eta theta iota kappa</div>";
        let rich = format!("{block}{linked}{linked}");
        assert!(run(&rich).contains("fifteen"), "{}", run(&rich));
        let sparse = format!("{block}{plain}{plain}");
        assert!(!run(&sparse).contains("fifteen"), "{}", run(&sparse));
    }

    #[test]
    fn copyright_blocks_and_body_level_links_go() {
        let html = format!(
            "<a href=/top>Skip</a><div><p>{P1}</p><p>{P2}</p></div>\
             <div>Copyright 2024 The Paper. ALL RIGHTS RESERVED. Printed on recycled pixels \
             for the benefit of readers everywhere, again and again and again.</div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn hidden_text_does_not_count() {
        // The hidden words would lift the menu above the length and ratio thresholds.
        let hidden = "lots of hidden words here ".repeat(20);
        let html = format!(
            "<div id=menu><a href=/a>A</a> <a href=/b>B</a><span hidden>{hidden}</span></div>\
             <div><p>{P1}</p><p>{P2}</p></div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn words_of_unspaced_scripts_count_per_character() {
        assert_eq!(count_words("  two words "), 2);
        assert_eq!(count_words("café crème"), 2);
        assert_eq!(count_words("東京は晴れ"), 5);
        assert_eq!(count_words("iPhone发布会"), 4);
        assert!(contains_ignore_ascii_case("© All Rights Reserved.", "all rights reserved"));
        assert!(!contains_ignore_ascii_case("rights", "all rights reserved"));
    }

    #[test]
    fn empty_deep_and_wide_pages() {
        assert_eq!(run(""), "");
        assert_eq!(run("<frameset></frameset>"), "");
        let depth = 100_000;
        let html = format!("{}{P1}{}", "<span>".repeat(depth), "</span>".repeat(depth));
        let mut tree = Tree::parse_with_max_depth(&html, u32::MAX);
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), format!("{P1}\n"));
        let wide = format!("<p>{P1}</p>").repeat(20_000);
        assert_eq!(run(&wide).lines().count(), 20_000);
    }
}
