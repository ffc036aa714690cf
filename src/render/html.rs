//! HTML: the kept part of a tree serialised back to markup, for the `declutter` page.
//!
//! The aim is that the output parses back to the same tree, so that a page can go through
//! stage 2 again (or through a browser) unchanged. Following the HTML serialisation algorithm:
//!
//! - Text is escaped (`&`, `<`, `>`), attribute values are double-quoted and escaped (`&`, `"`).
//! - Void elements (`br`, `img`, `input`, …) get no end tag and no content.
//! - The text of raw-text elements (`script`, `style`, `xmp`, `iframe`, `noembed`, `noframes`,
//!   `noscript`, `plaintext`) is written as is: the parser never decoded it. Inside SVG and
//!   MathML the same names hold ordinary, escaped text.
//! - A `<pre>`, `<textarea>` or `<listing>` whose text starts with a line break gets one more,
//!   because the parser drops the first.
//! - The doctype keeps its public and system identifiers, so the quirks mode survives.
//! - Template contents, which the tree keeps as children, are written inside `<template>`.
//! - After `<plaintext>` no end tag is written: the parser would read it as text.
//!
//! Removed nodes and their subtrees are left out. Optional tags are always written: the output
//! is a little larger than the shortest form, and never ambiguous.

use markup5ever::local_name;

use crate::dom::{Edge, Element, NodeId, NodeKind, Ns, Tree};
use crate::images::{page as images, Images, Policy};
use crate::render::access;

/// The whole document as HTML.
pub fn render(tree: &Tree) -> String {
    render_node(tree, tree.root())
}

/// What the declutter page adds to the document it renders, so that it reads on a phone and to
/// a screen reader: markup written first in `<head>` (such as [`PHONE_HEAD`]), a `<title>` and
/// a `lang` where the page has none, names for images and links the page left unnamed
/// ([`access`]), and a tab stop on a table with nothing to focus, which the stylesheet lets
/// scroll. The page's own `<meta name=viewport>` is left out: with its stylesheets gone, a
/// fixed `width` makes the page desktop-wide, and `user-scalable=no` or a `maximum-scale`
/// keeps a person from zooming in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dress<'a> {
    /// Markup written right after the `<head>` start tag.
    pub head: &'a str,
    /// The language given to an `<html>` without a `lang` (or with an empty one).
    pub lang: Option<&'a str>,
    /// The direction given to an `<html>` without a `dir` (a right-to-left page that states
    /// none: [`crate::extract::lang::is_rtl`]).
    pub dir: Option<&'a str>,
    /// Markup written right after the `<body>` start tag (a title heading the page lacks).
    pub body: &'a str,
    /// A `<title>` for a page without one, written after `head`.
    pub title: Option<&'a str>,
    /// What images become ([`images`]); `None` or `keep`: as the page wrote them.
    pub images: Option<&'a Images>,
    /// The page's title heading: written as the page's one `<h1>` whatever its level, and every
    /// other `<h1>` as an `<h2>`.
    pub h1: Option<NodeId>,
}

impl Dress<'_> {
    /// The name `node` (named `name` so far) is written under: see [`Dress::h1`].
    fn heading_name<'n>(&self, node: NodeId, e: &Element, name: &'n str) -> &'n str {
        match self.h1 {
            Some(h) if h == node => "h1",
            Some(_) if e.name == local_name!("h1") => "h2",
            _ => name,
        }
    }
}

/// The phone viewport and stylesheet of the declutter page (about 700 bytes): a readable
/// measure and line height in system fonts; media, frames and tables never wider than the
/// screen (an image keeps its `width`/`height` for its shape, `height:auto` scales it; a wide
/// table or displayed equation scrolls inside itself); long words break; dark colours when the
/// device asks; pith's bar's targets ([`super::bar_style`]).
pub const PHONE_HEAD: &str = concat!(
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
    "<style>",
    ":root{color-scheme:light dark}",
    "body{margin:0 auto;max-width:42rem;padding:0 1rem;font:1.0625rem/1.55 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;",
    "overflow-wrap:break-word;-webkit-text-size-adjust:100%;text-size-adjust:100%}",
    "*{max-width:100%;box-sizing:border-box}",
    "img,video,canvas,svg,picture,iframe,embed,object{height:auto}",
    "table{display:block;overflow-x:auto;border-collapse:collapse}",
    "pre{overflow-x:auto;white-space:pre-wrap}math[display=block]{overflow-x:auto}",
    "@media (prefers-color-scheme:dark){body{background:#17171a;color:#e8e8ea}a{color:#8ab4f8}a:visited{color:#c58af9}}",
    super::bar_style!(),
    "</style>"
);

/// The whole document as HTML, with `dress` ([`Dress`]) added.
pub fn render_dressed(tree: &Tree, dress: &Dress<'_>) -> String {
    let mut out = String::with_capacity(estimate(tree, tree.root()) + dress.head.len());
    write(tree, tree.root(), Some(dress), &mut out);
    out
}

