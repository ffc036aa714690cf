//! Per-node statistics and visibility, computed once after parsing in two linear passes.
//!
//! A forward pass over the pre-order array (parents come before children) settles what depends
//! on ancestors: depth, whether a node shows, whether it sits in a link. A reverse pass
//! (children come before parents) adds every node's own counts into its parent, so each node ends
//! up with the totals of its subtree. Neither pass recurses or allocates per node.
//!
//! What counts as visible: text that a browser displays with scripts on and no style sheet
//! applied beyond the defaults and inline `style`. Elements that never display their content by
//! name are classified by [`element_kind`] (its `HIDES` bit); inline `display: none`,
//! `visibility: hidden` and the `hidden` attribute hide an element too, as they do in a browser.

use markup5ever::local_name;

use super::{flag, Element, NodeKind, Ns, Tree, NONE};

/// Statistics over a node's subtree, the node included, as parsed.
///
/// Text is measured per text node after collapsing each whitespace run to one space and
/// trimming the ends, so indentation and line breaks in the source do not count. Only text
/// that shows counts (see [`Tree::is_shown`]); a word split by markup (`<b>W</b>ord`) counts as
/// two. Links, images and controls count only where they show; `tags` counts every element.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct NodeStats {
    /// Visible characters (Unicode scalar values), whitespace collapsed per text node.
    pub text_chars: u32,
    /// Visible words: runs of non-whitespace characters.
    pub words: u32,
    /// The part of `text_chars` inside an `<a href>`.
    pub link_text_chars: u32,
    /// The part of `words` inside an `<a href>`.
    pub link_words: u32,
    /// `<a href>` elements.
    pub links: u32,
    /// `<img>` elements.
    pub images: u32,
    /// Form controls and embedded content: input (not `type=hidden`), button, select, textarea,
    /// iframe, embed, object, video, audio and canvas. With images and links these are what
    /// Crunch calls "substance" when it decides whether a table is empty.
    pub controls: u32,
    /// Elements, hidden ones included: the markup side of text-to-tag ratios.
    pub tags: u32,
    /// The depth of the node itself: 0 for the document, 1 for `<html>`. A `u32` because
    /// documents nested deeper than 65,535 exist (and are parsed).
    pub depth: u32,
}

impl NodeStats {
    /// Adds another subtree's counts (all but `depth`): how a parent sums its children, and
    /// how removers total what they took out.
    pub fn add(&mut self, child: &NodeStats) {
        self.text_chars += child.text_chars;
        self.words += child.words;
        self.link_text_chars += child.link_text_chars;
        self.link_words += child.link_words;
        self.links += child.links;
        self.images += child.images;
        self.controls += child.controls;
        self.tags += child.tags;
    }
}

/// Fills the tree's flags and statistics.
pub(super) fn compute(tree: &mut Tree) {
    let n = tree.nodes.len();
    tree.flags = vec![0; n];
    tree.stats = vec![NodeStats::default(); n];
    mark(tree);
    accumulate(tree);
}

