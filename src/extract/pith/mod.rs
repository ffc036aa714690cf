//! `pith`, the default reading-mode extractor: find the article by where its prose is, join
//! what continues it, and take out the boilerplate its container holds.
//!
//! # The steps
//!
//! 1. **Candidate selection** ([`score`]): every paragraph of prose scores the blocks that
//!    hold it, by its length and its commas; a block's total is scaled down by its link
//!    density, and class and id names (`article-body` against `comments`, [`hints`]) and the
//!    schema.org `articleBody` property weigh in as weak evidence. Regions that are never the
//!    article (menus, sidebars, comment threads, sharing bars, `nav`, `aside`, ARIA
//!    navigation and dialogs, and whatever is `aria-hidden`, which a screen reader never
//!    reads) are left out of scoring, and so is every `<article>` other than
//!    the one holding the page's title heading ([`anchor`]: teasers, related posts). Names
//!    never make an unlikely region of what the page's markup calls its content (`<main>`,
//!    `role=main`, `itemprop=articleBody`, the titled `<article>`, a page's only `<article>`)
//!    nor of its wrappers; a `<footer>` is never the article. A paragraph whose text is the
//!    own text of three blocks or more, each in a container of its own, is a widget's (an
//!    image-rating prompt under every picture) and scores nothing. The best block wins; it
//!    moves up to a common ancestor when several near-equal blocks share one (an article split
//!    into sections) and when its parent scores higher still.
//! 2. **Expansion** ([`score`]): the winner's siblings that score close to it, or that are
//!    paragraphs of prose with few links, join it (articles whose paragraphs are not all in
//!    one container).
//! 3. **Cleaning** ([`clean`]): inside what was chosen, unlikely regions, footers, forms,
//!    embedded frames, sharing and byline elements, pop-up cards inside sentences, and
//!    containers that do not read as prose (link-dense, list- or image-heavy, nearly empty;
//!    a list whose items are prose stays) are removed, bottom-up, so a block is judged on what stays of it; a quotation (an
//!    embedded post included) is kept as the article quotes it. Lines about the article
//!    rather than of it go too ([`lines`]): datelines and contact lines outside the run of its
//!    prose, gallery counters, and any block repeating the page's title (the reading page
//!    shows the title once, as its own `<h1>`).
//! 4. **Review** ([`review`]): the choice against the rest of the page. A choice outside the
//!    titled `<article>` (which holds prose), or one with a third of the prose of a region
//!    before it or a fifth of a region after it, moves into that region ([`Choice::Moved`]);
//!    when only names hid that much prose, the choice is in doubt ([`Choice::Doubt`]) and the
//!    reading page serves the declutter page. Never confidently wrong: the failure this
//!    catches is a bio, a footer or a disclaimer returned beside an article ten times longer.
//! 5. **Region** ([`region`]): the choice against the page's content region (`<main>`, else
//!    `<body>`, without the regions never content and the chrome without prose). A chosen
//!    block holding less than [`Params::region_share`] of the region's text was one card of a
//!    listing, one section of a service page, one post of a thread: the region is the content
//!    ([`Choice::Region`]). A choice in doubt stands. A region mostly of repeated cards is a
//!    listing, read whole with its linked titles ([`Choice::Listing`]). When the page's kind
//!    is known ([`Params::kind`], at [`KIND_CONFIDENCE`] or more), the share depends on it
//!    (a service page's sections, a product's details), and on a forum the posts named
//!    comments or replies are demoted by those names, not ruled out.
//! 6. **Assessment** ([`assess`]): how sure the choice is. A page whose best block holds little
//!    prose (a home page, a link portal, search results) is [`Confidence::Unclear`], and the
//!    reading page should fall back to the declutter output and say so.
//!
//! If stripping the unlikely regions leaves less than [`Params::min_chars`] of text (a page
//! whose article sits in a block named like clutter), the page is analysed again without
//! that step, and the longer result wins.
//!
//! # Sources, and what was chosen
//!
//! Steps 1 to 3 follow the scoring scheme of the Readability family of reading modes (Arc90's
//! Readability, 2009, and its successors), whose constants are kept: paragraphs of 25
//! characters or more, 1 point + commas + one per 100 characters up to 3, ancestors weighted
//! 1, 1/2, then 1/(3·level), a sibling threshold of max(10, 20% of the top score), ten commas
//! as the mark of prose, link-density limits of 0.2 and 0.5. pith's own choices, each made on
//! the development set's measurements and meant for pages it has never seen: class and id
//! names are read as whole words, not substrings (`header` does not contain the word `ad`);
//! `nav`, `aside` and ARIA landmarks count as regions that are never the article; the page's
//! own statement of its story (the title in its metadata, the heading that repeats it, the
//! `<article>` around that heading) outweighs scores; metadata lines are recognised by their
//! digits and addresses, not by words of one language; the analysis reads the tree's
//! precomputed statistics in a fixed number of linear passes, so no per-node allocation and
//! no recursion.

