//! `density`: the statistical model of content extraction: per block, the quantity of text and
//! of hypertext, each as a deviation from the page's mean normalised to [-1, 1], and the link
//! density. It is the statistical half of the hybrid model of the comparative study (Qureshi &
//! Memon, "Hybrid model of content extraction", Journal of Computer and System Sciences, 2012),
//! whose other half, formatting likeness, is [`super::info_optics`].
//!
//! # The model
//!
//! The page is cut into **segments**: a segment is a block-level element ([`crate::dom::is_block`]) together
//! with the text it holds *directly*, not through a nested block (`<body>` counts as a block,
//! for text lying loose in it). For each segment i:
//!
//! - T_i, the text quantity: visible characters outside links;
//! - H_i, the hypertext quantity: visible characters inside `<a href>`;
//! - t_i = (T_i − mean T) ÷ max_j |T_j − mean T| and h_i likewise for H: how far the segment
//!   stands from the page's average, scaled so that the farthest segment is at ±1 (0 when all
//!   segments are equal);
//! - LD_i = H_i ÷ (T_i + H_i), the link density.
//!
//! # The decision rule (ours: the published description gives the features, not the rule)
//!
//! A segment is content when its score S_i = (t_i − h_i) ÷ 2, in [-1, 1], is at least
//! [`Params::min_score`] (0) **and** LD_i is at most [`Params::max_link_density`] (0.5):
//! it stands further toward text than toward hypertext, compared with the rest of the page, and
//! at most half of what it says is link text. Both parts are needed: the score alone keeps a
//! short menu item on a page whose other menus are long, the link density alone keeps any
//! snippet without links. The two numbers are the neutral points of the two measures (no
//! deviation either way; as much link text as other text), not values fitted to any data.
//!
//! # Removal
//!
//! Only what a segment holds directly goes: its text and inline children that contain no
//! block. Nested blocks are segments of their own and are judged on their own, so an article
//! inside a wrapper that also holds a "Share:" label keeps its paragraphs. A block left with
//! nothing goes too.
//!
//! Hidden text (`hidden`, `display: none`, template contents) is not part of any segment.
//! Everything is a handful of linear passes with per-node tables; nothing recurses.


use crate::dom::{is_block, NodeId, Tree};

/// Parameters of the decision rule (see the module doc for where they come from).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// A segment is content only if its score (t − h) ÷ 2 is at least this.
    pub min_score: f64,
    /// A segment is content only if its link density is at most this.
    pub max_link_density: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            min_score: 0.0,
            max_link_density: 0.5,
        }
    }
}

/// Removes the segments the model does not score as content (contract in
/// [`super::algorithm`]).
pub fn extract(tree: &mut Tree, params: &Params) {
    let Some(body) = tree.body() else { return };
    let segments = Segments::of(tree, body);
    let content = segments.content(params);
    let doomed: Vec<NodeId> = segments
        .ids
        .iter()
        .zip(&content)
        .filter(|(_, &keep)| !keep)
        .map(|(&id, _)| id)
        .collect();
    remove_own_content(tree, &segments, &doomed);
}

/// The page's segments: blocks with the text they hold directly, in document order.
#[derive(Debug, Clone, Default)]
pub struct Segments {
    /// The block of each segment.
    pub ids: Vec<NodeId>,
    /// T: visible non-link characters held directly.
    pub text: Vec<u32>,
    /// H: visible link characters held directly.
    pub links: Vec<u32>,
    /// Per node of the tree, whether it is a block or holds one: what removal must spare.
    has_block: Vec<bool>,
}

impl Segments {
    /// Cuts the body into segments. Segments without visible text are left out.
    pub fn of(tree: &Tree, body: NodeId) -> Segments {
        let n = tree.len();
        let mut owner = vec![u32::MAX; n];
        let mut held = vec![(0u32, 0u32); n];
        for id in tree.descendants(body) {
            let parent = tree.parent(id).map_or(u32::MAX, |p| owner[p.index()]);
            let block = id == body || tree.element(id).is_some_and(is_block);
            owner[id.index()] = if block { id.index() as u32 } else { parent };
            if tree.text(id).is_some() && tree.is_shown(id) && !tree.is_removed(id) {
                let stats = tree.stats(id);
                if let Some(slot) = held.get_mut(parent as usize) {
                    slot.0 += stats.text_chars - stats.link_text_chars;
                    slot.1 += stats.link_text_chars;
                }
            }
        }
        let mut segments = Segments {
            has_block: has_block(tree, body),
            ..Segments::default()
        };
        for id in tree.descendants(body) {
            let (text, links) = held[id.index()];
            if owner[id.index()] == id.index() as u32 && text + links > 0 {
                segments.ids.push(id);
                segments.text.push(text);
                segments.links.push(links);
            }
        }
        segments
    }

    /// The model's verdict per segment: `true` for content.
    pub fn content(&self, params: &Params) -> Vec<bool> {
        let t = normalised_deviations(&self.text);
        let h = normalised_deviations(&self.links);
        (0..self.ids.len())
            .map(|i| {
                let score = (t[i] - h[i]) / 2.0;
                let total = f64::from(self.text[i]) + f64::from(self.links[i]);
                let density = f64::from(self.links[i]) / total.max(1.0);
                score >= params.min_score && density <= params.max_link_density
            })
            .collect()
    }
}

