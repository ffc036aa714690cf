//! The content part of the reading page: the kept body of a tree written as clean HTML.
//!
//! One walk over the tree ([`Tree::traverse`], no recursion) decides per element whether it is
//! dropped with its content (scripts, embeds, controls, hidden elements), unwrapped (layout
//! containers, layout tables, spans), or kept with only its meaningful attributes. Loose text
//! at the top level is wrapped in paragraphs, a block boundary crossed inside a kept block
//! becomes a `<br>`, a block inside phrasing content (a heading inside a link) is unwrapped so
//! the output stays valid, and elements left empty are taken out again. Headings are demoted
//! below the page's one `<h1>` and re-levelled so that none skips a level (a screen reader's
//! list of headings is the page's outline: an `<h1>` followed by an `<h4>` reads as a missing
//! part), and numbered for the table of contents, which the parent module writes.

use std::fmt::Write as _;

use url::Url;

use super::{attr, escape, heading_text, Heading};
use crate::dom::{Edge, NodeId, NodeKind, Ns, Tree};
use crate::images::{Images, Policy};

/// How an element of the content is written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Left out with its content.
    Drop,
    /// Its content only; `true` when it is a block, whose edges break lines.
    Unwrap(bool),
    /// Kept block; `true` when it holds phrasing content only (`p`, `pre`, `dt`).
    Block(bool),
    /// A heading, level 1 to 6.
    Heading(u8),
    /// Kept phrasing element.
    Inline,
    /// `br`, `img`, `hr`, `wbr`: no content, no end tag.
    Void,
    /// A MathML equation, written whole by [`Content::math`].
    Math,
}

fn kind(tag: &str) -> Kind {
    match tag {
        "script" | "style" | "noscript" | "template" | "iframe" | "object" | "embed" | "svg"
        | "canvas" | "video" | "audio" | "button" | "input" | "select" | "textarea" | "map"
        | "head" | "title" | "meta" | "link" | "dialog" | "colgroup" | "col" | "source"
        | "track" | "area" | "frame" | "frameset" | "param" => Kind::Drop,
        "math" => Kind::Math,
        "p" | "pre" | "dt" => Kind::Block(true),
        "ul" | "ol" | "li" | "dl" | "dd" | "table" | "caption" | "thead" | "tbody" | "tfoot"
        | "tr" | "th" | "td" | "figure" | "figcaption" | "blockquote" => Kind::Block(false),
        "h1" => Kind::Heading(1),
        "h2" => Kind::Heading(2),
        "h3" => Kind::Heading(3),
        "h4" => Kind::Heading(4),
        "h5" => Kind::Heading(5),
        "h6" => Kind::Heading(6),
        "a" | "em" | "strong" | "b" | "i" | "u" | "s" | "sub" | "sup" | "small" | "mark" | "q"
        | "cite" | "abbr" | "time" | "code" | "kbd" | "samp" | "var" | "del" | "ins" | "dfn"
        | "bdi" | "bdo" => Kind::Inline,
        "br" | "img" | "hr" | "wbr" => Kind::Void,
        "div" | "section" | "article" | "main" | "header" | "footer" | "aside" | "nav"
        | "center" | "address" | "details" | "summary" | "hgroup" | "fieldset" | "legend"
        | "body" | "html" | "form" | "search" | "menu" => Kind::Unwrap(true),
        _ => Kind::Unwrap(false),
    }
}

/// The MathML elements a reading page keeps (MathML Core's presentation markup); `annotation`
/// and `annotation-xml` are not among them.
const MATHML_ELEMENTS: &[&str] = &[
    "math", "semantics", "mrow", "mi", "mn", "mo", "mtext", "ms", "mspace", "mfrac", "msqrt", "mroot", "msub", "msup",
    "msubsup", "munder", "mover", "munderover", "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mtd",
    "mstyle", "mpadded", "mphantom", "menclose", "merror", "mfenced", "mlabeledtr",
];

/// The MathML attributes a reading page keeps: how an equation is laid out and read.
/// Colours, sizes in the site's units, links and event handlers go.
const MATHML_ATTRIBUTES: &[&str] = &[
    "display", "alttext", "displaystyle", "scriptlevel", "mathvariant", "form", "fence", "separator", "stretchy",
    "symmetric", "largeop", "movablelimits", "accent", "accentunder", "lspace", "rspace", "linethickness",
    "columnalign", "rowalign", "columnspan", "rowspan", "columnlines", "rowlines", "notation", "open", "close",
    "separators", "dir",
];

