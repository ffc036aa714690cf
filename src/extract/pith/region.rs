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
//! The region replaces the block chosen by scoring when that block holds less than
//! [`Params::region_share`](super::Params) of the region's text: the page's content was not
//! one block (an article's block holds most of its region: what else the region holds is
//! comments, teasers and widgets, ruled out by names). It must read as content itself: at most
//! [`MAX_REGION_LINKS`] link text (a portal, a home page of headlines is a list of links, and
//! the declutter page shows it better) and [`MIN_REGION_CHARS`] of text outside links.

use markup5ever::local_name;

use super::score::Analysis;
use crate::dom::{NodeId, Ns, Tree};

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
    let reads = chars.saturating_sub(link_chars) >= MIN_REGION_CHARS
        && (link_chars as f32) <= MAX_REGION_LINKS * chars as f32;
    reads.then_some(Region {
        root,
        drop,
        chars,
        link_chars,
    })
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
