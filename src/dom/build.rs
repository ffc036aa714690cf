//! Building a [`Tree`] with html5ever's tree builder, for the pages pith's own builder
//! (`super::direct`) bails on (`super::parse` decides which runs): fed by pith's tokenizer, it
//! drives a [`TreeSink`] over a linked build arena, which is then flattened into the tree's
//! pre-order arrays. The layout helpers both builders share (`push_str`, `push_attrs`,
//! `compute_ends`, `doctype_text`) live here, and the direct builder uses them; this module
//! never uses the direct builder.
//!
//! The tree builder moves nodes after creating them (adoption agency, foster parenting,
//! `reparent_children`), so the build arena keeps doubly linked siblings that make those moves
//! O(1). Once parsing is over nothing moves any more, and [`flatten`] lays the nodes out in
//! document order with all character data in one buffer. The sink's methods take `&self`, so
//! the arena sits in a `RefCell`; no borrow outlives a method. Element names live apart, in an
//! append-only arena that outlives the sink, so that the tree builder's many name lookups (it
//! walks its stack of open elements for most start tags) get a plain reference.
//!
//! html5ever runs with its defaults, scripting enabled as in a browser, so `<noscript>` content
//! is raw text, as a reader with scripts on would get it.
//!
//! Depth guard: for most start tags the tree builder walks its stack of open elements (is a
//! `<p>` open in button scope?), so a page of N unclosed `<div>`s costs O(N²): 40,000 of them
//! (200 KB) took 17 s. The input is therefore fed in small chunks, and parsing stops once an
//! element lands deeper than [`MAX_DEPTH`](super::MAX_DEPTH); the tree keeps what came before
//! and says so ([`Tree::is_truncated`]). Real pages stay far below the limit (the development
//! set peaks at 52), and under it the walk is bounded by the limit, not by the page.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use markup5ever::interface::tree_builder::{ElementFlags, NodeOrText, QuirksMode};
use markup5ever::interface::TreeSink;
use markup5ever::tendril::StrTendril;
#[cfg(test)]
use markup5ever::tendril::TendrilSink;
use markup5ever::{ns, Attribute, LocalName, Namespace, QualName};
use typed_arena::Arena;

use super::{Attr, BuildFilter, Element, Filtered, Node, NodeKind, Ns, Span, TagAttr, Tree, Verdict, NONE};

/// Bytes fed to html5ever's tokenizer at a time in the reference parse, so that the depth
/// guard acts soon after it trips.
#[cfg(test)]
const CHUNK: usize = 4096;

/// A tree built through html5ever's tree builder, fed by pith's tokenizer ([`super::lex`]),
/// as `super::parse::parse_filtered` describes: the path for pages the direct builder does not
/// cover, and the tree its tests compare it with.
pub(super) fn parse_with_html5ever(
    html: &str,
    max_depth: u32,
    filter: Option<&dyn BuildFilter>,
) -> (Tree, Filtered) {
    let names = Arena::new();
    let sink = Sink::new(max_depth, &names);
    // Real pages hold about one node per 50 to 100 bytes; reserving avoids most regrowth.
    sink.nodes.borrow_mut().reserve(html.len() / 64);
    let builder = html5ever::tree_builder::TreeBuilder::new(sink, Default::default());
    let html = super::lex::normalise(html);
    super::lex::run(&html, &super::lex::Tokens(&builder), || builder.sink.too_deep.get());
    let sink = builder.sink;
    let mut filtered = Filtered::default();
    let mut tree = flatten(sink.nodes.into_inner(), filter, &mut filtered);
    tree.truncated = sink.too_deep.get();
    (tree, filtered)
}

/// The same tree built through html5ever's own tokenizer: the reference the tests compare
/// `super::parse::parse` with.
#[cfg(test)]
pub(super) fn parse_reference(html: &str, max_depth: u32) -> Tree {
    let names = Arena::new();
    let sink = Sink::new(max_depth, &names);
    let mut parser = html5ever::parse_document(sink, html5ever::ParseOpts::default());
    let mut rest = html;
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, tail) = rest.split_at(cut);
        parser.process(StrTendril::from(chunk));
        rest = tail;
        if parser.tokenizer.sink.sink.too_deep.get() {
            break;
        }
    }
    parser.finish()
}

