//! Whether reading mode should tell its reader it is unsure of the block it serves.
//!
//! Reading mode already serves the declutter page, with a note, when it finds too little
//! ([`crate::pipeline::judge`]). Beyond that, a block can be served that keeps much less of
//! the page's prose than the page holds (one post of a thread, one section of a service page,
//! a bio beside the article), or a product page or a shop's grid whose reading page is pages of
//! prose (a guide, reviews or copy read instead of the product). Then the reading page says so
//! after its headline, with a link to the de-cluttered page; the text form is unchanged.
//!
//! The evidence ([`Evidence`]) is the prose (paragraphs of at least
//! [`prose::PROSE_CHARS`](super::prose::PROSE_CHARS) characters of non-link text) of the page
//! as parsed and of what reading mode kept. The thresholds were calibrated on the three
//! development sets (`scripts/kinds.py`, docs/extraction.md): on the pages served as a reading
//! page, half of those scoring word F1 < 0.3 are flagged, and at most 5% of those scoring
//! F1 > 0.8. The kind's confidence ([`super::kind::Kind::confidence`]) is carried for
//! reports but does not flag a page: below 0.1 it flagged 38 more good wcxb pages for 3 more
//! bad ones.

use crate::dom::Tree;

use super::kind::PageKind;
use super::prose;

/// A page with less prose than this is never unsure for its share: a short page kept in part
/// is no sign of a wrong block.
pub const MIN_PAGE_PROSE: u32 = 300;

/// Keeping less than this share of the page's prose is unsure. 0.4 flags 39 of wcxb's 75
/// reading pages scoring F1 < 0.3 and 4.5% of scrapinghub's pages scoring F1 > 0.8; 0.5 flags
/// one more bad page and 6.7% of scrapinghub's good ones.
pub const MIN_KEPT_SHARE: f32 = 0.4;

/// A reading page of a product or a shop's collection holding this much prose read something
/// else than the product or the grid: 2,500 characters is about five paragraphs, where a
/// product's description is one or two.
pub const MAX_SHOP_PROSE: u32 = 2500;

/// What the judgement is made from, for the reading page, `pith extract --format json` and
/// calibration.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// Prose characters of the page as parsed (its body).
    pub page_prose: u32,
    /// Prose characters of what reading mode kept.
    pub kept_prose: u32,
    /// The kind's confidence (reported; it does not flag a page).
    pub kind_confidence: f32,
    /// The kind of page.
    pub kind: PageKind,
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
    /// [`MIN_KEPT_SHARE`] of a page's prose of at least [`MIN_PAGE_PROSE`] characters, or it
    /// keeps more than [`MAX_SHOP_PROSE`] of a product's or a collection's.
    pub fn is_unsure(&self) -> bool {
        let little = self.page_prose >= MIN_PAGE_PROSE && self.kept_share() < MIN_KEPT_SHARE;
        let shop = matches!(self.kind, PageKind::Product | PageKind::Collection);
        little || (shop && self.kept_prose >= MAX_SHOP_PROSE)
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
            kind: PageKind::Article,
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
            kind: PageKind::Article,
        };
        assert!(!e.is_unsure());
        // Pages of prose on a product page: something else was read.
        let long = Evidence {
            page_prose: 4000,
            kept_prose: MAX_SHOP_PROSE,
            kind_confidence: 0.5,
            kind: PageKind::Article,
        };
        assert!(!long.is_unsure());
        assert!(Evidence {
            kind: PageKind::Product,
            ..long
        }
        .is_unsure());
        assert!(!Evidence {
            kind: PageKind::Product,
            page_prose: 2000,
            kept_prose: 900,
            ..long
        }
        .is_unsure());
        assert_eq!(Evidence::default().kept_share(), 1.0);
    }
}
