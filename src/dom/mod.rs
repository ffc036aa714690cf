//! The arena tree of stage 2: a whole document parsed into pith's own compact tree, with
//! statistics per node computed once.
//!
//! Stage 1 streams and never sees whole blocks; the removers and extractors of stage 2 need them
//! correctly nested, including elements closed implicitly (`<p>a<p>b`, cells without `</td>`) or
//! left open at the end of input. The HTML5 tree-construction rules decide all of that, and
//! parsing applies them in two steps. pith's tokenizer (`lex.rs`) turns the page into tokens.
//! pith's own tree builder (`direct/`) applies the construction rules for the markup most pages
//! are made of and writes each node straight into a [`Tree`]; on a page that needs a rule
//! outside its subset (foster parenting, the adoption agency beyond popping, templates, MathML,
//! the depth guard, …) it bails, and html5ever's tree builder, fed by the same tokenizer, builds
//! the page instead (`build.rs`), laid out as the same [`Tree`]. Which one runs is decided in
//! `parse.rs`, and the stage-1 filter both apply as they lay the tree out ([`BuildFilter`]) is
//! defined in `filter.rs`: each builder uses those and neither uses the dispatcher, so
//! the imports among them run one way. The tests hold the two paths to
//! the same tree, node for node, wherever the first accepts a page, and run the html5lib-tests
//! tree-construction suite through [`Tree::parse`] (`tests/html5lib.rs`).
//!
//! This module owns the tree, its navigation, per-node [`NodeStats`], visibility (which elements
//! display their content) and the `removed` marks that algorithms leave for the renderers. It
//! knows nothing of I/O, HTTP or the streaming rewriter; rendering lives in [`crate::render`].
//!
//! # Representation, and why
//!
//! - Nodes are stored in one `Vec` in document order (pre-order), so a node's descendants are the
//!   contiguous run of ids that follows it. Each node stores only its parent and the end of that
//!   run; children, siblings and descendants fall out of those two numbers, and bottom-up passes
//!   are a reverse loop over the array: no recursion, so no stack overflow on deep documents.
//! - All character data (text, comments, attribute values, the doctype) lives in one `String`
//!   addressed by [`Span`]s, and all attributes in one `Vec`: a page costs a handful of
//!   allocations, not one or more per node.
//! - Element and attribute names are markup5ever's interned atoms (html5ever's name type):
//!   comparing two is comparing two integers, and the common names cost no allocation.
//! - Template contents are kept as ordinary children of their `<template>` element (the HTML5
//!   rules, and html5ever, put them in a separate fragment). Templates are never displayed, so
//!   text rendering and statistics skip them, while the HTML renderer writes them back inside
//!   `<template>`, where a parser puts them into the fragment again.
//! - Removal only marks nodes ([`Tree::remove`]); nothing is restructured, so ids stay valid and
//!   algorithms can run one after another on the same tree.
//! - Statistics are stored beside the nodes, one [`NodeStats`] per node, filled by one forward
//!   and one reverse pass over the array right after parsing.
//!
//! What parsing costs is measured over the development pages by this module's ignored test
//! `bench_pages_throughput` (parse, statistics and text rendering; run in release) and by the
//! `stage2` bench.

mod build;
mod direct;
mod filter;
mod lex;
mod parse;
pub mod select;
mod stats;
mod words;

pub(crate) use lex::attribute_char_ref;
pub use filter::{BuildFilter, Filtered, TagAttr, Verdict};
pub use markup5ever::LocalName;
pub use stats::NodeStats;
pub use words::{words, Words};

/// Documents longer than this (1 GiB) are cut at a character boundary before parsing.
///
/// Offsets into the tree's character buffer are `u32`; decoding can make the buffer longer than
/// the input (a NUL byte becomes the 3-byte U+FFFD), so the cap leaves room below 4 GiB. Pages reaching stage 2
/// are limited far below this by the decoder's cap.
pub const MAX_INPUT: usize = 1 << 30;

/// Parsing stops at the first element nested deeper than this, because a tree builder walks its
/// stack of open elements for most start tags, so a page of unclosed elements costs time
/// quadratic in its depth (see [`Tree::is_truncated`]). pith's own builder leaves such a page
/// to html5ever's, which stops at the limit.
///
/// Real pages nest a few dozen levels (the development set peaks at 52); 256 leaves ample room
/// while keeping the worst case of a hostile page to a fraction of a second.
pub const MAX_DEPTH: u32 = 256;

/// A node of a [`Tree`]: an index into its arena.
///
/// Ids are in document order, so `a < b` means `a` starts before `b`; they are only meaningful
/// for the tree that produced them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct NodeId(u32);

impl NodeId {
    /// The node's position in document order, for algorithms that keep per-node data in a `Vec`
    /// of [`Tree::len`] entries.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A range of the tree's character buffer (text, comment, attribute value or doctype).
///
/// Kept as two `u32` so that a node stays small; read it with [`Tree::str`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Span {
    start: u32,
    end: u32,
}

/// The namespace of an element, reduced to the three a HTML parser produces.
///
/// It matters for serialisation: `<style>` inside SVG holds escaped text, in HTML raw text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ns {
    /// The HTML namespace: every element outside `<svg>` and `<math>`.
    Html,
    /// Elements inside `<svg>`.
    Svg,
    /// Elements inside `<math>`.
    MathMl,
    /// Anything else (a parser of HTML never produces it; kept for completeness).
    Other,
}

