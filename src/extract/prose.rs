//! Where a page's prose is: paragraphs, and the page's main content.
//!
//! The removers need to tell content from what surrounds it without reading class names, and
//! prose is the most robust sign of content: navigation, teaser lines, labels and bylines come in
//! short pieces, articles in paragraphs of sentences. This module measures paragraphs (the
//! non-link text of a block-level element outside its nested blocks, so text split by inline
//! markup stays one paragraph) and finds the main content, the smallest region holding most of
//! the page's prose. The link-list remover is lenient inside it and strict outside, the landmark
//! remover never removes a region holding it, and the safety net checks that its prose survived.
//!
//! Everything is computed over what is not removed, in linear passes without recursion.


use crate::dom::{NodeId, Tree};

/// Per-node paragraph figures over what is not removed. A paragraph is the non-link text
/// whose nearest block-level ancestor is the same element (text split by inline markup stays
/// one paragraph).
#[derive(Debug, Clone)]
pub struct Paragraphs {
    /// The non-link characters of the largest paragraph in the node's subtree.
    pub largest: Vec<u32>,
    /// The non-link characters of the subtree's paragraphs of at least [`PROSE_CHARS`]: its
    /// prose, as opposed to labels, headlines and teaser lines.
    pub prose: Vec<u32>,
}

/// A paragraph this long (about one sentence) counts as prose for [`Paragraphs::prose`].
pub const PROSE_CHARS: u32 = 100;

/// Computes [`Paragraphs`] in one reverse pass over the tree (children before parents): each
/// node hands its parent its largest paragraph, its prose and the text of its subtree that no
/// block inside it holds; a block element (and the document, for text outside every block)
/// makes that text one paragraph of its own.
pub fn paragraphs(tree: &Tree) -> Paragraphs {
    Current::of(tree).paragraphs
}

/// [`Paragraphs`] kept current while removers take subtrees out: the landmark and link-list
/// removers each need them for the page as the removers before them left it, and updating the
/// figures of a removed subtree's ancestors costs a fraction of measuring the page again.
#[derive(Debug, Clone)]
pub struct Current {
    paragraphs: Paragraphs,
    /// Per node, the counted text of its subtree outside the blocks in it: its part of the
    /// paragraph of its nearest block ancestor; for a block (and the document), its own
    /// paragraph.
    inline: Vec<u32>,
}

impl Current {
    /// The figures of the tree as it is, from one pass ([`paragraphs`]).
    pub fn of(tree: &Tree) -> Current {
        let (paragraphs, inline) = measure(tree);
        Current { paragraphs, inline }
    }

    /// The figures as of the last [`Current::removed`].
    pub fn paragraphs(&self) -> &Paragraphs {
        &self.paragraphs
    }

    /// Takes into account that `roots` have just been removed from `tree` (in any order,
    /// nested ones included), each of them not yet removed when these figures were last
    /// current: every removal since then must be among them.
    ///
    /// The removed subtrees' figures become zero, as a new pass would make them. Above each
    /// outermost root, its prose comes off every ancestor; its text outside blocks comes off
    /// the paragraph of its nearest block ancestor, which may stop counting as prose; and the
    /// largest paragraph of each ancestor is taken again from its own paragraph and its
    /// children's, deepest ancestors first.
    pub fn removed(&mut self, tree: &Tree, roots: &[NodeId]) {
        let mut roots: Vec<NodeId> = roots.to_vec();
        roots.sort_unstable();
        let Paragraphs { largest, prose } = &mut self.paragraphs;
        let inline = &mut self.inline;
        // The ancestors whose largest paragraph is taken again, each once.
        let mut above: Vec<u32> = Vec::new();
        let mut listed = vec![false; tree.len()];
        let mut end = 0;
        for root in roots {
            let start = root.index();
            if start < end {
                continue; // inside a root just handled
            }
            end = start + tree.descendants(root).len();
            let lost_prose = prose[start];
            // Its text that belonged to an ancestor's paragraph.
            let mut lost_inline = match tree.text(root) {
                Some(_) if !tree.is_in_link(root) => tree.stats(root).text_chars,
                Some(_) => 0,
                None if tree.is_block_node(root) => 0,
                None => inline[start],
            };
            largest[start..end].fill(0);
            prose[start..end].fill(0);
            inline[start..end].fill(0);
            let mut shrunk = 0;
            let mut node = root;
            while let Some(parent) = tree.parent(node) {
                let p = parent.index();
                if lost_inline > 0 {
                    let own = inline[p];
                    inline[p] = own.saturating_sub(lost_inline);
                    if tree.is_block_node(parent) || tree.parent(parent).is_none() {
                        // The paragraph this text was part of: whatever it counted as prose.
                        shrunk = prose_part(own).saturating_sub(prose_part(inline[p]));
                        lost_inline = 0;
                    }
                }
                prose[p] = prose[p].saturating_sub(lost_prose.saturating_add(shrunk));
                if !std::mem::replace(&mut listed[p], true) {
                    above.push(p as u32);
                }
                node = parent;
            }
        }
        // Children come after their parents in the arena.
        above.sort_unstable_by(|a, b| b.cmp(a));
        for p in above {
            let Some(id) = tree.node_at(p as usize) else { continue };
            let own = if tree.is_block_node(id) || tree.parent(id).is_none() { inline[p as usize] } else { 0 };
            largest[p as usize] = tree.children(id).map(|c| largest[c.index()]).fold(own, u32::max);
        }
    }
}