pub(crate) mod anchor;
mod clean;
mod hints;
mod lines;
mod region;
mod review;
mod score;

use crate::dom::{NodeId, Tree};
use crate::extract::kind::{Kind, PageKind};

use crate::extract::keep_only;
use anchor::Title;
use review::Review;
use score::{Analysis, Selection};

/// The knobs of the extractor; [`Default`] gives the values the module doc explains.
#[derive(Debug, Clone)]
pub struct Params {
    /// Below this many characters of content after stripping unlikely regions, the page is
    /// analysed again without stripping, and the longer result wins. Readability uses 500;
    /// pith 250, because news briefs and short posts of 250 to 500 characters are real, and
    /// on them the unstripped retry picked the comment thread instead (measured: F1 +0.002).
    pub min_chars: u32,
    /// A page whose content holds less non-link text than this is [`Confidence::Unclear`].
    pub min_content_chars: u32,
    /// A chosen block holding less than this share of the content region's text was not the
    /// page's content: the region is ([`region`], [`Choice::Region`]). 0.3: on the three
    /// development sets, wcxb rose from 0.794 to 0.818 word F1 and its articles from 0.926
    /// to 0.937, at a cost of 0.003 on scrapinghub and readability; 0.5 cost those 0.007 and
    /// 0.010, 0.7 twice that (docs/extraction.md).
    pub region_share: f32,
    /// The page's kind ([`crate::extract::kind::classify`]), when known: a forum's posts are
    /// its content, whatever their names say; the other kinds set the region's share.
    pub kind: Option<Kind>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            min_chars: 250,
            min_content_chars: 250,
            region_share: 0.3,
            kind: None,
        }
    }
}

/// How sure the extractor is that it found the page's main content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    /// One block clearly holds the page's prose: serve the reading page.
    Clear,
    /// No block does (a portal, a home page, search results, a page without text): serve the
    /// declutter output instead, and say so.
    Unclear,
}

/// What [`assess`] found, for the reading page's decision and its note to the reader.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// The verdict.
    pub confidence: Confidence,
    /// Visible characters the content keeps.
    pub content_chars: u32,
    /// The part of them that is not link text.
    pub content_non_link: u32,
    /// Visible characters of the whole body, for comparison.
    pub page_chars: u32,
}

/// How the content was chosen, for the reading page's decision and the proxy's `x-pith`
/// header (`reader=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The best-scoring block, as first chosen.
    Article,
    /// The first choice held far less prose than a region beside it ([`review`]): the article
    /// was chosen inside that region.
    Moved,
    /// Stripping the unlikely regions left too little: the page was analysed again without.
    Unstripped,
    /// The choice cannot be trusted: a region that names mark as clutter holds far more prose
    /// than it. The reading page serves the declutter page instead.
    Doubt,
    /// No paragraph to score: the page was left whole.
    Nothing,
    /// The page's content is not one block (a listing, a shop's grid, a service page, a
    /// thread): its content region was kept whole, without the regions never content
    /// ([`region`]).
    Region,
    /// The page is a listing: runs of repeated cards (a shop's products, a list of jobs,
    /// courses or stories) hold most of its content region, which was kept whole
    /// ([`region::cards`]). The cards' titles are links, and stay.
    Listing,
}

impl Choice {
    /// The value of `reader=` in the `x-pith` header.
    pub fn name(self) -> &'static str {
        match self {
            Choice::Article => "article",
            Choice::Moved => "moved",
            Choice::Unstripped => "unstripped",
            Choice::Doubt => "fallback:prose-elsewhere",
            Choice::Nothing => "whole-page",
            Choice::Region => "region",
            Choice::Listing => "listing",
        }
    }
}

impl std::fmt::Display for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The extractor's decision, before it touches the tree.
struct Plan {
    roots: Vec<NodeId>,
    drop: Vec<NodeId>,
    chars: u32,
    link_chars: u32,
    choice: Choice,
}

/// Removes what is not main content (contract in [`super::algorithm`]) and says how it chose.
/// A page without any paragraph to score is left whole; so is one whose choice is in doubt
/// ([`Choice::Doubt`]), which the reading page replaces with the declutter page.
pub fn extract(tree: &mut Tree, params: &Params) -> Choice {
    let Some(plan) = plan(tree, params) else {
        return Choice::Nothing;
    };
    if plan.choice == Choice::Doubt {
        return Choice::Doubt;
    }
    keep_only(tree, &plan.roots);
    for id in plan.drop {
        tree.remove(id);
    }
    plan.choice
}

