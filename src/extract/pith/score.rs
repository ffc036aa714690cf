//! Candidate selection: paragraphs score their ancestors, the best-scoring block is the
//! article, and its siblings that continue it join it.
//!
//! A paragraph is the text of a block-level element outside its nested blocks (text split by
//! inline markup stays one paragraph). One of at least [`MIN_PARAGRAPH`] characters scores
//! 1 + its commas + one point per 100 characters (at most 3): commas mark sentences of prose,
//! which menus and teaser lines lack. The score goes to the block that holds the paragraph,
//! half of it to the next one up, and a third, a sixth… to the three above that, so the
//! block holding *many* paragraphs wins over the one holding the longest. Each scored block
//! starts from a bonus for what its tag usually is (a `div` or a cell holds content, a list
//! item or a heading does not) and its [`hints`](super::hints) weight, and its total is scaled
//! by (1 − link density) so link-heavy regions lose even when long.
//!
//! Four passes over the arena, all linear: a forward one gives each text its paragraph and
//! inherits the "unlikely" mark; a reverse one sums characters and link characters per subtree
//! without the unlikely regions; a forward one over paragraphs scores their ancestors; and one
//! over the scored blocks picks the best.

use markup5ever::local_name;

use super::anchor::{self, Title};
use super::hints::{self, Hints};
use crate::dom::{is_block, Element, NodeId, NodeKind, Ns, Tree};

/// A paragraph shorter than this (characters) scores nothing: labels, buttons, captions.
pub const MIN_PARAGRAPH: u32 = 25;

/// Per-node figures of one analysis, indexed by [`NodeId::index`].
pub struct Analysis {
    /// The element's class and id hints.
    pub hints: Vec<Hints>,
    /// In a region that is never the article (itself or an ancestor), when stripping.
    pub unlikely: Vec<bool>,
    /// Visible characters of the subtree outside unlikely regions.
    pub chars: Vec<u32>,
    /// The part of `chars` inside links.
    pub link_chars: Vec<u32>,
    /// Non-link characters of the subtree's prose paragraphs ([`is_prose`]).
    pub prose: Vec<u32>,
    /// The block's own paragraph: characters, commas and sentence ends; for a visible text
    /// node outside unlikely regions, its commas alone.
    pub own: Vec<Own>,
    /// The block's score before the link-density scaling; 0 for blocks no paragraph scored.
    pub score: Vec<f32>,
    /// Whether a paragraph scored the block.
    pub candidate: Vec<bool>,
    /// The block each node belongs to (itself for a block): whose paragraph its text is.
    pub block_of: Vec<u32>,
    /// The `<article>` holding the page's title heading ([`anchor::find`]).
    pub anchor: Option<NodeId>,
    /// The page's own statement of where its content is ([`structural`]), or an ancestor of
    /// one: class and id names cannot make it an unlikely region.
    pub protected: Vec<bool>,
    /// The `<article>` the page states is its story: the [`anchor`](Analysis::anchor), else
    /// the page's only `<article>` with text (when stripping).
    pub stated: Option<NodeId>,
    /// The page is a thread of posts (a forum): names of comments and replies are the
    /// content's, not a region beside it.
    pub thread: bool,
}

/// The text of a block outside its nested blocks.
#[derive(Clone, Copy, Default, Debug)]
pub struct Own {
    /// Visible characters.
    pub chars: u32,
    /// The part inside links.
    pub link_chars: u32,
    /// Commas (Latin, Arabic and full-width).
    pub commas: u32,
    /// Sentence ends (`.`, `!`, `?` and the full-width stop).
    pub stops: u32,
    /// A hash of the text without its whitespace, for [`Analysis::find_repeats`].
    pub hash: u64,
}

/// How many blocks with the same text make it a widget's (an image-rating prompt under every
/// picture, a "jump to recipe" button, a newsletter box in every section). Twice happens in
/// articles (a pull quote, a lead repeated as a summary); three times, of a paragraph-long
/// text, is a template.
pub const MIN_REPEATS: usize = 3;