/// What a paragraph of `chars` characters adds to [`Paragraphs::prose`].
fn prose_part(chars: u32) -> u32 {
    if chars >= PROSE_CHARS {
        chars
    } else {
        0
    }
}

/// The pass behind [`Current::of`]: the figures and the text of each node outside its blocks.
fn measure(tree: &Tree) -> (Paragraphs, Vec<u32>) {
    let n = tree.len();
    let mut largest = vec![0u32; n];
    let mut prose = vec![0u32; n];
    // Per node, the counted text of its subtree outside the blocks in it: its part of the
    // paragraph of its nearest block ancestor.
    let mut inline = vec![0u32; n];
    for (i, (parent, text, block)) in tree.paragraph_inputs(0..tree.len()).enumerate().rev() {
        let up = match text {
            Some(chars) => chars,
            None if block || parent == usize::MAX => {
                let own = inline[i];
                largest[i] = largest[i].max(own);
                prose[i] = prose[i].saturating_add(if own >= PROSE_CHARS { own } else { 0 });
                0
            }
            None => inline[i],
        };
        if parent != usize::MAX {
            inline[parent] += up;
            largest[parent] = largest[parent].max(largest[i]);
            prose[parent] = prose[parent].saturating_add(prose[i]);
        }
    }
    (Paragraphs { largest, prose }, inline)
}

/// [`Paragraphs::prose`] of one node alone, from a pass over its subtree only: what the
/// safety net asks after every run of removers, for the main content, which is mostly a small
/// part of the page. A subtree is a contiguous run of nodes, so this is the reverse pass of
/// [`paragraphs`] over that run, with the node as its top: text of the node's own that no
/// block inside it holds belongs to a paragraph of its parent's, unless the node is a block.
pub fn prose_within(tree: &Tree, id: NodeId) -> u32 {
    let (start, len) = (id.index(), tree.descendants(id).len());
    let mut prose = vec![0u32; len];
    let mut inline = vec![0u32; len];
    for (j, (parent, text, block)) in tree.paragraph_inputs(start..start + len).enumerate().rev() {
        let up = match text {
            Some(chars) => chars,
            None if block || parent == usize::MAX => {
                let own = inline[j];
                prose[j] = prose[j].saturating_add(if own >= PROSE_CHARS { own } else { 0 });
                0
            }
            None => inline[j],
        };
        // The top's parent lies outside the run (its `parent` is below `start`).
        if let Some(p) = parent.checked_sub(start).filter(|_| j > 0) {
            inline[p] += up;
            prose[p] = prose[p].saturating_add(prose[j]);
        }
    }
    prose.first().copied().unwrap_or(0)
}

