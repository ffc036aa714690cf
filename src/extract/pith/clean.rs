//! Boilerplate inside the chosen content: what an article's container holds besides the
//! article.
//!
//! One bottom-up pass over each chosen subtree (a reverse loop over its run of the arena, so a
//! block is judged after its children, with the counts of the children that stayed). A block
//! goes when:
//!
//! - it is a region that is never the article ([`Hints::is_unlikely`]: comments, sharing,
//!   related links, newsletters, menus, `nav`, `aside`);
//! - it is not article text by its tag: `footer` (outside a quote), a `header` without
//!   prose (the title, byline and date the reading page shows apart), forms and their controls,
//!   embedded frames and objects, dialogs;
//! - it is a heading whose names say clutter ("Related stories", "Comments"), or a sharing or
//!   byline/credit element with little text;
//! - it is a container (div, section, list, table, header) with fewer than ten commas, that is,
//!   not a run of prose, and looks like clutter by its counts: more than a fifth link text (half
//!   for a container named as content or a list), more list items than paragraphs, more controls than a
//!   third of its paragraphs, more than one image with fewer than two paragraphs per image
//!   (outside figures), or less than [`MIN_BLOCK`] characters with no single image and not a
//!   heading. These are the conditional rules that long experience with reading modes has
//!   settled on; prose protects a block because clutter does not come in sentences.

use markup5ever::local_name;

use super::hints::Hints;
use super::score::Analysis;
use crate::dom::{Element, NodeId, NodeKind, Ns, Tree};

/// A container with less text than this (characters), no image and no heading is debris: an
/// "Advertisement" label, an empty wrapper, a lone icon caption.
pub const MIN_BLOCK: u32 = 25;

/// The counts of a subtree's kept part that the conditional rules read.
#[derive(Clone, Copy, Default, Debug)]
struct Counts {
    chars: u32,
    link_chars: u32,
    commas: u32,
    paragraphs: u32,
    items: u32,
    images: u32,
    controls: u32,
    embeds: u32,
    heading_chars: u32,
    time_chars: u32,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.chars += o.chars;
        self.link_chars += o.link_chars;
        self.commas += o.commas;
        self.paragraphs += o.paragraphs;
        self.items += o.items;
        self.images += o.images;
        self.controls += o.controls;
        self.embeds += o.embeds;
        self.heading_chars += o.heading_chars;
        self.time_chars += o.time_chars;
    }

    fn link_density(&self) -> f32 {
        if self.chars == 0 {
            0.0
        } else {
            self.link_chars as f32 / self.chars as f32
        }
    }
}

/// What cleaning decided: the blocks to remove and the text that stays.
#[derive(Debug, Default)]
pub struct Cleaning {
    /// Blocks to remove, inner ones before the blocks holding them.
    pub drop: Vec<NodeId>,
    /// Visible characters left in the content.
    pub chars: u32,
    /// The part of `chars` inside links.
    pub link_chars: u32,
}

/// Judges every block inside `roots` (the roots themselves stay).
pub fn clean(tree: &Tree, a: &Analysis, roots: &[NodeId]) -> Cleaning {
    let mut out = Cleaning::default();
    let prose: u32 = roots.iter().map(|r| a.prose[r.index()]).sum();
    let judge = Judge { a, prose };
    let mut counts: Vec<Counts> = Vec::new();
    let mut dropped: Vec<bool> = Vec::new();
    for &root in roots {
        let start = root.index();
        let len = tree.descendants(root).len();
        counts.clear();
        counts.resize(len, Counts::default());
        dropped.clear();
        dropped.resize(len, false);
        for i in (start..start + len).rev() {
            let Some(id) = tree.node_at(i) else { continue };
            let mut c = counts[i - start];
            match tree.kind(id) {
                NodeKind::Text(span) if tree.is_shown(id) => {
                    c.chars = tree.stats(id).text_chars;
                    if tree.is_in_link(id) {
                        c.link_chars = c.chars;
                    }
                    c.commas = commas(tree.str(*span));
                }
                NodeKind::Element(e) => {
                    add_own(tree, id, e, &mut c);
                    let drop = judge.should_drop(tree, id, e, &c)
                        || introduces_dropped(tree, id, e, start, &dropped);
                    if i != start && drop {
                        dropped[i - start] = true;
                        if !tree.parent(id).is_some_and(|p| a.unlikely[p.index()]) {
                            out.drop.push(id);
                        }
                        continue;
                    }
                }
                _ => {}
            }
            counts[i - start] = c;
            if i > start {
                if let Some(p) = tree.parent(id) {
                    counts[p.index() - start].add(&c);
                }
            }
        }
        if let Some(c) = counts.first() {
            out.chars += c.chars;
            out.link_chars += c.link_chars;
        }
    }
    out
}

/// Adds what the element itself counts as (a paragraph, an item, an image, a control).
fn add_own(tree: &Tree, id: NodeId, e: &Element, c: &mut Counts) {
    if e.ns != Ns::Html || !tree.is_shown(id) {
        return;
    }
    match e.name {
        local_name!("p") => c.paragraphs += 1,
        local_name!("li") => c.items += 1,
        local_name!("img") => c.images += 1,
        local_name!("input") => c.controls += 1,
        local_name!("iframe") | local_name!("object") | local_name!("embed") => c.embeds += 1,
        local_name!("h1")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6") => c.heading_chars = c.chars,
        local_name!("time") => c.time_chars = c.chars,
        _ => {}
    }
}