impl Analysis {
    /// Analyses the page; `strip` marks the unlikely regions (see [`Hints::is_unlikely`]).
    pub fn of(tree: &Tree, title: &Title, strip: bool, thread: bool) -> Analysis {
        let n = tree.len();
        let mut a = Analysis {
            hints: vec![Hints::default(); n],
            unlikely: vec![false; n],
            chars: vec![0; n],
            link_chars: vec![0; n],
            prose: vec![0; n],
            own: vec![Own::default(); n],
            score: vec![0.0; n],
            candidate: vec![false; n],
            block_of: vec![0; n],
            anchor: anchor::find(tree, title),
            protected: Vec::new(),
            stated: None,
            thread,
        };
        if strip {
            let (marks, only_article) = protected(tree, a.anchor);
            a.protected = marks;
            a.stated = a.anchor.or(only_article);
        }
        a.mark(tree, strip);
        a.find_repeats(tree);
        a.sum(tree);
        a.score_paragraphs(tree);
        a
    }

    /// Link characters ÷ characters of the subtree (0 for no text).
    pub fn link_density(&self, id: NodeId) -> f32 {
        let i = id.index();
        if self.chars[i] == 0 {
            0.0
        } else {
            self.link_chars[i] as f32 / self.chars[i] as f32
        }
    }

    /// The block's final score: its paragraphs' score scaled by (1 − link density).
    pub fn final_score(&self, id: NodeId) -> f32 {
        self.score[id.index()] * (1.0 - self.link_density(id))
    }

    /// Forward pass: hints, the unlikely mark, and each text's paragraph.
    fn mark(&mut self, tree: &Tree, strip: bool) {
        for i in 0..tree.len() {
            let Some(id) = tree.node_at(i) else { continue };
            let parent = tree.parent(id).map_or(0, NodeId::index);
            match tree.kind(id) {
                NodeKind::Element(e) => {
                    // Inside an unlikely region nothing is read again: no hints needed.
                    self.unlikely[i] = self.unlikely[parent] || {
                        let h = hints::of(tree, id);
                        self.hints[i] = h;
                        // On a thread, a post named a comment or a reply is a post: its names
                        // demote it (the weight stays), they do not rule it out.
                        let h = if self.thread && h.has(Hints::THREAD) {
                            Hints::default()
                        } else {
                            h
                        };
                        let named = strip && !self.protected[i] && is_unlikely(tree, id, e, h);
                        // Hidden from assistive technology, whatever the names: the page's
                        // own markup, and what a screen reader would not read either.
                        let silent = strip && is_aria_hidden(tree, id);
                        named || silent || self.other_story(tree, id, e)
                    };
                    self.block_of[i] = if is_block(e) {
                        i as u32
                    } else {
                        self.block_of[parent]
                    };
                }
                NodeKind::Text(span) => {
                    self.block_of[i] = self.block_of[parent];
                    if self.unlikely[parent] || !tree.is_shown(id) {
                        continue;
                    }
                    let (commas, stops) = marks(tree.str(*span));
                    // A text node's own slot is otherwise unused: it keeps the text's commas
                    // for the cleaning pass, which then need not read the text again.
                    self.own[i].commas = commas;
                    let own = &mut self.own[self.block_of[parent] as usize];
                    let chars = tree.stats(id).text_chars;
                    own.chars += chars;
                    if tree.is_in_link(id) {
                        own.link_chars += chars;
                    }
                    own.commas += commas;
                    own.stops += stops;
                    own.hash = fold_hash(own.hash, tree.str(*span));
                }
                _ => self.block_of[i] = self.block_of[parent],
            }
        }
    }

    /// Takes the counts away from the blocks whose own text, a paragraph long, is the own text
    /// of [`MIN_REPEATS`] blocks or more, each in a container of its own: a widget's text
    /// scores nothing and is not prose (it stays where it is; cleaning judges it as any other
    /// block). Copies side by side in one container are the page's own text (a refrain, a
    /// placeholder). One sort of the paragraphs' hashes.
    fn find_repeats(&mut self, tree: &Tree) {
        let mut seen: Vec<(u64, u32, u32)> = Vec::new();
        for (i, o) in self.own.iter().enumerate() {
            if o.chars < MIN_PARAGRAPH {
                continue;
            }
            let parent = tree.node_at(i).and_then(|id| tree.parent(id));
            seen.push((o.hash, parent.map_or(0, |p| p.index() as u32), i as u32));
        }
        seen.sort_unstable();
        for run in seen.chunk_by(|x, y| x.0 == y.0) {
            let containers = run.chunk_by(|x, y| x.1 == y.1).count();
            if containers < MIN_REPEATS {
                continue;
            }
            for &(_, _, i) in run {
                self.own[i as usize] = Own::default();
            }
        }
    }