/// An element's name and the location of its attributes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Element {
    /// The local name, lower-case for HTML (SVG keeps its camel case, e.g. `foreignObject`).
    pub name: LocalName,
    /// The element's namespace.
    pub ns: Ns,
    /// The element's attributes: a range of the tree's attribute list.
    attrs: Span,
}

/// What a node is. Character data is addressed by [`Span`]; read it with [`Tree::text`] and
/// [`Tree::str`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum NodeKind {
    /// The root of every tree.
    Document,
    /// `<!DOCTYPE …>`: the span holds what goes between `<!DOCTYPE ` and `>`, e.g.
    /// `html PUBLIC "…" "…"`, kept whole because the identifiers decide the quirks mode.
    Doctype(Span),
    /// An element.
    Element(Element),
    /// A run of character data, entities decoded.
    Text(Span),
    /// A comment; the span holds its content.
    Comment(Span),
}

/// One attribute. Attributes of foreign elements that carry a namespace prefix keep it in the
/// name (`xlink:href`), so serialising and parsing again yields the same attribute.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Attr {
    name: LocalName,
    value: Span,
}

/// An arena node: its kind, its parent and where its run of descendants ends.
#[derive(Clone, Debug)]
struct Node {
    /// Parent index, [`NONE`] for the document.
    parent: u32,
    /// One past the last descendant: the subtree is `self..end`.
    end: u32,
    kind: NodeKind,
}

/// Marks "no node" in the `u32` links.
const NONE: u32 = u32::MAX;

/// Per-node flag bits (`Tree::flags`).
mod flag {
    /// Removed by an algorithm, itself or through an ancestor.
    pub const REMOVED: u8 = 1;
    /// The element never displays its content: by name (script, head, …) or by attribute.
    pub const CONTENT_HIDDEN: u8 = 2;
    /// The node shows on the page: no ancestor hides its content and no attribute hides it.
    pub const SHOWN: u8 = 4;
    /// The node is an `<a href>` or inside one.
    pub const IN_LINK: u8 = 8;
    /// The node is an element for which [`super::is_block`] holds: paragraph passes run over
    /// the whole tree several times a page, and reading a bit is cheaper than matching a name.
    pub const BLOCK: u8 = 16;
    /// The node is a text node.
    pub const TEXT: u8 = 32;
    /// The element itself says `aria-hidden="true"` (its descendants are not marked).
    pub const ARIA_HIDDEN: u8 = 64;
    /// The element's `role` names a widget (a button, a tab, a menu, ...).
    pub const WIDGET: u8 = 128;
}

/// The removal marks of a tree at one moment ([`Tree::removals`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removals(Vec<u8>);

/// A parsed document: the arena, its character data, attributes, statistics and marks.
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    /// All character data, addressed by [`Span`].
    chars: String,
    attrs: Vec<Attr>,
    flags: Vec<u8>,
    stats: Vec<NodeStats>,
    /// Parsing stopped at the depth guard or the input cap.
    truncated: bool,
}

impl Tree {
    /// Parses a whole UTF-8 document by the HTML5 tree-construction rules (pith's tokenizer and
    /// tree builder, html5ever's tree builder for the constructs the latter leaves out; see the
    /// module doc), then computes the statistics of every node. Never fails: HTML has no
    /// invalid input, only repairs.
    pub fn parse(html: &str) -> Tree {
        Tree::parse_with_max_depth(html, MAX_DEPTH)
    }

    /// [`Tree::parse`] with another depth limit than [`MAX_DEPTH`] (`u32::MAX` for none).
    ///
    /// For tests and tools that need deep trees from trusted input; never raise it for pages
    /// from the network: below the limit the tree builder's cost grows with depth × tags.
    pub fn parse_with_max_depth(html: &str, max_depth: u32) -> Tree {
        Tree::parse_with(html, max_depth, None).0
    }

    /// [`Tree::parse`] that leaves out, as the tree is laid out, the elements, attributes and
    /// comments `filter` rejects: how a profile that parses the page anyway applies stage 1's
    /// rules, without running the streaming rewriter first (see `crate::html::stage1`). What
    /// goes is gone as if stage 1 had removed it: no node, no statistics, and text on either
    /// side of it becomes one text node, as a parser of the rewritten page would make it.
    pub fn parse_filtered(html: &str, filter: &dyn BuildFilter) -> (Tree, Filtered) {
        Tree::parse_with(html, MAX_DEPTH, Some(filter))
    }

    fn parse_with(html: &str, max_depth: u32, filter: Option<&dyn BuildFilter>) -> (Tree, Filtered) {
        let mut cut = html.len().min(MAX_INPUT);
        while !html.is_char_boundary(cut) {
            cut -= 1;
        }
        let (mut tree, filtered) = parse::parse_filtered(&html[..cut], max_depth, filter);
        tree.truncated |= cut < html.len();
        stats::compute(&mut tree);
        (tree, filtered)
    }

    /// Whether parsing stopped early because the page nested elements deeper than
    /// [`MAX_DEPTH`] (or was longer than [`MAX_INPUT`]). The tree then holds the part of the
    /// page before that point, correctly closed; a caller may prefer to serve the page without
    /// stage 2.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The document node, parent of the doctype and the `<html>` element.
    pub fn root(&self) -> NodeId {
        NodeId(0)
    }

    /// The number of nodes, so that algorithms can size per-node tables.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: a tree holds at least its document node. Present for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node at a position in document order, the inverse of [`NodeId::index`].
    pub fn node_at(&self, index: usize) -> Option<NodeId> {
        (index < self.nodes.len()).then_some(NodeId(index as u32))
    }