/// What was written for an open element, to close it the same way.
#[derive(Debug, Clone, Copy)]
enum Frame {
    Skipped,
    Unwrapped(bool),
    /// Kept: the tag written, whether it counted as phrasing, and where its start tag begins
    /// and ends in the output (an element that stays empty is taken out again).
    Kept(&'static str, bool, usize, usize),
    Void,
}

/// The content under construction.
pub(super) struct Content<'t> {
    tree: &'t Tree,
    base: Option<Url>,
    /// What images become ([`crate::images`]).
    images: Images,
    out: String,
    frames: Vec<Frame>,
    /// Kept elements open in the output.
    open: usize,
    /// Kept elements open that allow phrasing content only.
    phrasing: usize,
    /// A `<p>` opened by pith for loose text at the top level.
    loose_p: bool,
    /// A block boundary was crossed since the last text.
    pending_break: bool,
    /// Something was written since the last kept block opened.
    written: bool,
    /// For each table open in the source: whether it is a layout table, whose rows and cells
    /// are unwrapped too.
    tables: Vec<bool>,
    headings: Vec<Heading>,
    /// The open sections: each heading's level in the source and the level it was given.
    sections: Vec<(u8, u8)>,
    /// For each `li` of pith's open (content written straight into a list), the index in
    /// `frames` of its list.
    items: Vec<usize>,
    /// The `dl`s open in the source that are no lists of terms
    /// ([`crate::render::access::is_definition_list`]): they, their terms and their
    /// descriptions are unwrapped.
    plain_dls: Vec<NodeId>,
}

impl<'t> Content<'t> {
    pub(super) fn new(tree: &'t Tree, base: Option<Url>, images: Images) -> Self {
        let out = String::with_capacity(tree.len() * 8);
        Content { tree, base, images, out, frames: Vec::new(), open: 0, phrasing: 0, loose_p: false, pending_break: false, written: false, tables: Vec::new(), headings: Vec::new(), sections: Vec::new(), items: Vec::new(), plain_dls: Vec::new() }
    }

    pub(super) fn render(&mut self, body: NodeId) {
        let tree = self.tree;
        let mut walk = tree.traverse(body);
        while let Some(edge) = walk.next() {
            match edge {
                Edge::Open(node) => match tree.kind(node) {
                    NodeKind::Text(span) => self.text(tree.str(*span)),
                    NodeKind::Element(_) => {
                        let frame = self.open_element(node);
                        if matches!(frame, Frame::Skipped | Frame::Void) {
                            walk.skip_children();
                        }
                        self.frames.push(frame);
                    }
                    _ => {}
                },
                Edge::Close(node) => {
                    if tree.element(node).is_some() {
                        let frame = self.close_element();
                        if !matches!(frame, Some(Frame::Skipped)) && tree.tag(node) == Some("table") {
                            self.tables.pop();
                        }
                        if self.plain_dls.last() == Some(&node) {
                            self.plain_dls.pop();
                        }
                    }
                }
            }
        }
    }

    pub(super) fn finish(mut self) -> (String, Vec<Heading>) {
        if self.loose_p {
            self.out.push_str("</p>");
        }
        (self.out, self.headings)
    }

