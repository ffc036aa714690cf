//! What kind of page this is, from its structure: an article, documentation, a service page, a
//! forum thread, a shop's collection, a listing or a product ([`PageKind`]), with how sure the
//! evidence makes it ([`Kind::confidence`]).
//!
//! [`classify`] is a pure function over the parsed tree, run before any extractor removes
//! anything (it reads the JSON-LD scripts the reader rules keep). It weighs, in three linear
//! passes ([`signals`]):
//!
//! - what the page declares: schema.org types in JSON-LD `@type` and microdata `itemtype`
//!   (`Product`, `DiscussionForumPosting`, `QAPage`, `ItemList`, `CollectionPage`,
//!   `TechArticle`, `NewsArticle`, `BlogPosting`…), Open Graph `og:type`, a publication date;
//! - what its structure shows: runs of repeated sibling cards (same tag and class, each a link
//!   with a heading or a picture; with prices, a shop's grid), runs of posts (each with a date
//!   and an author or a post's controls), code blocks beside a navigation tree, many sections
//!   each under a heading, paragraphs of prose;
//! - the words of `filters/page-kinds.txt`, in several languages: class and id words (author,
//!   date, price), short lines (a buy button, a post's "Reply" and "Joined"), address path
//!   words (`/forum/`, `/docs/`) and currency signs. No site's class name is in code.
//!
//! Every kind gets a score from the evidence for it; the highest wins, and an article is the
//! default a page keeps without evidence for anything else. The confidence is the winner's
//! margin over the runner-up, squashed into 0..1. The weights were set on the development
//! split of wcxb (docs/extraction.md: 1,155 of its 1,497 pages right).
//!
//! What this module leaves to others: extractors choose how to read each kind; the reading
//! page and the proxy's `x-pith` header say what kind was found ([`PageKind::name`],
//! [`Kind::items`]).

mod signals;
mod words;

use crate::dom::Tree;

pub use signals::{Declared, Group, Signals};

/// The kinds of page reading mode tells apart: the seven page types of the WCXB benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PageKind {
    /// One text: a news story, a blog post, an essay, a recipe. The default.
    #[default]
    Article,
    /// Technical documentation: a guide or reference, with code, beside a navigation tree.
    Documentation,
    /// A business's page about what it offers: sections of features, prices, questions.
    Service,
    /// A thread of posts by several people: a forum topic, a question and its answers.
    Forum,
    /// A shop's grid of products (a category, search results in a shop).
    Collection,
    /// A list of cards that lead elsewhere: a blog's index, events, jobs, courses.
    Listing,
    /// One product for sale: its name, description, price and specifications.
    Product,
}

impl PageKind {
    /// Every kind, in a fixed order (for tables and tests).
    pub const ALL: [PageKind; 7] = [
        PageKind::Article,
        PageKind::Documentation,
        PageKind::Service,
        PageKind::Forum,
        PageKind::Collection,
        PageKind::Listing,
        PageKind::Product,
    ];

