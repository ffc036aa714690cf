//! The page's content region: for pages whose content is not one block of prose (a shop's
//! category grid, a course listing, a company's service page of hero, features, pricing and
//! questions, a forum thread), the whole of what the page marks as its content, without the
//! regions that are never content.
//!
//! The region is the page's `<main>` (or `role=main`) when it holds at least
//! [`MIN_MAIN_SHARE`] of the page's text outside the unlikely regions, else `<body>`. Inside
//! it, what goes is what [`Analysis`] already rules out (menus, sidebars, `nav`, `aside`,
//! `footer`, cookie and sign-up boxes), and the page chrome that holds no prose: a `<header>`
//! (the site's banner, a hero's button row), a `<form>` (search boxes, filter panels, sort
//! controls), `role=search`, `<dialog>`.
//!
//! A region whose text is mostly in runs of repeated sibling cards ([`cards`],
//! [`LISTING_CARDS`]) is a listing: a shop's products, a board's jobs, a category's pages.
//! Its items' titles are links, so neither the link limit nor the least text outside links
//! applies to it; its text counts whole.
//!
//! The region replaces the block chosen by scoring when that block holds less than
//! [`Params::region_share`](super::Params) of the region's text: the page's content was not
//! one block (an article's block holds most of its region: what else the region holds is
//! comments, teasers and widgets, ruled out by names). It must read as content itself: at most
//! [`MAX_REGION_LINKS`] link text (a portal, a home page of headlines is a list of links, and
//! the declutter page shows it better) and [`MIN_REGION_CHARS`] of text outside links.

use markup5ever::local_name;

use super::score::Analysis;
use crate::dom::{Element, NodeId, Ns, Tree};

/// The least share of the page's text (outside unlikely regions) a `<main>` holds to be the
/// region; a smaller one is a page's title bar marked up as `main`.
pub const MIN_MAIN_SHARE: f32 = 0.25;

/// The most link text a region holds (a share of its text).
pub const MAX_REGION_LINKS: f32 = 0.5;

/// The least text outside links a region holds (characters).
pub const MIN_REGION_CHARS: u32 = 250;

/// The content region of a page and what goes from it.
pub struct Region {
    /// `<main>` or `<body>`.
    pub root: NodeId,
    /// Subtrees inside `root` that go: the unlikely regions and the chrome.
    pub drop: Vec<NodeId>,
    /// Visible characters that stay.
    pub chars: u32,
    /// The part of them inside links.
    pub link_chars: u32,
    /// Runs of repeated cards hold most of the region: a listing, whose items' titles are
    /// links (the link limit does not apply).
    pub listing: bool,
}

/// The page's content region, when it reads as content ([`MAX_REGION_LINKS`],
/// [`MIN_REGION_CHARS`]).
pub fn find(tree: &Tree, a: &Analysis) -> Option<Region> {
    let body = tree.body()?;
    let root = main_element(tree, a, body).unwrap_or(body);
    let end = root.index() + tree.descendants(root).len();
    let mut drop = Vec::new();
    let (mut chars, mut link_chars) = (a.chars[root.index()], a.link_chars[root.index()]);
    let mut i = root.index() + 1;
    while i < end {
        let Some(id) = tree.node_at(i) else {
            i += 1;
            continue;
        };
        let next = i + tree.descendants(id).len();
        if a.unlikely[i] {
            drop.push(id);
            i = next;
            continue;
        }
        if is_chrome(tree, a, id) {
            chars = chars.saturating_sub(a.chars[i]);
            link_chars = link_chars.saturating_sub(a.link_chars[i]);
            drop.push(id);
            i = next;
            continue;
        }
        i += 1;
    }
    let cards = cards(tree, a, root, &drop);
    let listing = cards as f32 >= LISTING_CARDS * chars as f32;
    // A listing's items are links (their titles): all its text counts, and links are no bar.
    let reads = if listing {
        chars >= MIN_REGION_CHARS
    } else {
        chars.saturating_sub(link_chars) >= MIN_REGION_CHARS
            && (link_chars as f32) <= MAX_REGION_LINKS * chars as f32
    };
    reads.then_some(Region {
        root,
        drop,
        chars,
        link_chars,
        listing,
    })
}

/// The least share of a region's text in runs of repeated cards ([`cards`]) that makes it a
/// listing. 0.5 to 0.7 gave wcxb's listings and collections the same gain (listing 0.550 →
/// 0.632, collection 0.595 → 0.627); 0.7 cost the article sets least (docs/extraction.md).
pub const LISTING_CARDS: f32 = 0.7;

/// The least number of sibling elements of one form (tag and class) that make a run of
/// cards: a listing's items, a shop's products, a thread's posts.
pub const MIN_CARDS: usize = 4;