    /// The `<html>` element.
    pub fn document_element(&self) -> Option<NodeId> {
        self.children(self.root())
            .find(|&c| self.element(c).is_some())
    }

    /// The `<head>` element, where title, metadata and styles live.
    pub fn head(&self) -> Option<NodeId> {
        self.html_child(&markup5ever::local_name!("head"))
    }

    /// The `<body>` element, where the page's content lives (absent in frameset documents).
    pub fn body(&self) -> Option<NodeId> {
        self.html_child(&markup5ever::local_name!("body"))
    }

    fn html_child(&self, name: &LocalName) -> Option<NodeId> {
        let html = self.document_element()?;
        self.children(html).find(|&c| {
            self.element(c)
                .is_some_and(|e| e.ns == Ns::Html && e.name == *name)
        })
    }

    /// The HTML elements of local name `name`, removed ones included, in document order: a scan
    /// of the arena, for the lookups of an element that may be anywhere in a page (`<base>`).
    pub fn html_elements_named<'a>(&'a self, name: &'a LocalName) -> impl Iterator<Item = NodeId> + 'a {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, node)| matches!(&node.kind, NodeKind::Element(e) if e.ns == Ns::Html && e.name == *name))
            .map(|(i, _)| NodeId(i as u32))
    }

    /// The node's parent; `None` for the document.
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        let parent = self.node(id).parent;
        (parent != NONE).then_some(NodeId(parent))
    }

    /// The node's ancestors, its parent first and the document last.
    pub fn ancestors(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        std::iter::successors(self.parent(id), |&a| self.parent(a))
    }

    /// The node's first child.
    pub fn first_child(&self, id: NodeId) -> Option<NodeId> {
        let first = id.0 + 1;
        (first < self.node(id).end).then_some(NodeId(first))
    }

    /// The node's next sibling: the node right after its subtree, if the parent's subtree goes on.
    pub fn next_sibling(&self, id: NodeId) -> Option<NodeId> {
        let parent = self.parent(id)?;
        let next = self.node(id).end;
        (next < self.node(parent).end).then_some(NodeId(next))
    }

    /// The node's children, in document order.
    pub fn children(&self, id: NodeId) -> Children<'_> {
        Children {
            tree: self,
            next: self.first_child(id),
        }
    }

    /// The node itself followed by all its descendants, in document order (pre-order).
    ///
    /// Removed nodes are included; check [`Tree::is_removed`] where it matters.
    pub fn descendants(&self, id: NodeId) -> impl ExactSizeIterator<Item = NodeId> + '_ {
        (id.0..self.node(id).end).map(NodeId)
    }

    /// Whether `inner` is `outer` or one of its descendants (removed or not): one range check,
    /// since a subtree is a run of the arena.
    pub fn holds(&self, outer: NodeId, inner: NodeId) -> bool {
        (outer.0..self.node(outer).end).contains(&inner.0)
    }

    /// A walk over the subtree of `id` that reports entering and leaving every node and skips
    /// removed subtrees: what renderers and block-level algorithms need, without recursion.
    pub fn traverse(&self, id: NodeId) -> Traverse<'_> {
        Traverse {
            tree: self,
            next: id.0,
            end: self.node(id).end,
            start: id.0,
            top: NONE,
            just_opened: false,
        }
    }

    /// The node itself and its descendants in document order, skipping removed subtrees: a
    /// [`Tree::traverse`] for walks that only need to enter nodes, at half its cost.
    pub fn walk(&self, id: NodeId) -> Walk<'_> {
        Walk {
            tree: self,
            next: id.0,
            end: self.node(id).end,
            last: NONE,
        }
    }

    /// What the node is.
    pub fn kind(&self, id: NodeId) -> &NodeKind {
        &self.node(id).kind
    }

    /// The element's name and namespace, `None` for other nodes.
    pub fn element(&self, id: NodeId) -> Option<&Element> {
        match &self.node(id).kind {
            NodeKind::Element(e) => Some(e),
            _ => None,
        }
    }

    /// The element's local name (`"p"`, `"td"`), `None` for other nodes.
    pub fn tag(&self, id: NodeId) -> Option<&str> {
        self.element(id).map(|e| &*e.name)
    }

    /// The element's attributes as (name, value) pairs, in source order.
    pub fn attrs(&self, id: NodeId) -> impl ExactSizeIterator<Item = (&LocalName, &str)> + '_ {
        let span = self.element(id).map_or(Span::default(), |e| e.attrs);
        self.attr_slice(span)
    }

    /// The value of the element's attribute `name` (lower-case), `None` if absent or not an
    /// element.
    pub fn attr(&self, id: NodeId, name: &str) -> Option<&str> {
        self.attrs(id).find(|(n, _)| &***n == name).map(|(_, v)| v)
    }

    /// [`Tree::attr`] by interned name (`local_name!("role")`): a comparison of two numbers
    /// per attribute instead of two strings, for lookups made on every element of a page.
    pub fn attr_named(&self, id: NodeId, name: &LocalName) -> Option<&str> {
        let span = self.element(id)?.attrs;
        let attrs = self.attrs.get(span.start as usize..span.end as usize)?;
        attrs.iter().find(|a| a.name == *name).map(|a| self.str(a.value))
    }

    fn attr_slice(&self, span: Span) -> impl ExactSizeIterator<Item = (&LocalName, &str)> + '_ {
        let attrs = self
            .attrs
            .get(span.start as usize..span.end as usize)
            .unwrap_or(&[]);
        attrs.iter().map(|a| (&a.name, self.str(a.value)))
    }

    /// The character data of a text node, `None` for other nodes.
    pub fn text(&self, id: NodeId) -> Option<&str> {
        match self.node(id).kind {
            NodeKind::Text(span) => Some(self.str(span)),
            _ => None,
        }
    }

    /// The characters a [`Span`] of this tree addresses (empty for a span of another tree that
    /// falls outside this one).
    pub fn str(&self, span: Span) -> &str {
        self.chars
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    /// Marks the node and its subtree removed: renderers skip it and [`Traverse`] does not enter
    /// it. Nothing moves, and statistics keep describing the parsed tree.
    ///
    /// Cost is linear in the part of the subtree not already removed, so removing nested blocks
    /// one by one stays linear overall.
    pub fn remove(&mut self, id: NodeId) {
        let mut i = id.0;
        let end = self.node(id).end;
        while i < end {
            let flags = &mut self.flags[i as usize];
            if *flags & flag::REMOVED != 0 {
                i = self.nodes[i as usize].end; // its whole subtree is already marked
            } else {
                *flags |= flag::REMOVED;
                i += 1;
            }
        }
    }

    /// Shows a removed node again, whole, where it stood: its subtree and the ancestors a
    /// removal took with it are marked kept; those ancestors' other content stays removed, so
    /// the node appears alone inside their elements. What the declutter run does for the page's
    /// title heading when a remover took the region around it.
    ///
    /// Keeps [`Tree::remove`]'s invariant (a removed node's whole subtree is removed): only the
    /// node's subtree and a chain of its ancestors change.
    pub fn rescue(&mut self, id: NodeId) {
        let end = self.node(id).end as usize;
        for flags in &mut self.flags[id.index()..end] {
            *flags &= !flag::REMOVED;
        }
        let mut ancestor = self.parent(id);
        while let Some(a) = ancestor.filter(|&a| self.is_removed(a)) {
            self.flags[a.index()] &= !flag::REMOVED;
            ancestor = self.parent(a);
        }
    }

    /// What has been removed so far, to go back to with [`Tree::restore_removals`]: how a
    /// caller tries a run of removals and undoes it without copying the tree (a byte a node).
    pub fn removals(&self) -> Removals {
        Removals(self.flags.iter().map(|f| f & flag::REMOVED).collect())
    }

    /// Marks removed exactly what was when `saved` was taken from this tree.
    ///
    /// # Panics
    ///
    /// When `saved` comes from a tree with another number of nodes: a caller's mistake.
    pub fn restore_removals(&mut self, saved: &Removals) {
        assert_eq!(saved.0.len(), self.flags.len(), "removals of another tree");
        for (flags, &removed) in self.flags.iter_mut().zip(&saved.0) {
            *flags = (*flags & !flag::REMOVED) | removed;
        }
    }

    /// Whether the node, or one of its ancestors, was removed.
    pub fn is_removed(&self, id: NodeId) -> bool {
        self.has(id, flag::REMOVED)
    }

    /// Whether the element never displays its content: script, style, head, template, title,
    /// noscript, iframe, select, media fallbacks, …, and elements with the `hidden` attribute or
    /// an inline `display: none` / `visibility: hidden` style.
    pub fn is_content_hidden(&self, id: NodeId) -> bool {
        self.has(id, flag::CONTENT_HIDDEN)
    }

    /// Whether the node shows on the page: no ancestor hides its content, and (for an element)
    /// no attribute hides it. Removal is not taken into account.
    pub fn is_shown(&self, id: NodeId) -> bool {
        self.has(id, flag::SHOWN)
    }

    /// Whether the element itself says `aria-hidden="true"`: hidden from screen readers, shown
    /// on the screen.
    pub fn is_aria_hidden(&self, id: NodeId) -> bool {
        self.has(id, flag::ARIA_HIDDEN)
    }

    /// Whether the element's `role` names a widget, a control its page's scripts made of it: a
    /// button, a tab, a menu, a slider, ...
    pub fn is_widget(&self, id: NodeId) -> bool {
        self.has(id, flag::WIDGET)
    }

    /// Whether the node is an `<a href>` or lies inside one.
    pub fn is_in_link(&self, id: NodeId) -> bool {
        self.has(id, flag::IN_LINK)
    }

    /// Whether the node is an element that starts a block ([`is_block`]), looked up in the
    /// marks made at parse time.
    pub fn is_block_node(&self, id: NodeId) -> bool {
        self.has(id, flag::BLOCK)
    }

    /// Per node of `nodes` (indices, in document order), the parent's index ([`NodeId::index`];
    /// `usize::MAX` for the document) and what a paragraph measure needs of the node: the
    /// non-link visible characters of a text node not removed, else `None`, and whether it is a
    /// block element. For bottom-up passes over the whole tree or a subtree (a subtree's nodes
    /// are one run) that would otherwise look each of these up through a [`NodeId`].
    ///
    /// # Panics
    ///
    /// When `nodes` reaches past the last node: a caller's mistake.
    pub fn paragraph_inputs(
        &self,
        nodes: std::ops::Range<usize>,
    ) -> impl DoubleEndedIterator<Item = (usize, Option<u32>, bool)> + ExactSizeIterator + '_ {
        let (n, f, s) = (&self.nodes[nodes.clone()], &self.flags[nodes.clone()], &self.stats[nodes]);
        n.iter().zip(f).zip(s).map(|((node, &flags), stats)| {
            let parent = if node.parent == NONE { usize::MAX } else { node.parent as usize };
            let counted = flags & (flag::TEXT | flag::REMOVED | flag::IN_LINK) == flag::TEXT;
            (parent, counted.then_some(stats.text_chars), flags & flag::BLOCK != 0)
        })
    }

    /// The statistics of the node's subtree, as parsed (removal does not change them).
    pub fn stats(&self, id: NodeId) -> &NodeStats {
        &self.stats[id.index()]
    }

    /// The statistics of every node, by [`NodeId::index`], as parsed: for a pass that starts
    /// from all of them.
    pub fn all_stats(&self) -> &[NodeStats] {
        &self.stats
    }

    fn has(&self, id: NodeId, bit: u8) -> bool {
        self.flags[id.index()] & bit != 0
    }

    fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }
}