/// Forward pass: depth, the flags, and each node's own counts but its text's.
///
/// An element's attributes are read once for everything decided here (`hidden`, `style`,
/// `href`, an input's `type`), by interned name; whether it shows is known at this point, so
/// its own links, images and controls are counted here too.
fn mark(tree: &mut Tree) {
    for i in 0..tree.nodes.len() {
        let parent = tree.nodes[i].parent;
        let (parent_flags, depth) = if parent == NONE {
            (flag::SHOWN, 0)
        } else {
            (
                tree.flags[parent as usize],
                tree.stats[parent as usize].depth + 1,
            )
        };
        let parent_shows =
            parent_flags & flag::SHOWN != 0 && parent_flags & flag::CONTENT_HIDDEN == 0;
        let mut flags = parent_flags & flag::IN_LINK;
        let mut own = NodeStats {
            depth,
            ..NodeStats::default()
        };
        let mut shown = parent_shows;
        match &tree.nodes[i].kind {
            NodeKind::Element(e) => {
                let attrs = Attrs::of(tree, e);
                let kind = element_kind(e);
                if attrs.hidden || kind & kind::HIDES != 0 {
                    flags |= flag::CONTENT_HIDDEN;
                }
                let link = attrs.href && e.name == local_name!("a");
                if link {
                    flags |= flag::IN_LINK;
                }
                if kind & kind::BLOCK != 0 {
                    flags |= flag::BLOCK;
                }
                if attrs.aria_hidden {
                    flags |= flag::ARIA_HIDDEN;
                }
                if attrs.widget {
                    flags |= flag::WIDGET;
                }
                shown &= !attrs.hidden;
                own.tags = 1;
                if shown {
                    own.links = u32::from(link);
                    own.images = u32::from(kind & kind::IMAGE != 0);
                    let input = kind & kind::INPUT != 0
                        && !attrs.input_type.unwrap_or("").eq_ignore_ascii_case("hidden");
                    own.controls = u32::from(kind & kind::CONTROL != 0 || input);
                }
            }
            NodeKind::Text(_) => flags |= flag::TEXT,
            _ => {}
        }
        if shown {
            flags |= flag::SHOWN;
        }
        tree.flags[i] = flags;
        tree.stats[i] = own;
    }
}

/// Reverse pass: each shown text's counts, then every node's subtree totals into its parent.
fn accumulate(tree: &mut Tree) {
    for i in (0..tree.nodes.len()).rev() {
        let flags = tree.flags[i];
        let mut own = tree.stats[i];
        if flags & (flag::TEXT | flag::SHOWN) == flag::TEXT | flag::SHOWN {
            if let NodeKind::Text(span) = &tree.nodes[i].kind {
                let (start, end) = (span.start as usize, span.end as usize);
                let (chars, words) = count_text_in(tree.chars.as_bytes(), start, end);
                own.text_chars += chars;
                own.words += words;
                if flags & flag::IN_LINK != 0 {
                    own.link_text_chars += chars;
                    own.link_words += words;
                }
                tree.stats[i] = own;
            }
        }
        let parent = tree.nodes[i].parent;
        if parent != NONE {
            tree.stats[parent as usize].add(&own);
        }
    }
}

/// What the statistics read of an element's attributes, in one pass over them.
struct Attrs<'a> {
    /// `hidden`, or an inline style with `display: none` or `visibility: hidden`.
    hidden: bool,
    /// An `href` attribute is present.
    href: bool,
    /// The first `type` attribute's value.
    input_type: Option<&'a str>,
    /// `aria-hidden="true"`.
    aria_hidden: bool,
    /// A `role` naming a widget ([`WIDGET_ROLES`]).
    widget: bool,
}

