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
//!   prose (the title, byline and date the reading page shows apart), an `h1` before the first
//!   prose (the title again), forms and their controls, embedded frames and objects, dialogs;
//! - it is a heading whose names say clutter ("Related stories", "Comments") or that is, outside
//!   the run of the article's prose or among its last lines, more than half links away from
//!   the page (a teaser's headline; links to a place on the page itself, a section's back-link
//!   to the contents, do not count), or a sharing or
//!   byline/credit element with little text;
//! - it is a line about the article rather than of it: a short dateline (`itemprop=date…`, or
//!   a date by its digits before the first or after the last text of prose, [`lines`]), a
//!   gallery counter beside a picture, the page's title again, or, among the last lines, a
//!   contact or follow line holding an e-mail address or handle;
//! - it is a pop-up card inside a sentence: an inline element with a picture and a list of
//!   links;
//! - it is a paragraph more than half link text with under 100 other characters, unless it
//!   reads as a sentence ([`is_sentence`]) before the article's last lines: a lead that links
//!   every name it mentions is prose, a closing "Follow us on …" line is not;
//! - unless it is mostly a quotation (an embedded post included), which the article quotes,
//!   or holds an equation (MathML: the article's, whatever its container's names and
//!   however few characters it reads as; it also keeps a region named as unlikely),
//!   it is a container (div, section, list, table, header) with fewer than ten commas, that is,
//!   not a run of prose, and looks like clutter by its counts: a score below zero (a list
//!   written as prose, [`MIN_LIST_TEXT`] of text at most [`MAX_LIST_LINKS`] links, excepted:
//!   its score is below zero only because lists are mostly menus), more than a fifth link text (half
//!   for a container named as content or a list), more list items than paragraphs, more
//!   controls than a third of its paragraphs, more than one image with fewer than two paragraphs per image
//!   (outside figures), or less than [`MIN_BLOCK`] characters with no single image and not a
//!   heading. These are the conditional rules that long experience with reading modes has
//!   settled on; prose protects a block because clutter does not come in sentences.

use markup5ever::local_name;

use super::anchor::Title;
use super::hints::Hints;
use super::lines;
use super::score::{is_prose, Analysis};
use crate::dom::{is_block, Element, NodeId, NodeKind, Ns, Tree};

/// A container with less text than this (characters), no image and no heading is debris: an
/// "Advertisement" label, an empty wrapper, a lone icon caption.
pub const MIN_BLOCK: u32 = 25;

/// The longest block read as a metadata line (a dateline): longer ones are text.
pub const MAX_LINE: u32 = 80;

/// The least text of a pop-up card (characters): a picture with three short links.
pub const MIN_CARD: u32 = 60;

/// The longest block compared with the page's title (characters).
pub const MAX_TITLE: u32 = 300;

/// The longest block read as a contact or follow line at the end of an article.
pub const MAX_CONTACT: u32 = 300;

/// The article's tail: a block with at most this much prose after it (characters).
pub const MAX_TAIL_PROSE: u32 = 200;

/// The least text of a paragraph read as a sentence whatever its links (characters).
pub const MIN_SENTENCE: u32 = 40;

/// The most link text a paragraph read as a sentence holds: a lead paragraph that links the
/// people and places it names is more than half links, a "read more" line is nearly all.
pub const MAX_SENTENCE_LINKS: f32 = 0.8;

/// The least non-link text (characters) of a list written as prose: the highlights of a post,
/// the steps of a recipe, as much as the text a lone paragraph needs to count as more than a
/// line of links ([`is_link_paragraph`]).
pub const MIN_LIST_TEXT: u32 = 100;