/// (x − mean) ÷ max |x − mean| for each x: deviations scaled into [-1, 1]; all 0 when the
/// values are equal.
pub fn normalised_deviations(values: &[u32]) -> Vec<f64> {
    if values.is_empty() {
        return Vec::new();
    }
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64;
    let spread = values
        .iter()
        .map(|&v| (f64::from(v) - mean).abs())
        .fold(0.0, f64::max);
    values
        .iter()
        .map(|&v| {
            if spread > 0.0 {
                (f64::from(v) - mean) / spread
            } else {
                0.0
            }
        })
        .collect()
}

/// Per node: whether it is a block or has one among its descendants (one reverse pass).
fn has_block(tree: &Tree, body: NodeId) -> Vec<bool> {
    let mut has = vec![false; tree.len()];
    let start = body.index();
    for i in (start..start + tree.descendants(body).len()).rev() {
        let Some(id) = tree.node_at(i) else { continue };
        has[i] |= tree.element(id).is_some_and(is_block);
        if let Some(p) = tree.parent(id) {
            if has[i] {
                has[p.index()] = true;
            }
        }
    }
    has
}

/// Removes what each of `doomed` (segments of `segments`) holds directly: its children that
/// neither are nor hold a block. A segment left holding nothing goes whole.
pub fn remove_own_content(tree: &mut Tree, segments: &Segments, doomed: &[NodeId]) {
    let body = tree.body();
    for &segment in doomed {
        let own: Vec<NodeId> = tree
            .children(segment)
            .filter(|c| !segments.has_block.get(c.index()).copied().unwrap_or(true))
            .collect();
        let whole = own.len() == tree.children(segment).count();
        if whole && Some(segment) != body {
            tree.remove(segment);
        } else {
            for id in own {
                tree.remove(id);
            }
        }
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

    const P1: &str = "The museum opened its new wing on Saturday, with three rooms of paintings \
        that had not been shown in public for more than fifty years.";
    const P2: &str = "Visitors queued along the river for most of the morning, and the staff \
        kept the doors open an hour later than planned to let everyone in.";

    #[test]
    fn deviations_are_scaled_into_the_unit_interval() {
        assert_eq!(normalised_deviations(&[0, 10, 20]), vec![-1.0, 0.0, 1.0]);
        assert_eq!(normalised_deviations(&[0, 0, 30]), vec![-0.5, -0.5, 1.0]);
        assert_eq!(normalised_deviations(&[5, 5]), vec![0.0, 0.0]);
        assert!(normalised_deviations(&[]).is_empty());
    }

    #[test]
    fn segments_hold_their_direct_text_only() {
        let tree = Tree::parse("<div>Share: <a href=/f>Facebook</a><p>Body text.</p></div>");
        let body = tree.body().expect("body");
        let s = Segments::of(&tree, body);
        let tags: Vec<_> = s.ids.iter().map(|&id| tree.tag(id).unwrap_or("#")).collect();
        assert_eq!(tags, ["div", "p"]);
        assert_eq!(s.text, [6, 10]);
        assert_eq!(s.links, [8, 0]);
    }

    #[test]
    fn text_rich_segments_stay_link_rich_ones_go() {
        let html = format!(
            "<ul><li><a href=/a>World news</a></li><li><a href=/b>Sport and games</a></li></ul>\
             <div id=story><p>{P1}</p><p>{P2}</p></div>\
             <div>Related: <a href=/r1>Another story about the museum</a></div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn removal_spares_nested_blocks() {
        // The wrapper's own words are a short, link-dense label; its paragraphs stay.
        let html = format!(
            "<div>Share on <a href=/f>Facebook</a> <a href=/t>Twitter</a><p>{P1}</p><p>{P2}</p></div>"
        );
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn link_density_above_one_half_goes_whatever_the_score() {
        // The block has as much text as a paragraph and, beside a huge menu, less link text
        // than the page's average: its score is positive, but most of what it says is links.
        let html = format!(
            "<p>{P1}</p><p>{P2}</p><div>{P2} {}</div><div>{}</div>",
            "<a href=/t>a tag label</a> ".repeat(18),
            "<a href=/m>menu entry label</a>".repeat(60)
        );
        let tree = Tree::parse(&html);
        let s = Segments::of(&tree, tree.body().expect("body"));
        let (t, h) = (normalised_deviations(&s.text), normalised_deviations(&s.links));
        assert!(t[2] > h[2], "positive score: t {} h {}", t[2], h[2]);
        assert_eq!(run(&html), format!("{P1}\n{P2}\n"));
    }

    #[test]
    fn hidden_text_is_no_segment_and_odd_pages_do_not_panic() {
        let tree = Tree::parse("<div hidden>secret</div><p>shown</p>");
        let body = tree.body().expect("body");
        assert_eq!(Segments::of(&tree, body).ids.len(), 1);
        assert_eq!(run(""), "");
        assert_eq!(run("<frameset></frameset>"), "");
        assert_eq!(run("only loose text"), "only loose text\n", "one segment, no deviation");
        let depth = 100_000;
        let html = format!("{}{P1}{}", "<span>".repeat(depth), "</span>".repeat(depth));
        let mut tree = Tree::parse_with_max_depth(&html, u32::MAX);
        extract(&mut tree, &Params::default());
        assert_eq!(render(&tree), format!("{P1}\n"));
    }
}