impl<'a> Attrs<'a> {
    fn of(tree: &'a Tree, e: &Element) -> Attrs<'a> {
        let mut attrs = Attrs {
            hidden: false,
            href: false,
            input_type: None,
            aria_hidden: false,
            widget: false,
        };
        let list = tree
            .attrs
            .get(e.attrs.start as usize..e.attrs.end as usize)
            .unwrap_or(&[]);
        for a in list {
            match a.name {
                local_name!("hidden") => attrs.hidden = true,
                local_name!("style") => attrs.hidden |= !attrs.hidden && style_hides(tree.str(a.value)),
                local_name!("href") => attrs.href = true,
                local_name!("aria-hidden") => attrs.aria_hidden = tree.str(a.value).trim().eq_ignore_ascii_case("true"),
                local_name!("role") => attrs.widget = is_widget_role(tree.str(a.value)),
                local_name!("type") if attrs.input_type.is_none() => {
                    attrs.input_type = Some(tree.str(a.value));
                }
                _ => {}
            }
        }
        attrs
    }
}

/// The WAI-ARIA roles of widgets and their containers: a page's scripts make an element one of
/// these; the first role of a `role` list is the one a browser uses.
const WIDGET_ROLES: &[&str] = &[
    "alertdialog", "application", "button", "checkbox", "combobox", "dialog", "grid", "gridcell", "link", "listbox",
    "menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "progressbar", "radio", "radiogroup",
    "scrollbar", "searchbox", "slider", "spinbutton", "switch", "tab", "tablist", "tabpanel", "textbox", "tooltip",
    "tree", "treegrid", "treeitem",
];

/// Whether a `role` value names a widget ([`WIDGET_ROLES`]).
fn is_widget_role(value: &str) -> bool {
    let first = value.split_ascii_whitespace().next().unwrap_or_default();
    WIDGET_ROLES.iter().any(|r| r.eq_ignore_ascii_case(first))
}

/// [`super::is_block`]: the list is [`element_kind`]'s `BLOCK` arm.
pub(super) fn is_block(e: &Element) -> bool {
    element_kind(e) & kind::BLOCK != 0
}

/// What an element's name tells the statistics, as bits of [`kind`]: for an HTML element one
/// match on the name answers [`super::is_block`] and whether the element hides its content
/// (the only lists of both) and what [`count_element`] counts, which asked one after the other
/// cost three searches among the names. Inlined into the statistics' loop, where it runs once per element.
#[inline(always)]
fn element_kind(e: &Element) -> u8 {
    use kind::*;
    if e.ns != Ns::Html {
        return if foreign_hides_content(e) { HIDES } else { 0 };
    }
    match e.name {
        local_name!("address")
        | local_name!("article")
        | local_name!("aside")
        | local_name!("blockquote")
        | local_name!("body")
        | local_name!("caption")
        | local_name!("center")
        | local_name!("dd")
        | local_name!("details")
        | local_name!("dialog")
        | local_name!("dir")
        | local_name!("div")
        | local_name!("dl")
        | local_name!("dt")
        | local_name!("fieldset")
        | local_name!("figcaption")
        | local_name!("figure")
        | local_name!("footer")
        | local_name!("form")
        | local_name!("h1")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6")
        | local_name!("header")
        | local_name!("hgroup")
        | local_name!("hr")
        | local_name!("html")
        | local_name!("legend")
        | local_name!("li")
        | local_name!("listing")
        | local_name!("main")
        | local_name!("menu")
        | local_name!("nav")
        | local_name!("ol")
        | local_name!("p")
        | local_name!("plaintext")
        | local_name!("pre")
        | local_name!("search")
        | local_name!("section")
        | local_name!("summary")
        | local_name!("table")
        | local_name!("tbody")
        | local_name!("td")
        | local_name!("tfoot")
        | local_name!("th")
        | local_name!("thead")
        | local_name!("tr")
        | local_name!("ul")
        | local_name!("xmp") => BLOCK,
        local_name!("script")
        | local_name!("style")
        | local_name!("head")
        | local_name!("title")
        | local_name!("template")
        | local_name!("noscript")
        | local_name!("noembed")
        | local_name!("noframes")
        | local_name!("datalist") => HIDES,
        // Ruby annotations (a reading of the base text, and the parentheses a browser without
        // ruby shows around it) run into the words when read as text: a reader hears the base.
        local_name!("rt") | local_name!("rp") => HIDES,
        local_name!("select")
        | local_name!("iframe")
        | local_name!("audio")
        | local_name!("video")
        | local_name!("canvas") => HIDES | CONTROL,
        local_name!("button")
        | local_name!("textarea")
        | local_name!("embed")
        | local_name!("object") => CONTROL,
        local_name!("img") => IMAGE,
        local_name!("input") => INPUT,
        _ => 0,
    }
}

/// The bits of [`element_kind`].
mod kind {
    /// [`super::super::is_block`].
    pub const BLOCK: u8 = 1;
    /// The element never displays its content in a browser with scripts on: code and metadata
    /// (script, style, head, title, template), fallbacks that only show where a feature is
    /// missing (noscript, iframe, noembed, noframes, audio, video, canvas), pickers that show
    /// one option at a time (select, datalist), and the non-rendered parts of SVG and MathML
    /// ([`super::foreign_hides_content`]).
    pub const HIDES: u8 = 2;
    /// An HTML `<img>`.
    pub const IMAGE: u8 = 4;
    /// An HTML `<input>`: a control unless `type=hidden`.
    pub const INPUT: u8 = 8;
    /// An HTML form control or embedded content other than `<input>`.
    pub const CONTROL: u8 = 16;
}

/// Adds a shown element's own image and control counts: what [`element_kind`] answers, kept
/// as the plain statement of it that the tests hold it to.
#[cfg(test)]
fn count_element(e: &Element, input_type: Option<&str>, own: &mut NodeStats) {
    if e.ns != Ns::Html {
        return;
    }
    match e.name {
        local_name!("img") => own.images += 1,
        local_name!("input") => {
            if !input_type.unwrap_or("").eq_ignore_ascii_case("hidden") {
                own.controls += 1;
            }
        }
        local_name!("button")
        | local_name!("select")
        | local_name!("textarea")
        | local_name!("iframe")
        | local_name!("embed")
        | local_name!("object")
        | local_name!("video")
        | local_name!("audio")
        | local_name!("canvas") => own.controls += 1,
        _ => {}
    }
}

/// Characters and words of one text node, whitespace runs collapsed and ends trimmed.
///
/// One pass over the bytes, eight at a time. ASCII whitespace is exactly what
/// [`super::words`] splits on below U+0080; a byte from 0x80 up is part of a character that
/// is not whitespace, unless its lead byte is one of the few that can start non-ASCII
/// whitespace (0xC2, 0xE1 to 0xE3): eight bytes holding such a lead are counted one by one.
#[cfg(test)]
fn count_text(text: &str) -> (u32, u32) {
    count_text_in(text.as_bytes(), 0, text.len())
}

/// [`count_text`] of `buf[start..end]`, whole characters of a buffer that may go on after
/// them (the tree's character buffer).
fn count_text_in(buf: &[u8], start: usize, end: usize) -> (u32, u32) {
    let (chars, words) = count_utf8(buf, start, end);
    (chars + words.saturating_sub(1), words)
}

/// Non-whitespace characters and words of the UTF-8 text `buf[start..end]`. In the
/// eight-byte steps each byte's top bit marks it *solid*: not whitespace, or inside a
/// character that is not. Every byte is below 0x80 once that bit is cleared, so the sums
/// below never carry into the next byte. A character is counted at its first byte (a
/// continuation byte is 0b10xx_xxxx), and a word starts at a solid byte whose predecessor is
/// not solid.
///
/// The last step takes the text's last one to seven bytes as eight, those past the end made
/// spaces (which count for nothing): loaded from `buf` where it goes on that far, copied
/// where it does not. Most text nodes are short, and their tail counted byte by byte cost as
/// much as the steps before it.
fn count_utf8(buf: &[u8], start: usize, end: usize) -> (u32, u32) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const SPACES: u64 = 0x20 * ONES;
    // The top bit of each byte below 0x80 that is not whitespace: not 0x20, not 0x09..=0x0D.
    let solid = |x: u64| {
        let y = x ^ SPACES;
        let not_blank = (y.wrapping_add(0x7F * ONES) | y) & HIGH;
        let from_tab = x.wrapping_add((0x80 - 0x09) * ONES);
        let from_so = x.wrapping_add((0x80 - 0x0E) * ONES);
        not_blank & !(from_tab & !from_so)
    };
    // The top bit of each zero byte.
    let zeros = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    // Bytes whose top bit is set, at most eight.
    let count = |flags: u64| ((flags >> 7).wrapping_mul(ONES) >> 56) as u32;
    // 0xC2, or 0xE0 to 0xE3 (0xE0 only costs the slow path).
    let special =
        |x: u64| x & HIGH != 0 && zeros(x ^ (0xC2 * ONES)) | zeros((x & (0xFC * ONES)) ^ (0xE0 * ONES)) != 0;
    let bytes = buf.get(start..end).unwrap_or_default();
    let (mut chars, mut words) = (0u32, 0u32);
    // The top bit of the lowest byte set when the character before the step is solid.
    let mut carry = 0u64;
    let mut i = 0;
    let mut step = |x: u64, carry: &mut u64| {
        let high = x & HIGH;
        let ns = solid(x & !HIGH) | high;
        let continuation = high & !(x << 1);
        chars += count(ns & !continuation);
        words += count(ns & !((ns << 8) | *carry));
        *carry = ns >> 56;
    };
    let mut bytewise = (0u32, 0u32);
    while let Some(chunk) = bytes.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        if special(x) {
            let (c, w, end, in_word) = count_bytes(bytes, i, i + 8, carry != 0);
            bytewise = (bytewise.0 + c, bytewise.1 + w);
            (i, carry) = (end, u64::from(in_word) << 7);
            continue;
        }
        step(x, &mut carry);
        i += 8;
    }
    let rest = bytes.len() - i.min(bytes.len());
    if rest > 0 {
        // 1 to 7 bytes left: keep that many low bytes, spaces above them.
        let keep = u64::MAX >> (8 * (8 - rest));
        let word = match buf.get(start + i..start + i + 8) {
            Some(chunk) => {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                u64::from_le_bytes(word)
            }
            None => {
                let mut word = [b' '; 8];
                word[..rest].copy_from_slice(&bytes[i..]);
                u64::from_le_bytes(word)
            }
        };
        let x = (word & keep) | (SPACES & !keep);
        if special(x) {
            let (c, w, _, _) = count_bytes(bytes, i, bytes.len(), carry != 0);
            bytewise = (bytewise.0 + c, bytewise.1 + w);
        } else {
            step(x, &mut carry);
        }
    }
    (chars + bytewise.0, words + bytewise.1)
}

