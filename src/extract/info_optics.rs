//! `info-optics`: the hybrid of the comparative study, after Qureshi & Memon, "Hybrid model of
//! content extraction" (Journal of Computer and System Sciences, 2012). Two models in turn:
//!
//! 1. **Statistical usefulness**: the page's segments are scored by the statistical model of
//!    [`super::density`] (text and hypertext quantity as normalised deviations, link density);
//!    the segments it scores as content are the *significant* ones.
//! 2. **Formatting likeness**: a segment formatted like a significant one is content too. The
//!    short paragraph that closes an article, a one-line quote, a sub-heading: each fails the
//!    statistics on its own but looks exactly like the article's long paragraphs, while a
//!    sidebar's blurb of the same length looks like the sidebar.
//!
//! Every other segment loses what it holds directly, as in [`super::density`] (nested blocks
//! are judged on their own).
//!
//! # The formatting signature (our reading of "fonts, styles and position")
//!
//! The study compares the nodes' fonts, styles and positions as a browser renders them. pith has
//! no style engine, so it compares what decides them in the markup: a page's style sheet
//! formats an element by its tag and class and by those of its ancestors. A segment's signature
//! is a hash of
//!
//! - the tag path from `<body>` down to the segment, each element with its `class` attribute
//!   (the position in the page's layout and the CSS rules that can reach it), and
//! - the segment's own inline `style` attribute.
//!
//! Two segments with the same signature get the same fonts and styles from any style sheet that
//! selects on tags and classes, the usual case. Ids are left out: they are unique by design and
//! would make every signature different. The hash is 64-bit FNV-1a, computed in one forward pass
//! (each node's from its parent's), so the cost is linear with no per-node allocation.
//!
//! [`Params`] are the statistical model's ([`super::density::Params`]); the likeness test has
//! none.

use std::collections::HashSet;

use super::density::{self, remove_own_content, Segments};
use crate::dom::{NodeId, Tree};

/// Parameters, defaulting to the published values: those of the statistical model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// The statistical model's decision rule.
    pub statistics: density::Params,
}

/// Removes the segments that are neither significant nor formatted like a significant one
/// (contract in [`super::algorithm`]).
pub fn extract(tree: &mut Tree, params: &Params) {
    let Some(body) = tree.body() else { return };
    let segments = Segments::of(tree, body);
    let keep = content(tree, body, &segments, params);
    let doomed: Vec<NodeId> = segments
        .ids
        .iter()
        .zip(&keep)
        .filter(|(_, &keep)| !keep)
        .map(|(&id, _)| id)
        .collect();
    remove_own_content(tree, &segments, &doomed);
}

/// The hybrid's verdict per segment: significant, or formatted like a significant segment.
fn content(tree: &Tree, body: NodeId, segments: &Segments, params: &Params) -> Vec<bool> {
    let significant = segments.content(&params.statistics);
    let paths = path_signatures(tree, body);
    let signature = |id: NodeId| {
        let style = tree.attr(id, "style").unwrap_or("");
        fnv(paths[id.index()] ^ 0xff, style.as_bytes())
    };
    let useful: HashSet<u64> = segments
        .ids
        .iter()
        .zip(&significant)
        .filter(|(_, &s)| s)
        .map(|(&id, _)| signature(id))
        .collect();
    segments
        .ids
        .iter()
        .zip(&significant)
        .map(|(&id, &s)| s || useful.contains(&signature(id)))
        .collect()
}

/// Per node: the hash of the tag path from `body` (each element's name and class) down to it.
fn path_signatures(tree: &Tree, body: NodeId) -> Vec<u64> {
    let mut paths = vec![FNV_OFFSET; tree.len()];
    for id in tree.descendants(body) {
        let parent = if id == body {
            FNV_OFFSET
        } else {
            tree.parent(id).map_or(FNV_OFFSET, |p| paths[p.index()])
        };
        paths[id.index()] = match tree.element(id) {
            Some(e) => {
                let named = fnv(fnv(parent, b"/"), e.name.as_bytes());
                let class = tree.attr(id, "class").unwrap_or("");
                fnv(fnv(named, b"."), class.as_bytes())
            }
            None => parent,
        };
    }
    paths
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// Continues a 64-bit FNV-1a hash `state` over `bytes`.
fn fnv(state: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(state, |h, &b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME))
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

    const P1: &str = "The orchestra played the whole symphony without a break, and the hall \
        stayed silent for a long moment before the applause began.";
    const P2: &str = "It was the first concert in the restored building, which had been closed \
        since the flood damaged its roof and most of the seats.";

    fn page() -> String {
        format!(
            "<div class=story><p>{P1}</p><p>{P2}</p><p>Tickets sold out.</p></div>\
             <div class=side><p>Weather: sunny.</p></div>\
             <div class=related>{}</div>",
            "<a href=/r>A related story about music</a> ".repeat(10)
        )
    }

    #[test]
    fn short_paragraphs_formatted_like_the_article_stay() {
        // The statistical model alone drops both short lines ...
        let mut tree = Tree::parse(&page());
        density::extract(&mut tree, &density::Params::default());
        assert_eq!(render(&tree), format!("{P1}\n{P2}\n"));
        // ... the hybrid keeps the one formatted like the article's paragraphs.
        assert_eq!(run(&page()), format!("{P1}\n{P2}\nTickets sold out.\n"));
    }

    #[test]
    fn classes_and_inline_styles_are_part_of_the_signature() {
        let html = format!(
            "<div class=story><p>{P1}</p><p>{P2}</p><p class=note>Tickets sold out.</p>\
             <p style='font-size:small'>Photo: archive.</p></div><div class=related>{}</div>",
            "<a href=/r>A related story about music</a> ".repeat(10)
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
        let tree = Tree::parse("<div class='a b'><p>x</p></div><div class='a'><p>y</p></div>");
        let body = tree.body().expect("body");
        let paths = path_signatures(&tree, body);
        let ps: Vec<_> = tree.descendants(body).filter(|&id| tree.tag(id) == Some("p")).collect();
        assert_ne!(paths[ps[0].index()], paths[ps[1].index()]);
    }

    #[test]
    fn odd_pages_do_not_panic() {
        assert_eq!(run(""), "");
        assert_eq!(run("<frameset></frameset>"), "");
        assert_eq!(run("only loose text"), "only loose text\n");
        let depth = 100_000;
        let html = format!("{}{P1}{}", "<span>".repeat(depth), "</span>".repeat(depth));
        let mut tree = Tree::parse_with_max_depth(&html, u32::MAX);
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), format!("{P1}\n"));
    }
}