/// The parent/child/sibling links of a build node, [`NONE`] where absent.
#[derive(Clone, Copy)]
struct Links {
    parent: u32,
    first_child: u32,
    last_child: u32,
    prev: u32,
    next: u32,
}

const UNLINKED: Links = Links {
    parent: NONE,
    first_child: NONE,
    last_child: NONE,
    prev: NONE,
    next: NONE,
};

/// What a build node holds: html5ever's own values, converted once in [`flatten`].
enum Data<'n> {
    Document,
    /// The contents of a `<template>`, merged into the element when flattening.
    Fragment,
    Doctype(String),
    Element {
        name: &'n QualName,
        attrs: Vec<Attribute>,
        /// The template contents fragment, [`NONE`] for other elements.
        template: u32,
        mathml_integration_point: bool,
    },
    Text(StrTendril),
    Comment(StrTendril),
}

struct BuildNode<'n> {
    links: Links,
    /// Depth at insertion (the document is 0). Not updated when the tree builder moves a
    /// subtree, which only ever moves it a level or two: enough for the depth guard.
    depth: u32,
    data: Data<'n>,
}

/// The [`TreeSink`]: node handles are indices into the build arena; element names are in
/// `names`, which the caller owns.
struct Sink<'n> {
    nodes: RefCell<Vec<BuildNode<'n>>>,
    names: &'n Arena<QualName>,
    /// What [`TreeSink::elem_name`] answers for a node that is not an element.
    no_name: &'n QualName,
    /// The depth guard's limit, normally [`MAX_DEPTH`](super::MAX_DEPTH).
    max_depth: u32,
    /// Set once a node is inserted deeper than `max_depth`: the driver then stops feeding.
    too_deep: Cell<bool>,
}

impl<'n> Sink<'n> {
    fn new(max_depth: u32, names: &'n Arena<QualName>) -> Self {
        let document = BuildNode {
            links: UNLINKED,
            depth: 0,
            data: Data::Document,
        };
        Sink {
            nodes: RefCell::new(vec![document]),
            names,
            // The tree builder only asks for names of elements; an empty name matches nothing.
            no_name: names.alloc(QualName::new(None, ns!(), LocalName::from(""))),
            max_depth,
            too_deep: Cell::new(false),
        }
    }
}

impl<'n> Sink<'n> {
    fn push(&self, data: Data<'n>) -> u32 {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(BuildNode {
            links: UNLINKED,
            depth: 0,
            data,
        });
        (nodes.len() - 1) as u32
    }

    /// Appends `text` to `target` if it is a text node; returns whether it was.
    fn merge_text(nodes: &mut [BuildNode<'_>], target: u32, text: &StrTendril) -> bool {
        match nodes.get_mut(target as usize).map(|n| &mut n.data) {
            Some(Data::Text(existing)) => {
                existing.push_tendril(text);
                true
            }
            _ => false,
        }
    }

    /// Trips the depth guard when a node was inserted at `depth`.
    fn check_depth(&self, depth: u32) {
        if depth > self.max_depth {
            self.too_deep.set(true);
        }
    }

    fn node_for(&self, child: NodeOrText<u32>) -> u32 {
        match child {
            NodeOrText::AppendNode(node) => node,
            NodeOrText::AppendText(text) => self.push(Data::Text(text)),
        }
    }
}

