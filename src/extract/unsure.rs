//! Whether reading mode should tell its reader it is unsure of the block it serves.
//!
//! Reading mode already serves the declutter page, with a note, when it finds too little
//! ([`crate::pipeline::judge`]). Beyond that, a block can be served that keeps much less of
//! the page's prose than the page holds (one post of a thread, one section of a service page,
//! a bio beside the article), or the page's kind can be a guess. Then the reading page says so
//! after its headline, with a link to the de-cluttered page; the text form is unchanged.
//!
//! The evidence ([`Evidence`]) is the prose (paragraphs of at least
//! [`prose::PROSE_CHARS`](super::prose::PROSE_CHARS) characters of non-link text) of the page
//! as parsed and of what reading mode kept, and the kind's confidence
//! ([`super::kind::Kind::confidence`]). The thresholds were calibrated on the three
//! development sets (`scripts/kinds.py`, docs/extraction.md).

use crate::dom::Tree;

use super::prose;

/// A page with less prose than this is judged by the kind's confidence alone: a short page
/// kept whole or nearly is no sign of a wrong block.
pub const MIN_PAGE_PROSE: u32 = 600;

/// Keeping less than this share of the page's prose is unsure.
pub const MIN_KEPT_SHARE: f32 = 0.3;

/// A kind this unsure makes the page unsure.
pub const MIN_KIND_CONFIDENCE: f32 = 0.0;

/// What the judgement is made from, for the reading page, `pith extract --format json` and
/// calibration.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// Prose characters of the page as parsed (its body).
    pub page_prose: u32,
    /// Prose characters of what reading mode kept.
    pub kept_prose: u32,
    /// The kind's confidence.
    pub kind_confidence: f32,
}

impl Evidence {
    /// The share of the page's prose kept; 1 for a page without prose.
    pub fn kept_share(&self) -> f32 {
        if self.page_prose == 0 {
            1.0
        } else {
            self.kept_prose as f32 / self.page_prose as f32
        }
    }

    /// Whether the reading page should say it is unsure: it keeps less than
    /// [`MIN_KEPT_SHARE`] of a page's prose (of at least [`MIN_PAGE_PROSE`]), or the kind's
    /// confidence is below [`MIN_KIND_CONFIDENCE`].
    pub fn is_unsure(&self) -> bool {
        (self.page_prose >= MIN_PAGE_PROSE && self.kept_share() < MIN_KEPT_SHARE)
            || self.kind_confidence < MIN_KIND_CONFIDENCE
    }
}

/// The prose of `tree`'s body as its removals stand: one reverse pass
/// ([`prose::paragraphs`]).
pub fn body_prose(tree: &Tree) -> u32 {
    match tree.body() {
        Some(body) => prose::paragraphs(tree).prose[body.index()],
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROSE: &str = "A paragraph of real article text, long enough to be prose, with clauses, commas, and more words. ";

    #[test]
    fn keeping_little_of_much_prose_is_unsure() {
        let mut tree = Tree::parse(&format!("<body><div id=a><p>{0}{0}</p></div><div id=b><p>{0}{0}</p><p>{0}{0}</p><p>{0}{0}</p></div></body>", PROSE));
        let page = body_prose(&tree);
        assert!(page >= MIN_PAGE_PROSE, "{page}");
        let b = tree
            .descendants(tree.root())
            .find(|&n| tree.attr(n, "id") == Some("b"))
            .expect("b");
        tree.remove(b);
        let kept = body_prose(&tree);
        let e = Evidence {
            page_prose: page,
            kept_prose: kept,
            kind_confidence: 0.5,
        };
        assert!((e.kept_share() - 0.25).abs() < 0.01, "{e:?}");
        assert!(e.is_unsure());
        assert!(!Evidence {
            kept_prose: page,
            ..e
        }
        .is_unsure());
    }

    #[test]
    fn a_short_page_is_not_unsure_for_its_share() {
        let e = Evidence {
            page_prose: MIN_PAGE_PROSE - 1,
            kept_prose: 0,
            kind_confidence: 0.5,
        };
        assert!(!e.is_unsure());
        assert_eq!(Evidence::default().kept_share(), 1.0);
    }
}