/// The most link text a list written as prose holds: the link-density limit the conditional
/// rules set for a container (a menu or a list of teasers is links almost throughout).
pub const MAX_LIST_LINKS: f32 = 0.2;

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
    quote_chars: u32,
    links: u32,
    /// MathML equations (`math` elements that show).
    equations: u32,
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
        self.quote_chars += o.quote_chars;
        self.links += o.links;
        self.equations += o.equations;
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
pub fn clean(tree: &Tree, a: &Analysis, title: &Title, roots: &[NodeId]) -> Cleaning {
    let mut out = Cleaning::default();
    let prose: u32 = roots.iter().map(|r| a.prose[r.index()]).sum();
    let (first_prose, prose_end) = prose_run(tree, a, roots);
    let judge = Judge {
        a,
        title,
        prose,
        first_prose,
        prose_end,
    };
    let mut counts: Vec<Counts> = Vec::new();
    let mut dropped: Vec<bool> = Vec::new();
    // Prose characters after the node being judged: the pass runs backwards, roots included.
    let mut after = 0u32;
    for &root in roots.iter().rev() {
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
                NodeKind::Text(_) if tree.is_shown(id) => {
                    c.chars = tree.stats(id).text_chars;
                    if tree.is_in_link(id) {
                        c.link_chars = c.chars;
                    } else if !a.unlikely[i] && is_prose(&a.own[a.block_of[i] as usize]) {
                        after += c.chars;
                    }
                    c.commas = a.own[i].commas;
                }
                NodeKind::Element(e) => {
                    add_own(tree, id, e, &mut c);
                    let tail = after.saturating_sub(a.prose[i]) <= MAX_TAIL_PROSE;
                    let drop = judge.should_drop(tree, id, e, &c, tail)
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
    if e.ns == Ns::MathMl && e.name == local_name!("math") && tree.is_shown(id) {
        c.equations += 1;
    }
    if e.ns != Ns::Html || !tree.is_shown(id) {
        return;
    }
    match e.name {
        local_name!("p") => c.paragraphs += 1,
        local_name!("li") => c.items += 1,
        local_name!("img") => c.images += 1,
        local_name!("a") if tree.attr(id, "href").is_some() => c.links += 1,
        local_name!("input") => c.controls += 1,
        local_name!("iframe") | local_name!("object") | local_name!("embed") => c.embeds += 1,
        local_name!("h1")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6") => c.heading_chars = c.chars,
        local_name!("time") => c.time_chars = c.chars,
        local_name!("blockquote") => c.quote_chars = c.chars,
        _ => {}
    }
}

/// What the rules read besides the counts.
struct Judge<'a> {
    a: &'a Analysis,
    /// The page's title, which the reading page shows apart.
    title: &'a Title<'a>,
    /// The prose of the whole selection.
    prose: u32,
    /// Where the selection's first paragraph of prose starts (a node index).
    first_prose: usize,
    /// Where its last paragraph of prose ends (one past its last node).
    prose_end: usize,
}

impl Judge<'_> {
    /// The rules of the module doc, for one element with the counts of its kept subtree.
    /// `tail`: at most [`MAX_TAIL_PROSE`] of prose follows the element.
    fn should_drop(&self, tree: &Tree, id: NodeId, e: &Element, c: &Counts, tail: bool) -> bool {
        let a = self.a;
        let i = id.index();
        // An equation is the article's, whatever the names around it say (a typesetting
        // script's context-menu class) and however few characters it reads as.
        if a.unlikely[i] && c.equations == 0 {
            return true;
        }
        if e.ns != Ns::Html {
            return false;
        }
        let h = a.hints[i];
        // Within the run of the article's prose, before its last lines.
        let inside = !tail && id.index() > self.first_prose && id.index() < self.prose_end;
        if let Some(verdict) = by_tag(tree, a, id, e, c, h, (self.first_prose, inside)) {
            return verdict;
        }
        // Before the article's last lines, a paragraph that reads as a sentence is prose
        // however many of its words are links (a lead that links every name it mentions);
        // among them, such a line is a follow or licence line.
        if e.name == local_name!("p") && is_link_paragraph(c) && (tail || !is_sentence(tree, id, c))
        {
            return true;
        }
        if self.is_metadata(tree, id, e, c, tail) || is_card(e, c) {
            return true;
        }
        // A block that is mostly a quotation (an embedded post included) is judged as the
        // quotation: the article quotes it.
        if c.quote_chars * 2 > c.chars || c.equations > 0 {
            return false;
        }
        if by_name(c, h) {
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

    /// Lines about the article rather than of it: a date beside a `<time>`, datelines, gallery
    /// counters, the title again, and contact or follow lines at the end.
    fn is_metadata(&self, tree: &Tree, id: NodeId, e: &Element, c: &Counts, tail: bool) -> bool {
        if c.time_chars > 0 && c.chars < c.time_chars + MIN_BLOCK && c.paragraphs <= 1 {
            return true;
        }
        if c.chars <= MAX_LINE && c.link_chars * 2 <= c.chars && self.is_dateline(tree, id, c) {
            return true;
        }
        if c.chars <= lines::MAX_COUNTER && c.link_chars == 0 && lines::is_counter(tree, id) {
            return true;
        }
        let short = c.chars <= MAX_TITLE && c.paragraphs <= 1 && is_block(e);
        if short && self.title.is_repeated_by(tree, id) {
            return true;
        }
        let contact = tail && c.chars <= MAX_CONTACT && c.quote_chars == 0 && is_block(e);
        contact && lines::has_address(tree, id) && !in_quote(tree, id)
    }
}

/// What the tag alone decides, if anything: `Some(true)` to drop, `Some(false)` to keep.
/// `first_prose`: where the selection's prose starts; `inside`: the element lies within the
/// run of that prose, before its last lines.
fn by_tag(
    tree: &Tree,
    a: &Analysis,
    id: NodeId,
    e: &Element,
    c: &Counts,
    h: Hints,
    (first_prose, inside): (usize, bool),
) -> Option<bool> {
    match e.name {
        local_name!("footer") => Some(!in_quote(tree, id)),
        // An article's header without prose: its title, byline and date, which the reading
        // page shows apart.
        local_name!("header") if a.prose[id.index()] == 0 => Some(true),
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
        | local_name!("aside") => Some(true),
        // Before the article's first prose an `h1` is its title, which the reading page shows
        // apart; after it, a section heading (some pages write every heading as `h1`).
        local_name!("h1") if id.index() < first_prose => Some(true),
        // The caption belongs to its figure: the reading page keeps figures whole.
        local_name!("figcaption") => Some(false),
        local_name!("h1")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6") => Some(h.weight() < 0 || (!inside && is_link_heading(tree, id, c))),
        _ => None,
    }
}

/// A heading more than half link text that leads away from the page: a teaser's headline, the
/// title of another story. Links to a place on the page itself (`href="#…"`: a section's
/// back-link to the table of contents, a permalink mark) do not count: a heading that is one
/// names its own section. Only read outside the run of the article's prose (before it, or
/// among its last lines), where teasers sit: inside it, a linked heading heads the text that
/// follows (an entry of a list article, linking what it names).
fn is_link_heading(tree: &Tree, id: NodeId, c: &Counts) -> bool {
    if c.link_chars * 2 <= c.chars {
        return false;
    }
    let in_page: u32 = tree
        .descendants(id)
        .filter(|&n| tree.tag(n) == Some("a") && tree.is_shown(n))
        .filter(|&n| tree.attr(n, "href").is_some_and(|h| h.starts_with('#')))
        .map(|n| tree.stats(n).text_chars)
        .sum();
    c.link_chars.saturating_sub(in_page) * 2 > c.chars
}

/// A paragraph more than half link text, with little other text: a line of links, unless it
/// reads as a sentence ([`is_sentence`]).
fn is_link_paragraph(c: &Counts) -> bool {
    c.link_density() > 0.5 && c.chars - c.link_chars < 100
}

/// A paragraph that reads as a sentence, so prose however many of its words are links (a lead
/// that links every name it mentions): [`MIN_SENTENCE`] characters or more, at most
/// [`MAX_SENTENCE_LINKS`] of them link text, ending as a sentence ends ([`ends_sentence`]).
/// Link lists, "Related:" lines and teasers do not end so.
fn is_sentence(tree: &Tree, id: NodeId, c: &Counts) -> bool {
    c.chars >= MIN_SENTENCE && c.link_density() <= MAX_SENTENCE_LINKS && ends_sentence(tree, id)
}

/// Whether the last visible text of `id` ends with a sentence's final mark, in any script
/// (`.` `!` `?` `…`, the ideographic and full-width stops, the Arabic question mark, the
/// danda), closing quotes and brackets after it allowed.
fn ends_sentence(tree: &Tree, id: NodeId) -> bool {
    let last = tree
        .descendants(id)
        .filter(|&n| tree.is_shown(n))
        .filter_map(|n| tree.text(n))
        .filter(|t| !t.trim().is_empty())
        .last();
    let Some(text) = last else { return false };
    let closers: &[char] = &['"', '\'', '”', '’', '»', '«', ')', ']', '）', '」', '』'];
    let end = text.trim_end().trim_end_matches(closers).trim_end();
    end.ends_with(['.', '!', '?', '…', '。', '！', '？', '؟', '।'])
}

/// A pop-up card inside running text: an inline element holding a picture and three links or
/// more, almost all its text link text (a profile's latest stories, a preview). Text of a
/// sentence never comes as a picture with a list of links, so it is not the paragraph's.
fn is_card(e: &Element, c: &Counts) -> bool {
    !is_block(e)
        && e.name != local_name!("a")
        && c.images > 0
        && c.links >= 3
        && c.chars >= MIN_CARD
        && c.link_chars * 10 >= c.chars * 9
}

/// Short captions and credits, sharing bars and byline blocks, by their class or id names.
fn by_name(c: &Counts, h: Hints) -> bool {
    (h.has(Hints::CAPTION) && c.chars < 300 && c.paragraphs <= 2)
        || (h.has(Hints::SHARE) && c.chars < 500)
        || (h.has(Hints::META) && c.paragraphs <= 1 && c.commas < 3 && c.chars < 200)
}

impl Judge<'_> {
    /// A short line stating when the article was published: marked so (`itemprop`
    /// `datePublished`, `dateModified`), or outside the run of its prose and reading as a
    /// date by its digits ([`lines::is_dateline`]).
    fn is_dateline(&self, tree: &Tree, id: NodeId, c: &Counts) -> bool {
        if c.heading_chars > 0 || c.quote_chars > 0 || c.chars == 0 {
            return false;
        }
        if tree
            .attr(id, "itemprop")
            .is_some_and(|p| p.starts_with("date"))
        {
            return true;
        }
        let start = id.index();
        let before = start + tree.descendants(id).len() <= self.first_prose;
        (before || start >= self.prose_end) && lines::is_dateline(tree, id, before)
    }
}

/// The span of the selection's prose: its first and last text that belongs to a paragraph of
/// prose, as node indices (first, one past last); an empty span when it has none (then no
/// line is outside).
fn prose_run(tree: &Tree, a: &Analysis, roots: &[NodeId]) -> (usize, usize) {
    let (mut first, mut end) = (usize::MAX, 0);
    for &root in roots {
        let start = root.index();
        for i in start..start + tree.descendants(root).len() {
            let block = a.block_of[i] as usize;
            if a.unlikely[i] || !is_prose(&a.own[block]) || is_heading(tree, block) {
                continue;
            }
            let shown = tree
                .node_at(i)
                .is_some_and(|n| tree.text(n).is_some() && tree.stats(n).text_chars > 0);
            if shown {
                first = first.min(i);
                end = end.max(i + 1);
            }
        }
    }
    if first == usize::MAX {
        (0, usize::MAX)
    } else {
        (first, end)
    }
}

fn is_heading(tree: &Tree, i: usize) -> bool {
    tree.node_at(i)
        .and_then(|n| tree.tag(n))
        .is_some_and(|t| matches!(t, "h1" | "h2" | "h3" | "h4" | "h5" | "h6"))
}

/// The conditional rules for a container.
fn is_clutter(tree: &Tree, a: &Analysis, id: NodeId, c: &Counts, h: Hints, list: bool) -> bool {
    let weight = h.weight();
    // A list's score starts below zero (lists are mostly menus), so one that a nested
    // paragraph scored is below zero too; a list written as prose is judged by its counts.
    let prose_list = list
        && c.link_density() <= MAX_LIST_LINKS
        && c.chars.saturating_sub(c.link_chars) >= MIN_LIST_TEXT;
    if !prose_list && a.candidate[id.index()] && weight as f32 + a.score[id.index()] < 0.0 {
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
    tree.ancestors(id).take(8).any(|p| tree.tag(p) == Some(tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::pith::{extract, Params};

    const PROSE: &str = "The council met for three hours on Tuesday evening, and the vote, when it came, was close. \
        Residents had filled the hall, with many standing at the back, to hear the debate.";

    fn extracted(html: &str) -> String {
        let mut tree = Tree::parse(html);
        extract(&mut tree, &Params::default());
        crate::render::text::render(&tree)
    }

    /// A typesetting script wraps each equation in a container whose class names a context
    /// menu, and it reads as three characters: the equation stays all the same. A real menu
    /// beside it still goes.
    #[test]
    fn an_equation_stays_whatever_its_container_is_named() {
        let html = format!(
            "<body><article><h1>Roots</h1><p>{PROSE}</p>\
             <div class=\"MathJax CtxtMenu_Attached_0\"><span><math display=block><mi>x</mi><mo>=</mo><mn>2</mn></math></span></div>\
             <p>{PROSE}</p><div class=menu><a href=/a>Home</a> <a href=/b>News</a></div></article></body>"
        );
        let text = extracted(&html);
        assert!(text.contains("x=2"), "the equation stays: {text}");
        assert!(!text.contains("Home"), "the menu goes: {text}");
    }

    #[test]
    fn a_lead_paragraph_that_links_its_names_is_prose() {
        // Two thirds of its text is links.
        let lead = "<a href=/p/jane>Jane Doe</a>, the <a href=/t/mayor>mayor of Lakeside</a>, \
            resigned on <a href=/d/tuesday>Tuesday</a> after a vote.";
        let html = format!(
            "<body><article><h1>Mayor resigns</h1><p>{lead}</p><p>{PROSE}</p><p>{PROSE}</p>\
             <p><a href=/more>More stories from the council chamber</a> <a href=/x>and the town</a></p>\
             <p>Follow us on <a href=/i>Instagram</a>, <a href=/f>Facebook</a> and <a href=/t>Twitter</a>.</p></article></body>"
        );
        let text = extracted(&html);
        assert!(
            text.contains("Jane Doe, the mayor of Lakeside, resigned on Tuesday after a vote."),
            "the lead stays: {text}"
        );
        assert!(
            !text.contains("More stories"),
            "a line of links still goes: {text}"
        );
        assert!(
            !text.contains("Follow us"),
            "so does a sentence of links among the last lines: {text}"
        );
    }

    #[test]
    fn a_list_written_as_prose_stays_a_menu_goes() {
        // A screenshot's caption nested in an item scores the list, whose score starts below
        // zero: the counts, not that, decide.
        let item = "We have just landed a fix that stops an update from starting while another \
            window is open, the cause of the restart page you may have seen.";
        let html = format!(
            "<body><article><p>{PROSE}</p><h3>Highlights</h3><ul><li>{item}<ul><li><div>\
             <img src=a.png><p>A screenshot of the restart page</p></div></li></ul></li>\
             <li>Logins can now be imported from <a href=/k>a password manager</a> file.</li></ul>\
             <p>{PROSE}</p><ul><li><a href=/a>Home</a></li><li><a href=/b>World news</a></li>\
             <li><a href=/c>Sport</a></li></ul></article></body>"
        );
        let text = extracted(&html);
        assert!(text.contains(item), "{text}");
        assert!(text.contains("Logins can now be imported"), "{text}");
        assert!(!text.contains("World news"), "the menu still goes: {text}");
    }

    #[test]
    fn an_h1_after_the_first_prose_is_a_section_heading() {
        let html = format!(
            "<body><article><h1>Monitoring the processor</h1><p>{PROSE}</p>\
             <h1>Why it matters</h1><p>{PROSE}</p></article></body>"
        );
        let text = extracted(&html);
        assert!(text.contains("Why it matters\n"), "{text}");
        assert!(
            !text.contains("Monitoring the processor"),
            "the title before the prose goes: {text}"
        );
    }

    #[test]
    fn a_heading_linking_within_the_page_stays_one_linking_away_goes() {
        let html = format!(
            "<body><article><p>{PROSE}</p><h2><a href=#toc-2>Setting up the server</a>\
             <a href=#setting-up>¶</a></h2><p>{PROSE}</p><h2><a href=/elsewhere>Another \
             story from the paper</a></h2><p>{PROSE}</p></article></body>"
        );
        let text = extracted(&html);
        assert!(text.contains("Setting up the server"), "{text}");
        assert!(!text.contains("Another story"), "{text}");
    }

    #[test]
    fn a_linked_heading_inside_the_text_heads_it_one_after_the_text_goes() {
        let html = format!(
            "<body><article><p>{PROSE}</p><h3><a href=/shop/rez>“Rez Infinite” ($30)</a></h3>\
             <p>{PROSE}</p><h3><a href=/shop/thumper>“Thumper” ($20)</a></h3><p>{PROSE}</p>\
             <p>{PROSE}</p><h3><a href=/news/other>A story elsewhere in the paper</a></h3></article></body>"
        );
        let text = extracted(&html);
        assert!(text.contains("“Rez Infinite” ($30)\n"), "{text}");
        assert!(text.contains("“Thumper” ($20)\n"), "{text}");
        assert!(!text.contains("A story elsewhere"), "{text}");
    }

    #[test]
    fn sentences_end_with_a_final_mark_in_any_script() {
        for (html, expected) in [
            ("<p>She said so <a href=/x>yesterday</a>.</p>", true),
            ("<p>“Was it <a href=/x>him</a>?”</p>", true),
            ("<p>市长<a href=/x>辞职</a>了。</p>", true),
            (
                "<p>Related: <a href=/x>Tunisia sends fighters abroad</a></p>",
                false,
            ),
            ("<p>[Read: <a href=/x>Why Tunisia suffers</a>]</p>", false),
            ("<p>Text.<span hidden>tail</span></p>", true),
        ] {
            let tree = Tree::parse(html);
            let p = tree
                .descendants(tree.root())
                .find(|&n| tree.tag(n) == Some("p"))
                .expect("a paragraph");
            assert_eq!(ends_sentence(&tree, p), expected, "{html}");
        }
    }
}