    fn open_element(&mut self, node: NodeId) -> Frame {
        let tree = self.tree;
        let tag = tree.tag(node).unwrap_or("");
        if tree.is_content_hidden(node) && tag != "body" {
            return Frame::Skipped;
        }
        let mut k = kind(tag);
        let in_layout_table = self.tables.last().copied().unwrap_or(false);
        match tag {
            "table" if k != Kind::Drop => {
                let layout = is_layout_table(tree, node);
                self.tables.push(layout);
                if layout {
                    k = Kind::Unwrap(true);
                }
            }
            "thead" | "tbody" | "tfoot" | "tr" | "td" | "th" | "caption" if in_layout_table => k = Kind::Unwrap(true),
            "dl" if !crate::render::access::is_definition_list(tree, node) => {
                self.plain_dls.push(node);
                k = Kind::Unwrap(true);
            }
            "dt" | "dd" if self.in_plain_dl(node) => k = Kind::Unwrap(true),
            // A link to nowhere (`#`, empty) was a control of the page's scripts: its content
            // stays, unlinked.
            "a" if tree.attr(node, "href").is_none_or(|h| matches!(h.trim(), "" | "#")) => k = Kind::Unwrap(false),
            _ => {}
        }
        if matches!(k, Kind::Heading(_)) && heading_text(tree, node).is_empty() {
            k = Kind::Unwrap(true);
        }
        // A block inside phrasing content (a heading in a link) cannot be written as a block.
        if matches!(k, Kind::Block(_) | Kind::Heading(_)) && self.phrasing > 0 {
            k = Kind::Unwrap(true);
        }
        match k {
            Kind::Drop => Frame::Skipped,
            Kind::Unwrap(block) => {
                self.pending_break |= block;
                Frame::Unwrapped(block)
            }
            Kind::Void => self.void(node, tag),
            Kind::Math => {
                self.before_inline();
                self.math(node);
                self.written = true;
                Frame::Void
            }
            Kind::Inline => {
                self.before_inline();
                // Phrasing continues the line: what was written before still counts.
                let written = self.written;
                let frame = self.start_tag(node, tag, tag_name(tag), true);
                self.written = written;
                frame
            }
            Kind::Block(phrasing) => {
                self.before_block();
                if tag == "li" {
                    if self.in_item() {
                        self.end_item();
                    }
                } else {
                    self.ensure_item(true);
                }
                self.start_tag(node, tag, tag_name(tag), phrasing)
            }
            Kind::Heading(level) => {
                self.before_block();
                self.ensure_item(true);
                let level = self.section_level(level);
                self.heading(node, level)
            }
        }
    }

    fn close_element(&mut self) -> Option<Frame> {
        if self.items.last() == Some(&(self.frames.len().wrapping_sub(1))) {
            self.end_item();
        }
        let frame = self.frames.pop();
        match frame {
            Some(Frame::Kept(name, phrasing, tag_start, start)) => {
                if self.out.len() == start && can_be_dropped_empty(name) {
                    // Nothing inside: take the start tag out again rather than leave `<p></p>`.
                    self.out.truncate(tag_start);
                } else {
                    self.out.push_str("</");
                    self.out.push_str(name);
                    self.out.push('>');
                }
                self.open -= 1;
                if phrasing {
                    self.phrasing -= 1;
                }
                self.written = true;
                if !phrasing || matches!(name, "p" | "pre" | "dt" | "h2" | "h3" | "h4" | "h5" | "h6") {
                    self.pending_break = false;
                }
            }
            Some(Frame::Unwrapped(true)) => self.pending_break = true,
            _ => {}
        }
        frame
    }

    fn start_tag(&mut self, node: NodeId, tag: &str, name: &'static str, phrasing: bool) -> Frame {
        let tag_start = self.out.len();
        self.out.push('<');
        self.out.push_str(name);
        self.attributes(node, tag);
        self.out.push('>');
        self.open += 1;
        if phrasing {
            self.phrasing += 1;
        }
        self.written = false;
        Frame::Kept(name, phrasing, tag_start, self.out.len())
    }

    /// The level a heading of `source` level gets: one below the heading of the section it
    /// opens in (the title's `<h1>` for the first), so levels never skip; headings of the same
    /// source level under the same parent stay siblings. `<h2>` to `<h6>`.
    fn section_level(&mut self, source: u8) -> u8 {
        while self.sections.last().is_some_and(|&(s, _)| s >= source) {
            self.sections.pop();
        }
        let level = self.sections.last().map_or(2, |&(_, given)| given + 1).min(6);
        self.sections.push((source, level));
        level
    }

    fn heading(&mut self, node: NodeId, level: u8) -> Frame {
        let anchor = format!("s{}", self.headings.len() + 1);
        let name = ["h2", "h2", "h2", "h3", "h4", "h5", "h6"][usize::from(level.min(6))];
        let tag_start = self.out.len();
        let _ = write!(self.out, "<{name} id=\"{anchor}\">");
        self.headings.push(Heading { level, anchor, text: heading_text(self.tree, node) });
        self.open += 1;
        self.phrasing += 1;
        self.written = false;
        Frame::Kept(name, true, tag_start, self.out.len())
    }