/// Whether an HTML element is void: it never has content or an end tag, so a serialiser
/// writes its start tag alone and a tokenizer of the source sees no end for it.
pub fn is_void(e: &Element) -> bool {
    use markup5ever::local_name;
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("area")
                | local_name!("base")
                | local_name!("basefont")
                | local_name!("bgsound")
                | local_name!("br")
                | local_name!("col")
                | local_name!("embed")
                | local_name!("frame")
                | local_name!("hr")
                | local_name!("img")
                | local_name!("input")
                | local_name!("keygen")
                | local_name!("link")
                | local_name!("meta")
                | local_name!("param")
                | local_name!("source")
                | local_name!("track")
                | local_name!("wbr")
        )
}

/// Whether an HTML element starts a block of its own in a browser's default style sheet:
/// block-level flow content, list items and the table parts (rows, cells, captions, row
/// groups). Renderers break lines at these, and algorithms cut a page into blocks and
/// paragraphs at them, so all of them share this one list.
pub fn is_block(e: &Element) -> bool {
    // The list is the one the statistics classify names by (`stats::element_kind`), so the
    // block flag they set and this answer cannot drift apart.
    stats::is_block(e)
}

/// The children of a node, from [`Tree::children`].
#[derive(Clone, Debug)]
pub struct Children<'a> {
    tree: &'a Tree,
    next: Option<NodeId>,
}