/// One node's subtree as HTML, the node included (for the document: the whole page).
pub fn render_node(tree: &Tree, id: NodeId) -> String {
    let mut out = String::with_capacity(estimate(tree, id));
    write(tree, id, None, &mut out);
    out
}

fn write(tree: &Tree, id: NodeId, dress: Option<&Dress<'_>>, out: &mut String) {
    let mut walk = tree.traverse(id);
    let mut after_plaintext = false;
    let mut lists = Lists::default();
    while let Some(edge) = walk.next() {
        match edge {
            Edge::Open(node) => match tree.kind(node) {
                NodeKind::Document => {}
                NodeKind::Doctype(span) => {
                    out.push_str("<!DOCTYPE ");
                    out.push_str(tree.str(*span));
                    out.push('>');
                }
                NodeKind::Comment(span) => {
                    out.push_str("<!--");
                    out.push_str(tree.str(*span));
                    out.push_str("-->");
                }
                NodeKind::Text(span) => {
                    if dress.is_some() {
                        lists.open(tree, node, out);
                    }
                    write_text(tree, node, tree.str(*span), out);
                }
                NodeKind::Element(e) => {
                    let mut name: &str = &e.name;
                    if let Some(dress) = dress.filter(|_| e.ns == Ns::Html) {
                        lists.open(tree, node, out);
                        name = dress.heading_name(node, e, lists.name(tree, node, e));
                        if dressed(tree, node, e, name, dress, out) {
                            continue;
                        }
                    }
                    let set: &[(&str, &str)] = if dress.is_some() && is_scrolling_equation(tree, node, e) { &[("tabindex", "0")] } else { &[] };
                    write_start_tag_keeping(tree, node, name, e, set, |_| true, out);
                    if crate::dom::is_void(e) {
                        walk.skip_children();
                    }
                    after_plaintext |= e.ns == Ns::Html && e.name == local_name!("plaintext");
                }
            },
            Edge::Close(node) => {
                if let Some(e) = tree.element(node) {
                    if !crate::dom::is_void(e) && !after_plaintext {
                        if e.ns == Ns::Html
                            && e.name == local_name!("script")
                            && ends_double_escaped(tree, node)
                        {
                            out.push_str("-->");
                        }
                        out.push_str("</");
                        out.push_str(match dress.filter(|_| e.ns == Ns::Html) {
                            Some(dress) => dress.heading_name(node, e, lists.name(tree, node, e)),
                            None => &e.name,
                        });
                        out.push('>');
                    }
                }
                if dress.is_some() {
                    lists.close(tree, node, out);
                }
            }
        }
    }
}

/// True for a displayed MathML equation without a `tabindex`: the declutter stylesheet lets
/// it scroll inside itself on a narrow screen (an equation cannot wrap), and a region that
/// scrolls must take keyboard focus, or only a pointer can scroll it (WCAG 2.1.1).
fn is_scrolling_equation(tree: &Tree, node: NodeId, e: &Element) -> bool {
    e.ns == Ns::MathMl && e.name == local_name!("math") && tree.attr(node, "display") == Some("block") && tree.attr(node, "tabindex").is_none()
}

/// The lists open in the declutter page being written that a screen reader could not read as
/// lists as the page wrote them, innermost last: content outside a list's items gets an `li`
/// of its own ([`access::InList`]), and a `dl` that is no list of terms
/// ([`access::is_definition_list`]) is written as a `div`, its `dt` and `dd` too. The page
/// looks the same; its structure now says what it shows.
#[derive(Default)]
struct Lists(Vec<(NodeId, Mend)>);

#[derive(Clone, Copy)]
enum Mend {
    /// A `ul` or `ol` with content outside its items; `open` while an `li` of pith's holds a
    /// run of text and phrasing elements.
    Items { open: bool },
    /// A `dl` written as a `div`.
    Plain,
}

impl Lists {
    /// Before `node`'s start tag (or text): the `li` a stray of a mended list starts, and the
    /// node itself taken on when it is a list to mend.
    fn open(&mut self, tree: &Tree, node: NodeId, out: &mut String) {
        if let Some((list, Mend::Items { open })) = self.0.last_mut() {
            if tree.parent(node) == Some(*list) {
                match access::in_list(tree, node) {
                    access::InList::Stray { block: true } => {
                        // A list without its `li` shows no marker of its own.
                        let nested = matches!(tree.tag(node), Some("ul" | "ol"));
                        out.push_str(if nested { "<li style=\"list-style:none\">" } else { "<li>" });
                    }
                    access::InList::Stray { block: false } if !*open => {
                        out.push_str("<li>");
                        *open = true;
                    }
                    _ => {}
                }
            }
        }
        let mend = match tree.tag(node) {
            Some("ul" | "ol") if access::has_strays(tree, node) => Mend::Items { open: false },
            Some("dl") if !access::is_definition_list(tree, node) => Mend::Plain,
            _ => return,
        };
        self.0.push((node, mend));
    }

