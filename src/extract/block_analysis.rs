//! `block-analysis`: DOM-structure block analysis. The page is cut into blocks along its DOM
//! structure and a block is navigation, not content, when it is made of links:
//!
//! - **anchor ratio**: non-empty anchors ÷ tags > 0.5: more than every other element of the
//!   block is a link that shows something;
//! - **linked-text ratio**: linked text ÷ text > 0.4: more than two fifths of what the block
//!   says is link text.
//!
//! The two thresholds, 0.5 and 0.4, are the published values ([`Params`]). The design table of
//! this project names the method by its idea only (DOM block analysis with these two ratios);
//! what follows is how we read it where a choice had to be made.
//!
//! # Choices
//!
//! - **Blocks** are the block-level elements of HTML (the same list as
//!   [`crate::dom::is_block`]: div, p, table parts, lists and list items, headings,
//!   sections, …), `<body>` excepted: the page as a whole is not judged.
//! - **Bottom-up, on what is left**: a block is judged after its inner blocks, with the counts of
//!   what they left. A menu's items go one by one and then the emptied menu is harmless; a
//!   wrapper around an article and a big menu is judged without the menu and stays. Judging
//!   top-down would remove such a wrapper whole, article included, whenever the menu is large.
//! - **Counts**: *tags* are the elements of the block that show (the block included); a
//!   *non-empty anchor* is an `<a href>` showing text or an image; *text* is visible characters
//!   with whitespace collapsed, *linked text* the part of it inside `<a href>`. Hidden elements
//!   (`hidden`, `display: none`, templates) count for nothing: they never reach the reader and
//!   would otherwise dilute or inflate the ratios.
//! - A block with no text is judged on its anchor ratio alone.
//!
//! One reverse pass over the body; no recursion, four counters per node.

use markup5ever::local_name;

use crate::dom::is_block;
use crate::dom::{NodeId, NodeKind, Tree};

/// Parameters, defaulting to the published values.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// A block goes when its non-empty anchors ÷ tags exceeds this.
    pub anchor_ratio: f64,
    /// A block goes when its linked text ÷ text exceeds this.
    pub linked_text_ratio: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            anchor_ratio: 0.5,
            linked_text_ratio: 0.4,
        }
    }
}

/// Removes the blocks made of links (contract in [`super::algorithm`]).
pub fn extract(tree: &mut Tree, params: &Params) {
    for id in find(tree, params) {
        tree.remove(id);
    }
}

/// The blocks [`extract`] removes, inner ones before the blocks that held them.
pub fn find(tree: &Tree, params: &Params) -> Vec<NodeId> {
    let Some(body) = tree.body() else {
        return Vec::new();
    };
    let start = body.index();
    let end = start + tree.descendants(body).len();
    let mut counts = vec![Counts::default(); end - start];
    let mut found = Vec::new();
    for i in (start..end).rev() {
        let Some(id) = tree.node_at(i) else { continue };
        if tree.is_removed(id) || !tree.is_shown(id) {
            continue;
        }
        let k = i - start;
        match tree.kind(id) {
            NodeKind::Text(_) => {
                let stats = tree.stats(id);
                counts[k].text += u64::from(stats.text_chars);
                counts[k].linked += u64::from(stats.link_text_chars);
            }
            NodeKind::Element(e) => {
                if tree.is_content_hidden(id) {
                    continue;
                }
                counts[k].tags += 1;
                if is_non_empty_anchor(tree, id) {
                    counts[k].anchors += 1;
                }
                if id != body && is_block(e) && counts[k].is_links(params) {
                    found.push(id);
                    continue;
                }
            }
            _ => continue,
        }
        if let Some(p) = tree.parent(id).filter(|p| p.index() >= start) {
            let child = counts[k];
            counts[p.index() - start].add(&child);
        }
    }
    found
}

