//! The empty-table remover: tables and layout blocks that the other removers left without
//! substance.
//!
//! After the link lists and ads are gone, what held them often remains: a table of empty cells,
//! a sidebar box with only its heading ("Follow us") left, a wrapper around nothing. Crunch
//! removed such tables after filtering their children; pith does the same for tables and for
//! layout blocks (`div`, `section`, `aside`, `header`, `footer`, `nav`, `center`).
//!
//! Substance, as in Crunch: an image, a link (`<a href>`), a form control or embedded object
//! (iframe, input, button, textarea, select, ...), or at least
//! [`Settings::empty_min_chars`](super::Settings::empty_min_chars) characters of visible text
//! (Crunch shipped 12). Only what is still kept counts.
//!
//! A `div` that holds text directly (not through a nested element) is a paragraph written as a
//! div, not a layout block: it goes only when it has no text at all. A table never holds text
//! directly. `<body>`, `<main>`, `<article>` and elements a site rule keeps are never removed.
//!
//! The pass is bottom-up, one reverse loop over the arena (children come after their parents in
//! it, so each node is decided after all of its children): a block that loses its last
//! substance to a removal below it is removed in turn. Linear, with no recursion.

use markup5ever::local_name;

use super::Keep;
use crate::dom::{Element, NodeId, NodeKind, Ns, Tree};

/// Removes the tables and layout blocks without substance; returns the outermost ones removed,
/// in document order.
pub fn remove(tree: &mut Tree, min_chars: u32, keep: &Keep) -> Vec<NodeId> {
    let n = tree.len();
    // Kept visible characters and kept substance (images, links, controls) per subtree.
    let mut chars = vec![0u32; n];
    let mut substance = vec![0u32; n];
    let mut direct_text = vec![false; n];
    let mut removed = Vec::new();
    for i in (0..n).rev() {
        let Some(id) = tree.node_at(i) else { continue };
        if tree.is_removed(id) {
            continue;
        }
        match tree.kind(id) {
            NodeKind::Text(_) => {
                chars[i] = tree.stats(id).text_chars;
                if chars[i] > 0 {
                    if let Some(parent) = tree.parent(id) {
                        direct_text[parent.index()] = true;
                    }
                }
            }
            NodeKind::Element(e) => {
                substance[i] += own_substance(tree, id);
                let empty = chars[i] < min_chars && substance[i] == 0;
                let eligible = is_table(e) || (is_layout_block(e) && !direct_text[i]);
                if eligible && empty && !keep.contains(id) && !is_protected(tree, id) {
                    tree.remove(id);
                    removed.push(id);
                    continue;
                }
            }
            _ => {}
        }
        if let Some(parent) = tree.parent(id) {
            chars[parent.index()] += chars[i];
            substance[parent.index()] += substance[i];
        }
    }
    removed.retain(|&id| tree.parent(id).is_none_or(|p| !tree.is_removed(p)));
    removed.reverse();
    removed
}

/// The element's own images, links and controls (not its descendants'), as the tree's
/// statistics count them: only where they show.
fn own_substance(tree: &Tree, id: NodeId) -> u32 {
    let total = |id: NodeId| {
        let s = tree.stats(id);
        s.links + s.images + s.controls
    };
    let children: u32 = tree.children(id).map(total).sum();
    total(id).saturating_sub(children)
}

fn is_table(e: &Element) -> bool {
    e.ns == Ns::Html && e.name == local_name!("table")
}

/// Blocks pages use for layout, judged like tables.
fn is_layout_block(e: &Element) -> bool {
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("div")
                | local_name!("section")
                | local_name!("aside")
                | local_name!("header")
                | local_name!("footer")
                | local_name!("nav")
                | local_name!("center")
        )
}

/// `role=main` marks the content whatever its tag (`body`, `main` and `article` are never
/// layout blocks here).
fn is_protected(tree: &Tree, id: NodeId) -> bool {
    super::linklist::has_role(tree, id, "main")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `id`s of the elements removed from `html` with Crunch's 12 characters.
    fn removed_ids(html: &str) -> Vec<String> {
        let mut tree = Tree::parse(html);
        remove(&mut tree, 12, &Keep::none())
            .iter()
            .map(|&id| tree.attr(id, "id").unwrap_or("?").to_string())
            .collect()
    }

    macro_rules! empties {
        ($($name:ident: $html:expr => [$($id:expr),*];)*) => {$(
            #[test]
            fn $name() {
                let expected: Vec<&str> = vec![$($id),*];
                assert_eq!(removed_ids($html), expected);
            }
        )*};
    }

    empties! {
        empty_table_goes: "<table id=t><tr><td> <td>&nbsp;</table><p>text</p>" => ["t"];
        short_text_table_goes: "<table id=t><tr><td>eleven char</table>" => ["t"];
        twelve_chars_stay: "<table id=t><tr><td>twelve chars</table>" => [];
        image_is_substance: "<table id=t><tr><td><img src=x></table>" => [];
        link_is_substance: "<table id=t><tr><td><a href=/x>x</a></table>" => [];
        anchor_without_href_is_not: "<table id=t><tr><td><a name=x>x</a></table>" => ["t"];
        layout_div_with_leftover_heading_goes: "<div id=box><h3>Follow us</h3></div><p>x</p>" => ["box"];
        paragraph_div_with_short_text_stays: "<div id=d>Jan 5, 2018</div>" => [];
        empty_paragraph_div_goes: "<div id=d><span> </span></div>" => ["d"];
        nested_empties_report_the_outermost: "<div id=outer><div id=inner></div><table id=t></table></div>" => ["outer"];
        article_and_main_never_go: "<article><div id=a></div></article><main></main>" => ["a"];
        role_main_never_goes: "<div role=main></div>" => [];
        hidden_text_does_not_count: "<table id=t><tr><td><span hidden>a long hidden text</span></table>" => ["t"];
    }

    #[test]
    fn removals_below_count_before_the_parent_is_judged() {
        let mut tree =
            Tree::parse("<table id=t><tr><td><ul id=l><li><a href=/x>a link</a></ul></table>");
        let list = tree
            .descendants(tree.root())
            .find(|&id| tree.attr(id, "id") == Some("l"))
            .expect("list");
        assert!(remove(&mut tree.clone(), 12, &Keep::none()).is_empty());
        tree.remove(list);
        let removed = remove(&mut tree, 12, &Keep::none());
        assert_eq!(removed.len(), 1);
        assert_eq!(tree.attr(removed[0], "id"), Some("t"));
    }

    #[test]
    fn kept_blocks_stay() {
        let mut tree = Tree::parse("<div id=k><div id=inner></div></div>");
        let inner = tree
            .descendants(tree.root())
            .find(|&id| tree.attr(id, "id") == Some("inner"))
            .expect("inner");
        let keep = Keep::from_nodes(&tree, [inner]);
        assert!(remove(&mut tree, 12, &keep).is_empty());
    }

    #[test]
    fn deep_trees_do_not_overflow() {
        let depth = 100_000;
        let html = format!("{}{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let mut tree = Tree::parse(&html);
        assert_eq!(remove(&mut tree, 12, &Keep::none()).len(), 1);
    }
}
