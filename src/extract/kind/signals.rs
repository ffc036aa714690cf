//! What the page's structure says about its kind, gathered in three linear passes over the
//! tree: each node's own marks (a heading, a date, an author, a price, a buy button, a post's
//! controls, a code block), the marks of every subtree (one reverse pass), then the repeated
//! siblings of every element (cards and posts) and the navigation trees beside code. No
//! allocation per node but a few short folded lines of text.

use crate::dom::{NodeId, Tree};

use super::words::{self, group, Words, MAX_LINE_CHARS};

/// Marks of a node's subtree, as bits.
pub(super) mod mark {
    pub const HEADING: u16 = 1;
    pub const DATE: u16 = 1 << 1;
    pub const AUTHOR: u16 = 1 << 2;
    pub const PRICE: u16 = 1 << 3;
    pub const CART: u16 = 1 << 4;
    pub const POST: u16 = 1 << 5;
    pub const PRE: u16 = 1 << 6;
    pub const NESTED_LIST: u16 = 1 << 7;
    /// A link around a heading or a picture, or a heading holding a link: a card's title.
    pub const LINKED_TITLE: u16 = 1 << 8;
}

/// The schema.org types a page declares (JSON-LD `@type`, microdata `itemtype`), counted by
/// what they say of the page.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Declared {
    /// `Product`, `ProductGroup`, `IndividualProduct`, `Car`, `Book`…
    pub product: u32,
    /// `Offer`, `AggregateOffer`.
    pub offer: u32,
    /// `DiscussionForumPosting`, `QAPage`, `SocialMediaPosting`, `Comment` (as the page).
    pub forum: u32,
    /// `Question` and `Answer` (outside an `FAQPage`, a Q&A thread).
    pub question: u32,
    /// `FAQPage`.
    pub faq: u32,
    /// `CollectionPage`, `OfferCatalog`.
    pub collection: u32,
    /// `ItemList`, `SearchResultsPage`.
    pub list: u32,
    /// `TechArticle`, `APIReference`, `SoftwareSourceCode`.
    pub docs: u32,
    /// `Article`, `NewsArticle`, `BlogPosting`, `Report`, `Recipe`…
    pub article: u32,
    /// `Service`, `ProfessionalService` and kinds of business.
    pub service: u32,
}

/// Everything the classifier weighs, for one page.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct Signals {
    /// schema.org types the page declares.
    pub declared: Declared,
    /// Open Graph `og:type`, lower case.
    pub og_type: Option<String>,
    /// A publication date in the page's metadata (`article:published_time`, `datePublished`).
    pub dated: bool,
    /// Groups of `filters/page-kinds.txt`'s path words in the page's address.
    pub path: u16,
    /// Visible characters of the body.
    pub body_chars: u32,
    /// The part of them outside links.
    pub body_non_link: u32,
    /// Non-link characters in paragraphs of prose (at least [`PROSE_CHARS`] each).
    pub prose_chars: u32,
    /// `<pre>` blocks.
    pub pre: u32,
    /// `<code>` elements outside them.
    pub code: u32,
    /// A navigation tree beside the content: a `nav`, `aside` or docs-named block with nested
    /// lists and many links.
    pub nav_tree: bool,
    /// `h2`–`h4` headings.
    pub headings: u32,
    /// Those of them that hold a link or are inside one: a card's title, not a section's.
    pub linked_headings: u32,
    /// `<section>`s holding a heading.
    pub sections: u32,
    /// Buy buttons and stock labels.
    pub carts: u32,
    /// Short lines showing a price.
    pub prices: u32,
    /// A post's controls and labels ("Reply", "Joined …").
    pub post_labels: u32,
    /// Form controls (inputs, buttons, selects) in the body.
    pub controls: u32,
    /// The largest run of repeated sibling cards (each titled by a link around a heading or a
    /// picture, or a heading holding a link).
    pub cards: Group,
    /// The largest run of repeated sibling posts (a date and an author or post controls each).
    pub posts: Group,
}

/// A run of repeated siblings: same tag and class.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Group {
    /// Members that qualify.
    pub count: u32,
    /// Those that show a price.
    pub priced: u32,
    /// Visible characters of the qualifying members.
    pub chars: u32,
}

/// A paragraph with at least this many characters of non-link text is prose.
pub const PROSE_CHARS: u32 = 150;

/// A card holds at most this much text; more is an article or a post.
const MAX_CARD_CHARS: u32 = 1200;

/// The most distinct sibling shapes followed under one parent.
const MAX_SHAPES: usize = 8;