    /// The kind's name in the `x-pith` header and `pith extract --format json` (`article`,
    /// `documentation`, `service`, `forum`, `collection`, `listing`, `product`: WCXB's labels).
    pub fn name(self) -> &'static str {
        match self {
            PageKind::Article => "article",
            PageKind::Documentation => "documentation",
            PageKind::Service => "service",
            PageKind::Forum => "forum",
            PageKind::Collection => "collection",
            PageKind::Listing => "listing",
            PageKind::Product => "product",
        }
    }

    /// The kind named so ([`PageKind::name`]).
    pub fn from_name(name: &str) -> Option<PageKind> {
        PageKind::ALL.into_iter().find(|k| k.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for PageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What [`classify`] decided about one page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kind {
    /// The kind of page.
    pub kind: PageKind,
    /// How sure: 0 (the evidence for the runner-up was as strong) to 1 (nothing else came
    /// near). Below [`Kind::UNSURE`] the kind is a guess.
    pub confidence: f32,
    /// How many items make the page, when its kind has items: posts of a forum thread, cards of
    /// a listing or collection; 0 otherwise.
    pub items: u32,
}

impl Kind {
    /// A confidence below this is a guess.
    pub const UNSURE: f32 = 0.25;
}

impl Default for Kind {
    fn default() -> Self {
        Kind {
            kind: PageKind::Article,
            confidence: 0.0,
            items: 0,
        }
    }
}

/// The kind of the page in `tree`, from its structure and what it declares. `page_url`, when
/// known, lends its path words (`/forum/`); without it the page's canonical or `og:url` address
/// does. Three linear passes over the tree; never panics on any tree.
pub fn classify(tree: &Tree, page_url: Option<&str>) -> Kind {
    decide(&signals::gather(tree, page_url))
}

/// [`classify`], with the evidence it weighed (for `pith extract --format json` and tuning).
pub fn classify_with_signals(tree: &Tree, page_url: Option<&str>) -> (Kind, Signals) {
    let signals = signals::gather(tree, page_url);
    (decide(&signals), signals)
}

/// The kind the signals make most likely ([`classify`] after [`signals::gather`]).
pub fn decide(s: &Signals) -> Kind {
    let scores = scores(s);
    let mut order: Vec<PageKind> = PageKind::ALL.to_vec();
    order.sort_by(|a, b| scores[b.index()].total_cmp(&scores[a.index()]));
    let (best, second) = (order[0], order[1]);
    let margin = scores[best.index()] - scores[second.index()];
    let confidence = (margin / (margin + 1.0)).clamp(0.0, 1.0);
    let items = match best {
        PageKind::Forum => s.posts.count,
        PageKind::Collection | PageKind::Listing => s.cards.count,
        _ => 0,
    };
    Kind {
        kind: best,
        confidence,
        items,
    }
}

/// The share of the body's text in `chars`.
fn share(chars: u32, s: &Signals) -> f32 {
    if s.body_chars == 0 {
        0.0
    } else {
        (chars as f32 / s.body_chars as f32).min(1.0)
    }
}

/// Each kind's score (indexed by [`PageKind`]); see the module doc.
fn scores(s: &Signals) -> [f32; 7] {
    use signals::PROSE_CHARS;
    use words::group;
    let d = &s.declared;
    let mut k = [0f32; 7];
    let og = s.og_type.as_deref().unwrap_or("");
    let prose = share(s.prose_chars, s);
    let cards = share(s.cards.chars, s);
    let posts = share(s.posts.chars, s);
    let priced_cards = s.cards.count > 0 && s.cards.priced * 2 >= s.cards.count;

    // An article: declared so, dated, and mostly paragraphs of prose.
    let a = &mut k[PageKind::Article.index()];
    *a = 0.75 + 3.0 * prose;
    if d.article > 0 {
        *a += 1.5;
    }
    if og == "article" {
        *a += 1.0;
    }
    if s.dated {
        *a += 0.5;
    }

    // Documentation: declared so, code blocks, a navigation tree, a docs address.
    let doc = &mut k[PageKind::Documentation.index()];
    if d.docs > 0 {
        *doc += 2.5;
    }
    *doc += (s.pre as f32 * 0.5).min(2.0) + (s.code as f32 * 0.05).min(3.0);
    if s.nav_tree {
        *doc += 1.0;
    }
    if s.path & group::DOCS != 0 {
        *doc += 1.0;
    }

    // A forum thread: declared so, or a run of posts holding much of the page.
    let f = &mut k[PageKind::Forum.index()];
    if d.forum > 0 {
        *f += 3.5;
    }
    if d.question > 0 && d.faq == 0 {
        *f += 1.5;
    }
    if s.posts.count >= 2 {
        *f += 1.0 + 3.0 * posts + (s.posts.count as f32 * 0.1).min(1.0);
    }
    *f += (s.post_labels as f32 * 0.15).min(1.5);
    if s.path & group::FORUM != 0 {
        *f += 1.5;
    }

    // A product: declared so, a buy button, a price.
    let p = &mut k[PageKind::Product.index()];
    if d.product > 0 && d.product <= 2 && d.list == 0 && d.collection == 0 {
        *p += 3.0;
    }
    if og.contains("product") && !og.contains("group") || og.ends_with(":item") {
        *p += 2.5;
    }
    if s.carts > 0 && s.prices > 0 && !priced_cards {
        *p += 1.5;
    }
    if s.path & group::PRODUCT != 0 {
        *p += 1.0;
    }

    // A collection: a grid of priced cards, declared or not.
    let c = &mut k[PageKind::Collection.index()];
    if d.collection > 0 || d.list > 0 && d.product > 0 || d.product >= 3 {
        *c += 2.0;
    }
    if og.contains("group") {
        *c += 2.5;
    }
    if s.cards.count >= 3 && priced_cards {
        *c += 1.5 + 3.0 * cards + (s.cards.priced as f32 * 0.1).min(1.0);
    }
    if s.path & group::COLLECTION != 0 {
        *c += 1.0;
    }

    // A listing: a run of cards without prices holding much of the page.
    let l = &mut k[PageKind::Listing.index()];
    if s.cards.count >= 3 && !priced_cards {
        *l += 3.5 * cards + (s.cards.count as f32 * 0.05).min(2.0);
    }
    if (d.list > 0 || d.collection > 0) && d.product == 0 {
        *l += 1.5;
    }
    if s.path & group::LISTING != 0 {
        *l += 1.0;
    }

    // A service page: sections under headings (that are not cards' titles) with little prose
    // each, not dated.
    let sv = &mut k[PageKind::Service.index()];
    let section_headings = s.headings.saturating_sub(s.linked_headings);
    let per_heading = s.body_non_link as f32 / (section_headings.max(1) as f32);
    if section_headings >= 3 && per_heading < (PROSE_CHARS * 4) as f32 {
        *sv += 1.0 + (s.sections as f32 * 0.2).min(1.5);
    }
    if d.service > 0 {
        *sv += 1.5;
    }
    if d.faq > 0 {
        *sv += 0.5;
    }
    if !s.dated && og != "article" && d.article == 0 {
        *sv += 0.5;
    }
    k
}

#[cfg(test)]
mod tests;
