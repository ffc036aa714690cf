//! The link-list remover: blocks that are mostly links (menus, link farms, tag clouds, footers of
//! links, grids of teasers) are navigation, not content.
//!
//! Crunch's measure, kept: a block's ratio is links ÷ (non-link characters ÷ 5), the number of
//! links per word of other text; above the threshold the block is a link list, and so is a
//! block with links and no other text. Crunch judged table cells only, when layouts were tables;
//! pith judges the blocks pages lay out with today (see [`Containers`]).
//!
//! # Two thresholds
//!
//! Inside the page's main content (the smallest region holding most of its prose, see
//! [`super::prose`]) the threshold is Crunch's, 0.25: fewer than 20 characters of other text per
//! link. Short paragraphs of an article can carry a link in a sentence and must stay. Outside
//! it, in sidebars, teaser grids and the areas around the article, a stricter threshold applies
//! ([`Settings::strict_link_ratio`], 0.05: a link or more per sentence of about 20 words):
//! a headline with a one-line teaser is navigation there, and there is no article to lose.
//!
//! # Which block is judged
//!
//! The walk is top-down, so the largest link-dense block goes at once: a whole menu with its
//! headings and sub-menus, not its lists one by one leaving the headings behind. A large
//! block's average can hide its parts, though: a wrapper around the article and its menus may
//! come out link-dense on a page with big menus and a short article. So a link-dense block is
//! removed whole only when nothing in it looks like content; otherwise the walk descends and
//! judges its parts. Content, here:
//!
//! - a paragraph with [`Settings::protect_paragraph_chars`] characters of non-link text or more
//!   (two sentences); menus and link lists have none;
//! - the main content, or a block holding it;
//! - more than half of the page's non-link text: whatever it is, it is what the page is about
//!   (link text does not count: on a page with a short article, a big menu may hold most of
//!   the characters);
//! - an element a site rule keeps.
//!
//! `<nav>` and `role=navigation` say what they are: when link-dense they go whole, paragraph or
//! not (the other protections still hold). `<body>`, `<main>`, `<article>`, `<p>` and
//! `role=main` are never judged, only descended into; headings inside a removed block go with
//! it.
//!
//! Counts are over what earlier removers left ([`super::kept_stats`]), and the walk judges a block
//! before its parts, so one pass over the tree decides everything. Nothing recurses.

use markup5ever::local_name;

use super::prose::{main_content, paragraphs, Paragraphs};
use super::{non_link_chars, Containers, Keep, KeptStats, Settings};
use crate::dom::{Element, NodeId, NodeStats, Ns, Tree};

/// Removes the link-dense blocks of the page's body; returns the blocks removed, outermost
/// only, in document order.
pub fn remove(tree: &mut Tree, settings: &Settings, keep: &Keep) -> Vec<NodeId> {
    let paragraphs = paragraphs(tree);
    remove_with(tree, settings, keep, &paragraphs)
}

/// [`remove`] with the page's paragraph figures at hand (a [`super::prose::Current`] kept
/// through the removers before this one).
pub fn remove_with(tree: &mut Tree, settings: &Settings, keep: &Keep, paragraphs: &Paragraphs) -> Vec<NodeId> {
    let found = find_with(tree, settings, keep, paragraphs);
    for &id in &found {
        tree.remove(id);
    }
    found
}

/// The blocks [`remove`] would remove, without removing them.
pub fn find(tree: &Tree, settings: &Settings, keep: &Keep) -> Vec<NodeId> {
    find_with(tree, settings, keep, &paragraphs(tree))
}

fn find_with(tree: &Tree, settings: &Settings, keep: &Keep, paragraphs: &Paragraphs) -> Vec<NodeId> {
    let Some(body) = tree.body() else {
        return Vec::new();
    };
    let kept = KeptStats::of(tree);
    let main = main_content(tree, body, paragraphs);
    let judge = Judge {
        settings,
        keep,
        kept: &kept,
        largest: &paragraphs.largest,
        main: main.index()..main.index() + tree.descendants(main).len(),
        page: kept.get(body),
    };
    let mut found = Vec::new();
    let mut walk = tree.walk(body);
    while let Some(id) = walk.next() {
        let Some(e) = tree.element(id) else { continue };
        if id == body {
            continue;
        }
        if tree.is_content_hidden(id) || !tree.is_shown(id) {
            walk.skip_children(); // nothing in it shows, so nothing in it counts
        } else if judge.is_link_list(tree, id, e) {
            found.push(id);
            walk.skip_children();
        }
    }
    found
}

/// The decision for one block, with what it needs at hand.
struct Judge<'a> {
    settings: &'a Settings,
    keep: &'a Keep,
    kept: &'a KeptStats<'a>,
    /// Per node, the largest paragraph in it ([`super::prose::Paragraphs::largest`]).
    largest: &'a [u32],
    /// The node indices of the main content's subtree ([`main_content`]).
    main: std::ops::Range<usize>,
    /// The body's kept statistics.
    page: NodeStats,
}