/// What the rules read besides the counts.
struct Judge<'a> {
    a: &'a Analysis,
    /// The prose of the whole selection.
    prose: u32,
}

impl Judge<'_> {
    /// The rules of the module doc, for one element with the counts of its kept subtree.
    fn should_drop(&self, tree: &Tree, id: NodeId, e: &Element, c: &Counts) -> bool {
        let a = self.a;
        let i = id.index();
        if a.unlikely[i] {
            return true;
        }
        if e.ns != Ns::Html {
            return false;
        }
        let h = a.hints[i];
        match e.name {
            local_name!("footer") => return !in_quote(tree, id),
            // An article's header without prose: its title, byline and date, which the reading
            // page shows apart.
            local_name!("header") if a.prose[i] == 0 => return true,
            local_name!("form")
            | local_name!("fieldset")
            | local_name!("button")
            | local_name!("input")
            | local_name!("select")
            | local_name!("textarea")
            | local_name!("iframe")
            | local_name!("object")
            | local_name!("embed")
            | local_name!("dialog")
            | local_name!("nav")
            | local_name!("aside")
            | local_name!("h1") => return true,
            // The caption belongs to its figure: the reading page keeps figures whole.
            local_name!("figcaption") => return false,
            local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6") => return h.weight() < 0 || c.link_density() > 0.5,
            local_name!("p") if c.link_density() > 0.5 && c.chars - c.link_chars < 100 => {
                return true
            }
            _ => {}
        }
        if c.time_chars > 0 && c.chars < c.time_chars + MIN_BLOCK && c.paragraphs <= 1 {
            return true;
        }
        if h.has(Hints::CAPTION) && c.chars < 300 && c.paragraphs <= 2 {
            return true;
        }
        if h.has(Hints::SHARE) && c.chars < 500 {
            return true;
        }
        if h.has(Hints::META) && c.paragraphs <= 1 && c.commas < 3 && c.chars < 200 {
            return true;
        }
        let list = matches!(
            e.name,
            local_name!("ul") | local_name!("ol") | local_name!("dl")
        );
        let judged = list
            || matches!(
                e.name,
                local_name!("div")
                    | local_name!("section")
                    | local_name!("table")
                    | local_name!("header")
            );
        // A block holding most of the selection's prose is the article, whatever its counts.
        let most = u64::from(a.prose[i]) * 2 > u64::from(self.prose);
        judged && !most && is_clutter(tree, a, id, c, h, list)
    }
}

/// The conditional rules for a container.
fn is_clutter(tree: &Tree, a: &Analysis, id: NodeId, c: &Counts, h: Hints, list: bool) -> bool {
    let weight = h.weight();
    if a.candidate[id.index()] && weight as f32 + a.score[id.index()] < 0.0 {
        return true;
    }
    if c.commas >= 10 {
        return false;
    }
    let density = c.link_density();
    let heading_share = if c.chars == 0 {
        0.0
    } else {
        c.heading_chars as f32 / c.chars as f32
    };
    let figure = || in_figure(tree, id);
    (c.images > 1 && (c.paragraphs as f32 / c.images as f32) < 0.5 && !figure())
        || (!list && c.items > c.paragraphs + 100)
        || (c.controls > c.paragraphs / 3)
        || (!list
            && heading_share < 0.9
            && c.chars < MIN_BLOCK
            && (c.images == 0 || c.images > 2)
            && !figure())
        || (!list && weight < 25 && density > 0.2)
        || ((list || weight >= 25) && density > 0.5)
        || (c.embeds == 1 && c.chars < 75)
        || c.embeds > 1
}

/// A short heading or label whose next element was dropped as a list of links: the title of a
/// "Related stories" or "Don't miss" box.
fn introduces_dropped(
    tree: &Tree,
    id: NodeId,
    e: &Element,
    start: usize,
    dropped: &[bool],
) -> bool {
    let heading = matches!(
        e.name,
        local_name!("h2")
            | local_name!("h3")
            | local_name!("h4")
            | local_name!("h5")
            | local_name!("h6")
    );
    if !heading || tree.stats(id).text_chars > 80 {
        return false;
    }
    let mut next = tree.next_sibling(id);
    while let Some(n) = next {
        if tree.element(n).is_some() {
            let gone = dropped
                .get(n.index().wrapping_sub(start))
                .copied()
                .unwrap_or(false);
            return gone && tree.stats(n).links >= 2;
        }
        next = tree.next_sibling(n);
    }
    false
}

fn in_figure(tree: &Tree, id: NodeId) -> bool {
    has_ancestor(tree, id, "figure")
}

fn in_quote(tree: &Tree, id: NodeId) -> bool {
    has_ancestor(tree, id, "blockquote")
}

/// Whether an ancestor within a few levels is a `tag` element.
fn has_ancestor(tree: &Tree, id: NodeId, tag: &str) -> bool {
    let mut up = tree.parent(id);
    for _ in 0..8 {
        let Some(p) = up else { return false };
        if tree.tag(p) == Some(tag) {
            return true;
        }
        up = tree.parent(p);
    }
    false
}

fn commas(text: &str) -> u32 {
    let mut n = text.bytes().filter(|&b| b == b',').count() as u32;
    if !text.is_ascii() {
        n += text
            .chars()
            .filter(|c| matches!(c, '\u{060C}' | '\u{FF0C}' | '\u{3001}'))
            .count() as u32;
    }
    n
}