    /// Another `<article>` than the one holding the page's title: a teaser, a related post, a
    /// comment. One inside the titled article that holds half its text or more is the story's
    /// body in a wrapper of its own, not another story.
    fn other_story(&self, tree: &Tree, id: NodeId, e: &Element) -> bool {
        if e.ns != Ns::Html || e.name != local_name!("article") {
            return false;
        }
        let Some(a) = self.anchor else { return false };
        if tree.holds(id, a) {
            return false;
        }
        let inside = tree.holds(a, id);
        !(inside && tree.stats(id).text_chars * 2 >= tree.stats(a).text_chars)
    }

    /// Reverse pass: characters and link characters per subtree, unlikely regions left out.
    fn sum(&mut self, tree: &Tree) {
        for i in (0..tree.len()).rev() {
            let Some(id) = tree.node_at(i) else { continue };
            if self.unlikely[i] {
                self.chars[i] = 0;
                self.link_chars[i] = 0;
                continue;
            }
            if tree.text(id).is_some() && tree.is_shown(id) {
                let chars = tree.stats(id).text_chars;
                self.chars[i] = chars;
                self.link_chars[i] = if tree.is_in_link(id) { chars } else { 0 };
            }
            if is_prose(&self.own[i]) {
                self.prose[i] += self.own[i].chars - self.own[i].link_chars;
            }
            if let Some(p) = tree.parent(id) {
                let (c, l, g) = (self.chars[i], self.link_chars[i], self.prose[i]);
                self.chars[p.index()] += c;
                self.link_chars[p.index()] += l;
                self.prose[p.index()] += g;
            }
        }
    }

    /// Each paragraph adds its score to its holder and four levels of ancestors.
    fn score_paragraphs(&mut self, tree: &Tree) {
        for i in 0..tree.len() {
            let own = self.own[i];
            if own.chars < MIN_PARAGRAPH || self.unlikely[i] {
                continue;
            }
            let Some(id) = tree.node_at(i) else { continue };
            let Some(e) = tree.element(id) else { continue };
            let Some(start) = scoring_start(tree, id, e, self.chars[i], own.chars) else {
                continue;
            };
            let points = 1.0 + own.commas.min(50) as f32 + (own.chars as f32 / 100.0).min(3.0);
            let mut at = Some(start);
            for level in 0..5u32 {
                let Some(a) = at else { break };
                if tree.element(a).is_none() || tree.tag(a) == Some("html") {
                    break;
                }
                if !self.candidate[a.index()] {
                    self.candidate[a.index()] = true;
                    self.score[a.index()] = base_score(tree, a, self.hints[a.index()]);
                }
                let divider = match level {
                    0 => 1.0,
                    1 => 2.0,
                    l => (l * 3) as f32,
                };
                self.score[a.index()] += points / divider;
                at = tree.parent(a);
            }
        }
    }
}

/// Where a paragraph's score starts: a `<p>`, cell or `<pre>` is the paragraph, so its holder
/// is its parent, and so is a `div`-like block's whose text is all its own; text straight in a
/// `div`-like block beside nested blocks is a paragraph inside that block. Lists,
/// headings and landmarks do not score.
fn scoring_start(
    tree: &Tree,
    id: NodeId,
    e: &Element,
    chars: u32,
    own_chars: u32,
) -> Option<NodeId> {
    if e.ns != Ns::Html {
        return None;
    }
    match e.name {
        local_name!("p")
        | local_name!("td")
        | local_name!("pre")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6") => tree.parent(id),
        // A block whose text is all its own is a paragraph written as a div.
        local_name!("div")
        | local_name!("section")
        | local_name!("article")
        | local_name!("main")
        | local_name!("blockquote")
        | local_name!("center") => {
            if chars <= own_chars {
                tree.parent(id)
            } else {
                Some(id)
            }
        }
        local_name!("body") => Some(id),
        _ => None,
    }
}

