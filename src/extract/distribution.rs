//! `distribution`: text-distribution descent, after the article "How to extract useful content
//! from HTML page" (a text-mining note published with a Perl/PHP implementation, late 2000s).
//!
//! # The algorithm
//!
//! Start at `<body>`. At the current node, measure how its text is spread over its children:
//!
//! - one child only: go down into it (the article's first rule);
//! - otherwise compute the coefficient of distribution K; when K is below the stop value (5%)
//!   the text is shared evenly between the children, so the current node *is* the main content;
//!   when K is 5% or more, one child holds the bulk of the text: go down into the child with the
//!   most text and repeat.
//!
//! The node reached is kept with its subtree ([`super::keep_only`]); everything else
//! goes. The descent is a loop, never recursion, and visits one path of the tree: its cost is
//! the sum of the children counts along that path, at most the size of the tree.
//!
//! # K = 100 · LV / FTL, and what LV is
//!
//! FTL is the full text length of the current node (the sum of its children's lengths L_i) and K
//! is LV as a percentage of it. The copies of the article we could consult name LV and the 5%
//! stop but not LV's formula, so we reconstruct it as the *spread of the children's lengths in
//! the unit of FTL*: the population standard deviation, the square root of the variance,
//!
//! ```text
//! AL = FTL / N,   LV = sqrt( Σ (L_i − AL)² / N ),   K = 100 · LV / FTL
//! ```
//!
//! It is the variance-like measure the article describes, and the only such one that makes K a
//! percentage (the variance itself is in characters squared, so K would change with the page's
//! length). Equivalently K = 100 · CV / N, CV being the coefficient of variation of the lengths:
//! many children of similar length give a small K (stop), one child holding everything gives
//! K = 100 · sqrt(N − 1) / N (at least 5% up to about 400 children: descend).
//!
//! # What counts, and the choices where the article is vague
//!
//! - Length is "clear text": visible characters with whitespace collapsed ([`NodeStats`]
//!   `text_chars`). Hidden elements (`hidden`, `display: none`, script, template, …) and
//!   comments are not children at all, and neither are whitespace-only text nodes or elements
//!   with no visible text: they hold no part of the text, and counting them as children of
//!   length 0 would make source indentation and empty spacer `<div>`s decide the spread. A
//!   literal port counts them; we treat that as a bug.
//! - Ties for the longest child go to the first in document order.
//! - The descent stops above phrasing content: when the child with the most text is a text
//!   node or an inline element (`a`, `em`, `span`, `b`, …), the current node is the result. The
//!   article's units are blocks ("td", "p"); going on would return a run of words between two
//!   links, half a sentence, as the page's content. A literal port does that on most article
//!   pages, whose paragraphs are split by links and emphasis into runs of uneven length.
//! - No `<body>` or no text: nothing is removed.
//!
//! [`NodeStats`]: crate::dom::NodeStats

use markup5ever::local_name;

use super::keep_only;
use crate::dom::{NodeId, NodeKind, Ns, Tree};

/// Parameters, defaulting to the article's values.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The stop value for K, in percent: below it the text is spread evenly over the children
    /// and the descent stops. The article's value is 5.
    pub stop_percent: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { stop_percent: 5.0 }
    }
}

/// Keeps the subtree the descent stops at, removes the rest (contract in
/// [`super::algorithm`]).
pub fn extract(tree: &mut Tree, params: &Params) {
    if let Some(found) = find(tree, params) {
        keep_only(tree, &[found]);
    }
}

/// The node the descent stops at, without removing anything; `None` when the page has no body
/// or no visible text.
pub fn find(tree: &Tree, params: &Params) -> Option<NodeId> {
    let body = tree.body()?;
    if tree.stats(body).text_chars == 0 {
        return None;
    }
    let mut current = body;
    loop {
        let spread = Spread::of(tree, current);
        let Some(longest) = spread.longest else {
            return Some(current); // a leaf, or nothing below holds text
        };
        if spread.count > 1 && spread.k_percent() < params.stop_percent {
            return Some(current);
        }
        if is_phrasing(tree, longest) {
            return Some(current); // never split a paragraph (see the module doc)
        }
        current = longest;
    }
}

/// How a node's text is spread over the children that hold some of it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spread {
    /// Children holding text (N).
    count: u32,
    /// Σ L_i (FTL).
    total: f64,
    /// Σ L_i², for the variance in one pass.
    squares: f64,
    /// The first child with the most text.
    longest: Option<NodeId>,
}

impl Spread {
    fn of(tree: &Tree, id: NodeId) -> Spread {
        let mut spread = Spread {
            count: 0,
            total: 0.0,
            squares: 0.0,
            longest: None,
        };
        let mut best = 0u32;
        for child in tree.children(id) {
            let length = holds(tree, child);
            if length == 0 {
                continue;
            }
            let l = f64::from(length);
            spread.count += 1;
            spread.total += l;
            spread.squares += l * l;
            if length > best {
                best = length;
                spread.longest = Some(child);
            }
        }
        spread
    }

    /// K = 100 · LV / FTL with LV the population standard deviation of the lengths.
    fn k_percent(&self) -> f64 {
        if self.count == 0 || self.total <= 0.0 {
            return 0.0;
        }
        let n = f64::from(self.count);
        let mean = self.total / n;
        let variance = (self.squares / n - mean * mean).max(0.0);
        100.0 * variance.sqrt() / self.total
    }
}