    fn void(&mut self, node: NodeId, tag: &str) -> Frame {
        match tag {
            "hr" if self.phrasing == 0 => {
                self.before_block();
                self.out.push_str("<hr>");
            }
            "br" => {
                self.before_inline();
                self.out.push_str("<br>");
            }
            "img" => self.image(node),
            _ => {}
        }
        Frame::Void
    }

    /// A MathML equation: its presentation elements with the attributes that shape how it
    /// looks and reads ([`MATHML_ELEMENTS`], [`MATHML_ATTRIBUTES`]); annotations (a TeX
    /// source, say) go, and HTML inside (in an `mtext`) is unwrapped to its text. A screen reader speaks MathML, and a
    /// browser draws it without scripts or fonts of the site's; an equation was the article's
    /// content, never clutter. A displayed one scrolls on a narrow screen, so it takes
    /// keyboard focus.
    fn math(&mut self, math: NodeId) {
        let tree = self.tree;
        let mut walk = tree.traverse(math);
        while let Some(edge) = walk.next() {
            match edge {
                Edge::Open(node) => match tree.kind(node) {
                    NodeKind::Text(span) => self.math_text(node, tree.str(*span)),
                    NodeKind::Element(e) => {
                        let Some(name) = MATHML_ELEMENTS.iter().find(|n| e.ns == Ns::MathMl && **n == &*e.name) else {
                            // HTML in an `mtext` is its text; an annotation, or what a
                            // reading page never shows, goes whole.
                            if e.ns == Ns::MathMl || kind(&e.name) == Kind::Drop {
                                walk.skip_children();
                            }
                            continue;
                        };
                        self.out.push('<');
                        self.out.push_str(name);
                        for (attribute, value) in tree.attrs(node) {
                            if MATHML_ATTRIBUTES.contains(&&**attribute) {
                                attr(&mut self.out, attribute, value);
                            }
                        }
                        if node == math && tree.attr(node, "display") == Some("block") && tree.attr(node, "tabindex").is_none() {
                            attr(&mut self.out, "tabindex", "0");
                        }
                        self.out.push('>');
                    }
                    _ => {}
                },
                Edge::Close(node) => {
                    if let Some(name) = tree.element(node).and_then(|e| MATHML_ELEMENTS.iter().find(|n| e.ns == Ns::MathMl && **n == &*e.name)) {
                        self.out.push_str("</");
                        self.out.push_str(name);
                        self.out.push('>');
                    }
                }
            }
        }
    }

    /// Text inside an equation, each white space run one space. In MathML's own elements but
    /// `mtext` and `ms` the renderer drops white space at the edges, so it is left out there;
    /// in those two, and in HTML inside an `mtext`, it may part two words and stays.
    fn math_text(&mut self, node: NodeId, text: &str) {
        let tree = self.tree;
        let edges = tree.parent(node).and_then(|p| tree.element(p)).is_some_and(|e| e.ns != Ns::MathMl || matches!(&*e.name, "mtext" | "ms"));
        if edges && text.starts_with(|c: char| c.is_ascii_whitespace()) {
            self.out.push(' ');
        }
        let mut words = text.split_ascii_whitespace();
        if let Some(first) = words.next() {
            escape(first, &mut self.out);
            for word in words {
                self.out.push(' ');
                escape(word, &mut self.out);
            }
            if edges && text.ends_with(|c: char| c.is_ascii_whitespace()) {
                self.out.push(' ');
            }
        }
    }