/// The byte-by-byte count of `bytes[from..]` for [`count_utf8`], from `from` (a character's
/// start) to the first character that starts at or after `to`: non-whitespace characters,
/// words begun, where it stopped, and whether the last character was solid.
fn count_bytes(bytes: &[u8], from: usize, to: usize, mut in_word: bool) -> (u32, u32, usize, bool) {
    let (mut chars, mut words) = (0u32, 0u32);
    let mut i = from;
    while let Some(&b) = bytes.get(i) {
        let space = match b {
            b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' => true,
            0x80..=0xBF => {
                i += 1;
                continue; // inside a character counted at its lead byte
            }
            0xC2 | 0xE1 | 0xE2 | 0xE3 => super::words::is_wide_space(bytes, i),
            _ => false,
        };
        if i >= to {
            break;
        }
        chars += u32::from(!space);
        words += u32::from(!space && !in_word);
        in_word = !space;
        i += 1;
    }
    (chars, words, i, in_word)
}

/// The elements of SVG and MathML whose content never displays: the non-rendered parts of those
/// languages. HTML's such elements are [`element_kind`]'s `HIDES` arms.
fn foreign_hides_content(e: &Element) -> bool {
    match e.ns {
        Ns::Svg => matches!(
            e.name,
            local_name!("script")
                | local_name!("style")
                | local_name!("title")
                | local_name!("desc")
        ),
        Ns::MathMl => matches!(
            e.name,
            local_name!("annotation") | local_name!("annotation-xml")
        ),
        Ns::Html | Ns::Other => false,
    }
}