/// Gathers the signals of `tree`; `page_url` gives the address path when the page does not.
pub fn gather(tree: &Tree, page_url: Option<&str>) -> Signals {
    let words = words::builtin();
    let mut s = Signals::default();
    let mut marks = vec![0u16; tree.len()];
    let mut line = String::new();
    let mut address: Option<String> = page_url.map(str::to_string);
    for id in tree.descendants(tree.root()) {
        if let Some(text) = tree.text(id) {
            marks[id.index()] = text_marks(tree, id, text, words, &mut line, &mut s);
            continue;
        }
        let Some(tag) = tree.tag(id) else { continue };
        marks[id.index()] = element_marks(tree, id, tag, words, &mut s, &mut address);
    }
    if let Some(url) = address {
        let path = url::Url::parse(url.trim())
            .map(|u| u.path().to_string())
            .unwrap_or(url);
        s.path = words.path(&path);
    }
    // Children follow their parents in the arena: one reverse pass totals the subtrees.
    // A node's marks are whole when it is reached, its descendants all coming after it.
    for i in (1..marks.len()).rev() {
        let Some(id) = tree.node_at(i) else { continue };
        if is_linked_title(tree, id, marks[i]) {
            marks[i] |= mark::LINKED_TITLE;
        }
        if let Some(parent) = tree.parent(id) {
            marks[parent.index()] |= marks[i];
        }
    }
    if let Some(body) = tree.body() {
        let stats = tree.stats(body);
        s.body_chars = stats.text_chars;
        s.body_non_link = stats.text_chars.saturating_sub(stats.link_text_chars);
        s.controls = stats.controls;
        siblings(tree, body, &marks, &mut s);
    }
    s
}

/// The marks of one text node, and what it adds to the page's counts.
fn text_marks(
    tree: &Tree,
    id: NodeId,
    text: &str,
    words: &Words,
    line: &mut String,
    s: &mut Signals,
) -> u16 {
    let trimmed = text.trim();
    if trimmed.is_empty()
        || trimmed.len() > MAX_LINE_CHARS * 4
        || trimmed.chars().count() > MAX_LINE_CHARS
        || !tree.is_shown(id)
    {
        return 0;
    }
    let mut m = 0;
    words::fold_into(trimmed, line);
    let bits = words.line(line);
    if bits & group::CART != 0 {
        s.carts += 1;
        m |= mark::CART;
    }
    if bits & group::POST != 0 {
        s.post_labels += 1;
        m |= mark::POST;
    }
    if bits & group::AGO != 0 || is_date_like(trimmed) {
        m |= mark::DATE;
    }
    line.clear();
    if trimmed.bytes().any(|b| b.is_ascii_digit()) {
        line.extend(trimmed.chars().flat_map(char::to_lowercase));
    }
    if !line.is_empty() && words.is_price(line) {
        s.prices += 1;
        m |= mark::PRICE;
    }
    m
}

/// The marks of one element, and what it adds to the page's counts.
fn element_marks(
    tree: &Tree,
    id: NodeId,
    tag: &str,
    words: &Words,
    s: &mut Signals,
    address: &mut Option<String>,
) -> u16 {
    let mut m = 0;
    match tag {
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
            m |= mark::HEADING;
            if matches!(tag, "h2" | "h3" | "h4") && tree.is_shown(id) {
                s.headings += 1;
                if tree.stats(id).links > 0 || tree.is_in_link(id) {
                    s.linked_headings += 1;
                }
            }
        }
        "time" => m |= mark::DATE,
        "pre" if tree.is_shown(id) => {
            s.pre += 1;
            m |= mark::PRE;
        }
        "code"
            if tree.is_shown(id)
                && !tree
                    .ancestors(id)
                    .take(3)
                    .any(|a| tree.tag(a) == Some("pre")) =>
        {
            s.code += 1
        }
        "p" if tree.is_shown(id) => {
            let stats = tree.stats(id);
            let own = stats.text_chars.saturating_sub(stats.link_text_chars);
            if own >= PROSE_CHARS {
                s.prose_chars += own;
            }
        }
        "ul" | "ol" if tree.parent(id).is_some_and(|p| tree.tag(p) == Some("li")) => {
            m |= mark::NESTED_LIST
        }
        "script" if is_json_ld(tree, id) => {
            for child in tree.children(id) {
                if let Some(json) = tree.text(child) {
                    declared_types(json, &mut s.declared);
                    s.dated |= json.contains("\"datePublished\"");
                }
            }
        }
        "meta" => meta_tag(tree, id, s, address),
        "link"
            if address.is_none()
                && tree.attr(id, "rel").is_some_and(|r| {
                    r.split_ascii_whitespace()
                        .any(|w| w.eq_ignore_ascii_case("canonical"))
                }) =>
        {
            *address = tree.attr(id, "href").map(str::to_string);
        }
        "input" | "button" => {
            if let Some(value) = tree
                .attr(id, "value")
                .filter(|v| v.chars().count() <= MAX_LINE_CHARS)
            {
                if words.line(&words::fold(value)) & group::CART != 0 {
                    s.carts += 1;
                    m |= mark::CART;
                }
            }
        }
        _ => {}
    }
    for (name, value) in tree.attrs(id) {
        match &**name {
            "class" | "id" => {
                let bits = words.names_in(value);
                if bits & group::AUTHOR != 0 {
                    m |= mark::AUTHOR;
                }
                if bits & group::DATE != 0 {
                    m |= mark::DATE;
                }
                if bits & group::PRICE != 0 {
                    m |= mark::PRICE;
                }
            }
            "itemprop" => m |= itemprop_marks(value),
            "rel"
                if value
                    .split_ascii_whitespace()
                    .any(|w| w.eq_ignore_ascii_case("author")) =>
            {
                m |= mark::AUTHOR
            }
            "datetime" => m |= mark::DATE,
            "itemtype" => {
                let name = value
                    .trim()
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or("");
                count_type(name, &mut s.declared);
            }
            _ => {}
        }
    }
    m
}