impl Judge<'_> {
    fn is_link_list(&self, tree: &Tree, id: NodeId, e: &Element) -> bool {
        let nav = self.settings.nav_hints && is_navigation(tree, id, e);
        if !nav && !is_candidate(tree, id, e, self.settings.containers) {
            return false;
        }
        let stats = &self.kept.get(id);
        let ratio = self.threshold(id);
        if !is_link_dense(stats, ratio) || self.keep.contains(id) || self.holds_main(tree, id) {
            return false;
        }
        // More than half of the page's non-link text is what the page is about.
        if u64::from(non_link_chars(stats)) * 2 > u64::from(non_link_chars(&self.page)) {
            return false;
        }
        nav || self.largest[id.index()] < self.settings.protect_paragraph_chars
    }

    /// Whether the block is the main content or holds it.
    fn holds_main(&self, tree: &Tree, id: NodeId) -> bool {
        let start = id.index();
        start <= self.main.start && self.main.start < start + tree.descendants(id).len()
    }

    /// The threshold for a block: Crunch's inside the main content, the strict one elsewhere
    /// (sidebars, teaser grids, the areas around the article).
    fn threshold(&self, id: NodeId) -> f64 {
        let loose = self.settings.link_ratio;
        if self.main.contains(&id.index()) {
            loose
        } else {
            self.settings.strict_link_ratio.min(loose)
        }
    }
}

/// Crunch's test: links ÷ (non-link characters ÷ 5) above `ratio`; a block with links and no
/// other text is a link list whatever the ratio.
pub fn is_link_dense(stats: &NodeStats, ratio: f64) -> bool {
    if stats.links == 0 {
        return false;
    }
    let words = f64::from(non_link_chars(stats)) / 5.0;
    f64::from(stats.links) > ratio * words
}

/// Whether the element is one the link-list remover judges under `containers`.
fn is_candidate(tree: &Tree, id: NodeId, e: &Element, containers: Containers) -> bool {
    if e.ns != Ns::Html || has_role(tree, id, "main") {
        return false;
    }
    match containers {
        Containers::Cells => matches!(e.name, local_name!("td") | local_name!("th")),
        Containers::Blocks => matches!(
            e.name,
            local_name!("td")
                | local_name!("th")
                | local_name!("div")
                | local_name!("ul")
                | local_name!("ol")
                | local_name!("dl")
                | local_name!("dir")
                | local_name!("menu")
                | local_name!("nav")
                | local_name!("aside")
                | local_name!("section")
                | local_name!("header")
                | local_name!("footer")
                | local_name!("table")
                | local_name!("center")
        ),
    }
}

/// `<nav>` or an element with `role=navigation`: navigation by the page's own account.
fn is_navigation(tree: &Tree, id: NodeId, e: &Element) -> bool {
    (e.ns == Ns::Html && e.name == local_name!("nav")) || has_role(tree, id, "navigation")
}

/// Whether the element's `role` attribute lists `role` (ASCII case ignored).
pub fn has_role(tree: &Tree, id: NodeId, role: &str) -> bool {
    has_any_role(tree, id, &[role])
}

/// Whether the element's `role` attribute lists any of `roles` (ASCII case ignored).
pub fn has_any_role(tree: &Tree, id: NodeId, roles: &[&str]) -> bool {
    tree.attr_named(id, &local_name!("role")).is_some_and(|r| lists_any_role(r, roles))
}