/// Judges, without changing the tree, whether [`extract`] would find clear main content. The
/// reading page calls it first and serves the declutter output when it says
/// [`Confidence::Unclear`].
pub fn assess(tree: &Tree, params: &Params) -> Assessment {
    let page_chars = tree.body().map_or(0, |b| tree.stats(b).text_chars);
    let Some(plan) = plan(tree, params) else {
        return Assessment {
            confidence: Confidence::Unclear,
            content_chars: 0,
            content_non_link: 0,
            page_chars,
        };
    };
    let non_link = plan.chars.saturating_sub(plan.link_chars);
    let clear = match plan.choice {
        // A listing's items are links: their text counts.
        Choice::Listing => plan.chars >= params.min_content_chars,
        Choice::Doubt => false,
        _ => non_link >= params.min_content_chars && plan.link_chars * 2 < plan.chars,
    };
    Assessment {
        confidence: if clear {
            Confidence::Clear
        } else {
            Confidence::Unclear
        },
        content_chars: plan.chars,
        content_non_link: non_link,
        page_chars,
    }
}

/// The full decision: selection, expansion and cleaning, with the retry without stripping.
fn plan(tree: &Tree, params: &Params) -> Option<Plan> {
    tree.body()?;
    let title = Title::of(tree);
    let first = plan_once(tree, &title, true, params);
    if first.as_ref().is_some_and(|p| p.chars >= params.min_chars) {
        return first;
    }
    let second = plan_once(tree, &title, false, params).map(|p| Plan {
        choice: if p.choice == Choice::Article {
            Choice::Unstripped
        } else {
            p.choice
        },
        ..p
    });
    match (first, second) {
        (Some(a), Some(b)) => Some(if b.chars > a.chars { b } else { a }),
        (a, b) => a.or(b),
    }
}

fn plan_once(tree: &Tree, title: &Title, strip: bool, params: &Params) -> Option<Plan> {
    let kind = params
        .kind
        .filter(|k| k.confidence >= KIND_CONFIDENCE)
        .map(|k| k.kind);
    let thread = kind == Some(PageKind::Forum);
    let analysis = Analysis::of(tree, title, strip, thread);
    let narrow = plan_block(tree, &analysis, title);
    if !strip {
        return narrow;
    }
    let Some(region) = region::find(tree, &analysis) else {
        return narrow;
    };
    // A doubt stands: the declutter page, which keeps both, is served.
    if narrow.as_ref().is_some_and(|p| p.choice == Choice::Doubt) {
        return narrow;
    }
    let block_chars = narrow.as_ref().map_or(0, |p| p.chars);
    if block_chars as f32 >= region_share(kind, params) * region.chars as f32 {
        return narrow;
    }
    Some(Plan {
        roots: vec![region.root],
        drop: region.drop,
        chars: region.chars,
        link_chars: region.link_chars,
        choice: if region.listing {
            Choice::Listing
        } else {
            Choice::Region
        },
    })
}

/// The least confidence of the page's kind ([`Params::kind`]) that lets it change how the page
/// is read. 0.5: at the classifier's own bar (0.25), blog posts taken for forums lost their
/// article to their comment threads (readability 0.968 → 0.961, docs/extraction.md); at 0.5
/// the article sets are unchanged.
pub const KIND_CONFIDENCE: f32 = 0.5;

/// The share of the content region below which the chosen block gives way to the region
/// ([`Params::region_share`]), by kind: a service page is many sections (0.7), a product page
/// its description, specifications and details apart (0.6), a listing or a collection its
/// items (0.6), documentation its sections (0.5); an article, a forum and a page of unknown
/// kind keep [`Params::region_share`]. Each chosen on the three sets (docs/extraction.md).
fn region_share(kind: Option<PageKind>, params: &Params) -> f32 {
    match kind {
        Some(PageKind::Service) => 0.7,
        Some(PageKind::Product | PageKind::Listing | PageKind::Collection) => 0.6,
        Some(PageKind::Documentation) => 0.5,
        _ => params.region_share,
    }
}