fn itemprop_marks(value: &str) -> u16 {
    let mut m = 0;
    for p in value.split_ascii_whitespace() {
        match p {
            "author" | "creator" => m |= mark::AUTHOR,
            "datePublished" | "dateCreated" | "dateModified" | "uploadDate" => m |= mark::DATE,
            "price" | "lowPrice" | "highPrice" => m |= mark::PRICE,
            _ => {}
        }
    }
    m
}

fn meta_tag(tree: &Tree, id: NodeId, s: &mut Signals, address: &mut Option<String>) {
    let key = tree
        .attr(id, "property")
        .or_else(|| tree.attr(id, "name"))
        .unwrap_or("")
        .trim();
    let content = tree
        .attr(id, "content")
        .map(str::trim)
        .filter(|c| !c.is_empty());
    if key.eq_ignore_ascii_case("og:type") {
        if s.og_type.is_none() {
            s.og_type = content.map(str::to_ascii_lowercase);
        }
    } else if key.eq_ignore_ascii_case("article:published_time") {
        s.dated = true;
    } else if key.eq_ignore_ascii_case("og:url") && address.is_none() {
        *address = content.map(str::to_string);
    }
}

fn is_json_ld(tree: &Tree, id: NodeId) -> bool {
    tree.attr(id, "type")
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"))
}

/// Counts every `"@type"` value of a JSON-LD text (a string or an array of strings), without
/// parsing the JSON: a malformed block counts what it holds before it breaks.
fn declared_types(json: &str, d: &mut Declared) {
    let mut rest = json;
    while let Some(at) = rest.find("\"@type\"") {
        rest = rest[at + 7..].trim_start();
        let Some(after) = rest.strip_prefix(':') else {
            continue;
        };
        rest = after.trim_start();
        let array = rest.starts_with('[');
        let end = if array {
            rest.find(']').unwrap_or(rest.len())
        } else {
            rest.len()
        };
        let mut value = &rest[usize::from(array)..end];
        while let Some(open) = value.find('"') {
            let Some(close) = value[open + 1..].find('"') else {
                break;
            };
            let name = &value[open + 1..open + 1 + close];
            count_type(name.rsplit('/').next().unwrap_or(name), d);
            value = &value[open + close + 2..];
            if !array {
                break;
            }
            value = value.trim_start().strip_prefix(',').unwrap_or("");
        }
    }
}

fn count_type(name: &str, d: &mut Declared) {
    let slot = match name {
        "Product" | "ProductGroup" | "IndividualProduct" | "ProductModel" | "Vehicle" | "Car" => {
            &mut d.product
        }
        "Offer" | "AggregateOffer" => &mut d.offer,
        "DiscussionForumPosting" | "QAPage" | "SocialMediaPosting" => &mut d.forum,
        "Question" | "Answer" => &mut d.question,
        "FAQPage" => &mut d.faq,
        "CollectionPage" | "OfferCatalog" => &mut d.collection,
        "ItemList" | "SearchResultsPage" => &mut d.list,
        "TechArticle" | "APIReference" | "SoftwareSourceCode" => &mut d.docs,
        "Article"
        | "NewsArticle"
        | "BlogPosting"
        | "Report"
        | "ScholarlyArticle"
        | "Recipe"
        | "ReportageNewsArticle"
        | "AnalysisNewsArticle"
        | "OpinionNewsArticle"
        | "LiveBlogPosting"
        | "HowTo"
        | "Review" => &mut d.article,
        "Service"
        | "ProfessionalService"
        | "FinancialService"
        | "LegalService"
        | "HomeAndConstructionBusiness"
        | "MedicalBusiness"
        | "Dentist"
        | "Physician" => &mut d.service,
        _ => return,
    };
    *slot += 1;
}