/// Whether a `role` attribute's value lists any of `roles` (ASCII case ignored).
pub fn lists_any_role(value: &str, roles: &[&str]) -> bool {
    value
        .split_ascii_whitespace()
        .any(|t| roles.iter().any(|role| t.eq_ignore_ascii_case(role)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        super::super::PresetName::Automatic.settings()
    }

    /// The ids (`id` attributes) of the blocks removed from `html`.
    fn removed_ids(html: &str, settings: &Settings) -> Vec<String> {
        let mut tree = Tree::parse(html);
        let removed = remove(&mut tree, settings, &Keep::none());
        removed
            .iter()
            .map(|&id| tree.attr(id, "id").unwrap_or("?").to_string())
            .collect()
    }

    const PROSE: &str = "This is a paragraph of article text that runs long enough to be \
        prose, with two full sentences. It says something a reader came to read, not a menu.";

    macro_rules! removes {
        ($($name:ident: $html:expr => [$($id:expr),*];)*) => {$(
            #[test]
            fn $name() {
                let expected: Vec<String> = vec![$($id.to_string()),*];
                assert_eq!(removed_ids(&$html, &settings()), expected);
            }
        )*};
    }

    removes! {
        menu_goes_whole: format!(
            "<div id=menu><h3>Sections</h3><ul><li><a href=/a>World</a><li><a href=/b>Sport</a></ul></div><p>{PROSE}</p>"
        ) => ["menu"];
        prose_with_a_link_stays: format!("<div id=a><p>{PROSE} <a href=/x>More</a></p></div>") => [];
        wrapper_is_descended_into: format!(
            "<div id=wrap><ul id=nav>{}</ul><div id=story><p>{PROSE}</p></div></div>",
            "<li><a href=/x>link text here</a></li>".repeat(40)
        ) => ["nav"];
        links_without_text_go: format!("<div id=share><a href=/f><img src=f.png></a><a href=/t></a></div><p>{PROSE}</p>") => ["share"];
        ratio_at_threshold_stays: format!(
            // 1 link, 20 non-link characters: 1 / (20 / 5) = 0.25, not above.
            "<div id=d>abcdefghij0123456789<a href=/x>x</a></div><p>{PROSE}</p>"
        ) => [];
        ratio_above_threshold_goes: format!(
            "<div id=d>abcdefghij012345678<a href=/x>x</a></div><p>{PROSE}</p>"
        ) => ["d"];
        nav_goes_despite_a_paragraph: format!(
            "<nav id=n><p>{PROSE}</p>{}</nav><p>{PROSE}</p><p>{PROSE}</p>",
            "<a href=/x>x</a>".repeat(30)
        ) => ["n"];
        block_with_most_of_the_text_stays: "<div id=all><a href=/1>one</a> and <a href=/2>two</a></div>" => [];
        paragraphs_and_inline_links_are_not_candidates:
            format!("<p id=p><a href=/1>one</a> <a href=/2>two</a></p><p>{PROSE}</p>") => [];
        main_and_role_main_are_descended:
            format!("<div role=main id=m><div id=l><a href=/1>one</a></div><p>{PROSE}</p></div>") => ["l"];
        table_cells_judged_one_by_one: format!(
            "<table id=t><tr><td id=links><a href=/1>one</a><br><a href=/2>two</a><td id=text>{PROSE}</table>"
        ) => ["links"];
        hidden_links_do_not_count: format!(
            "<div id=d>short text here, twenty plus<span hidden><a href=/1>a</a><a href=/2>b</a></span><a href=/3>c</a></div><p>{PROSE}</p>"
        ) => [];
    }

    #[test]
    fn strict_outside_the_main_content_lenient_inside() {
        let html = format!(concat!(
            "<div id=side><div id=teaser><a href=/1>Headline one</a> A one-line teaser of about sixty characters, no more.</div></div>",
            "<div id=story><p>{p}</p><p>{p}</p>",
            "<div id=inline>A short line with <a href=/x>a link</a> in it, forty or so.</div></div>"
        ), p = PROSE);
        assert_eq!(removed_ids(&html, &settings()), ["side"]);
        let lenient = Settings {
            strict_link_ratio: 0.25,
            ..settings()
        };
        assert!(removed_ids(&html, &lenient).is_empty());
    }

    #[test]
    fn cells_only_leaves_divs_alone() {
        let html = format!(
            "<div id=menu><a href=/a>A</a><a href=/b>B</a></div><table><tr><td id=c><a href=/c>C</a></table><p>{PROSE}</p>"
        );
        let gentle = Settings {
            containers: Containers::Cells,
            nav_hints: false,
            ..settings()
        };
        assert_eq!(removed_ids(&html, &gentle), ["c"]);
    }

    #[test]
    fn kept_elements_are_descended_into() {
        let html = format!(
            "<div id=side><div id=inner><a href=/a>A</a></div><a href=/b>B</a></div><p>{PROSE}</p>"
        );
        let mut tree = Tree::parse(&html);
        let inner = tree
            .descendants(tree.root())
            .find(|&id| tree.attr(id, "id") == Some("inner"))
            .expect("inner");
        let keep = Keep::from_nodes(&tree, [inner]);
        let removed = remove(&mut tree, &settings(), &keep);
        assert!(removed.is_empty(), "kept element and its ancestors stay");
        assert!(!tree.is_removed(inner));
    }

    #[test]
    fn earlier_removals_are_not_counted() {
        // Once the prose is removed, the remaining block is all links.
        let html = format!("<div id=d><p id=p>{PROSE}</p><a href=/1>one</a></div><p>{PROSE}</p>");
        let mut tree = Tree::parse(&html);
        assert!(find(&tree, &settings(), &Keep::none()).is_empty());
        let p = tree
            .descendants(tree.root())
            .find(|&id| tree.attr(id, "id") == Some("p"))
            .expect("p");
        tree.remove(p);
        let found = find(&tree, &settings(), &Keep::none());
        assert_eq!(found.len(), 1);
        assert_eq!(tree.attr(found[0], "id"), Some("d"));
    }

    #[test]
    fn deep_trees_do_not_overflow() {
        let depth = 100_000;
        let html = format!(
            "{}<a href=/x>x</a>{}",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        let mut tree = Tree::parse(&html);
        let removed = remove(&mut tree, &settings(), &Keep::none());
        assert!(removed.len() <= 1);
    }
}