    /// The name `node`'s tags are written with: `div` for a plain `dl` and its terms and
    /// descriptions, else its own.
    fn name<'t>(&self, tree: &Tree, node: NodeId, e: &'t Element) -> &'t str {
        let Some(&(list, Mend::Plain)) = self.0.last() else { return &e.name };
        let renamed = node == list
            || matches!(e.name, local_name!("dt") | local_name!("dd")) && access::is_in_definition_list(tree, node, list);
        if renamed {
            "div"
        } else {
            &e.name
        }
    }

    /// After `node`'s end tag (or text): the `li` around a stray closed when nothing of its run
    /// follows, and a mended list let go.
    fn close(&mut self, tree: &Tree, node: NodeId, out: &mut String) {
        let Some((list, mend)) = self.0.last_mut() else { return };
        if *list == node {
            self.0.pop();
            return;
        }
        let Mend::Items { open } = mend else { return };
        if tree.parent(node) != Some(*list) {
            return;
        }
        match access::in_list(tree, node) {
            access::InList::Stray { block: true } => out.push_str("</li>"),
            access::InList::Stray { block: false } if access::next_in_list(tree, node) != (access::InList::Stray { block: false }) => {
                out.push_str("</li>");
                *open = false;
            }
            _ => {}
        }
    }
}

/// A capacity guess that avoids most reallocations: the subtree's share of the character data
/// plus a few bytes of markup per node.
fn estimate(tree: &Tree, id: NodeId) -> usize {
    let nodes = tree.descendants(id).len();
    let share = tree.stats(id).text_chars as usize;
    share + nodes * 12
}

/// Writes what `dress` changes of an HTML element: true when it did, having written the
/// element's start tag (or left the element out) itself.
fn dressed(tree: &Tree, node: NodeId, e: &Element, name: &str, dress: &Dress<'_>, out: &mut String) -> bool {
    match e.name {
        local_name!("head") => {
            write_start_tag(tree, node, e, out);
            out.push_str(dress.head);
            if let Some(title) = dress.title {
                out.push_str("<title>");
                escape(title, false, out);
                out.push_str("</title>");
            }
            true
        }
        local_name!("body") if !dress.body.is_empty() => {
            write_start_tag(tree, node, e, out);
            out.push_str(dress.body);
            true
        }
        local_name!("html") => {
            let unnamed = tree.attr(node, "lang").is_none_or(|l| l.trim().is_empty());
            let undirected = tree.attr(node, "dir").is_none_or(|d| d.trim().is_empty());
            let mut set = Vec::with_capacity(2);
            if let Some(lang) = dress.lang.filter(|_| unnamed) {
                set.push(("lang", lang));
            }
            if let Some(dir) = dress.dir.filter(|_| undirected) {
                set.push(("dir", dir));
            }
            if set.is_empty() {
                return false;
            }
            write_start_tag_with(tree, node, e, &set, out);
            true
        }
        local_name!("img") if dress.images.is_some_and(|i| i.policy != Policy::Keep) => {
            if let Some(settings) = dress.images {
                image(tree, node, e, name, settings, out);
            }
            true
        }
        // The image of a `<picture>` carries the chosen address; a source would override it.
        local_name!("source") if dress.images.is_some_and(|i| i.policy != Policy::Keep) => images::is_picture_source(tree, node),
        // A void element: nothing to close, nothing inside.
        local_name!("meta") => tree.attr(node, "name").is_some_and(|n| n.trim().eq_ignore_ascii_case("viewport")),
        _ => mended(tree, node, e, name, out),
    }
}

/// Writes an image as `settings` say: with the address chosen by [`images::source`] as its
/// `src` and the browser's lazy-loading hints (`compress`), as a small link to it named by its
/// alt text (`placeholder`; plain text inside a link, which cannot hold another), or not at all
/// (`none`, or an image that names no address).
fn image(tree: &Tree, node: NodeId, e: &Element, name: &str, settings: &Images, out: &mut String) {
    // An image the page shows narrower than the profile's bound is asked for at that width
    // (twice it, for dense screens), from the candidate nearest it: a thumbnail costs a
    // thumbnail's bytes.
    let shown = tree.attr(node, "width").and_then(|w| w.trim().parse::<u32>().ok());
    let hinted = shown.filter(|_| settings.width_hints).and_then(|w| images::hinted_width(w, settings.max_width));
    let Some(src) = images::source(tree, node, hinted.unwrap_or(settings.max_width)) else { return };
    let given = tree.attr(node, "alt");
    let named = given.is_none_or(|a| a.trim().is_empty()).then(|| access::image_in_link(tree, node)).flatten();
    let alt = named.as_deref().or(given).unwrap_or_else(|| tree.attr(node, "title").map_or("", str::trim));
    match settings.policy {
        Policy::Keep | Policy::None => {}
        Policy::Compress => {
            let src = match hinted {
                Some(width) if !src.trim_start().starts_with("data:") => images::with_width(&src, width),
                _ => src,
            };
            let set = [("src", src.as_str()), ("alt", alt), ("loading", "lazy"), ("decoding", "async")];
            write_start_tag_keeping(tree, node, name, e, &set, |n| !images::is_replaced_attribute(n), out);
        }
        Policy::Placeholder => {
            let label = if alt.trim().is_empty() { "image" } else { alt.trim() };
            let in_link = tree.ancestors(node).any(|a| tree.tag(a) == Some("a"));
            if !in_link {
                out.push_str("<a class=\"pith-image\" href=\"");
                escape(&src, true, out);
                out.push_str("\">");
            }
            out.push('[');
            escape(label, false, out);
            out.push(']');
            if !in_link {
                out.push_str("</a>");
            }
        }
    }
}