impl Iterator for Children<'_> {
    type Item = NodeId;

    fn next(&mut self) -> Option<NodeId> {
        let current = self.next?;
        self.next = self.tree.next_sibling(current);
        Some(current)
    }
}

/// One step of a [`Traverse`]: entering a node (before its children) or leaving it (after).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Edge {
    /// The walk reaches the node; its children come next unless skipped.
    Open(NodeId),
    /// The walk is done with the node and its children.
    Close(NodeId),
}

/// A depth-first walk that yields [`Edge`]s, skipping removed subtrees, from [`Tree::traverse`].
///
/// Every node opened is closed, text and comments included. The open nodes are the chain of
/// parents from the last one opened up to the walk's start, so no stack is kept: depth is
/// limited by nothing, and a step costs no allocation.
#[derive(Clone, Debug)]
pub struct Traverse<'a> {
    tree: &'a Tree,
    next: u32,
    end: u32,
    /// The node the walk started at, the last to close.
    start: u32,
    /// The innermost open node, [`NONE`] when none is.
    top: u32,
    /// Whether the last edge was an [`Edge::Open`], the only time skipping makes sense.
    just_opened: bool,
}

impl Traverse<'_> {
    /// Skips the children of the node just opened; its [`Edge::Close`] still follows. Does
    /// nothing unless the last edge returned was an [`Edge::Open`].
    pub fn skip_children(&mut self) {
        if self.just_opened && self.top != NONE {
            self.next = self.next.max(self.tree.nodes[self.top as usize].end);
        }
    }
}

impl Iterator for Traverse<'_> {
    type Item = Edge;

    fn next(&mut self) -> Option<Edge> {
        // `next` is a child of `top` while it lies inside `top`'s subtree: it is either the
        // first child of the node just opened or the end of a sibling's subtree.
        loop {
            if self.top != NONE {
                let top = &self.tree.nodes[self.top as usize];
                if top.end <= self.next {
                    let closed = self.top;
                    self.top = if closed == self.start { NONE } else { top.parent };
                    self.just_opened = false;
                    return Some(Edge::Close(NodeId(closed)));
                }
            }
            if self.next >= self.end {
                return None;
            }
            let id = self.next;
            if self.tree.flags[id as usize] & flag::REMOVED != 0 {
                self.next = self.tree.nodes[id as usize].end;
                continue;
            }
            self.top = id;
            self.next = id + 1;
            self.just_opened = true;
            return Some(Edge::Open(NodeId(id)));
        }
    }
}

/// A pre-order walk over the nodes not removed, from [`Tree::walk`].
#[derive(Clone, Debug)]
pub struct Walk<'a> {
    tree: &'a Tree,
    next: u32,
    end: u32,
    /// The node returned last, [`NONE`] before the first.
    last: u32,
}