/// The page's main content: the deepest element holding more than half of the body's prose,
/// found by descending from the body into the child that holds it while there is one; then, if
/// all of that element's prose is one paragraph, its nearest ancestor with prose from more
/// than one paragraph (the container the paragraph sits in with its siblings). The body when
/// the page has no prose.
pub fn main_content(tree: &Tree, body: NodeId, paragraphs: &Paragraphs) -> NodeId {
    let (prose, largest) = (&paragraphs.prose, &paragraphs.largest);
    let total = u64::from(prose[body.index()]);
    let mut current = body;
    while let Some(next) = tree.children(current).find(|&c| {
        !tree.is_removed(c) && tree.element(c).is_some() && u64::from(prose[c.index()]) * 2 > total
    }) {
        current = next;
    }
    while current != body && prose[current.index()] <= largest[current.index()] {
        current = tree.parent(current).unwrap_or(body);
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(tree: &Tree, id: &str) -> NodeId {
        tree.descendants(tree.root())
            .find(|&n| tree.attr(n, "id") == Some(id))
            .expect("element")
    }

    const LONG: &str = "A paragraph of prose that is long enough to count, with more than a hundred characters in it, easily.";

    #[test]
    fn paragraphs_span_inline_markup_and_skip_links() {
        let tree = Tree::parse(
            "<div id=d><p>one <b>two</b> three <a href=/x>link</a></p><p>four</p></div>",
        );
        let div = find(&tree, "d");
        // "one" + "two" + "three" = 11 (whitespace is trimmed per text node); link text not counted.
        let p = paragraphs(&tree);
        assert_eq!(p.largest[div.index()], 11);
        assert_eq!(p.prose[div.index()], 0, "short paragraphs are not prose");
    }

    #[test]
    fn prose_sums_long_paragraphs() {
        let tree = Tree::parse(&format!(
            "<div id=d><p>{LONG}</p><p>{LONG}</p><p>short</p></div>"
        ));
        let p = paragraphs(&tree);
        assert_eq!(p.prose[find(&tree, "d").index()], 2 * LONG.len() as u32);
    }

    #[test]
    fn main_content_is_the_container_of_most_prose() {
        let html = format!(
            "<div id=page><div id=side><p>{LONG}</p></div><div id=story><h1>T</h1><div id=body><p>{LONG}</p><p>{LONG}</p></div></div></div>"
        );
        let tree = Tree::parse(&html);
        let body = tree.body().expect("body");
        assert_eq!(
            main_content(&tree, body, &paragraphs(&tree)),
            find(&tree, "body")
        );
    }

    #[test]
    fn a_single_dominant_paragraph_gives_its_container() {
        let html = format!("<div id=story><div id=wrap><p>{LONG} {LONG}</p></div><div id=other><p>{LONG}</p></div></div>");
        let tree = Tree::parse(&html);
        let body = tree.body().expect("body");
        assert_eq!(
            main_content(&tree, body, &paragraphs(&tree)),
            find(&tree, "story")
        );
    }

    /// Paragraphs as first computed, forward then reverse with a block per node: what the
    /// one-pass [`paragraphs`] is checked against.
    fn reference_paragraphs(tree: &Tree) -> Paragraphs {
        let n = tree.len();
        let mut block_of = vec![0u32; n];
        let mut own = vec![0u32; n];
        for i in 0..n {
            let Some(id) = tree.node_at(i) else { continue };
            let parent_block = tree.parent(id).map_or(0, |p| block_of[p.index()]);
            block_of[i] = match tree.kind(id) {
                crate::dom::NodeKind::Element(e) if crate::dom::is_block(e) => i as u32,
                crate::dom::NodeKind::Text(_) => {
                    if !tree.is_removed(id) && !tree.is_in_link(id) {
                        own[parent_block as usize] += tree.stats(id).text_chars;
                    }
                    parent_block
                }
                _ => parent_block,
            };
        }
        let mut largest = own.clone();
        let mut prose: Vec<u32> = own.iter().map(|&c| if c >= PROSE_CHARS { c } else { 0 }).collect();
        for i in (1..n).rev() {
            let Some(parent) = tree.node_at(i).and_then(|id| tree.parent(id)) else { continue };
            let p = parent.index();
            largest[p] = largest[p].max(largest[i]);
            prose[p] = prose[p].saturating_add(prose[i]);
        }
        Paragraphs { largest, prose }
    }

    proptest::proptest! {
        /// The one-pass paragraphs equal the reference's on random pages with random removals.
        #[test]
        fn paragraphs_match_the_reference(
            parts in proptest::collection::vec(
                "<(div|p|span|b|td|li|a href=x|h2)>|</(div|p|span|a|td)>|text|x y|long text of a paragraph|<br>| ",
                0..60,
            ),
            removed in proptest::collection::vec(0usize..80, 0..4),
            long in 0usize..3,
        ) {
            let html = parts.concat().replace("long text of a paragraph", &LONG.repeat(long));
            let tree = crate::dom::tests::parse_removing(&html, &removed);
            let (ours, expected) = (paragraphs(&tree), reference_paragraphs(&tree));
            proptest::prop_assert_eq!(&ours.largest, &expected.largest);
            proptest::prop_assert_eq!(&ours.prose, &expected.prose);
            // The pass over one subtree gives each node what the whole pass does.
            for i in 0..tree.len() {
                let id = tree.node_at(i).expect("node");
                proptest::prop_assert_eq!(prose_within(&tree, id), expected.prose[i], "node {}", i);
            }
        }
    }

    proptest::proptest! {
        /// Figures kept current through batches of removals (nested roots included) equal
        /// those of a new pass after each batch.
        #[test]
        fn current_figures_follow_removals(
            parts in proptest::collection::vec(
                "<(div|p|span|b|td|li|a href=x|h2)>|</(div|p|span|a|td)>|text|x y|long text of a paragraph|<br>| ",
                0..60,
            ),
            removed in proptest::collection::vec(0usize..80, 0..3),
            batches in proptest::collection::vec(proptest::collection::vec(0usize..80, 0..5), 0..4),
            long in 0usize..3,
        ) {
            let html = parts.concat().replace("long text of a paragraph", &LONG.repeat(long));
            let mut tree = crate::dom::tests::parse_removing(&html, &removed);
            let mut current = Current::of(&tree);
            for batch in &batches {
                let mut roots = Vec::new();
                for &i in batch {
                    let Some(id) = tree.node_at(i).filter(|&id| !tree.is_removed(id)) else { continue };
                    tree.remove(id);
                    roots.push(id);
                }
                current.removed(&tree, &roots);
                let fresh = paragraphs(&tree);
                proptest::prop_assert_eq!(&current.paragraphs().largest, &fresh.largest);
                proptest::prop_assert_eq!(&current.paragraphs().prose, &fresh.prose);
            }
        }
    }

    #[test]
    fn no_prose_means_the_body() {
        let tree = Tree::parse("<div><p>short</p></div>");
        let body = tree.body().expect("body");
        assert_eq!(main_content(&tree, body, &paragraphs(&tree)), body);
    }
}