/// The width (CSS pixels) of a removed link's picture in the "Removed links" section.
const THUMBNAIL_WIDTH: u32 = 96;

/// Writes a removed link's picture for the "Removed links" section ([`crate::render::retained`]):
/// small, loaded only when scrolled to, with an empty `alt` (the link's text names it). Its
/// address is [`images::source`]'s for twice the shown width, so a `srcset` gives a small
/// candidate. `placeholder` and `none` write nothing: the link's text is the placeholder.
pub(crate) fn thumbnail(tree: &Tree, img: NodeId, settings: Option<&Images>, out: &mut String) {
    if settings.is_some_and(|s| matches!(s.policy, Policy::Placeholder | Policy::None)) {
        return;
    }
    let Some(mut src) = images::source(tree, img, 2 * THUMBNAIL_WIDTH) else { return };
    if let Some(settings) = settings.filter(|s| s.policy == Policy::Compress && s.width_hints) {
        if let Some(width) = images::hinted_width(THUMBNAIL_WIDTH, settings.max_width).filter(|_| !src.starts_with("data:")) {
            src = images::with_width(&src, width);
        }
    }
    out.push_str("<img src=\"");
    escape(&src, true, out);
    out.push_str("\" alt=\"\" width=\"");
    out.push_str(&THUMBNAIL_WIDTH.to_string());
    out.push_str("\" loading=\"lazy\" decoding=\"async\"> ");
}

/// Writes the start tag of an element the page left unnamed or out of a keyboard's reach, with
/// what it lacks; false, having written nothing, for the others.
///
/// An image without `alt` is read out as its file name: it gets its `title`, or the name of the
/// link it is alone in, else an empty `alt` (nothing is known of what it shows). A link with
/// nothing to name it gets its destination as `aria-label`. A table with nothing to focus gets
/// a tab stop (the stylesheet lets it scroll). `aria-hidden` on something a keyboard reaches
/// hides from a screen reader what a keyboard user lands on: it goes. A widget's role and state
/// ([`access::is_widget_attribute`]) go with the scripts that made them true: a `div` that
/// said it was a button or a tab is neither now, and the panel its `aria-controls` named may
/// be gone.
fn mended(tree: &Tree, node: NodeId, e: &Element, name: &str, out: &mut String) -> bool {
    let named: Option<String>;
    let mut set: [(&str, &str); 3] = [("", ""); 3];
    let mut n = 0;
    match e.name {
        local_name!("img") => {
            let alt = tree.attr(node, "alt");
            named = alt.is_none_or(|a| a.trim().is_empty()).then(|| access::image_in_link(tree, node)).flatten();
            let repeated = alt.is_some_and(|a| access::caption_repeats_alt(tree, node, a)).then_some("");
            if let Some(alt) = repeated.or(named.as_deref()).or_else(|| alt.is_none().then(|| tree.attr(node, "title").map_or("", str::trim))) {
                set[n] = ("alt", alt);
                n += 1;
            }
        }
        local_name!("a") => {
            named = access::textless_link(tree, node);
            if let Some(name) = named.as_deref() {
                set[n] = ("aria-label", name);
                n += 1;
            }
        }
        _ => {
            if e.name == local_name!("table") && access::needs_tab_stop(tree, node) {
                set[n] = ("tabindex", "0");
                n += 1;
            }
        }
    }
    if access::heading_without_level(tree, node) {
        // ARIA gives a heading no level of its own: a screen reader's list of headings then
        // shows it at none. The level of a section heading.
        set[n] = ("aria-level", "2");
        n += 1;
    }
    if tree.is_aria_hidden(node) && access::reaches_keyboard(tree, node) {
        set[n] = ("aria-hidden", "false");
        n += 1;
    }
    let widget = tree.is_widget(node);
    if n == 0 && !widget {
        return false;
    }
    write_start_tag_keeping(tree, node, name, e, &set[..n], |name| !widget || !access::is_widget_attribute(name), out);
    true
}