/// Whether the node is a text node or an element of HTML's phrasing content: the runs a
/// paragraph is made of, never a block of the page.
fn is_phrasing(tree: &Tree, id: NodeId) -> bool {
    let Some(e) = tree.element(id) else {
        return true;
    };
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("a")
                | local_name!("abbr")
                | local_name!("b")
                | local_name!("bdi")
                | local_name!("bdo")
                | local_name!("cite")
                | local_name!("code")
                | local_name!("data")
                | local_name!("del")
                | local_name!("dfn")
                | local_name!("em")
                | local_name!("font")
                | local_name!("i")
                | local_name!("ins")
                | local_name!("kbd")
                | local_name!("label")
                | local_name!("mark")
                | local_name!("q")
                | local_name!("s")
                | local_name!("samp")
                | local_name!("small")
                | local_name!("span")
                | local_name!("strike")
                | local_name!("strong")
                | local_name!("sub")
                | local_name!("sup")
                | local_name!("time")
                | local_name!("tt")
                | local_name!("u")
                | local_name!("var")
        )
}

/// The visible text a child holds: 0 for comments, hidden elements and removed nodes.
fn holds(tree: &Tree, child: NodeId) -> u32 {
    if tree.is_removed(child) || !tree.is_shown(child) {
        return 0;
    }
    match tree.kind(child) {
        NodeKind::Element(_) if tree.is_content_hidden(child) => 0,
        NodeKind::Element(_) | NodeKind::Text(_) => tree.stats(child).text_chars,
        _ => 0,
    }
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

    const P1: &str = "The first paragraph of the story says what happened and where it happened.";
    const P2: &str = "The second paragraph quotes a witness at some length, as stories often do.";
    const P3: &str = "The third paragraph gives the background that the reader needs to know.";

    #[test]
    fn stops_where_children_share_the_text_evenly() {
        // The article's own example: a layout table, a menu cell and a content cell of
        // paragraphs. The descent goes body → table → tbody → second row → content cell and
        // stops there, as the paragraphs share its text.
        let html = format!(
            "<table><tr><td colspan=2><h1>Welcome to My Web Page!</h1></td></tr>\
             <tr><td><a href=/1>Menu item 1</a><br><a href=/2>Menu item 2</a></td>\
             <td id=main><p>{P1}</p><p>{P2}</p><p>{P3}</p></td></tr></table>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n{P3}\n"));
        let tree = Tree::parse(&html);
        let found = find(&tree, &Params::default()).expect("a node");
        assert_eq!(tree.attr(found, "id"), Some("main"));
    }

    #[test]
    fn descends_through_single_children_and_into_the_longest() {
        let html = format!(
            "<div><div><div id=nav>Home News Sport</div><div id=story><p>{P1}</p><p>{P2}</p></div></div></div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn an_uneven_split_goes_on_to_the_single_text() {
        // One paragraph far longer than the other: K is high, the descent picks the long one.
        let long = format!("{P1} {P2} {P3} {P1} {P2} {P3}");
        let html = format!("<div><p>Short note.</p><p id=l>{long}</p></div>");
        assert_eq!(run(&html), format!("{long}\n"));
    }

    #[test]
    fn paragraphs_are_not_split_into_runs() {
        // The paragraph's runs are uneven (K is high), but they are words of one paragraph.
        let html = format!(
            "<div><p>Short.</p><p id=l>{P1} <a href=/x>a link</a> {P2} {P3} <em>stress</em></p></div>"
        );
        assert_eq!(run(&html), format!("{P1} a link {P2} {P3} stress\n"));
    }

    #[test]
    fn whitespace_hidden_and_empty_children_do_not_count() {
        // Many empty spacers and indentation around two even paragraphs: they would make the
        // spread look uneven and send the descent into one paragraph if they counted.
        let spacers = "<div class=clear></div>\n   ".repeat(30);
        let html = format!(
            "<div id=a>{spacers}<p>{P1}</p>\n<p>{P2}</p><p hidden>{P3} {P3} {P3} {P3}</p></div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn k_is_the_spread_as_a_percentage_of_the_text() {
        let tree = Tree::parse("<div><p>aaaa</p><p>aaaa</p></div><div>bb</div>");
        let body = tree.body().expect("body");
        let spread = Spread::of(&tree, body);
        assert_eq!((spread.count, spread.total), (2, 10.0));
        // Lengths 8 and 2: mean 5, standard deviation 3, K = 100 · 3 / 10.
        assert!((spread.k_percent() - 30.0).abs() < 1e-9);
        let even = Tree::parse("<p>abc</p><p>abc</p><p>abc</p>");
        let body = even.body().expect("body");
        assert!(Spread::of(&even, body).k_percent().abs() < 1e-9);
    }

    #[test]
    fn empty_and_textless_pages_keep_everything() {
        assert_eq!(run(""), "");
        assert_eq!(run("<div><img src=a.png></div>"), "");
        let mut tree = Tree::parse("<frameset></frameset>");
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), "");
    }

    #[test]
    fn deep_and_wide_pages_do_not_overflow() {
        let depth = 100_000;
        let html = format!("{}deep text{}", "<span>".repeat(depth), "</span>".repeat(depth));
        let mut tree = Tree::parse_with_max_depth(&html, u32::MAX);
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), "deep text\n");
        // Blocks are descended into one level at a time, without recursion.
        let depth = 3_000;
        let html = format!(
            "{}<p>{P1}</p><p>{P2}</p>{}<p>Short.</p>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        let mut tree = Tree::parse_with_max_depth(&html, u32::MAX);
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), format!("{P1}\n{P2}\n"));
        let wide = "<p>same length</p>".repeat(50_000);
        let text = run(&wide);
        assert_eq!(text.lines().count(), 50_000, "even children: the body is kept");
    }
}