/// Characters (outside unlikely regions and `drop`) of the runs of repeated sibling cards
/// inside `root`: per parent, the element children sharing tag and class attribute, when
/// [`MIN_CARDS`] of them or more hold text. Runs nested in a counted run are not counted
/// again. One pass over the subtree, a small table per parent.
pub fn cards(tree: &Tree, a: &Analysis, root: NodeId, drop: &[NodeId]) -> u32 {
    let end = root.index() + tree.descendants(root).len();
    let mut total = 0u32;
    let mut covered_until = 0usize; // end of the last counted run's parent
    let mut groups: Vec<(u64, usize, u32)> = Vec::new();
    let mut dropped = drop.iter().peekable();
    let mut i = root.index();
    while i < end {
        let Some(id) = tree.node_at(i) else {
            i += 1;
            continue;
        };
        let next = i + tree.descendants(id).len();
        while dropped.peek().is_some_and(|d| d.index() < i) {
            dropped.next();
        }
        if a.unlikely[i] || dropped.peek().is_some_and(|d| d.index() == i) {
            i = next;
            continue;
        }
        if i >= covered_until && tree.element(id).is_some() && a.chars[i] > 0 {
            groups.clear();
            for c in tree.children(id) {
                let ci = c.index();
                let Some(e) = tree.element(c) else { continue };
                if a.chars[ci] == 0 || a.unlikely[ci] {
                    continue;
                }
                if !is_card(tree, a, c, e) {
                    continue;
                }
                let sig = signature(e.name.as_ref(), tree.attr(c, "class").unwrap_or(""));
                match groups.iter_mut().find(|g| g.0 == sig) {
                    Some(g) => {
                        g.1 += 1;
                        g.2 += a.chars[ci];
                    }
                    None => groups.push((sig, 1, a.chars[ci])),
                }
            }
            let run: u32 = groups
                .iter()
                .filter(|g| g.1 >= MIN_CARDS)
                .map(|g| g.2)
                .sum();
            if run > 0 {
                total += run;
                covered_until = next;
            }
        }
        i += 1;
    }
    total
}

/// Whether a child can be a card: a container (not a paragraph, a heading or inline text)
/// that links somewhere (a listing's item opens its page) and holds more than one text (a
/// title and a line, a price, a date): a menu's item is one link and nothing else. The look
/// for the second text is bounded ([`CARD_LOOKAHEAD`]), so the pass stays linear.
fn is_card(tree: &Tree, a: &Analysis, id: NodeId, e: &Element) -> bool {
    let container = matches!(
        e.name,
        local_name!("div")
            | local_name!("li")
            | local_name!("article")
            | local_name!("section")
            | local_name!("tr")
            | local_name!("dl")
    );
    container
        && e.ns == Ns::Html
        && a.link_chars[id.index()] > 0
        && tree
            .descendants(id)
            .take(CARD_LOOKAHEAD)
            .filter(|&d| tree.text(d).is_some() && tree.stats(d).text_chars > 0)
            .nth(1)
            .is_some()
}

/// How many nodes of a card [`is_card`] looks at for its second text.
const CARD_LOOKAHEAD: usize = 48;

/// A hash of an element's tag and class attribute (FNV-1a).
fn signature(tag: &str, class: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in tag.bytes().chain([b' ']).chain(class.trim().bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The `<main>` or `role=main` element holding the most text, when it holds
/// [`MIN_MAIN_SHARE`] of the page's.
fn main_element(tree: &Tree, a: &Analysis, body: NodeId) -> Option<NodeId> {
    let page = a.chars[body.index()];
    let end = body.index() + tree.descendants(body).len();
    let best = (body.index() + 1..end)
        .filter(|&i| !a.unlikely[i] && a.chars[i] > 0)
        .filter_map(|i| tree.node_at(i))
        .filter(|&id| {
            tree.element(id).is_some_and(|e| {
                e.ns == Ns::Html
                    && (e.name == local_name!("main")
                        || tree
                            .attr(id, "role")
                            .is_some_and(|r| r.eq_ignore_ascii_case("main")))
            })
        })
        .max_by_key(|id| a.chars[id.index()])?;
    (a.chars[best.index()] as f32 >= MIN_MAIN_SHARE * page as f32).then_some(best)
}

/// Page chrome without prose: a `<header>`, a `<form>`, a search landmark, a dialog.
fn is_chrome(tree: &Tree, a: &Analysis, id: NodeId) -> bool {
    let Some(e) = tree.element(id) else {
        return false;
    };
    if e.ns != Ns::Html {
        return false;
    }
    let chrome = match e.name {
        local_name!("header") | local_name!("form") => a.prose[id.index()] == 0,
        local_name!("dialog") => true,
        _ => tree
            .attr(id, "role")
            .is_some_and(|r| r.eq_ignore_ascii_case("search")),
    };
    chrome
}
