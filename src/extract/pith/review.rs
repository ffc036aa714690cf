//! A second look at the choice: does the rest of the page hold far more prose than what was
//! chosen? The failure this guards against is the confident wrong one: a short block (an
//! author's bio, the legal footer, an affiliate disclaimer, a widget's prompt) returned while
//! an article ten times longer sits beside it.
//!
//! The rest of the page is cut into regions along the path from the choice up to `<body>`:
//! every sibling of the chosen blocks and of their ancestors is one region, before or after
//! the choice in document order. Each region's prose (non-link characters of paragraphs of
//! prose, [`is_prose`]) is compared with the choice's:
//!
//! - A region *before* the choice holding [`RATIO_BEFORE`] times its prose or more means the
//!   choice sits after the main text, where bios, footers, disclaimers and related lists are:
//!   the article is looked for inside that region instead.
//! - A region *after* the choice holding [`RATIO_AFTER`] times its prose or more (a higher
//!   bar: teaser lists and comment threads follow articles) also moves the choice there: a
//!   disclaimer or a teaser box above a review is the case.
//! - A region before the choice whose prose only counts when the names that made it an
//!   unlikely region are ignored (the article's wrapper named like clutter) cannot be trusted
//!   either way: the reading page falls back to the declutter page, which keeps both.
//!
//! Before those comparisons, the page's own statement comes first: a choice outside the
//! `<article>` that holds the page's title heading (the anchor, see [`super::anchor`]), or
//! outside the page's only `<article>`, while that article holds at least
//! [`MIN_ANCHOR_PROSE`] of prose and half as much as the choice, is a block beside the story
//! (a footer, a bio, a related list): the choice moves into the article.
//!
//! Only regions with at least [`MIN_REGION_PROSE`] of prose count: a page of short posts is
//! not a page with a hidden article. On both development sets (311 pages) no region before a
//! choice holds more than 1.6 times its prose (2.0 with the regions named like clutter
//! counted), and none after it more than 2.4 times: the bars sit above what those choices
//! show, and below the ratios the failures show (ten to one).

use super::score::{is_prose, Analysis};
use crate::dom::{NodeId, Tree};

/// A region before the choice with this many times its prose holds the article.
pub const RATIO_BEFORE: u32 = 3;

/// A region after the choice with this many times its prose holds the article.
pub const RATIO_AFTER: u32 = 5;

/// The least prose (characters) of the article holding the title heading that makes a
/// choice outside it wrong (when it holds half the choice's prose or more).
pub const MIN_ANCHOR_PROSE: u32 = 250;

/// The least prose (characters) of a region that can outweigh the choice.
pub const MIN_REGION_PROSE: u32 = 500;

/// What the second look decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// No region outweighs the choice.
    Keep,
    /// The choice lies outside the `<article>` the page states is its story (the one holding
    /// the title heading, or the only one), which holds prose: choose inside it.
    Anchor(NodeId),
    /// This region, before or after the choice, holds far more prose: choose inside it.
    Move(NodeId),
    /// A region that names mark as clutter holds far more prose than the choice.
    Doubt,
}

/// Compares the choice (`roots`, in document order) with the regions around it.
pub fn review(tree: &Tree, a: &Analysis, roots: &[NodeId]) -> Review {
    let (Some(&first), Some(&last)) = (roots.first(), roots.last()) else {
        return Review::Keep;
    };
    let chosen: u32 = roots.iter().map(|r| a.prose[r.index()]).sum();
    if let Some(anchor) = a.stated.or(a.anchor) {
        let apart = roots
            .iter()
            .all(|&r| !tree.holds(anchor, r) && !tree.holds(r, anchor));
        let prose = a.prose[anchor.index()];
        if apart && prose >= MIN_ANCHOR_PROSE && u64::from(prose) * 2 >= u64::from(chosen) {
            return Review::Anchor(anchor);
        }
    }
    let last_end = last.index() + tree.descendants(last).len();
    let body = tree.body();
    // The heaviest region before and after, by prose; the heaviest before by visible
    // non-link text, the bound on what its prose can be once names are ignored.
    let mut before: Option<(u32, NodeId)> = None;
    let mut after: Option<(u32, NodeId)> = None;
    let mut hidden: Option<(u32, NodeId)> = None;
    let mut cur = first;
    while let Some(p) = tree.parent(cur) {
        if Some(cur) == body || tree.element(p).is_none() {
            break;
        }
        for c in tree.children(p) {
            let i = c.index();
            let is_before = i < first.index();
            if c == cur || !(is_before || i >= last_end) || roots.contains(&c) {
                continue;
            }
            let prose = a.prose[i];
            let slot = if is_before { &mut before } else { &mut after };
            if slot.is_none_or(|(b, _)| prose > b) {
                *slot = Some((prose, c));
            }
            if is_before && a.unlikely[i] && by_name(tree, a, c) {
                let s = tree.stats(c);
                let text = s.text_chars.saturating_sub(s.link_text_chars);
                if hidden.is_none_or(|(b, _)| text > b) {
                    hidden = Some((text, c));
                }
            }
        }
        cur = p;
    }
    let outweighs = |prose: u32, ratio: u32| {
        prose >= MIN_REGION_PROSE && u64::from(prose) >= u64::from(chosen) * u64::from(ratio)
    };
    if let Some((_, region)) = before.filter(|&(p, _)| outweighs(p, RATIO_BEFORE)) {
        return Review::Move(region);
    }
    if let Some((_, region)) = after.filter(|&(p, _)| outweighs(p, RATIO_AFTER)) {
        return Review::Move(region);
    }
    if let Some((_, region)) = hidden.filter(|&(t, _)| outweighs(t, RATIO_BEFORE)) {
        if outweighs(raw_prose(tree, a, region), RATIO_BEFORE) {
            return Review::Doubt;
        }
    }
    Review::Keep
}

/// Whether names alone made the region unlikely: not its tag (`nav`, `aside`, `footer`), not
/// an ARIA role (a dialog's text is a cookie notice, not a hidden article).
fn by_name(tree: &Tree, a: &Analysis, region: NodeId) -> bool {
    a.hints[region.index()].is_unlikely()
        && tree.attr(region, "role").is_none()
        && !matches!(tree.tag(region), Some("nav" | "aside" | "footer"))
}

/// The prose of a region counted without the unlikely marks: its visible paragraphs of
/// prose, by the same test as [`is_prose`]. One pass over the region.
fn raw_prose(tree: &Tree, a: &Analysis, region: NodeId) -> u32 {
    let start = region.index();
    let len = tree.descendants(region).len();
    // (characters, link characters) of each block's own text, by its offset in the region.
    let mut own = vec![(0u32, 0u32); len];
    for i in start..start + len {
        let Some(id) = tree.node_at(i) else { continue };
        if tree.text(id).is_none() || !tree.is_shown(id) {
            continue;
        }
        let Some(slot) = (a.block_of[i] as usize)
            .checked_sub(start)
            .and_then(|b| own.get_mut(b))
        else {
            continue;
        };
        let chars = tree.stats(id).text_chars;
        slot.0 += chars;
        if tree.is_in_link(id) {
            slot.1 += chars;
        }
    }
    own.iter()
        .map(|&(chars, link_chars)| {
            let o = super::score::Own {
                chars,
                link_chars,
                ..Default::default()
            };
            if is_prose(&o) {
                chars - link_chars
            } else {
                0
            }
        })
        .sum()
}