fn write_start_tag(tree: &Tree, node: NodeId, e: &Element, out: &mut String) {
    write_start_tag_with(tree, node, e, &[], out);
}

/// The start tag, with each of `set` (name, value) in place of any attribute of that name.
fn write_start_tag_with(tree: &Tree, node: NodeId, e: &Element, set: &[(&str, &str)], out: &mut String) {
    write_start_tag_keeping(tree, node, &e.name, e, set, |_| true, out);
}

/// [`write_start_tag_with`] under `name`, leaving out the attributes `keep` says no to.
fn write_start_tag_keeping(tree: &Tree, node: NodeId, name: &str, e: &Element, set: &[(&str, &str)], keep: impl Fn(&str) -> bool, out: &mut String) {
    out.push('<');
    out.push_str(name);
    for (name, value) in tree.attrs(node).filter(|(name, _)| !set.iter().any(|(n, _)| *n == &***name) && keep(name)) {
        out.push(' ');
        out.push_str(name);
        out.push_str("=\"");
        escape(value, true, out);
        out.push('"');
    }
    for (name, value) in set {
        out.push(' ');
        out.push_str(name);
        out.push_str("=\"");
        escape(value, true, out);
        out.push('"');
    }
    out.push('>');
    if starts_with_dropped_newline(tree, node, e) {
        out.push('\n');
    }
}

/// Whether the parser will drop a leading line break of this element's first kept child.
fn starts_with_dropped_newline(tree: &Tree, node: NodeId, e: &Element) -> bool {
    let drops = e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("pre") | local_name!("textarea") | local_name!("listing")
        );
    drops
        && tree
            .children(node)
            .find(|&c| !tree.is_removed(c))
            .and_then(|c| tree.text(c))
            .is_some_and(|text| text.starts_with('\n'))
}

fn write_text(tree: &Tree, node: NodeId, text: &str, out: &mut String) {
    let raw = tree
        .parent(node)
        .and_then(|p| tree.element(p))
        .is_some_and(is_raw_text);
    if raw {
        out.push_str(text);
    } else {
        escape(text, false, out);
    }
}

/// Appends `text` escaped for a text node, or for a double-quoted attribute value. Most text
/// has nothing to escape: the clean runs between the bytes that need it are copied whole,
/// found by a vectorised search in long text and by a table in short text, where setting up
/// the search would cost more than it saves. The one escape of the HTML that pages are rendered
/// into: the reading page and the removed-links section use it too.
pub(crate) fn escape(text: &str, attribute: bool, out: &mut String) {
    const SHORT: usize = 24;
    let table = if attribute { &ESCAPED_IN_ATTRIBUTES } else { &ESCAPED_IN_TEXT };
    let bytes = text.as_bytes();
    let mut plain = 0;
    loop {
        let rest = &bytes[plain..];
        let found = if rest.len() < SHORT {
            rest.iter().position(|&b| table[usize::from(b)])
        } else if attribute {
            memchr::memchr2(b'&', b'"', rest)
        } else {
            memchr::memchr3(b'&', b'<', b'>', rest)
        };
        let Some(at) = found.map(|k| plain + k) else { break };
        let entity = match bytes[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            _ => "&quot;",
        };
        out.push_str(&text[plain..at]);
        out.push_str(entity);
        plain = at + 1;
    }
    out.push_str(&text[plain..]);
}

/// The bytes [`escape`] replaces in text, and in attribute values.
const ESCAPED_IN_TEXT: [bool; 256] = escaped(b"&<>");
const ESCAPED_IN_ATTRIBUTES: [bool; 256] = escaped(b"&\"");

const fn escaped(bytes: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        table[bytes[i] as usize] = true;
        i += 1;
    }
    table
}

/// Whether a script's text leaves the tokenizer "double escaped" (HTML §13.2.5.20–31: `<!--`,
/// then `<script`, with no `-->` or `</script` after), where `</script>` no longer ends the
/// element and everything after it would become script text. A script cut off by the end of
/// its page can end so; the renderer then writes `-->` first, which returns to plain script
/// data. Any other script text is written unchanged.
fn ends_double_escaped(tree: &Tree, script: NodeId) -> bool {
    let (mut escaped, mut double) = (false, false);
    for text in tree
        .children(script)
        .filter(|&c| !tree.is_removed(c))
        .filter_map(|c| tree.text(c))
    {
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let rest = &bytes[i..];
            if !escaped {
                // `<!-->` opens and closes at once: the dashes are shared.
                escaped = rest.starts_with(b"<!--") && !rest[4..].starts_with(b">");
            } else if rest.starts_with(b"-->") {
                (escaped, double) = (false, false);
            } else if script_tag_at(rest, !double) {
                double = !double;
            }
        }
    }
    double
}