/// Link surgery on the build arena; every index comes from the tree builder, which only holds
/// handles this sink gave out.
fn detach(nodes: &mut [BuildNode<'_>], id: u32) {
    let Links {
        parent, prev, next, ..
    } = nodes[id as usize].links;
    if prev != NONE {
        nodes[prev as usize].links.next = next;
    } else if parent != NONE {
        nodes[parent as usize].links.first_child = next;
    }
    if next != NONE {
        nodes[next as usize].links.prev = prev;
    } else if parent != NONE {
        nodes[parent as usize].links.last_child = prev;
    }
    let links = &mut nodes[id as usize].links;
    links.parent = NONE;
    links.prev = NONE;
    links.next = NONE;
}

/// Makes `child` the last child of `parent`; returns the child's depth.
fn append_child(nodes: &mut [BuildNode<'_>], parent: u32, child: u32) -> u32 {
    detach(nodes, child);
    let last = nodes[parent as usize].links.last_child;
    if last == NONE {
        nodes[parent as usize].links.first_child = child;
    } else {
        nodes[last as usize].links.next = child;
    }
    nodes[parent as usize].links.last_child = child;
    let depth = nodes[parent as usize].depth + 1;
    let node = &mut nodes[child as usize];
    node.links.parent = parent;
    node.links.prev = last;
    node.depth = depth;
    depth
}

/// Inserts `child` right before `sibling`; returns the child's depth.
fn insert_before(nodes: &mut [BuildNode<'_>], sibling: u32, child: u32) -> u32 {
    detach(nodes, child);
    let Links { parent, prev, .. } = nodes[sibling as usize].links;
    if prev == NONE {
        if parent != NONE {
            nodes[parent as usize].links.first_child = child;
        }
    } else {
        nodes[prev as usize].links.next = child;
    }
    nodes[sibling as usize].links.prev = child;
    let depth = nodes[sibling as usize].depth;
    let node = &mut nodes[child as usize];
    node.links.parent = parent;
    node.links.prev = prev;
    node.links.next = sibling;
    node.depth = depth;
    depth
}

impl<'n> TreeSink for Sink<'n> {
    type Handle = u32;
    type Output = Tree;
    type ElemName<'a>
        = &'n QualName
    where
        Self: 'a;

    fn finish(self) -> Tree {
        let mut tree = flatten(self.nodes.into_inner(), None, &mut Filtered::default());
        tree.truncated = self.too_deep.get();
        tree
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> u32 {
        0
    }

    fn elem_name<'a>(&'a self, target: &'a u32) -> &'n QualName {
        match self.nodes.borrow().get(*target as usize).map(|n| &n.data) {
            Some(Data::Element { name, .. }) => name,
            _ => self.no_name,
        }
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> u32 {
        let template = if flags.template {
            self.push(Data::Fragment)
        } else {
            NONE
        };
        let mathml_integration_point = flags.mathml_annotation_xml_integration_point;
        self.push(Data::Element {
            name: self.names.alloc(name),
            attrs,
            template,
            mathml_integration_point,
        })
    }

    fn create_comment(&self, text: StrTendril) -> u32 {
        self.push(Data::Comment(text))
    }

    /// HTML parsing never produces processing instructions; kept as a comment if it ever does.
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> u32 {
        let mut text = StrTendril::from("?");
        text.push_tendril(&target);
        text.push_char(' ');
        text.push_tendril(&data);
        self.push(Data::Comment(text))
    }

    fn append(&self, parent: &u32, child: NodeOrText<u32>) {
        if let NodeOrText::AppendText(text) = &child {
            let mut nodes = self.nodes.borrow_mut();
            let last = nodes[*parent as usize].links.last_child;
            if Self::merge_text(&mut nodes, last, text) {
                return;
            }
        }
        let child = self.node_for(child);
        let depth = append_child(&mut self.nodes.borrow_mut(), *parent, child);
        self.check_depth(depth);
    }

    fn append_based_on_parent_node(
        &self,
        element: &u32,
        prev_element: &u32,
        child: NodeOrText<u32>,
    ) {
        let has_parent = self.nodes.borrow()[*element as usize].links.parent != NONE;
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        let doctype = self.push(Data::Doctype(doctype_text(&name, &public_id, &system_id)));
        append_child(&mut self.nodes.borrow_mut(), 0, doctype);
    }

    fn get_template_contents(&self, target: &u32) -> u32 {
        match self.nodes.borrow()[*target as usize].data {
            Data::Element { template, .. } if template != NONE => template,
            // Only called for templates; the element itself is a harmless stand-in.
            _ => *target,
        }
    }

    fn same_node(&self, x: &u32, y: &u32) -> bool {
        x == y
    }

    /// The mode follows from the doctype, which the tree keeps; nothing else needs it.
    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &u32, child: NodeOrText<u32>) {
        if let NodeOrText::AppendText(text) = &child {
            let mut nodes = self.nodes.borrow_mut();
            let prev = nodes[*sibling as usize].links.prev;
            if Self::merge_text(&mut nodes, prev, text) {
                return;
            }
        }
        let child = self.node_for(child);
        let depth = insert_before(&mut self.nodes.borrow_mut(), *sibling, child);
        self.check_depth(depth);
    }

    fn add_attrs_if_missing(&self, target: &u32, attrs: Vec<Attribute>) {
        let mut nodes = self.nodes.borrow_mut();
        if let Data::Element {
            attrs: existing, ..
        } = &mut nodes[*target as usize].data
        {
            for attr in attrs {
                if !existing.iter().any(|e| e.name == attr.name) {
                    existing.push(attr);
                }
            }
        }
    }

    fn remove_from_parent(&self, target: &u32) {
        detach(&mut self.nodes.borrow_mut(), *target);
    }

    fn reparent_children(&self, node: &u32, new_parent: &u32) {
        let mut nodes = self.nodes.borrow_mut();
        let mut child = nodes[*node as usize].links.first_child;
        while child != NONE {
            let next = nodes[child as usize].links.next;
            append_child(&mut nodes, *new_parent, child);
            child = next;
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &u32) -> bool {
        matches!(
            self.nodes.borrow()[*handle as usize].data,
            Data::Element {
                mathml_integration_point: true,
                ..
            }
        )
    }
}

/// What goes between `<!DOCTYPE ` and `>`: the name and the identifiers that decide the quirks
/// mode, so that a serialised page parses in the same mode.
pub(super) fn doctype_text(name: &str, public_id: &str, system_id: &str) -> String {
    fn quoted(out: &mut String, id: &str) {
        let quote = if id.contains('"') { '\'' } else { '"' };
        out.push(' ');
        out.push(quote);
        out.push_str(id);
        out.push(quote);
    }
    let mut text = String::from(name);
    if !public_id.is_empty() {
        text.push_str(" PUBLIC");
        quoted(&mut text, public_id);
        if !system_id.is_empty() {
            quoted(&mut text, system_id);
        }
    } else if !system_id.is_empty() {
        text.push_str(" SYSTEM");
        quoted(&mut text, system_id);
    }
    text
}

/// Lays the build arena out in document order: template contents become children of their
/// template, detached nodes are dropped, character data moves into one buffer.
fn flatten(mut nodes: Vec<BuildNode<'_>>, filter: Option<&dyn BuildFilter>, filtered: &mut Filtered) -> Tree {
    adopt_template_contents(&mut nodes);
    let (chars, attrs) = sizes(&nodes);
    let mut tree = Tree {
        nodes: Vec::with_capacity(nodes.len()),
        chars: String::with_capacity(chars),
        attrs: Vec::with_capacity(attrs),
        flags: Vec::new(),
        stats: Vec::new(),
        truncated: false,
    };
    let mut new_index = vec![NONE; nodes.len()];
    let mut current = Some(0u32);
    while let Some(at) = current {
        let links = nodes[at as usize].links;
        let parent = if links.parent == NONE {
            NONE
        } else {
            new_index[links.parent as usize]
        };
        let data = std::mem::replace(&mut nodes[at as usize].data, Data::Fragment);
        let mut attrs = match &data {
            Data::Element { attrs, .. } => attrs.iter().map(tag_attr).collect(),
            _ => Vec::new(),
        };
        let verdict = match (filter, &data) {
            (Some(filter), Data::Element { name, .. }) => filter.element(&name.local, &mut attrs),
            (Some(filter), Data::Comment(_)) if !filter.keeps_comments() => Verdict::Drop,
            _ => Verdict::Keep { stripped: 0 },
        };
        match verdict {
            Verdict::Keep { stripped } => {
                filtered.attributes += stripped as u64;
                new_index[at as usize] = lay_out(&mut tree, parent, &data, attrs);
            }
            Verdict::Drop => {
                // Left out with its whole subtree, none of which gets a place in the tree.
                filtered.elements += u64::from(matches!(data, Data::Element { .. }));
                current = next_after_subtree(&nodes, at);
                continue;
            }
            Verdict::Unwrap => {
                // Its children take its place: they are laid out under its parent.
                filtered.elements += 1;
                new_index[at as usize] = parent;
            }
        }
        current = next_in_document_order(&nodes, at);
    }
    compute_ends(&mut tree.nodes);
    tree
}

/// Appends a node under `parent` (an index of the tree), an element with `attrs`; returns the
/// node's index. Text right after a text sibling (what stood between them was left out) joins
/// it, as a parser makes one text node of adjacent character data.
fn lay_out(tree: &mut Tree, parent: u32, data: &Data<'_>, attrs: Vec<TagAttr<'_>>) -> u32 {
    if let (Data::Text(text), Some(last)) = (data, tree.nodes.last_mut()) {
        if let NodeKind::Text(span) = &mut last.kind {
            if last.parent == parent && span.end as usize == tree.chars.len() {
                tree.chars.push_str(text);
                span.end = tree.chars.len() as u32;
                return tree.nodes.len() as u32 - 1;
            }
        }
    }
    let kind = convert(tree, data, attrs);
    tree.nodes.push(Node { parent, end: 0, kind });
    tree.nodes.len() as u32 - 1
}

/// The bytes of character data and the number of attributes in the build arena, an upper
/// bound for the tree (detached nodes are dropped), so that its buffers are allocated once.
fn sizes(nodes: &[BuildNode<'_>]) -> (usize, usize) {
    let (mut chars, mut attrs) = (0, 0);
    for node in nodes {
        match &node.data {
            Data::Text(text) | Data::Comment(text) => chars += text.len(),
            Data::Doctype(text) => chars += text.len(),
            Data::Element { attrs: list, .. } => {
                attrs += list.len();
                chars += list.iter().map(|a| a.value.len()).sum::<usize>();
            }
            Data::Document | Data::Fragment => {}
        }
    }
    (chars, attrs)
}

/// The node after `current` in a pre-order walk of the build arena from the document.
fn next_in_document_order(nodes: &[BuildNode<'_>], current: u32) -> Option<u32> {
    let first = nodes[current as usize].links.first_child;
    if first != NONE {
        return Some(first);
    }
    next_after_subtree(nodes, current)
}

/// The node after `current`'s subtree in a pre-order walk of the build arena.
fn next_after_subtree(nodes: &[BuildNode<'_>], mut current: u32) -> Option<u32> {
    loop {
        let links = nodes[current as usize].links;
        if links.next != NONE {
            return Some(links.next);
        }
        if links.parent == NONE {
            return None;
        }
        current = links.parent;
    }
}

/// Moves every template's content fragment children to the end of the template's own children.
fn adopt_template_contents(nodes: &mut [BuildNode<'_>]) {
    for id in 0..nodes.len() {
        let Data::Element { template, .. } = nodes[id].data else {
            continue;
        };
        if template == NONE {
            continue;
        }
        let mut child = nodes[template as usize].links.first_child;
        while child != NONE {
            let next = nodes[child as usize].links.next;
            append_child(nodes, id as u32, child);
            child = next;
        }
    }
}

/// Sets each node's `end` (one past its last descendant): in pre-order, children follow their
/// parent, so one reverse pass carries every subtree's end up to its parent.
pub(super) fn compute_ends(nodes: &mut [Node]) {
    for i in (0..nodes.len()).rev() {
        let end = nodes[i].end.max(i as u32 + 1);
        nodes[i].end = end;
        let parent = nodes[i].parent;
        if parent != NONE {
            let p = &mut nodes[parent as usize];
            p.end = p.end.max(end);
        }
    }
}

/// A node of the build arena as a node of the tree; an element gets `attrs` (its own as the
/// filter left them).
fn convert(tree: &mut Tree, data: &Data<'_>, attrs: Vec<TagAttr<'_>>) -> NodeKind {
    match data {
        Data::Document | Data::Fragment => NodeKind::Document,
        Data::Doctype(text) => NodeKind::Doctype(push_str(&mut tree.chars, text)),
        Data::Text(text) => NodeKind::Text(push_str(&mut tree.chars, text)),
        Data::Comment(text) => NodeKind::Comment(push_str(&mut tree.chars, text)),
        Data::Element { name, .. } => {
            let attrs = push_attrs(tree, attrs.into_iter());
            NodeKind::Element(Element {
                ns: namespace(&name.ns),
                name: name.local.clone(),
                attrs,
            })
        }
    }
}

/// An attribute of html5ever's as a filter and the tree see it.
fn tag_attr(attr: &Attribute) -> TagAttr<'_> {
    TagAttr {
        name: attr_name(&attr.name),
        value: Cow::Borrowed(&attr.value),
    }
}

/// Lays an element's attributes out in the tree; returns their span.
pub(super) fn push_attrs<'a>(tree: &mut Tree, attrs: impl Iterator<Item = TagAttr<'a>>) -> Span {
    let start = tree.attrs.len() as u32;
    for attr in attrs {
        let value = push_str(&mut tree.chars, &attr.value);
        tree.attrs.push(Attr {
            name: attr.name,
            value,
        });
    }
    Span {
        start,
        end: tree.attrs.len() as u32,
    }
}

pub(super) fn push_str(chars: &mut String, text: &str) -> Span {
    let start = chars.len() as u32;
    chars.push_str(text);
    Span {
        start,
        end: chars.len() as u32,
    }
}

/// An attribute's name as written: foreign attributes keep their prefix (`xlink:href`).
fn attr_name(name: &QualName) -> LocalName {
    match &name.prefix {
        Some(prefix) => LocalName::from(format!("{}:{}", &**prefix, &*name.local)),
        None => name.local.clone(),
    }
}

fn namespace(ns: &Namespace) -> Ns {
    if *ns == ns!(html) {
        Ns::Html
    } else if *ns == ns!(svg) {
        Ns::Svg
    } else if *ns == ns!(mathml) {
        Ns::MathMl
    } else {
        Ns::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctype_keeps_the_identifiers_that_decide_quirks() {
        assert_eq!(doctype_text("html", "", ""), "html");
        assert_eq!(
            doctype_text("html", "", "about:legacy-compat"),
            r#"html SYSTEM "about:legacy-compat""#
        );
        assert_eq!(
            doctype_text("html", "-//W3C//DTD HTML 4.01//EN", ""),
            r#"html PUBLIC "-//W3C//DTD HTML 4.01//EN""#
        );
        assert_eq!(
            doctype_text("html", "a\"b", "c"),
            r#"html PUBLIC 'a"b' "c""#
        );
    }

    #[test]
    fn nodes_moved_by_the_tree_builder_appear_once() {
        // The adoption agency detaches and re-inserts formatting elements; foster parenting
        // inserts before the table. Every text must come out exactly once, in order.
        let tree = super::super::parse::parse(
            "<table><b>x<tr><td>y</b>z</table><p>1<b>2<p>3</b>4",
            crate::dom::MAX_DEPTH,
        );
        let texts: Vec<_> = (0..tree.nodes.len())
            .filter_map(|i| match tree.nodes[i].kind {
                NodeKind::Text(span) => Some(tree.str(span)),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["x", "yz", "1", "2", "3", "4"]);
        for (i, node) in tree.nodes.iter().enumerate().skip(1) {
            assert!(node.parent < i as u32 && tree.nodes[node.parent as usize].end >= node.end);
        }
    }
}