/// A scored block's starting score: what its tag usually holds, plus its class weight.
fn base_score(tree: &Tree, id: NodeId, h: Hints) -> f32 {
    let tag = match tree.tag(id).unwrap_or("") {
        "div" | "article" => 5,
        "pre" | "td" | "blockquote" => 3,
        "address" | "ol" | "ul" | "dl" | "dd" | "dt" | "li" | "form" => -3,
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "th" => -5,
        _ => 0,
    };
    let item = if tree
        .attr(id, "itemprop")
        .is_some_and(|v| v.contains("articleBody"))
    {
        25
    } else {
        0
    };
    (tag + h.weight() + item) as f32
}

/// The elements the page marks as its content ([`is_structural`]), and their ancestors: a
/// wrapper named `site_header` or an `articleBody` whose id says `share-buttons` still holds
/// the article, and names are weaker evidence than the page's own markup.
/// Also returns the page's only `<article>` when it holds [`MIN_ONLY_ARTICLE`] of text.
fn protected(tree: &Tree, anchor: Option<NodeId>) -> (Vec<bool>, Option<NodeId>) {
    let mut marks = vec![false; tree.len()];
    let mut only_article: Option<NodeId> = None;
    let mut articles = 0u32;
    let mark = |marks: &mut Vec<bool>, id: NodeId| {
        marks[id.index()] = true;
        for p in tree.ancestors(id) {
            if marks[p.index()] {
                break;
            }
            marks[p.index()] = true;
        }
    };
    for i in 0..tree.len() {
        let Some(id) = tree.node_at(i) else { continue };
        let Some(e) = tree.element(id) else { continue };
        if e.ns != Ns::Html {
            continue;
        }
        if e.name == local_name!("article") {
            articles += 1;
            only_article = Some(id);
        }
        if is_structural(tree, id, e) {
            mark(&mut marks, id);
        }
    }
    // The page's only `<article>`, when it holds text, is the composition the page is about.
    let only_article =
        only_article.filter(|&a| articles == 1 && tree.stats(a).text_chars >= MIN_ONLY_ARTICLE);
    for a in only_article.iter().chain(anchor.iter()) {
        mark(&mut marks, *a);
    }
    (marks, only_article)
}

/// The least text (characters) of a page's only `<article>` that [`protected`] trusts: a
/// shorter one is a teaser or a card, not the page's composition.
const MIN_ONLY_ARTICLE: u32 = 250;

/// Whether the page's markup says the element is its main content: `<main>`, `role=main`,
/// or schema.org's `itemprop=articleBody`.
fn is_structural(tree: &Tree, id: NodeId, e: &Element) -> bool {
    e.name == local_name!("main")
        || tree
            .attr(id, "role")
            .is_some_and(|r| r.eq_ignore_ascii_case("main"))
        || tree
            .attr(id, "itemprop")
            .is_some_and(|v| v.split_ascii_whitespace().any(|w| w == "articleBody"))
}

