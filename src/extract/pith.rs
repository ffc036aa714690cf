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
//!    navigation and dialogs) are left out of scoring, and so is every `<article>` other than
//!    the one holding the page's title heading ([`anchor`]: teasers, related posts). The best
//!    block wins; it moves up to a common ancestor when several near-equal blocks share one
//!    (an article split into sections) and when its parent scores higher still.
//! 2. **Expansion** ([`score`]): the winner's siblings that score close to it, or that are
//!    paragraphs of prose with few links, join it (articles whose paragraphs are not all in
//!    one container).
//! 3. **Cleaning** ([`clean`]): inside what was chosen, unlikely regions, footers, forms,
//!    embedded frames, sharing and byline elements, pop-up cards inside sentences, and
//!    containers that do not read as prose (link-dense, list- or image-heavy, nearly empty)
//!    are removed, bottom-up, so a block is judged on what stays of it; a quotation (an
//!    embedded post included) is kept as the article quotes it. Lines about the article
//!    rather than of it go too ([`lines`]): datelines and contact lines outside the run of its
//!    prose, gallery counters, and any block repeating the page's title (the reading page
//!    shows the title once, as its own `<h1>`).
//! 4. **Assessment** ([`assess`]): how sure the choice is. A page whose best block holds little
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

mod anchor;
mod clean;
mod hints;
mod lines;
mod score;

use crate::dom::{NodeId, Tree};

use super::algorithm::keep_only;
use anchor::Title;
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
}

impl Default for Params {
    fn default() -> Self {
        Params {
            min_chars: 250,
            min_content_chars: 250,
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

/// The extractor's decision, before it touches the tree.
struct Plan {
    roots: Vec<NodeId>,
    drop: Vec<NodeId>,
    chars: u32,
    link_chars: u32,
}

/// Removes what is not main content (contract in [`super::algorithm`]). A page without any
/// paragraph to score is left whole.
pub fn extract(tree: &mut Tree, params: &Params) {
    let Some(plan) = plan(tree, params) else {
        return;
    };
    keep_only(tree, &plan.roots);
    for id in plan.drop {
        tree.remove(id);
    }
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
    let clear = non_link >= params.min_content_chars && plan.link_chars * 2 < plan.chars;
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
    let first = plan_once(tree, &title, true);
    if first.as_ref().is_some_and(|p| p.chars >= params.min_chars) {
        return first;
    }
    let second = plan_once(tree, &title, false);
    match (first, second) {
        (Some(a), Some(b)) => Some(if b.chars > a.chars { b } else { a }),
        (a, b) => a.or(b),
    }
}

fn plan_once(tree: &Tree, title: &Title, strip: bool) -> Option<Plan> {
    let analysis = Analysis::of(tree, title, strip);
    let Selection { roots, .. } = score::select(tree, &analysis)?;
    let cleaning = clean::clean(tree, &analysis, title, &roots);
    if cleaning.chars == 0 {
        return None; // everything judged clutter: the choice was wrong, not the page empty
    }
    Some(Plan {
        roots,
        drop: cleaning.drop,
        chars: cleaning.chars,
        link_chars: cleaning.link_chars,
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