    /// An image with an address, made absolute: its `src` or lazy address (`keep`), or the
    /// address [`crate::images::page::source`] chooses with lazy-loading hints (`compress`),
    /// or a small link to it (`placeholder`); nothing for `none`.
    fn image(&mut self, node: NodeId) {
        let tree = self.tree;
        let src = match self.images.policy {
            Policy::None => return,
            Policy::Keep => ["src", "data-src", "data-lazy-src", "data-original"]
                .iter()
                .filter_map(|a| tree.attr(node, a))
                .map(str::trim)
                .find(|s| !s.is_empty() && !s.starts_with("data:"))
                .map(str::to_string),
            Policy::Compress | Policy::Placeholder => crate::images::page::source(tree, node, self.images.max_width),
        };
        let Some(src) = src.and_then(|s| self.absolute(&s)) else { return };
        self.before_inline();
        let alt = tree.attr(node, "alt").unwrap_or("").trim();
        let named = if alt.is_empty() { crate::render::access::image_in_link(tree, node) } else { None };
        let alt = named.as_deref().unwrap_or(alt);
        // Read once: by the caption when it says what the alt text says.
        let alt = if crate::render::access::caption_repeats_alt(tree, node, alt) && self.images.policy != Policy::Placeholder { "" } else { alt };
        if self.images.policy == Policy::Placeholder {
            let label = if alt.is_empty() { "image" } else { alt };
            let in_link = tree.ancestors(node).any(|a| tree.tag(a) == Some("a"));
            if !in_link {
                self.out.push_str("<a class=\"pith-image\"");
                attr(&mut self.out, "href", &src);
                self.out.push('>');
            }
            self.out.push('[');
            escape(label, &mut self.out);
            self.out.push(']');
            if !in_link {
                self.out.push_str("</a>");
            }
            self.written = true;
            return;
        }
        self.out.push_str("<img");
        attr(&mut self.out, "src", &src);
        attr(&mut self.out, "alt", alt);
        if self.images.policy == Policy::Compress {
            attr(&mut self.out, "loading", "lazy");
            attr(&mut self.out, "decoding", "async");
        }
        self.out.push('>');
        self.written = true;
    }

    /// Before phrasing content: loose text at the top level goes in a paragraph, and a block
    /// boundary crossed inside a kept block becomes a line break.
    fn before_inline(&mut self) {
        if self.open == 0 {
            if self.loose_p && self.pending_break {
                self.out.push_str("</p>");
                self.loose_p = false;
            }
            if !self.loose_p {
                self.out.push_str("<p>");
                self.loose_p = true;
                self.written = false;
            }
        } else {
            self.ensure_item(self.pending_break);
            if self.pending_break && self.written {
                self.out.push_str("<br>");
            }
        }
        self.pending_break = false;
    }

    /// The index in `frames` of the innermost kept element when it is a `ul` or `ol`: content
    /// written now would land in the list outside any item.
    fn open_list(&self) -> Option<usize> {
        let (i, frame) = self.frames.iter().enumerate().rev().find(|(_, f)| matches!(f, Frame::Kept(..)))?;
        matches!(frame, Frame::Kept("ul" | "ol", ..)).then_some(i)
    }

    /// Whether an `li` of pith's is open in the innermost list.
    fn in_item(&self) -> bool {
        self.open_list().is_some_and(|list| self.items.last() == Some(&list))
    }

    /// Before content that would land in a list outside any item (the site's `div` items, text,
    /// a nested list without its `li`): an `li` of pith's around it, and a `new` one for a
    /// block or after a block boundary, so that each of the site's blocks is an item.
    fn ensure_item(&mut self, new: bool) {
        let Some(list) = self.open_list() else { return };
        if self.items.last() == Some(&list) {
            if !new {
                return;
            }
            self.end_item();
        }
        self.out.push_str("<li>");
        self.items.push(list);
        self.open += 1;
        self.pending_break = false;
        self.written = false;
    }

    fn end_item(&mut self) {
        self.items.pop();
        self.out.push_str("</li>");
        self.open -= 1;
        self.written = true;
    }

    /// Whether `node` (a `dt` or `dd`) is a term or description of a `dl` being unwrapped,
    /// directly or in a `div` group.
    fn in_plain_dl(&self, node: NodeId) -> bool {
        self.plain_dls.last().is_some_and(|&dl| crate::render::access::is_in_definition_list(self.tree, node, dl))
    }

    /// Whether the innermost kept element holds other elements only (a list, a table's rows,
    /// a figure), where whitespace between them is noise.
    fn in_structure(&self) -> bool {
        let innermost = self.frames.iter().rev().find_map(|f| match f {
            Frame::Kept(name, ..) => Some(*name),
            _ => None,
        });
        matches!(innermost, Some("table" | "thead" | "tbody" | "tfoot" | "tr" | "ul" | "ol" | "dl" | "figure")) && !self.in_item()
    }