/// Whether `rest` starts with `<script` (`open`) or `</script` followed by what ends a tag name.
fn script_tag_at(rest: &[u8], open: bool) -> bool {
    let name: &[u8] = if open { b"<script" } else { b"</script" };
    rest.len() > name.len()
        && rest[..name.len()].eq_ignore_ascii_case(name)
        && matches!(
            rest[name.len()],
            b' ' | b'\t' | b'\n' | b'\x0c' | b'/' | b'>'
        )
}

/// Elements whose text the parser keeps undecoded (scripting on, as in [`crate::dom`]).
fn is_raw_text(e: &Element) -> bool {
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("style")
                | local_name!("script")
                | local_name!("xmp")
                | local_name!("iframe")
                | local_name!("noembed")
                | local_name!("noframes")
                | local_name!("plaintext")
                | local_name!("noscript")
        )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_dressed_page_gets_its_head_markup_and_lang_and_loses_its_viewport() {
        let tree = Tree::parse("<html><head><meta name=Viewport content=\"user-scalable=no\"><title>t</title></head><body><p>x</p></body></html>");
        let dress = Dress { head: "<meta name=\"viewport\" content=\"width=device-width\">", lang: Some("de"), dir: None, body: "<h1>T</h1>", title: None, images: None, h1: None };
        assert_eq!(
            render_dressed(&tree, &dress),
            "<html lang=\"de\"><head><meta name=\"viewport\" content=\"width=device-width\"><title>t</title></head><body><h1>T</h1><p>x</p></body></html>"
        );
        // The page's own language stays; an empty one is replaced.
        let tree = Tree::parse("<html lang=fr><body>x</body></html>");
        assert!(render_dressed(&tree, &dress).starts_with("<html lang=\"fr\">"));
        let tree = Tree::parse("<html lang=\" \" data-x=1><body>x</body></html>");
        assert!(render_dressed(&tree, &dress).starts_with("<html data-x=\"1\" lang=\"de\">"));
        // A heading role without a level gets one; a caption repeating the alt is read once.
        let tree = Tree::parse("<body><div role=heading>Part</div><div role=heading aria-level=3>Sub</div><figure><img src=a.jpg alt='The harbour'><figcaption>The harbour.</figcaption></figure></body>");
        let page = render_dressed(&tree, &Dress::default());
        assert!(page.contains("<div role=\"heading\" aria-level=\"2\">Part</div><div role=\"heading\" aria-level=\"3\">Sub</div>"), "{page}");
        assert!(page.contains("<img src=\"a.jpg\" alt=\"\">"), "{page}");
        // The title heading is the one h1; another h1 is an h2.
        let tree = Tree::parse("<body><h1>Site</h1><h2 id=t>Story</h2><h1>Also</h1></body>");
        let t = tree.descendants(tree.root()).find(|&n| tree.attr(n, "id") == Some("t"));
        let page = render_dressed(&tree, &Dress { h1: t, ..Dress::default() });
        assert!(page.contains("<h2>Site</h2><h1 id=\"t\">Story</h1><h2>Also</h2>"), "{page}");
        // A direction where the page states none; the page's own stays.
        let rtl = Dress { lang: Some("he"), dir: Some("rtl"), ..Dress::default() };
        assert!(render_dressed(&Tree::parse("<html><body>x</body></html>"), &rtl).starts_with("<html lang=\"he\" dir=\"rtl\">"));
        assert!(render_dressed(&Tree::parse("<html lang=he dir=ltr><body>x</body></html>"), &rtl).starts_with("<html lang=\"he\" dir=\"ltr\">"));
    }

    use super::*;

    #[test]
    fn images_are_written_as_the_profile_says() {
        let html = "<p><img class=lazy src='data:image/gif;base64,R0' data-src=/big.jpg data-srcset='/s.jpg 400w, /m.jpg 800w, /l.jpg 1600w' sizes=100vw alt='A ferry'>\
            <picture><source type=image/webp srcset='/p.webp 900w'><img src=/p.jpg></picture>\
            <a href=/story><img src=/t.jpg alt=Teaser></a><img src='data:image/gif;base64,R0'></p>";
        let tree = Tree::parse(html);
        let body = |policy: Policy| {
            let images = Images { policy, ..Images::default() };
            let page = render_dressed(&tree, &Dress { images: Some(&images), ..Dress::default() });
            page[page.find("<p>").expect("p")..page.find("</p>").expect("end") + 4].to_string()
        };
        assert_eq!(
            body(Policy::Compress),
            "<p><img class=\"lazy\" src=\"/m.jpg\" alt=\"A ferry\" loading=\"lazy\" decoding=\"async\">\
            <picture><img src=\"/p.webp\" alt=\"\" loading=\"lazy\" decoding=\"async\"></picture>\
            <a href=\"/story\"><img src=\"/t.jpg\" alt=\"Teaser\" loading=\"lazy\" decoding=\"async\"></a></p>"
        );
        assert_eq!(
            body(Policy::Placeholder),
            "<p><a class=\"pith-image\" href=\"/m.jpg\">[A ferry]</a>\
            <picture><a class=\"pith-image\" href=\"/p.webp\">[image]</a></picture>\
            <a href=\"/story\">[Teaser]</a></p>"
        );
        assert_eq!(body(Policy::None), "<p><picture></picture><a href=\"/story\"></a></p>");
        assert!(body(Policy::Keep).contains("data-srcset"), "keep writes the page's markup");
        // Shown 150 px wide: the candidate nearest twice that, asked for at that width.
        let tree = Tree::parse("<p><img width=150 srcset='/a.jpg 200w, /b.jpg 400w, /c.jpg 900w' src=/c.jpg alt=Thumb></p>");
        let images = Images { policy: Policy::Compress, ..Images::default() };
        let page = render_dressed(&tree, &Dress { images: Some(&images), ..Dress::default() });
        assert!(page.contains("<img width=\"150\" src=\"/b.jpg?pith-width=300\" alt=\"Thumb\""), "{page}");
    }

    /// Rendering, parsing the output and rendering again gives the same markup.
    #[test]
    fn lists_read_as_lists_and_look_the_same() {
        let dress = Dress::default();
        let body = |html: &str| {
            let page = render_dressed(&Tree::parse(html), &dress);
            page[page.find("<body>").expect("body") + 6..page.find("</body>").expect("end")].to_string()
        };
        assert_eq!(
            body("<ul><div>one</div> <div>two</div>\n<li>three</li>four <i>and</i> <!--c--> <b>more</b><ol><li>x</li></ol></ul>"),
            "<ul><li><div>one</div></li> <li><div>two</div></li>\n<li>three</li><li>four <i>and</i> <!--c--> <b>more</b></li><li style=\"list-style:none\"><ol><li>x</li></ol></li></ul>"
        );
        assert_eq!(
            body("<dl><dd>indented</dd></dl><dl><div><dt>T</dt><dd>d</dd></div></dl><dl><dt>headline</dt><div><dd>x</dd></div></dl><ol><li>x<img src=i></li></ol>"),
            "<div><div>indented</div></div><dl><div><dt>T</dt><dd>d</dd></div></dl><div><div>headline</div><div><div>x</div></div></div><ol><li>x<img src=\"i\" alt=\"\"></li></ol>"
        );
        assert_eq!(body("<ul><img src=i alt=a></ul>"), "<ul><li><img src=\"i\" alt=\"a\"></li></ul>", "a void element is an item");
        // Without dress (a round trip), the markup is the page's.
        let tree = Tree::parse("<ul><div>one</div></ul>");
        assert!(render(&tree).contains("<ul><div>one</div></ul>"));
    }

    /// A displayed equation scrolls on a phone, so it takes keyboard focus; inline ones, and
    /// one with its own `tabindex`, are left as written, and so is any equation undressed.
    #[test]
    fn displayed_equations_get_a_tab_stop() {
        let html = "<p><math display=block><mi>x</mi></math><math><mi>y</mi></math><math display=block tabindex=-1><mi>z</mi></math></p>";
        let page = render_dressed(&Tree::parse(html), &Dress::default());
        assert!(page.contains("<math display=\"block\" tabindex=\"0\"><mi>x</mi></math><math><mi>y</mi></math><math display=\"block\" tabindex=\"-1\">"), "{page}");
        assert!(!render(&Tree::parse(html)).contains("tabindex=\"0\""));
    }

    fn assert_round_trip(html: &str) -> String {
        let once = render(&Tree::parse(html));
        let twice = render(&Tree::parse(&once));
        assert_eq!(once, twice, "input: {html}");
        once
    }

    macro_rules! serialises {
        ($($name:ident: $html:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                let tree = Tree::parse($html);
                let body = tree.body().expect("body");
                assert_eq!(render_node(&tree, body), $expected);
                assert_round_trip($html);
            }
        )*};
    }

    serialises! {
        text_and_attributes_are_escaped:
            r#"<p title='a "b" & <c>'>x &lt; y &amp; z &gt; w</p>"#
            => r#"<body><p title="a &quot;b&quot; &amp; <c>">x &lt; y &amp; z &gt; w</p></body>"#;
        void_elements_have_no_end_tag:
            "<p>a<br>b<img src=x alt=''><input disabled><hr></p>"
            => r#"<body><p>a<br>b<img src="x" alt=""><input disabled=""></p><hr><p></p></body>"#;
        implicit_end_tags_are_written: "<ul><li>a<li>b</ul><table><tr><td>c</table>"
            => "<body><ul><li>a</li><li>b</li></ul><table><tbody><tr><td>c</td></tr></tbody></table></body>";
        raw_text_stays_raw: "<body><script>if (a < b && c) {}</script><style>a>b{}</style>"
            => "<body><script>if (a < b && c) {}</script><style>a>b{}</style></body>";
        foreign_text_is_escaped: "<svg><style>a &lt; b</style><use xlink:href='#x'/></svg>"
            => r##"<body><svg><style>a &lt; b</style><use xlink:href="#x"></use></svg></body>"##;
        pre_leading_newline_survives: "<pre>\n\nindented\n  text</pre><textarea>\n\nt</textarea>"
            => "<body><pre>\n\nindented\n  text</pre><textarea>\n\nt</textarea></body>";
        templates_keep_their_contents: "<body><template><tr><td>x</template><p>y"
            => "<body><template><tr><td>x</td></tr></template><p>y</p></body>";
        comments_are_kept: "<p>a<!-- note -->b</p>" => "<body><p>a<!-- note -->b</p></body>";
        non_ascii_passes_through: "<p>naïve – 日本</p>" => "<body><p>naïve – 日本</p></body>";
        script_left_double_escaped_is_closed: "<body><script><!--<script>a" => "<body><script><!--<script>a--></script></body>";
        script_escapes_closed_in_text_stay: "<body><script><!--<SCRIPT>a</script >b--></script><script><!-->x"
            => "<body><script><!--<SCRIPT>a</script >b--></script><script><!-->x</script></body>";
    }

    proptest::proptest! {
        /// Escaping by runs, short or long, replaces exactly the bytes a byte-by-byte escape does.
        #[test]
        fn escaping_by_runs_is_escaping_by_bytes(text in "[a-z &<>\"'é]{0,90}", attribute: bool) {
            let mut expected = String::new();
            for c in text.chars() {
                match c {
                    '&' => expected.push_str("&amp;"),
                    '<' if !attribute => expected.push_str("&lt;"),
                    '>' if !attribute => expected.push_str("&gt;"),
                    '"' if attribute => expected.push_str("&quot;"),
                    c => expected.push(c),
                }
            }
            let mut out = String::new();
            escape(&text, attribute, &mut out);
            proptest::prop_assert_eq!(out, expected);
        }
    }

    #[test]
    fn whole_document_with_doctype() {
        let html = assert_round_trip("<!DOCTYPE html><title>T</title><p>x");
        assert_eq!(
            html,
            "<!DOCTYPE html><html><head><title>T</title></head><body><p>x</p></body></html>"
        );
    }

    #[test]
    fn quirks_mode_survives_through_the_doctype() {
        // In quirks mode a table does not close an open paragraph.
        let html = r#"<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN"><p>a<table><tr><td>b</table>"#;
        let once = assert_round_trip(html);
        assert!(once.contains("<p>a<table>"), "{once}");
    }

    #[test]
    fn removed_nodes_are_left_out() {
        let mut tree = Tree::parse("<div><p>a</p><p>b</p></div>");
        let first = tree
            .descendants(tree.root())
            .find(|&id| tree.tag(id) == Some("p"));
        tree.remove(first.expect("p"));
        assert_eq!(
            render(&tree),
            "<html><head></head><body><div><p>b</p></div></body></html>"
        );
    }

    #[test]
    fn messy_markup_round_trips() {
        for html in [
            "<b><i>x</b>y</i>",
            "<table>x<tr><td>y</table>z",
            "<p>a<p>b<div>c</div>",
            "<a href=1>1<div>2</a>3</div>",
            "<select><option>a<option>b</select>",
            "<html><head></head>\n<body>\n<p>x</p>\n</body>\n</html>\n<!-- tail -->",
            "<noscript><p>n</p></noscript><iframe><b>f</b></iframe>",
            "<math><mi>x</mi><annotation-xml encoding='text/html'><p>y</p></annotation-xml></math>",
            "<plaintext><p>all & text",
        ] {
            assert_round_trip(html);
        }
    }

    #[test]
    fn deep_nesting_renders_without_recursion() {
        const DEPTH: usize = 100_000;
        let html = format!("{}deep{}", "<span>".repeat(DEPTH), "</span>".repeat(DEPTH));
        let out = render(&Tree::parse_with_max_depth(&html, u32::MAX));
        let expected_len = "<html><head></head><body></body></html>".len() + 4 + DEPTH * 13;
        assert_eq!(out.len(), expected_len);
        assert!(out.contains("<span>deep</span>"));
        assert!(out.ends_with("</span></span></body></html>"));
    }

    /// Every development-set page survives render → parse → render unchanged.
    #[test]
    #[ignore = "reads the development set; slow in a debug build"]
    fn bench_pages_round_trip() {
        let mut failures = Vec::new();
        let pages = crate::dom::tests::bench_pages();
        for (i, page) in pages.iter().enumerate() {
            let once = render(&Tree::parse(page));
            let twice = render(&Tree::parse(&once));
            if once != twice {
                let at = once
                    .bytes()
                    .zip(twice.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                let from = at.saturating_sub(80);
                failures.push(format!(
                    "page {i} at {at}: {:?} vs {:?}",
                    once.get(from..(at + 80).min(once.len())),
                    twice.get(from..(at + 80).min(twice.len()))
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} pages: {failures:#?}",
            failures.len(),
            pages.len()
        );
    }
}