/// Whether the element says it is hidden from assistive technology (`aria-hidden="true"`):
/// a decorative copy (a pull quote repeating a sentence, the visual form of a formula beside
/// its MathML), a print-only block, a closed menu. Reading mode is what a screen-reader user
/// hears, and such a user never hears these, on any site and in any language. When the page
/// hides its whole article so (an open dialog's backdrop), stripping leaves too little and
/// the page is analysed again without it (the [`Params::min_chars`] retry).
///
/// [`Params::min_chars`]: super::Params::min_chars
fn is_aria_hidden(tree: &Tree, id: NodeId) -> bool {
    tree.attr(id, "aria-hidden")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether the element is a region that is never the article: by its names, its ARIA role
/// or its tag (`nav`, `aside`: the page says so).
fn is_unlikely(tree: &Tree, id: NodeId, e: &Element, h: Hints) -> bool {
    if e.ns != Ns::Html {
        return false;
    }
    match e.name {
        local_name!("body") | local_name!("html") | local_name!("main") | local_name!("a") => {
            return false
        }
        // A page's or a section's footer: its fine print, contact and legal lines.
        local_name!("nav") | local_name!("aside") | local_name!("footer") => return true,
        _ => {}
    }
    if let Some(role) = tree.attr(id, "role") {
        const ROLES: [&str; 7] = [
            "menu",
            "menubar",
            "complementary",
            "navigation",
            "alert",
            "alertdialog",
            "dialog",
        ];
        if role
            .split_ascii_whitespace()
            .any(|r| ROLES.iter().any(|x| r.eq_ignore_ascii_case(x)))
        {
            return true;
        }
        if role.eq_ignore_ascii_case("main") || role.eq_ignore_ascii_case("article") {
            return false;
        }
    }
    h.is_unlikely() && !(h.has(Hints::SHARE) && holds_quote(tree, id))
}

/// Whether a quotation opens the element's first nodes: a social-named wrapper around a
/// `<blockquote>` is an embedded post the article quotes, not a sharing bar. The look is
/// bounded, so the pass stays linear.
fn holds_quote(tree: &Tree, id: NodeId) -> bool {
    tree.descendants(id)
        .take(QUOTE_LOOKAHEAD)
        .any(|d| tree.tag(d) == Some("blockquote"))
}

/// How many nodes of a social-named wrapper [`holds_quote`] looks at.
const QUOTE_LOOKAHEAD: usize = 16;

/// A paragraph of prose: at least 80 characters, less than a quarter of them link text.
pub fn is_prose(own: &Own) -> bool {
    own.chars >= 80 && own.link_chars * 4 < own.chars
}

/// Folds a text into a block's hash (FNV-1a): its length and its first [`HASHED_BYTES`]
/// bytes that are not ASCII whitespace (a template's copies differ in their indentation, not
/// their words). A bounded cost per text: every visible text of the page comes here.
fn fold_hash(mut h: u64, text: &str) -> u64 {
    if h == 0 {
        h = 0xcbf2_9ce4_8422_2325;
    }
    let mut step = |b: u8| h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    for b in text.trim_ascii().len().to_le_bytes() {
        step(b);
    }
    for &b in text
        .as_bytes()
        .iter()
        .filter(|b| !b.is_ascii_whitespace())
        .take(HASHED_BYTES)
    {
        step(b);
    }
    h
}

/// How many bytes of each text [`fold_hash`] reads.
const HASHED_BYTES: usize = 48;

/// A text's commas and sentence ends: the ASCII ones and the Arabic comma, the ideographic
/// comma and full stop, and the full-width comma, exclamation and question marks. Every
/// visible text goes through here: one tight loop over the bytes, and for a text that is not
/// all ASCII a second one that looks only at the three lead bytes of those characters (a lead
/// byte never occurs inside another character's encoding), without decoding characters.
pub fn marks(text: &str) -> (u32, u32) {
    let b = text.as_bytes();
    let (mut commas, mut stops) = (0u32, 0u32);
    for &x in b {
        match x {
            b',' => commas += 1,
            b'.' | b'!' | b'?' => stops += 1,
            _ => {}
        }
    }
    if text.is_ascii() {
        return (commas, stops);
    }
    for (i, &x) in b.iter().enumerate() {
        if x < 0xD8 {
            continue;
        }
        let second = b.get(i + 1).copied().unwrap_or(0);
        let third = b.get(i + 2).copied().unwrap_or(0);
        match (x, second, third) {
            (0xD8, 0x8C, _) | (0xE3, 0x80, 0x81) | (0xEF, 0xBC, 0x8C) => commas += 1,
            (0xE3, 0x80, 0x82) | (0xEF, 0xBC, 0x81 | 0x9F) => stops += 1,
            _ => {}
        }
    }
    (commas, stops)
}

/// The chosen content: the top block, and the siblings that continue it, in document order.
pub struct Selection {
    /// The blocks whose subtrees are the content.
    pub roots: Vec<NodeId>,
}

/// Picks the article: the best final score, moved up to a common ancestor when several
/// near-equal blocks share one (an article split into sections), then joined with siblings.
/// With a `scope`, only blocks inside it compete, and the choice never leaves it; when none
/// inside it scores, the scope is the choice.
pub fn select(tree: &Tree, a: &Analysis, scope: Option<NodeId>) -> Option<Selection> {
    let range = scope.map_or(0..tree.len(), |s| {
        s.index()..s.index() + tree.descendants(s).len()
    });
    let mut best: [(f32, usize); 5] = [(f32::MIN, usize::MAX); 5];
    for i in range.clone() {
        if !a.candidate[i] || a.unlikely[i] {
            continue;
        }
        let Some(id) = tree.node_at(i) else { continue };
        let s = a.final_score(id);
        if let Some(pos) = best.iter().position(|&(b, _)| s > b) {
            best[pos..].rotate_right(1);
            best[pos] = (s, i);
        }
    }
    let (top_score, top) = best[0];
    // A scope without a scored block (an article written as a list) is the choice itself.
    let mut top = tree.node_at(top).or(scope)?;
    let bound = Bound { range };
    top = common_ancestor(tree, top, top_score, &best[1..], &bound).unwrap_or(top);
    top = climb(tree, a, top, &bound);
    top = expand(tree, a, top, &bound);
    let roots = if scope == Some(top) {
        vec![top]
    } else {
        siblings(tree, a, top)
    };
    Some(Selection { roots })
}

/// How far up the choice may move: not to `body` or `html`, and not out of the scope.
struct Bound {
    range: std::ops::Range<usize>,
}

impl Bound {
    fn stops(&self, tree: &Tree, p: NodeId) -> bool {
        tree.tag(p).is_none_or(|t| t == "body" || t == "html") || !self.range.contains(&p.index())
    }
}

/// Moves up to the ancestor that holds the rest of an article split into several blocks
/// (sections between figures, paragraphs around an inset): each step up must add text that is
/// at least half prose with few links. Wrappers that add nothing are passed through.
fn expand(tree: &Tree, a: &Analysis, top: NodeId, bound: &Bound) -> NodeId {
    let mut cur = top;
    let mut up = tree.parent(top);
    while let Some(p) = up {
        if bound.stops(tree, p) {
            break;
        }
        let (pi, ci) = (p.index(), cur.index());
        let added = a.chars[pi].saturating_sub(a.chars[ci]);
        let added_links = a.link_chars[pi].saturating_sub(a.link_chars[ci]);
        let added_prose = a.prose[pi].saturating_sub(a.prose[ci]);
        if added > 0 {
            if added_prose * 2 < added || added_links * 3 > added || added_prose < 80 {
                break;
            }
            cur = p;
        }
        up = tree.parent(p);
    }
    cur
}

/// When three or more of the runners-up score at least 3/4 of the top and share an ancestor
/// with it, that ancestor is the article (its sections scored separately).
fn common_ancestor(
    tree: &Tree,
    top: NodeId,
    score: f32,
    rest: &[(f32, usize)],
    bound: &Bound,
) -> Option<NodeId> {
    let close: Vec<usize> = rest
        .iter()
        .filter(|&&(s, i)| i != usize::MAX && s >= 0.75 * score && s > 0.0)
        .map(|&(_, i)| i)
        .collect();
    if close.len() < 3 {
        return None;
    }
    let mut up = tree.parent(top);
    while let Some(p) = up {
        if bound.stops(tree, p) {
            return None;
        }
        let range = p.index()..p.index() + tree.descendants(p).len();
        if close.iter().filter(|i| range.contains(i)).count() >= 3 {
            return Some(p);
        }
        up = tree.parent(p);
    }
    None
}

/// Moves up from the top block while its parent scores higher (the parent holds more of the
/// article), and past parents of which it is the only element child.
fn climb(tree: &Tree, a: &Analysis, mut top: NodeId, bound: &Bound) -> NodeId {
    let mut last = a.final_score(top);
    let threshold = last / 3.0;
    let mut up = tree.parent(top);
    while let Some(p) = up {
        if bound.stops(tree, p) {
            break;
        }
        if a.candidate[p.index()] {
            let s = a.final_score(p);
            if s < threshold {
                break;
            }
            if s > last {
                top = p;
                break;
            }
            last = s;
        }
        up = tree.parent(p);
    }
    while let Some(p) = tree.parent(top) {
        if bound.stops(tree, p) {
            break;
        }
        let elements = tree
            .children(p)
            .filter(|&c| tree.element(c).is_some())
            .count();
        if elements != 1 {
            break;
        }
        top = p;
    }
    top
}

/// The top block and those of its siblings that continue the article: scoring blocks close
/// to it, and paragraphs of prose with few links.
fn siblings(tree: &Tree, a: &Analysis, top: NodeId) -> Vec<NodeId> {
    let Some(parent) = tree
        .parent(top)
        .filter(|p| tree.tag(*p).is_some_and(|t| t != "html"))
    else {
        return vec![top];
    };
    if tree.tag(top) == Some("body") {
        return vec![top];
    }
    let top_score = a.final_score(top);
    let threshold = (top_score * 0.2).max(10.0);
    let top_class = tree.attr(top, "class").filter(|c| !c.is_empty());
    let mut roots = Vec::new();
    for s in tree.children(parent) {
        if s == top {
            roots.push(s);
            continue;
        }
        if tree.element(s).is_none() || a.unlikely[s.index()] {
            continue;
        }
        let mut score = if a.candidate[s.index()] {
            a.final_score(s)
        } else {
            0.0
        };
        if top_class.is_some() && tree.attr(s, "class") == top_class {
            score += top_score * 0.2;
        }
        if score >= threshold || is_prose_paragraph(tree, a, s) {
            roots.push(s);
        }
    }
    roots
}

/// A `<p>` sibling of the article that is prose: long with few links, or a short sentence
/// without links.
fn is_prose_paragraph(tree: &Tree, a: &Analysis, id: NodeId) -> bool {
    if tree.tag(id) != Some("p") {
        return false;
    }
    let chars = a.chars[id.index()];
    let density = a.link_density(id);
    (chars > 80 && density < 0.25) || (chars > 0 && density == 0.0 && a.own[id.index()].stops > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::pith::{extract, Params};

    const PROSE: &str =
        "The council met for three hours on Tuesday evening, and the vote, when it \
        came, was close. Residents had filled the hall, with many standing at the back.";

    fn extracted(html: &str) -> String {
        let mut tree = Tree::parse(html);
        extract(&mut tree, &Params::default());
        crate::render::text::render(&tree)
    }

    #[test]
    fn what_assistive_technology_never_reads_is_not_the_article() {
        // A pull quote repeating a sentence and a print-only address line, both hidden from
        // screen readers; the visual form of a formula hidden beside its readable form.
        let html = format!(
            "<body><article><p>{PROSE}</p><div aria-hidden=true><span>“Residents had filled \
             the hall,” the mayor said, to cheers.</span></div><p>{PROSE}</p>\
             <p>The area is <span aria-hidden=TRUE>πr²</span><span>pi r squared</span>.</p>\
             <div aria-hidden=' true '><h4>Page address</h4><p>https://news.example/council</p>\
             </div></article></body>"
        );
        let text = extracted(&html);
        assert_eq!(
            text,
            format!("{PROSE}\n{PROSE}\nThe area is pi r squared.\n")
        );
    }

    #[test]
    fn an_article_hidden_whole_is_read_all_the_same() {
        // A saved page with a dialog open: the page behind it is marked hidden.
        let html = format!(
            "<body><div aria-hidden=true><article><p>Story: {PROSE}</p><p>{PROSE}</p>\
             <p>{PROSE}</p></article></div><div role=dialog><p>Sign in</p></div></body>"
        );
        let text = extracted(&html);
        assert!(text.starts_with("Story: "), "{text}");
        assert!(!text.contains("Sign in"), "{text}");
    }

    #[test]
    fn marks_count_latin_arabic_and_cjk_punctuation() {
        assert_eq!(marks("One, two, three. Four? Five!"), (2, 3));
        assert_eq!(marks("واحد، اثنان"), (1, 0));
        assert_eq!(marks("一、二，三。好！吗？"), (2, 3));
        assert_eq!(marks("“Curly” quotes… and — dashes"), (0, 0));
        assert_eq!(marks(""), (0, 0));
    }
}