/// Whether an inline style hides its element. One pass over the declarations, ASCII case
/// ignored, `!important` allowed: inline styles are common and some are long.
fn style_hides(style: &str) -> bool {
    style.split(';').any(|declaration| {
        let Some((property, value)) = declaration.split_once(':') else {
            return false;
        };
        let (property, value) = (property.trim(), value.trim_start().as_bytes());
        let starts = |word: &str| {
            value
                .get(..word.len())
                .is_some_and(|v| v.eq_ignore_ascii_case(word.as_bytes()))
        };
        (property.eq_ignore_ascii_case("display") && starts("none"))
            || (property.eq_ignore_ascii_case("visibility") && starts("hidden"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::dom::NodeId;

    const PAGE: &str = r#"<html><head><title>Title here</title><style>p{}</style></head>
<body>
<div id=main>
  <h1>Big  news</h1>
  <p>Some text with <a href="/x">a link</a> and <img src=i.png> more.</p>
  <script>var x = 1;</script>
  <ul><li><a href=/1>One</a></li><li><a>Two</a></li></ul>
  <p hidden>secret words</p>
  <div style="display: none"><a href=/h>hid</a><img src=h></div>
  <form><input type=hidden><input type=text><button>Go</button></form>
</div>
</body></html>"#;

    fn find(tree: &Tree, pred: impl Fn(NodeId) -> bool) -> NodeId {
        tree.descendants(tree.root())
            .find(|&id| pred(id))
            .expect("node in the page")
    }

    #[test]
    fn crafted_page_has_exact_statistics() {
        let tree = Tree::parse(PAGE);
        let main = find(&tree, |id| tree.attr(id, "id") == Some("main"));
        let expected = NodeStats {
            // "Big news" 8, "Some text with" 14, "a link" 6, "and" 3, "more." 5, "One" 3,
            // "Two" 3, "Go" 2; the script, [hidden] and display:none parts do not count.
            text_chars: 44,
            words: 12,
            link_text_chars: 9,
            link_words: 3,
            links: 2,
            images: 1,
            controls: 2,
            tags: 19,
            depth: 3,
        };
        assert_eq!(*tree.stats(main), expected);
        let root = tree.stats(tree.root());
        assert_eq!(
            (root.text_chars, root.words, root.tags, root.depth),
            (44, 12, 24, 0)
        );
        let link = find(&tree, |id| tree.attr(id, "href") == Some("/x"));
        let link_stats = NodeStats {
            text_chars: 6,
            words: 2,
            link_text_chars: 6,
            link_words: 2,
            links: 1,
            tags: 1,
            depth: 5,
            ..NodeStats::default()
        };
        assert_eq!(*tree.stats(link), link_stats);
    }

    #[test]
    fn visibility_flags_follow_ancestors() {
        let tree = Tree::parse(PAGE);
        let title = find(&tree, |id| tree.tag(id) == Some("title"));
        let script = find(&tree, |id| tree.tag(id) == Some("script"));
        let hidden_p = find(&tree, |id| tree.attr(id, "hidden").is_some());
        let hidden_link = find(&tree, |id| tree.attr(id, "href") == Some("/h"));
        let shown_link = find(&tree, |id| tree.attr(id, "href") == Some("/1"));
        assert!(!tree.is_shown(title), "head hides its content");
        assert!(tree.is_shown(script) && tree.is_content_hidden(script));
        assert!(!tree.is_shown(hidden_p) && tree.is_content_hidden(hidden_p));
        assert!(!tree.is_shown(hidden_link));
        assert!(tree.is_shown(shown_link) && tree.is_in_link(shown_link));
        let text = tree.first_child(shown_link).expect("link text");
        assert!(tree.is_shown(text) && tree.is_in_link(text));
        assert!(!tree.is_in_link(tree.root()));
    }

    #[test]
    fn element_kinds_are_the_lists() {
        let names = [
            "a", "span", "div", "p", "td", "html", "body", "xmp", "script", "style", "head", "title",
            "template", "noscript", "iframe", "noembed", "noframes", "audio", "video", "canvas",
            "select", "datalist", "img", "input", "button", "textarea", "embed", "object", "desc",
            "annotation", "annotation-xml", "foreignObject", "svg", "math", "h1", "li", "form", "table",
            "tr", "my-element",
        ];
        for ns in [Ns::Html, Ns::Svg, Ns::MathMl, Ns::Other] {
            for name in names {
                let name_atom = super::super::LocalName::from(name);
                let e = Element { name: name_atom, ns, attrs: Default::default() };
                let kind = element_kind(&e);
                let block = ns == Ns::Html
                    && ["div", "p", "td", "html", "body", "xmp", "h1", "li", "form", "table", "tr"].contains(&name);
                assert_eq!(kind & kind::BLOCK != 0, block, "{name} {ns:?}");
                assert_eq!(super::super::is_block(&e), block, "{name} {ns:?}");
                let hides = match ns {
                    Ns::Html => [
                        "script", "style", "head", "title", "template", "noscript", "iframe", "noembed",
                        "noframes", "audio", "video", "canvas", "select", "datalist",
                    ]
                    .contains(&name),
                    Ns::Svg => ["script", "style", "title", "desc"].contains(&name),
                    Ns::MathMl => ["annotation", "annotation-xml"].contains(&name),
                    Ns::Other => false,
                };
                assert_eq!(kind & kind::HIDES != 0, hides, "{name} {ns:?}");
                for input_type in [None, Some("hidden"), Some("HIDDEN"), Some("text")] {
                    let mut expected = NodeStats::default();
                    count_element(&e, input_type, &mut expected);
                    let hidden = input_type.unwrap_or("").eq_ignore_ascii_case("hidden");
                    let input = kind & kind::INPUT != 0 && !hidden;
                    let controls = u32::from(kind & kind::CONTROL != 0 || input);
                    assert_eq!(u32::from(kind & kind::IMAGE != 0), expected.images, "{name} {ns:?}");
                    assert_eq!(controls, expected.controls, "{name} {ns:?} {input_type:?}");
                }
            }
        }
    }

    #[test]
    fn text_is_counted_collapsed_and_trimmed() {
        assert_eq!(count_text("  Hello \n\t world  "), (11, 2));
        assert_eq!(count_text(" \n "), (0, 0));
        assert_eq!(count_text("naïve café"), (10, 2));
        assert_eq!(count_text("a\u{a0}b"), (3, 2));
    }

    #[test]
    fn inline_styles_that_hide_are_recognised() {
        assert!(style_hides("color: red; DISPLAY : None;"));
        assert!(style_hides("display:none!important"));
        assert!(style_hides("visibility:\thidden"));
        assert!(!style_hides("display: block"));
        assert!(!style_hides("display"));
        assert!(!style_hides(
            "max-display: none-ish; content: 'display:none'"
        ));
    }

    proptest::proptest! {
        /// The eight-bytes-at-a-time count of ASCII text is the word-by-word count.
        #[test]
        fn ascii_counts_are_those_of_the_words(text in "[ a-z\t\n\x0B\x0C\r\x00\x08\x0E\x1C\x1F!/~\x7F]{0,70}") {
            let words: Vec<&str> = text.split_whitespace().collect();
            let chars: usize = words.iter().map(|w| w.chars().count()).sum();
            let expected = ((chars + words.len().saturating_sub(1)) as u32, words.len() as u32);
            proptest::prop_assert_eq!(count_text(&text), expected);
        }

        /// Text of any script counts what the word-by-word count does: the eight-byte steps,
        /// the byte-by-byte stretches around the leads of wide spaces, and the steps between.
        #[test]
        fn text_counts_are_those_of_the_words(
            text in "[ a-zA-Z\t\n\x0B\x0C\r\x1C.,é©жあ—😀\u{a0}\u{85}\u{1680}\u{2003}\u{2019}\u{2028}\u{205f}\u{3000}\u{800}日]{0,60}"
        ) {
            let words: Vec<&str> = text.split_whitespace().collect();
            let chars: usize = words.iter().map(|w| w.chars().count()).sum();
            let expected = ((chars + words.len().saturating_sub(1)) as u32, words.len() as u32);
            proptest::prop_assert_eq!(count_text(&text), expected);
        }

        /// Text inside a longer buffer counts as the text alone, whatever follows it (the
        /// last step reads past the text's end).
        #[test]
        fn text_in_a_buffer_counts_as_alone(
            before in "[ a-zé\u{a0}]{0,9}",
            text in "[ a-zA-Z\t\n.é©あ😀\u{a0}\u{2003}\u{3000}]{0,30}",
            after in "[ a-zé\u{a0}\u{2003}]{0,9}",
        ) {
            let buf = format!("{before}{text}{after}");
            let counted = count_text_in(buf.as_bytes(), before.len(), before.len() + text.len());
            proptest::prop_assert_eq!(counted, count_text(&text));
        }
    }
}