/// The best-scoring block, expanded, reviewed and cleaned.
fn plan_block(tree: &Tree, analysis: &Analysis, title: &Title) -> Option<Plan> {
    let Selection { roots, .. } = score::select(tree, analysis, None)?;
    let cleaning = clean::clean(tree, analysis, title, &roots);
    let choice = match review::review(tree, analysis, &roots) {
        Review::Keep => Choice::Article,
        Review::Doubt => Choice::Doubt,
        Review::Anchor(region) => match moved(tree, analysis, title, region, 0) {
            Some(moved) => return Some(moved),
            None => Choice::Doubt,
        },
        Review::Move(region) => {
            let before: u32 = roots.iter().map(|r| analysis.prose[r.index()]).sum();
            match moved(tree, analysis, title, region, before) {
                Some(moved) => return Some(moved),
                None => Choice::Doubt,
            }
        }
    };
    if cleaning.chars == 0 {
        return None; // everything judged clutter: the choice was wrong, not the page empty
    }
    Some(Plan {
        roots,
        drop: cleaning.drop,
        chars: cleaning.chars,
        link_chars: cleaning.link_chars,
        choice,
    })
}

/// The choice inside `region`, which [`review`] found holds the article: `None` when the
/// choice there holds no more prose than `before` (the first choice's, when the region was
/// found by its prose; 0 for the titled article, which the page itself names).
fn moved(
    tree: &Tree,
    analysis: &Analysis,
    title: &Title,
    region: NodeId,
    before: u32,
) -> Option<Plan> {
    let Selection { roots } = score::select(tree, analysis, Some(region))?;
    let prose: u32 = roots.iter().map(|r| analysis.prose[r.index()]).sum();
    if prose <= before {
        return None;
    }
    let cleaning = clean::clean(tree, analysis, title, &roots);
    (cleaning.chars > 0).then_some(Plan {
        roots,
        drop: cleaning.drop,
        chars: cleaning.chars,
        link_chars: cleaning.link_chars,
        choice: Choice::Moved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::text::render;

    const PROSE: &str = "This paragraph of the article runs long enough to be prose, with commas, \
        clauses and two full sentences. It says something, at length, that a reader came to read.";

    fn extracted(html: &str) -> String {
        let mut tree = Tree::parse(html);
        extract(&mut tree, &Params::default());
        render(&tree)
    }

    fn links(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!("<li><a href=/s{i}>A teaser headline number {i} for another story</a></li>")
            })
            .collect()
    }

    #[test]
    fn article_wins_over_a_longer_link_heavy_sidebar() {
        let html = format!(
            "<body><div id=side><ul>{}</ul></div><div id=story><p>{PROSE}</p><p>{PROSE}</p><p>{PROSE}</p></div></body>",
            links(40)
        );
        let text = extracted(&html);
        assert_eq!(text, format!("{PROSE}\n{PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn sibling_paragraphs_join_the_article() {
        let html = format!(
            "<body><div id=wrap><p>Lead paragraph that opens the story, and says so, at some length here.</p>\
             <div id=story><p>{PROSE}</p><p>{PROSE}</p><p>{PROSE}</p></div>\
             <p>Closing paragraph after the main block, with a comma, that ends the story well.</p>\
             <ul>{}</ul></div></body>",
            links(6)
        );
        let text = extracted(&html);
        assert!(text.starts_with("Lead paragraph"), "{text}");
        assert!(text.contains("Closing paragraph"), "{text}");
        assert!(!text.contains("teaser"), "{text}");
    }

    #[test]
    fn share_bar_byline_and_title_inside_the_article_go_but_the_figure_stays() {
        let html = format!(
            "<body><article><h1>The headline</h1><p class=byline>By A. Writer</p>\
             <p>{PROSE}</p><figure><img src=a.jpg><figcaption>A caption, with credit</figcaption></figure>\
             <div class='share-tools'><a href=/fb>Facebook</a> <a href=/tw>Twitter</a> <a href=/m>Email</a></div>\
             <p>{PROSE}</p><h3>Related stories</h3><ul>{}</ul></article></body>",
            links(5)
        );
        // The reading page keeps figures whole, caption included.
        assert_eq!(
            extracted(&html),
            format!("{PROSE}\nA caption, with credit\n{PROSE}\n")
        );
    }

    #[test]
    fn content_names_decide_between_equal_blocks() {
        let html = format!(
            "<body><div class=promo><p>{PROSE}</p><p>{PROSE}</p></div>\
             <div class='entry-content'><p>Story: {PROSE}</p><p>{PROSE}</p></div></body>"
        );
        let text = extracted(&html);
        assert!(text.starts_with("Story:"), "{text}");
    }

    #[test]
    fn unlikely_regions_do_not_score() {
        let html = format!(
            "<body><div id=story><p>{PROSE}</p><p>{PROSE}</p></div>\
             <div id=comments><p>Reader: {PROSE}</p><p>{PROSE}</p><p>{PROSE}</p></div></body>"
        );
        assert_eq!(extracted(&html), format!("{PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn a_portal_is_unclear_and_an_article_clear() {
        let portal = format!(
            "<body><h1>News</h1><ul>{}</ul><ul>{}</ul></body>",
            links(30),
            links(30)
        );
        let verdict = assess(&Tree::parse(&portal), &Params::default());
        assert_eq!(verdict.confidence, Confidence::Unclear, "{verdict:?}");
        let article = format!(
            "<body><ul>{}</ul><div><p>{PROSE}</p><p>{PROSE}</p></div></body>",
            links(30)
        );
        let verdict = assess(&Tree::parse(&article), &Params::default());
        assert_eq!(verdict.confidence, Confidence::Clear, "{verdict:?}");
        assert!(
            verdict.content_non_link >= 2 * PROSE.len() as u32 - 10,
            "{verdict:?}"
        );
    }

    #[test]
    fn other_articles_beside_the_titled_one_are_teasers() {
        let teaser = format!(
            "<article><h3>Another story</h3><p>{PROSE}</p><a href=/x>Read more</a></article>"
        );
        let html = format!(
            "<head><title>The bridge reopens after repairs | Daily</title></head><body><div id=wrap>\
             <article><h1>The bridge reopens after repairs</h1><p>Opening: {PROSE}</p><p>{PROSE}</p>\
             </article><article><h2>You may like</h2>{teaser}{teaser}{teaser}</article></div></body>"
        );
        assert_eq!(extracted(&html), format!("Opening: {PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn an_article_wrapping_the_title_alone_is_not_the_story() {
        let html = format!(
            "<head><title>The bridge reopens after repairs | Daily</title></head><body>\
             <article><h1>The bridge reopens after repairs</h1><p>By A. Writer</p></article>\
             <article><p>Body: {PROSE}</p><p>{PROSE}</p><p>{PROSE}</p></article></body>"
        );
        assert!(extracted(&html).starts_with("Body: "));
    }

    #[test]
    fn a_quoted_post_in_a_social_wrapper_stays() {
        let html = format!(
            "<body><article><p>{PROSE}</p><div class='social-embed'><blockquote class=tweet>\
             <p>A post the story quotes <a href=/t>pic.example/x1</a></p>\
             <a href=/s>November 18, 2019</a></blockquote></div><p>{PROSE}</p>\
             <div class=share><a href=/f>Facebook</a> <a href=/t>Twitter</a></div></article></body>"
        );
        let text = extracted(&html);
        assert!(text.contains("A post the story quotes"), "{text}");
        assert!(!text.contains("Facebook"), "{text}");
    }

    #[test]
    fn datelines_counters_and_contact_lines_around_the_text_go() {
        let html = format!(
            "<body><article><p>Published November 20th, 2019 - 07:29 GMT</p><p>{PROSE}</p>\
             <div><span>Image 1 of 5</span><img src=a.jpg></div><p>The vote closes at 18:00 on Friday.</p>\
             <p>{PROSE}</p><p>Have a tip? Write to the reporter at news@example.org.</p>\
             <p>Updated at 1:23 p.m.</p></article></body>"
        );
        assert_eq!(
            extracted(&html),
            format!("{PROSE}\nThe vote closes at 18:00 on Friday.\n{PROSE}\n")
        );
    }

    #[test]
    fn a_pop_up_card_inside_a_sentence_goes_the_sentence_stays() {
        let card = "<span class=card><img src=p.jpg><a href=/p>Jane Roe</a>\
            <a href=/1>Her latest story about the budget vote</a><a href=/2>Another story of hers</a>\
            <a href=/3>More</a></span>";
        let html = format!(
            "<body><article><p>The bill, said Rep. <span><a href=/jr>Jane Roe</a>{card}</span>, \
             passes today, or so the whips say, after a long night of talks.</p><p>{PROSE}</p></article></body>"
        );
        let text = extracted(&html);
        assert!(
            text.starts_with("The bill, said Rep. Jane Roe, passes today"),
            "{text}"
        );
        assert!(!text.contains("latest story"), "{text}");
    }

    /// A legal footer of the kind every page carries: long, with commas, and never content.
    const LEGAL: &str = "<p>© 2004-2019 Example Media Ltd, Brighton, UK. All rights reserved. \
        The information published on this website, including text, graphics and images, is not \
        intended as a substitute for professional advice, and you should not act on it alone.</p>";

    #[test]
    fn the_page_markup_outweighs_a_wrapper_named_like_clutter() {
        // The only article, with the title heading, sits in a wrapper named `site_header`; the
        // article body's id names the share buttons it hosts.
        let html = format!(
            "<head><title>How the brain turns thought into insight</title></head><body>\
             <div class='row site_header'><article><h1>How the brain turns thought into insight</h1>\
             <div id=share-btns-container itemprop=articleBody><p>Lead: {PROSE}</p><p>{PROSE}</p></div>\
             </article></div><div id=legal>{LEGAL}{LEGAL}</div></body>"
        );
        assert_eq!(extracted(&html), format!("Lead: {PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn the_only_article_counts_even_without_the_title_heading() {
        // The title heading sits above the article; the article's wrapper is named like a
        // sidebar, and the imprint below is long prose.
        let impressum = "<p>Impressum: Beispiel Verlag GmbH, Musterstraße 1, 20095 Hamburg. \
            Alle Rechte vorbehalten, Vervielfältigung nur mit Genehmigung des Verlags, und \
            für die Inhalte externer Seiten übernehmen wir keine Haftung.</p>";
        let html = format!(
            "<head><title>Neue Brücke eröffnet</title></head><body><div class=kopf>\
             <h1>Neue Brücke eröffnet</h1></div><div class='sidebar-layout'><article>\
             <p>Bericht: {TIPP}</p><p>{TIPP}</p><p>{TIPP} Ende.</p></article></div>\
             <div class=unten>{impressum}{impressum}</div></body>"
        );
        let text = extracted(&html);
        assert!(text.starts_with("Bericht: "), "{text}");
        assert!(!text.contains("Impressum"), "{text}");
    }

    #[test]
    fn a_footer_element_is_never_the_article() {
        let html = format!(
            "<body><div><p>Story: {PROSE}</p><p>{PROSE}</p></div>\
             <footer><div>{LEGAL}{LEGAL}{LEGAL}</div></footer></body>"
        );
        assert_eq!(extracted(&html), format!("Story: {PROSE}\n{PROSE}\n"));
    }

    fn extracted_with(html: &str) -> (String, Choice) {
        let mut tree = Tree::parse(html);
        let choice = extract(&mut tree, &Params::default());
        (render(&tree), choice)
    }

    /// `n` list items of prose: an article written as a list (steps, tips, a review's points),
    /// which scores nothing, as lists never do.
    fn items(n: usize, sentence: &str) -> String {
        (0..n)
            .map(|i| format!("<li>{i}. {sentence}</li>"))
            .collect()
    }

    const TIPP: &str = "Wer abends das Handy weglegt, das Schlafzimmer kühl hält und jeden Tag \
        zur gleichen Zeit aufsteht, schläft nach wenigen Wochen spürbar besser ein.";

    #[test]
    fn an_author_bio_after_the_article_gives_way_to_it() {
        let html = format!(
            "<head><title>Zehn Tipps für besseren Schlaf</title></head><body>\
             <div id=inhalt><h1>Zehn Tipps für besseren Schlaf</h1><ol>{}</ol></div>\
             <div class=kasten><img src=a.jpg><p>Anna Muster schreibt seit 2010 über Gesundheit, \
             Ernährung und Familie, lebt mit Mann, zwei Kindern und Hund in Hamburg.</p></div></body>",
            items(6, TIPP)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Moved, "{text}");
        assert!(text.starts_with(&format!("0. {TIPP}")), "{text}");
        assert!(text.contains(&format!("5. {TIPP}")), "{text}");
        assert!(!text.contains("Anna Muster"), "{text}");
    }

    #[test]
    fn an_affiliate_disclaimer_and_product_headings_give_way_to_the_review() {
        let point = "Le casque tient ses promesses : la réduction de bruit efface le métro, \
            l'autonomie dépasse trente heures, et le confort reste bon après une longue journée.";
        let html = format!(
            "<body><div class=haut><p>Cet article contient des liens affiliés : si vous achetez \
             via ces liens, nous touchons une commission, sans frais pour vous, ce qui finance la \
             rédaction.</p><div class=produits><h3>Casque audio sans fil, réduction de bruit, 40 h, \
             noir</h3><h3>Écouteurs Bluetooth, étanches, autonomie 30 h, blanc</h3><h3>Enceinte \
             portable, basses profondes, 20 W, bleu</h3></div></div>\
             <div class=test><ul>{}</ul></div></body>",
            items(6, point)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Moved, "{text}");
        assert!(text.starts_with(&format!("0. {point}")), "{text}");
        assert!(
            !text.contains("liens affiliés") && !text.contains("Casque audio"),
            "{text}"
        );
    }

    #[test]
    fn a_widget_text_repeated_under_every_picture_is_not_the_recipe() {
        let step = "Die Butter mit dem Zucker schaumig rühren, dann die Eier einzeln unterrühren \
            und das Mehl mit dem Backpulver darübersieben.";
        let prompt = "<div class=bild><img src=k.jpg><p>Wie gefällt Ihnen dieses Bild? Bewerten \
            Sie es jetzt, mit einem Klick, und helfen Sie so anderen Leserinnen und Lesern.</p></div>";
        let html = format!(
            "<body><div class=rezept><p>Ein einfacher Rührkuchen für jeden Tag.</p>\
             <ol>{}</ol></div><div class=galerie>{}</div></body>",
            items(5, step),
            prompt.repeat(5)
        );
        let text = extracted(&html);
        assert!(text.starts_with("Ein einfacher Rührkuchen"), "{text}");
        assert!(text.contains(&format!("4. {step}")), "{text}");
        assert!(!text.contains("Wie gefällt Ihnen"), "{text}");
    }

    #[test]
    fn far_more_prose_in_a_region_named_like_clutter_is_a_doubt() {
        // The article's class carries a tag taken for a cookie banner; the bio after it is what
        // is left, long enough to stand alone.
        let bio = "<p>Über die Autorin: Anna Muster schreibt seit 2010 über Gesundheit, Ernährung \
            und Familie, und sie lebt mit ihrem Mann, zwei Kindern und einem Hund in Hamburg.</p>";
        let html = format!(
            "<body><div class='entry tag-cookies'><p>{TIPP}</p><p>{TIPP}</p><p>{TIPP}</p><p>{TIPP}</p>\
             <p>{TIPP}</p><p>{TIPP}</p><p>{TIPP}</p><p>{TIPP}</p></div><div class=kasten>{bio}{bio}</div></body>"
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Doubt);
        assert!(
            text.contains(TIPP) && text.contains("Anna Muster"),
            "left whole: {text}"
        );
        let verdict = assess(&Tree::parse(&html), &Params::default());
        assert_eq!(verdict.confidence, Confidence::Unclear, "{verdict:?}");
    }

    #[test]
    fn a_long_cookie_dialog_before_the_article_raises_no_doubt() {
        let notice = "<p>We and our partners store and access information on your device, such as \
            cookies, and process personal data, such as unique identifiers, for ads, content, \
            measurement, audience insights and product development.</p>";
        let html = format!(
            "<body><div role=dialog class=cookie-consent>{}</div>\
             <div id=story><p>Story: {PROSE}</p><p>{PROSE} Two.</p></div></body>",
            notice.repeat(6)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Article, "{text}");
        assert!(
            text.starts_with("Story: ") && !text.contains("partners"),
            "{text}"
        );
    }

    #[test]
    fn the_article_before_a_longer_teaser_list_stays_chosen() {
        // Teasers after an article often hold more prose than it: only far more moves the choice.
        let teaser = format!("<div class=teaser><p>{PROSE}</p></div>");
        let html = format!(
            "<body><div id=story><p>Story: {PROSE}</p><p>{PROSE}</p></div><div id=more>{}</div></body>",
            teaser.repeat(2)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Article);
        assert!(
            text.starts_with("Story: ") && text.lines().count() == 2,
            "{text}"
        );
    }

    #[test]
    fn a_listing_is_read_as_its_region_without_menus_and_filters() {
        let card = |i: usize| {
            format!(
                "<div class=card><h3><a href=/c{i}>Course {i}: project management</a></h3>\
                 <span>Online, six weeks</span> <span>$1,200</span></div>"
            )
        };
        let cards: String = (0..12).map(card).collect();
        let html = format!(
            "<body><nav><ul>{}</ul></nav><main><h1>Courses</h1><p>{PROSE}</p>\
             <form><label>Sort by</label><select><option>Price</option></select>\
             <label><input type=checkbox> Online only</label></form><div class=grid>{cards}</div></main>\
             <footer>{LEGAL}</footer></body>",
            links(8)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Listing, "{text}");
        assert!(
            text.contains(PROSE) && text.contains("Course 0:") && text.contains("Course 11:"),
            "{text}"
        );
        assert!(text.contains("$1,200"), "{text}");
        assert!(
            !text.contains("teaser") && !text.contains("Sort by") && !text.contains("rights"),
            "{text}"
        );
    }

    #[test]
    fn a_listing_of_linked_cards_is_read_whole_links_and_all() {
        // Every card is its links (a job board): the region is mostly link text, which a
        // region of prose may not be; the run of cards makes it a listing.
        let card = |i: usize| {
            format!(
                "<li class=job><a href=/j{i}><h4>Senior engineer {i}</h4><span>Remote, full time</span>\
                 <span>$90,000 - $120,000</span></a></li>"
            )
        };
        let cards: String = (0..10).map(card).collect();
        let html = format!(
            "<body><nav><ul>{}</ul></nav><main><h1>Remote jobs</h1><p>Latest posts.</p>\
             <ul class=jobs>{cards}</ul></main><footer>{LEGAL}</footer></body>",
            links(8)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Listing, "{text}");
        assert!(
            text.contains("Senior engineer 0") && text.contains("Senior engineer 9"),
            "{text}"
        );
        assert!(text.contains("$90,000"), "{text}");
        assert!(
            !text.contains("teaser") && !text.contains("rights"),
            "{text}"
        );
        let verdict = assess(&Tree::parse(&html), &Params::default());
        assert_eq!(verdict.confidence, Confidence::Clear, "{verdict:?}");
    }

    fn extracted_as(html: &str, kind: PageKind) -> (String, Choice) {
        let mut tree = Tree::parse(html);
        let params = Params {
            kind: Some(Kind {
                kind,
                confidence: 0.9,
                items: 0,
            }),
            ..Params::default()
        };
        let choice = extract(&mut tree, &params);
        (render(&tree), choice)
    }

    #[test]
    fn a_threads_posts_named_comments_are_read_on_a_forum() {
        let post = |who: &str| {
            format!(
                "<div class='comment post'><span>{who}</span><span>June 14, 2024</span>\
                 <div class=comment-body><p>{who} writes: {PROSE}</p></div></div>"
            )
        };
        let html = format!(
            "<body><div class=popover><p>Install this forum as an app on your home screen, \
             with push notifications, badges and more, in three taps.</p></div>\
             <main><h1>First telescope?</h1><div class=comments>{}{}{}</div></main></body>",
            post("Ann"),
            post("Bob"),
            post("Cy")
        );
        let (text, choice) = extracted_as(&html, PageKind::Forum);
        assert!(
            text.contains("Ann writes") && text.contains("Cy writes"),
            "{choice:?} {text}"
        );
        assert!(!text.contains("Install this forum"), "{choice:?} {text}");
        // On an article, or a page of unknown kind, comments stay beside the content.
        let (text, _) = extracted_as(&html, PageKind::Article);
        assert!(!text.contains("Bob writes"), "{text}");
        assert!(!extracted(&html).contains("Bob writes"));
    }

    #[test]
    fn a_service_pages_sections_are_read_together() {
        let feature = |i: usize| format!("<li>Feature {i}: fast, safe and simple to use</li>");
        let features: String = (0..5).map(feature).collect();
        let html = format!(
            "<body><main><section><h2>What we do</h2><p>{PROSE}</p><p>{PROSE}</p><p>{PROSE}</p></section>\
             <section><h2>Features</h2><ul>{features}</ul></section>\
             <section><h2>Pricing</h2><ul>{features}</ul></section>\
             <section><h2>Questions</h2><ul>{features}</ul></section></main></body>"
        );
        let (text, choice) = extracted_as(&html, PageKind::Service);
        assert_eq!(choice, Choice::Region, "{text}");
        assert!(
            text.contains("Pricing") && text.contains("Feature 4"),
            "{text}"
        );
        let (text, choice) = extracted_as(&html, PageKind::Article);
        assert_eq!(choice, Choice::Article, "{text}");
        assert!(!text.contains("Feature 4"), "{text}");
    }

    #[test]
    fn paragraphs_are_not_cards() {
        // Sibling paragraphs share a form too: an article is not a listing.
        let html = format!(
            "<body><main><div id=story>{}</div><ul>{}</ul></main></body>",
            format!("<p>{PROSE}</p>").repeat(6),
            links(4)
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Article, "{text}");
    }

    #[test]
    fn an_article_holding_most_of_its_region_stays_the_choice() {
        let html = format!(
            "<body><main><div id=story><p>Story: {PROSE}</p><p>{PROSE}</p><p>{PROSE}</p></div>\
             <div class=more><p>One short teaser line here.</p></div></main></body>"
        );
        let (text, choice) = extracted_with(&html);
        assert_eq!(choice, Choice::Article, "{text}");
        assert!(!text.contains("teaser"), "{text}");
    }

    #[test]
    fn pages_without_content_stay_whole_and_never_panic() {
        assert_eq!(extracted(""), "");
        assert_eq!(extracted("<p>Short.</p>"), "Short.\n");
        let deep = format!("{}{PROSE}", "<div>".repeat(200));
        assert_eq!(extracted(&deep), format!("{PROSE}\n"));
        let frameset = "<frameset><frame src=a></frameset>";
        assert_eq!(
            assess(&Tree::parse(frameset), &Params::default()).confidence,
            Confidence::Unclear
        );
    }
}