/// Whether `id`, whose subtree has the marks `m`, is a card's title: a link around a heading or
/// a picture, or a heading holding a link.
fn is_linked_title(tree: &Tree, id: NodeId, m: u16) -> bool {
    match tree.tag(id) {
        Some("a") => {
            tree.attr(id, "href").is_some() && (m & mark::HEADING != 0 || tree.stats(id).images > 0)
        }
        Some("h1" | "h2" | "h3" | "h4" | "h5" | "h6") => tree.stats(id).links > 0,
        _ => false,
    }
}

/// Whether a short line reads as a date: a year (19xx, 20xx) standing alone, or digits with
/// two date separators (`12.03.24`, `2024-03-12`, `3/12/2024`).
fn is_date_like(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let (mut digits, mut seps) = (0, 0);
        while i < bytes.len()
            && (bytes[i].is_ascii_digit()
                || (matches!(bytes[i], b'.' | b'/' | b'-')
                    && i + 1 < bytes.len()
                    && bytes[i + 1].is_ascii_digit()))
        {
            if bytes[i].is_ascii_digit() {
                digits += 1;
            } else {
                seps += 1;
            }
            i += 1;
        }
        let run = &bytes[start..i];
        let year = run.len() == 4 && (run.starts_with(b"19") || run.starts_with(b"20"));
        if year || (seps == 2 && digits >= 4) {
            return true;
        }
    }
    false
}

/// Finds the largest runs of cards and of posts among the children of every element under
/// `body`, and whether a navigation tree stands beside the content.
fn siblings(tree: &Tree, body: NodeId, marks: &[u16], s: &mut Signals) {
    let words = words::builtin();
    for parent in tree.descendants(body) {
        let Some(tag) = tree.tag(parent) else {
            continue;
        };
        let stats = tree.stats(parent);
        if marks[parent.index()] & mark::HEADING != 0 && tag == "section" {
            s.sections += 1;
        }
        let named_nav = matches!(tag, "nav" | "aside")
            || tree
                .attr(parent, "class")
                .is_some_and(|c| words.names_in(c) & group::CODE != 0);
        if !s.nav_tree
            && named_nav
            && stats.links >= 15
            && marks[parent.index()] & mark::NESTED_LIST != 0
        {
            s.nav_tree = true;
        }
        if stats.tags < 6 || !tree.is_shown(parent) {
            continue;
        }
        let (cards, posts) = shapes(tree, parent, marks);
        if cards.chars > s.cards.chars {
            s.cards = cards;
        }
        if posts.chars > s.posts.chars {
            s.posts = posts;
        }
    }
}

/// One shape of sibling under a parent: its tag and class, and its members' tallies.
#[derive(Default, Clone, Copy)]
struct Shape<'t> {
    tag: &'t str,
    class: &'t str,
    members: u32,
    cards: Group,
    posts: Group,
}

/// The best run of cards and of posts among the children of `parent`.
fn shapes(tree: &Tree, parent: NodeId, marks: &[u16]) -> (Group, Group) {
    let mut shapes = [Shape::default(); MAX_SHAPES];
    let mut used = 0;
    for child in tree.children(parent) {
        let Some(tag) = tree.tag(child) else { continue };
        let class = tree.attr(child, "class").unwrap_or("");
        let at = match shapes[..used]
            .iter()
            .position(|s| s.tag == tag && s.class == class)
        {
            Some(at) => at,
            None if used < MAX_SHAPES => {
                shapes[used] = Shape {
                    tag,
                    class,
                    ..Shape::default()
                };
                used += 1;
                used - 1
            }
            None => continue,
        };
        let shape = &mut shapes[at];
        shape.members += 1;
        let stats = tree.stats(child);
        let m = marks[child.index()];
        let own = stats.text_chars.saturating_sub(stats.link_text_chars);
        if m & mark::LINKED_TITLE != 0 && (8..=MAX_CARD_CHARS).contains(&stats.text_chars) {
            shape.cards.count += 1;
            shape.cards.priced += u32::from(m & mark::PRICE != 0);
            shape.cards.chars += stats.text_chars;
        }
        if m & mark::DATE != 0 && m & (mark::AUTHOR | mark::POST) != 0 && own >= 20 {
            shape.posts.count += 1;
            shape.posts.chars += stats.text_chars;
        }
    }
    let mut best = (Group::default(), Group::default());
    for shape in &shapes[..used] {
        if shape.cards.count >= 3
            && shape.cards.count * 5 >= shape.members * 3
            && shape.cards.chars > best.0.chars
        {
            best.0 = shape.cards;
        }
        if shape.posts.count >= 2
            && shape.posts.count * 2 >= shape.members
            && shape.posts.chars > best.1.chars
        {
            best.1 = shape.posts;
        }
    }
    best
}

/// [`declared_types`] for the tests of the module above.
#[cfg(test)]
pub(super) fn declared_types_for_test(json: &str, d: &mut Declared) {
    declared_types(json, d);
}