/// What is left of a subtree: the quantities the two ratios need.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counts {
    anchors: u64,
    tags: u64,
    text: u64,
    linked: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.anchors += other.anchors;
        self.tags += other.tags;
        self.text += other.text;
        self.linked += other.linked;
    }

    /// The two tests.
    fn is_links(&self, params: &Params) -> bool {
        let anchors = self.tags > 0
            && self.anchors as f64 > params.anchor_ratio * self.tags as f64;
        let linked =
            self.text > 0 && self.linked as f64 > params.linked_text_ratio * self.text as f64;
        anchors || linked
    }
}

/// An `<a href>` that shows text or an image.
fn is_non_empty_anchor(tree: &Tree, id: NodeId) -> bool {
    let is_anchor = tree
        .element(id)
        .is_some_and(|e| e.name == local_name!("a") && tree.attr(id, "href").is_some());
    let stats = tree.stats(id);
    is_anchor && (stats.text_chars > 0 || stats.images > 0)
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

    const P1: &str = "The bridge reopened on Monday after two years of repairs, and traffic \
        was back to normal by the evening rush hour.";

    macro_rules! keeps {
        ($($name:ident: $html:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(run(&$html), $expected);
            }
        )*};
    }

    keeps! {
        menu_items_go: format!(
            "<ul><li><a href=/a>World news</a></li><li><a href=/b>Sport</a></li></ul><p>{P1}</p>"
        ) => format!("{P1}\n");
        linked_text_above_two_fifths_goes: format!(
            // 10 linked characters of 20: 0.5 > 0.4.
            "<p>abcde fghi <a href=/x>jklmnopqrs</a></p><p>{P1}</p>"
        ) => format!("{P1}\n");
        linked_text_below_two_fifths_stays: format!(
            // 7 linked characters of 20: 0.35.
            "<p>abcdefghij kl <a href=/x>mnopqrs</a></p>"
        ) => "abcdefghij kl mnopqrs\n".to_string();
        anchor_ratio_goes_even_when_text_dominates: format!(
            // Three links, four tags: 0.75 > 0.5, though only 3 characters of 30 are linked.
            "<div>Lots of plain words here ok <a href=/1>a</a><a href=/2>b</a><a href=/3>c</a></div><p>{P1}</p>"
        ) => format!("{P1}\n");
        empty_anchors_do_not_count: format!(
            "<div>Some words here <a href=/1></a><a href=/2></a><a href=/3></a></div>"
        ) => "Some words here\n".to_string();
        wrapper_is_judged_without_its_removed_menu: format!(
            "<div id=wrap><div>{}</div><p>{P1}</p></div>",
            "<a href=/l>a long link label for the menu</a> ".repeat(20)
        ) => format!("{P1}\n");
        hidden_links_do_not_count: format!(
            "<div>Plain words that are not links at all.<span hidden>{}</span></div>",
            "<a href=/l>hidden link</a>".repeat(10)
        ) => "Plain words that are not links at all.\n".to_string();
    }

    #[test]
    fn image_links_count_their_images_as_tags() {
        // Three image links: 3 anchors of 7 tags (0.43) and no text: the block stays.
        let html = "<div><a href=/1><img src=1></a><a href=/2><img src=2></a><a href=/3><img src=3></a></div>";
        let tree = Tree::parse(html);
        assert!(find(&tree, &Params::default()).is_empty());
        let four = Tree::parse(&format!("<div>{}</div>", "<a href=/1><img src=1></a>".repeat(4)));
        assert!(find(&four, &Params::default()).is_empty(), "4 of 9 is still below one half");
    }

    #[test]
    fn body_is_never_judged_and_odd_pages_do_not_panic() {
        assert_eq!(run("<a href=/only>only a link</a>"), "only a link\n");
        assert_eq!(run(""), "");
        assert_eq!(run("<frameset></frameset>"), "");
        let depth = 100_000;
        let html = format!("{}{P1}{}", "<span>".repeat(depth), "</span>".repeat(depth));
        let mut tree = Tree::parse_with_max_depth(&html, u32::MAX);
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), format!("{P1}\n"));
    }
}