    fn before_block(&mut self) {
        if self.loose_p {
            self.out.push_str("</p>");
            self.loose_p = false;
        }
        self.pending_break = false;
    }

    fn text(&mut self, text: &str) {
        let text = &*crate::render::heard::heard(text);
        if self.phrasing > 0 && self.frames.iter().any(|f| matches!(f, Frame::Kept("pre", ..))) {
            escape(text, &mut self.out);
            self.written = true;
            return;
        }
        let blank = text.bytes().all(|b| b.is_ascii_whitespace());
        if blank {
            let between_words = self.loose_p || self.phrasing > 0 || self.open > 0 && !self.in_structure();
            if between_words && self.written && !self.out.ends_with(' ') {
                self.out.push(' ');
            }
            return;
        }
        self.before_inline();
        let mut first = true;
        if text.starts_with(char::is_whitespace) && self.written && !self.out.ends_with(' ') {
            self.out.push(' ');
        }
        for word in crate::dom::words(text) {
            if !first {
                self.out.push(' ');
            }
            escape(word, &mut self.out);
            first = false;
        }
        if text.ends_with(char::is_whitespace) {
            self.out.push(' ');
        }
        self.written = true;
    }

    /// The attributes that carry meaning, per element; URLs made absolute.
    fn attributes(&mut self, node: NodeId, tag: &str) {
        let tree = self.tree;
        for (name, value) in tree.attrs(node) {
            let keep = match (&**name, tag) {
                ("lang" | "dir", _) => true,
                ("href", "a") | ("cite", "q" | "blockquote" | "del" | "ins") => {
                    if let Some(url) = self.absolute(value) {
                        attr(&mut self.out, name, &url);
                    }
                    false
                }
                ("colspan" | "rowspan", "td" | "th") | ("scope", "th") => true,
                ("start" | "reversed", "ol") | ("value", "li") | ("datetime", "time" | "del" | "ins") => true,
                ("title", "abbr" | "dfn") => true,
                _ => false,
            };
            if keep {
                attr(&mut self.out, name, value);
            }
        }
        match tag {
            "a" => {
                if let Some(name) = crate::render::access::textless_link(tree, node) {
                    attr(&mut self.out, "aria-label", &name);
                }
            }
            // The stylesheet lets both scroll sideways.
            "table" | "pre" if crate::render::access::needs_tab_stop(tree, node) => attr(&mut self.out, "tabindex", "0"),
            _ => {}
        }
    }

    /// `href` resolved against the base; kept as written when there is no base.
    fn absolute(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() {
            return None;
        }
        match &self.base {
            Some(base) => base.join(href).ok().map(String::from),
            None => Some(href.to_string()),
        }
    }
}

/// Elements left out when nothing was written inside them; not cells and rows, which keep
/// a table's shape, nor headings, which the table of contents links to.
fn can_be_dropped_empty(name: &str) -> bool {
    matches!(
        name,
        "p" | "ul" | "ol" | "dl" | "li" | "figure" | "figcaption" | "blockquote" | "pre" | "a" | "em" | "strong" | "b" | "i" | "span"
    )
}

/// `&'static` names for the tags written, so frames need no allocation.
fn tag_name(tag: &str) -> &'static str {
    const NAMES: &[&str] = &[
        "p", "pre", "dt", "ul", "ol", "li", "dl", "dd", "table", "caption", "thead", "tbody",
        "tfoot", "tr", "th", "td", "figure", "figcaption", "blockquote", "a", "em", "strong", "b",
        "i", "u", "s", "sub", "sup", "small", "mark", "q", "cite", "abbr", "time", "code", "kbd",
        "samp", "var", "del", "ins", "dfn", "bdi", "bdo",
    ];
    NAMES.iter().find(|n| **n == tag).copied().unwrap_or("span")
}

/// A table used for layout rather than data: it holds paragraphs, headings or other tables,
/// and no header cell or caption says it is data.
fn is_layout_table(tree: &Tree, table: NodeId) -> bool {
    let mut layout = false;
    for d in tree.descendants(table).skip(1) {
        match tree.tag(d) {
            Some("th" | "caption") => return false,
            Some("table" | "p" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "blockquote" | "pre") => layout = true,
            _ => {}
        }
    }
    layout
}