impl Walk<'_> {
    /// Skips the descendants of the node returned last.
    pub fn skip_children(&mut self) {
        if self.last != NONE {
            self.next = self.next.max(self.tree.nodes[self.last as usize].end);
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = NodeId;

    fn next(&mut self) -> Option<NodeId> {
        while self.next < self.end {
            let id = self.next;
            if self.tree.flags[id as usize] & flag::REMOVED != 0 {
                self.next = self.tree.nodes[id as usize].end;
                continue;
            }
            self.last = id;
            self.next = id + 1;
            return Some(NodeId(id));
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `html` parsed, then the nodes at the positions `removed` (those that exist) removed: the
    /// random trees of the property tests that compare a pass over what is kept with a
    /// reference.
    pub(crate) fn parse_removing(html: &str, removed: &[usize]) -> Tree {
        let mut tree = Tree::parse(html);
        for &i in removed {
            if let Some(id) = tree.node_at(i) {
                tree.remove(id);
            }
        }
        tree
    }

    /// The subtree of `id` as `name[children]`, text quoted, comments as `<!…>`.
    fn outline(tree: &Tree, id: NodeId) -> String {
        let mut out = String::new();
        for edge in tree.traverse(id) {
            match (edge, tree.kind(edge_id(edge))) {
                (Edge::Open(_), NodeKind::Element(e)) => {
                    out.push_str(&e.name);
                    out.push('[');
                }
                (Edge::Close(_), NodeKind::Element(_)) => out.push(']'),
                (Edge::Open(_), NodeKind::Text(span)) => {
                    out.push_str(&format!("{:?}", tree.str(*span)));
                }
                (Edge::Open(_), NodeKind::Comment(span)) => {
                    out.push_str(&format!("<!{}>", tree.str(*span)));
                }
                (Edge::Open(_), NodeKind::Doctype(span)) => {
                    out.push_str(&format!("<!DOCTYPE {}>", tree.str(*span)));
                }
                _ => {}
            }
        }
        out
    }

    fn edge_id(edge: Edge) -> NodeId {
        match edge {
            Edge::Open(id) | Edge::Close(id) => id,
        }
    }

    fn body_outline(html: &str) -> String {
        let tree = Tree::parse(html);
        let body = tree.body().expect("a parsed document always has a body");
        outline(&tree, body)
    }

    macro_rules! shapes {
        ($($name:ident: $html:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(body_outline($html), $expected);
            }
        )*};
    }

    shapes! {
        implicit_paragraph_end: "<p>a<p>b" => r#"body[p["a"]p["b"]]"#;
        implicit_cells_rows_and_tbody: "<table><tr><td>a<td>b</table>"
            => r#"body[table[tbody[tr[td["a"]td["b"]]]]]"#;
        implicit_rows: "<table><tr><td>a<tr><td>b</table>"
            => r#"body[table[tbody[tr[td["a"]]tr[td["b"]]]]]"#;
        open_at_end_of_input: "<div><span>x" => r#"body[div[span["x"]]]"#;
        implicit_list_items: "<ul><li>a<li>b" => r#"body[ul[li["a"]li["b"]]]"#;
        misnested_formatting_adoption_agency: "<b><i>x</b>y</i>"
            => r#"body[b[i["x"]]i["y"]]"#;
        misnested_block_in_formatting: "<a href=x>1<div>2</a>3</div>"
            => r#"body[a["1"]div[a["2"]"3"]]"#;
        foster_parented_text: "<table>x<tr><td>y</table>"
            => r#"body["x"table[tbody[tr[td["y"]]]]]"#;
        entities_merge_into_one_text: "<p>a &amp; b&lt;c</p>" => r#"body[p["a & b<c"]]"#;
        template_contents_become_children: "<body><template><p>t</p></template>"
            => r#"body[template[p["t"]]]"#;
        svg_names_keep_case: "<svg><foreignObject><p>x</p></foreignObject></svg>"
            => r#"body[svg[foreignObject[p["x"]]]]"#;
    }

    #[test]
    fn document_level_nodes_and_navigation() {
        let tree =
            Tree::parse("<!DOCTYPE html><!--c--><title>T</title><p id=a class='x y'>one<b>two</b>");
        assert_eq!(
            outline(&tree, tree.root()),
            r#"<!DOCTYPE html><!c>html[head[title["T"]]body[p["one"b["two"]]]]"#
        );
        let html = tree.document_element().expect("html element");
        assert_eq!(tree.tag(html), Some("html"));
        assert_eq!(tree.parent(html), Some(tree.root()));
        assert_eq!(tree.parent(tree.root()), None);
        let (head, body) = (tree.head().expect("head"), tree.body().expect("body"));
        assert_eq!(tree.children(html).collect::<Vec<_>>(), vec![head, body]);
        assert_eq!(tree.next_sibling(head), Some(body));
        assert_eq!(tree.next_sibling(body), None);
        let p = tree.first_child(body).expect("p");
        assert_eq!(tree.attr(p, "id"), Some("a"));
        assert_eq!(tree.attr(p, "class"), Some("x y"));
        assert_eq!(tree.attr(p, "title"), None);
        assert_eq!(tree.attrs(p).len(), 2);
        let order: Vec<_> = tree
            .descendants(p)
            .map(|id| tree.tag(id).unwrap_or("#"))
            .collect();
        assert_eq!(order, ["p", "#", "b", "#"]);
        assert_eq!(tree.text(NodeId(p.0 + 1)), Some("one"));
        assert_eq!(tree.node_at(p.index()), Some(p));
        assert_eq!(tree.node_at(tree.len()), None);
        assert_eq!(tree.first_child(NodeId(p.0 + 1)), None);
    }

    #[test]
    fn quirky_doctype_keeps_its_identifiers() {
        let tree = Tree::parse(
            r#"<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd"><p>x"#,
        );
        let doctype = tree.first_child(tree.root()).expect("doctype");
        let NodeKind::Doctype(span) = tree.kind(doctype) else {
            panic!("not a doctype")
        };
        assert_eq!(
            tree.str(*span),
            r#"html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd""#
        );
    }

    #[test]
    fn foreign_attributes_keep_their_prefix() {
        let tree = Tree::parse(r##"<svg><use xlink:href="#i"/></svg>"##);
        let used = tree
            .descendants(tree.root())
            .find(|&id| tree.tag(id) == Some("use"));
        let used = used.expect("use element");
        assert_eq!(tree.attr(used, "xlink:href"), Some("#i"));
        assert_eq!(tree.element(used).map(|e| e.ns), Some(Ns::Svg));
    }

    #[test]
    fn removal_marks_the_subtree_and_traversal_skips_it() {
        let mut tree = Tree::parse("<div><p>a<b>b</b></p><p>c</p></div>");
        let body = tree.body().expect("body");
        let div = tree.first_child(body).expect("div");
        let first = tree.first_child(div).expect("first p");
        let second = tree.next_sibling(first).expect("second p");
        tree.remove(first);
        assert!(tree.is_removed(first));
        assert!(tree.descendants(first).all(|id| tree.is_removed(id)));
        assert!(!tree.is_removed(second) && !tree.is_removed(div));
        assert_eq!(outline(&tree, body), r#"body[div[p["c"]]]"#);
        tree.remove(div);
        tree.remove(first);
        assert_eq!(outline(&tree, body), "body[]");
        assert_eq!(
            tree.stats(body).words,
            3,
            "statistics describe the parsed tree"
        );
    }

    #[test]
    fn a_rescued_node_shows_alone_inside_the_region_removed_around_it() {
        let mut tree = Tree::parse("<div><p>a</p><section><h1>T<i>!</i></h1><p>b</p></section></div><p>c</p>");
        let body = tree.body().expect("body");
        let div = tree.first_child(body).expect("div");
        let h1 = tree.descendants(div).find(|&id| tree.tag(id) == Some("h1")).expect("h1");
        let italic = tree.descendants(h1).find(|&id| tree.tag(id) == Some("i")).expect("i");
        tree.remove(italic);
        tree.remove(div);
        tree.rescue(h1);
        assert_eq!(outline(&tree, body), r#"body[div[section[h1["T"i["!"]]]]p["c"]]"#);
        // Removed nodes still have their whole subtree removed: removing again stays exact.
        tree.remove(div);
        assert_eq!(outline(&tree, body), r#"body[p["c"]]"#);
    }

    #[test]
    fn restored_removals_undo_what_came_after_and_keep_what_came_before() {
        let mut tree = Tree::parse("<div><p>a<b hidden>b</b></p><p>c</p></div><p>d</p>");
        let body = tree.body().expect("body");
        let div = tree.first_child(body).expect("div");
        let first = tree.first_child(div).expect("first p");
        tree.remove(first);
        let saved = tree.removals();
        let before = outline(&tree, body);
        let hidden: Vec<bool> = tree.descendants(tree.root()).map(|id| tree.is_content_hidden(id)).collect();
        tree.remove(div);
        assert_eq!(outline(&tree, body), r#"body[p["d"]]"#);
        tree.restore_removals(&saved);
        assert_eq!(outline(&tree, body), before);
        assert!(tree.is_removed(first) && !tree.is_removed(div));
        let after: Vec<bool> = tree.descendants(tree.root()).map(|id| tree.is_content_hidden(id)).collect();
        assert_eq!(hidden, after, "the other marks stay as parsed");
    }

    #[test]
    fn skip_children_still_closes() {
        let tree = Tree::parse("<div><p>a</p></div><span>b</span>");
        let body = tree.body().expect("body");
        let mut walk = tree.traverse(body);
        let mut seen = Vec::new();
        while let Some(edge) = walk.next() {
            match edge {
                Edge::Open(id) if tree.tag(id) == Some("div") => walk.skip_children(),
                // After a close there is nothing to skip: the siblings must still come.
                Edge::Close(_) => walk.skip_children(),
                Edge::Open(_) => {}
            }
            seen.push(edge);
        }
        let tags: Vec<_> = seen
            .iter()
            .map(|&e| match e {
                Edge::Open(id) => format!("+{}", tree.tag(id).unwrap_or("#")),
                Edge::Close(id) => format!("-{}", tree.tag(id).unwrap_or("#")),
            })
            .collect();
        assert_eq!(
            tags,
            ["+body", "+div", "-div", "+span", "+#", "-#", "-span", "-body"]
        );
    }

    /// The walk as it was first written, with a stack of open nodes: what [`Traverse`] and
    /// [`Walk`] are checked against. `skip` says which opened nodes have their children skipped.
    fn reference_edges(tree: &Tree, id: NodeId, skip: &dyn Fn(NodeId) -> bool) -> Vec<Edge> {
        let (mut next, end) = (id.0, tree.node(id).end);
        let mut open: Vec<u32> = Vec::new();
        let mut edges = Vec::new();
        loop {
            if let Some(&top) = open.last() {
                if tree.nodes[top as usize].end <= next {
                    open.pop();
                    edges.push(Edge::Close(NodeId(top)));
                    continue;
                }
            }
            if next >= end {
                return edges;
            }
            let node = next;
            if tree.flags[node as usize] & flag::REMOVED != 0 {
                next = tree.nodes[node as usize].end;
                continue;
            }
            open.push(node);
            next = node + 1;
            edges.push(Edge::Open(NodeId(node)));
            if skip(NodeId(node)) {
                next = next.max(tree.nodes[node as usize].end);
            }
        }
    }

    proptest::proptest! {
        /// Traversal and the pre-order walk follow the reference walk on random trees with
        /// random removals and skips, from every start node.
        #[test]
        fn walks_match_the_reference(
            html in "(<(div|p|b|table|td|ul|li)>|</(div|p|b|td)>|x| |<br>|<!--c-->){0,40}",
            removed in proptest::collection::vec(0usize..60, 0..4),
            skipped in proptest::collection::vec(0usize..60, 0..4),
        ) {
            let tree = parse_removing(&html, &removed);
            let skip = |id: NodeId| skipped.contains(&id.index());
            for start in tree.descendants(tree.root()) {
                let expected = reference_edges(&tree, start, &skip);
                let mut walk = tree.traverse(start);
                let mut edges = Vec::new();
                while let Some(edge) = walk.next() {
                    if matches!(edge, Edge::Open(id) if skip(id)) {
                        walk.skip_children();
                    }
                    edges.push(edge);
                }
                proptest::prop_assert_eq!(&edges, &expected);
                let mut walk = tree.walk(start);
                let mut opened = Vec::new();
                while let Some(id) = walk.next() {
                    if skip(id) {
                        walk.skip_children();
                    }
                    opened.push(Edge::Open(id));
                }
                let expected_opens: Vec<Edge> =
                    expected.into_iter().filter(|e| matches!(e, Edge::Open(_))).collect();
                proptest::prop_assert_eq!(opened, expected_opens);
            }
        }
    }

    #[test]
    fn nodes_stay_compact() {
        assert!(
            std::mem::size_of::<NodeKind>() <= 24,
            "{}",
            std::mem::size_of::<NodeKind>()
        );
        assert!(std::mem::size_of::<Node>() <= 32);
    }

    #[test]
    fn deep_nesting_stops_at_the_depth_guard() {
        // 100,000 nested elements: without the guard html5ever needs minutes on `<div>`s.
        const NESTED: usize = 100_000;
        for tag in ["span", "div"] {
            let html = format!("{}deep", format!("<{tag}>").repeat(NESTED));
            let tree = Tree::parse(&html);
            assert!(tree.is_truncated(), "{tag}");
            let deepest = tree.descendants(tree.root()).map(|id| tree.stats(id).depth).max();
            let deepest = deepest.unwrap_or(0);
            // The guard acts at the end of the chunk in which it trips.
            assert!(deepest > MAX_DEPTH && deepest < MAX_DEPTH + 1_000, "{tag}: {deepest}");
            assert!(tree.len() < 2_000, "{tag}: {}", tree.len());
        }
        let shallow = Tree::parse(&"<div>x</div>".repeat(10_000));
        assert!(!shallow.is_truncated());
        assert_eq!(shallow.stats(shallow.root()).words, 10_000);
    }

    #[test]
    fn deep_trees_build_and_count_without_recursion() {
        const DEPTH: usize = 100_000;
        let html = format!("{}deep{}", "<span>".repeat(DEPTH), "</span>".repeat(DEPTH));
        let tree = Tree::parse_with_max_depth(&html, u32::MAX);
        assert!(!tree.is_truncated());
        let body = tree.body().expect("body");
        let text = tree.descendants(body).find(|&id| tree.text(id).is_some());
        let text = text.expect("text");
        assert_eq!(tree.text(text), Some("deep"));
        assert_eq!(tree.stats(text).depth as usize, DEPTH + 3);
        assert_eq!(tree.stats(body).tags as usize, DEPTH + 1);
        assert_eq!(tree.stats(body).text_chars, 4);
    }

    /// The development-set pages (`../shared/bench/scrapinghub`, beside the crate), decoded,
    /// with their paths, in name order; in a clone without the set, the vendored WCXB pages
    /// ([`crate::testdata`]), saying so.
    ///
    /// Panics when the folder holds fewer than 100 pages: a test over the development pages
    /// that found none would pass having checked nothing.
    pub(crate) fn bench_page_files() -> Vec<(std::path::PathBuf, String)> {
        let Some(dir) = crate::testdata::dev_set("scrapinghub") else {
            crate::testdata::skipped("the development set ../shared/bench/scrapinghub", "ran on the 14 vendored WCXB pages (tests/data/wcxb) instead");
            return crate::testdata::vendored_pages();
        };
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut paths: Vec<_> = entries
            .map(|e| e.expect("a readable folder").path())
            .filter(|p| p.extension().is_some_and(|x| x == "html"))
            .collect();
        paths.sort();
        assert!(paths.len() >= 100, "{}: only {} pages", dir.display(), paths.len());
        paths
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                (p, String::from_utf8_lossy(&bytes).into_owned())
            })
            .collect()
    }

    /// [`bench_page_files`] without the paths.
    pub(crate) fn bench_pages() -> Vec<String> {
        bench_page_files().into_iter().map(|(_, page)| page).collect()
    }

    /// Throughput of parse + statistics + text rendering over the development set. Run with
    /// `cargo test --release --lib dom:: -- --ignored --nocapture`; it prints, never asserts a
    /// time.
    #[test]
    #[ignore = "reads the development set and prints a throughput; run in release"]
    fn bench_pages_throughput() {
        let pages = bench_pages();
        let bytes: usize = pages.iter().map(String::len).sum();
        const ROUNDS: usize = 5;
        let mut lines = 0;
        let start = std::time::Instant::now();
        for _ in 0..ROUNDS {
            for page in &pages {
                let tree = Tree::parse(page);
                lines += crate::render::text::render(&tree).lines().count();
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let runs = (pages.len() * ROUNDS) as f64;
        println!(
            "{} pages, {:.1} MB: {:.0} pages/s, {:.1} MB/s ({} lines)",
            pages.len(),
            bytes as f64 / 1e6,
            runs / seconds,
            (bytes * ROUNDS) as f64 / 1e6 / seconds,
            lines / ROUNDS
        );
        assert!(lines > 0);
    }
}
