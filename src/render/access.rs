//! What the pages pith writes add for a screen reader or a keyboard where the page left it
//! out: names for links and images the page left unnamed (a link whose only content is an
//! image without `alt` is announced as its address, or skipped), and a tab stop for a region
//! that scrolls with nothing in it to focus, and lists a screen reader can read as lists (a
//! site's list whose items are `div`s, or a `dl` used to indent, is read as a broken list). Both
//! the declutter page and the reading page use these.

use crate::dom::{NodeId, NodeKind, Tree};

/// The text an image with no or an empty `alt` stands for when it is all a link holds: the
/// image's `title`, else the link's `title` or `aria-label`, else where the link goes
/// ([`destination`]). `None` when the image is not alone in a link: an empty `alt` then marks
/// decoration.
pub(crate) fn image_in_link(tree: &Tree, img: NodeId) -> Option<String> {
    let link = tree.ancestors(img).find(|&a| tree.tag(a) == Some("a"))?;
    if has_words(tree, link) || tree.descendants(link).filter(|&d| tree.tag(d) == Some("img")).nth(1).is_some() {
        return None;
    }
    stated(tree, img, "title")
        .or_else(|| stated(tree, link, "title"))
        .or_else(|| stated(tree, link, "aria-label"))
        .map(str::to_string)
        .or_else(|| destination(tree.attr(link, "href")?))
}

/// The name of a link with no text and no image (an icon font, an SVG without a title), when
/// nothing names it yet: where it goes ([`destination`]). `None` when the link has text, an
/// image (named by [`image_in_link`]), a `title`, `aria-label` or `aria-labelledby`, or no
/// `href`.
pub(crate) fn textless_link(tree: &Tree, link: NodeId) -> Option<String> {
    let href = tree.attr(link, "href")?;
    if has_words(tree, link)
        || ["title", "aria-label", "aria-labelledby"].iter().any(|&a| stated(tree, link, a).is_some())
        || tree.descendants(link).any(|d| tree.tag(d) == Some("img") && !tree.is_removed(d))
    {
        return None;
    }
    destination(href)
}

/// A link's destination as words: its host and the last segment of its path
/// (`example.org: harbour-closed`), or whichever of the two there is; for a link to a place on
/// the same page, that place's name (`#page-2`: `page-2`).
pub(crate) fn destination(href: &str) -> Option<String> {
    let href = href.trim();
    let rest = href.split_once("://").map_or(href, |(_, rest)| rest);
    let path = rest.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
    let (host, tail) = path.split_once('/').unwrap_or((path, ""));
    let last = tail.rsplit('/').next().unwrap_or_default();
    match (host.is_empty(), last.is_empty()) {
        (false, false) => Some(format!("{host}: {last}")),
        (false, true) => Some(host.to_string()),
        (true, false) => Some(last.to_string()),
        (true, true) => href.strip_prefix('#').map(str::trim).filter(|f| !f.is_empty()).map(str::to_string),
    }
}

/// Whether any text left under `id` is more than white space: a link holding a space or a line
/// break (a page-number anchor, an image set on its own line), or whose text a remover took
/// (a teaser's headline), has no name either.
fn has_words(tree: &Tree, id: NodeId) -> bool {
    tree.stats(id).text_chars > 0
        && tree.descendants(id).any(|d| !tree.is_removed(d) && tree.text(d).is_some_and(|t| !t.trim().is_empty()))
}

/// Whether `id` (a table or `pre`, which the pages' stylesheets let scroll sideways) holds
/// nothing a keyboard can focus: it then needs `tabindex="0"` of its own, or a keyboard user
/// cannot scroll it.
/// Past [`MAX_SCAN`] nodes without one the answer is yes: a needless tab stop at worst.
pub(crate) fn needs_tab_stop(tree: &Tree, id: NodeId) -> bool {
    !tree.descendants(id).skip(1).take(MAX_SCAN).any(|d| focusable(tree, d))
}

/// Whether a keyboard reaches `id` or anything inside it, within its first [`MAX_SCAN`] nodes.
pub(crate) fn reaches_keyboard(tree: &Tree, id: NodeId) -> bool {
    tree.descendants(id).take(MAX_SCAN).any(|d| focusable(tree, d))
}

/// How far into an element the scans for something focusable look: tables nested a thousand
/// deep would otherwise make each scan the rest of the page, and the page's rendering its size
/// times its depth.
const MAX_SCAN: usize = 4096;

/// Whether an attribute is a widget's role or state, dropped from an element whose `role`
/// named a widget ([`Tree::is_widget`]): `role` and every `aria-*` but the names
/// (`aria-label`, `aria-labelledby`, `aria-describedby`) and `aria-hidden`.
pub(crate) fn is_widget_attribute(name: &str) -> bool {
    name == "role" || name.strip_prefix("aria-").is_some_and(|n| !matches!(n, "label" | "labelledby" | "describedby" | "hidden"))
}

/// Whether a browser puts the element in the tab order of the page pith writes (a removed
/// link is not there).
fn focusable(tree: &Tree, id: NodeId) -> bool {
    if tree.is_removed(id) {
        return false;
    }
    match tree.tag(id) {
        Some("a" | "area") => tree.attr(id, "href").is_some(),
        Some("button" | "input" | "select" | "textarea" | "iframe" | "details") => true,
        _ => tree.attr(id, "tabindex").is_some_and(|t| t.trim().parse::<i32>().is_ok_and(|n| n >= 0)),
    }
}

/// What a node directly inside a `ul` or `ol` is to a screen reader, which reads a list as its
/// items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InList {
    /// An `li`, or a `script` or `template`, which shows nothing.
    Item,
    /// White space, a comment, or a node a remover took.
    Nothing,
    /// Content outside any item, which a screen reader skips or reads as a broken list: text,
    /// a `div` a site made its items of, a nested list without its `li`. `block` when it is a
    /// block element, which is an item of its own; text and phrasing elements side by side
    /// make one item.
    Stray { block: bool },
}

/// What `node`, a child of a `ul` or `ol`, is to the list ([`InList`]).
pub(crate) fn in_list(tree: &Tree, node: NodeId) -> InList {
    if tree.is_removed(node) {
        return InList::Nothing;
    }
    match tree.kind(node) {
        NodeKind::Text(span) if !tree.str(*span).trim().is_empty() => InList::Stray { block: false },
        NodeKind::Element(_) => match tree.tag(node) {
            Some("li" | "script" | "template") => InList::Item,
            _ => InList::Stray { block: tree.is_block_node(node) },
        },
        _ => InList::Nothing,
    }
}

/// Whether a `ul` or `ol` holds content outside its items among its first [`MAX_SCAN`]
/// children.
pub(crate) fn has_strays(tree: &Tree, list: NodeId) -> bool {
    tree.children(list).take(MAX_SCAN).any(|c| matches!(in_list(tree, c), InList::Stray { .. }))
}

/// What comes next in a list after `node`, white space and comments passed over.
pub(crate) fn next_in_list(tree: &Tree, node: NodeId) -> InList {
    std::iter::successors(tree.next_sibling(node), |&s| tree.next_sibling(s))
        .take(MAX_SCAN)
        .map(|s| in_list(tree, s))
        .find(|k| *k != InList::Nothing)
        .unwrap_or(InList::Nothing)
}

/// Whether `node` stands where a `dl`'s terms and descriptions stand: directly in `dl`, or in
/// a `div` group directly in it.
pub(crate) fn is_in_definition_list(tree: &Tree, node: NodeId, dl: NodeId) -> bool {
    tree.parent(node).is_some_and(|p| p == dl || tree.tag(p) == Some("div") && tree.parent(p) == Some(dl))
}

/// Whether a `dl` reads as terms and their descriptions: it holds only `dt` and `dd` (or `div`s
/// of them, and `script` or `template`), and when it has any, a `dd` follows a `dt`. A `dl` of
/// `dd`s alone is a site's way to indent (a formula, a reply), a `dl` of one `dt` its way to
/// style a headline: a screen reader announces a list of descriptions that describe nothing.
/// Past [`MAX_SCAN`] children the rest is taken as it is.
pub(crate) fn is_definition_list(tree: &Tree, dl: NodeId) -> bool {
    let (mut term, mut described, mut any) = (false, false, false);
    for child in tree.children(dl).take(MAX_SCAN).filter(|&c| !tree.is_removed(c)) {
        match tree.kind(child) {
            NodeKind::Text(span) if !tree.str(*span).trim().is_empty() => return false,
            NodeKind::Element(_) => match tree.tag(child) {
                Some("dt") => (term, any) = (true, true),
                Some("dd") => (described, any) = (described || term, true),
                Some("script" | "template") => {}
                Some("div") => {
                    let grouped = tree.children(child).take(MAX_SCAN).filter(|&g| !tree.is_removed(g)).all(|g| match tree.kind(g) {
                        NodeKind::Text(span) => tree.str(*span).trim().is_empty(),
                        NodeKind::Element(_) => matches!(tree.tag(g), Some("dt" | "dd" | "script" | "template")),
                        _ => true,
                    });
                    if !grouped {
                        return false;
                    }
                }
                _ => return false,
            },
            _ => {}
        }
    }
    !any || described
}

/// The attribute's value, trimmed, when it says something.
fn stated<'t>(tree: &'t Tree, id: NodeId, name: &str) -> Option<&'t str> {
    tree.attr(id, name).map(str::trim).filter(|t| !t.is_empty())
}

/// Whether `node` says it is a heading (`role="heading"`, on an element that is not one) with
/// no `aria-level` from 1 to 6.
pub fn heading_without_level(tree: &Tree, node: NodeId) -> bool {
    let heading = tree.attr(node, "role").is_some_and(|r| r.split_ascii_whitespace().next().is_some_and(|r| r.eq_ignore_ascii_case("heading")));
    heading
        && !matches!(tree.tag(node), Some("h1" | "h2" | "h3" | "h4" | "h5" | "h6"))
        && !tree.attr(node, "aria-level").and_then(|l| l.trim().parse::<u8>().ok()).is_some_and(|l| (1..=6).contains(&l))
}

/// Whether an image's `alt` says what the caption of its `<figure>` says (the same words, or
/// the caption holds them all): a screen reader would read them twice, so the image is then
/// written with an empty `alt`, and the caption is read once.
pub fn caption_repeats_alt(tree: &Tree, img: NodeId, alt: &str) -> bool {
    let fold = |s: &str| s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect::<Vec<_>>().join(" ");
    let alt = fold(alt);
    if alt.is_empty() {
        return false;
    }
    let Some(figure) = tree.ancestors(img).take(4).find(|&a| tree.tag(a) == Some("figure")) else { return false };
    let Some(caption) = tree.descendants(figure).find(|&d| tree.tag(d) == Some("figcaption") && !tree.is_removed(d)) else { return false };
    let caption = fold(&crate::render::text::render_node(tree, caption));
    !caption.is_empty() && (caption == alt || format!(" {caption} ").contains(&format!(" {alt} ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(tree: &Tree, tag: &str) -> NodeId {
        tree.descendants(tree.root()).find(|&d| tree.tag(d) == Some(tag)).expect("the element")
    }

    #[test]
    fn an_image_alone_in_a_link_is_named_by_title_then_destination() {
        let t = Tree::parse("<a href='https://news.example/world/harbour-closed/'><img src=x.jpg></a>");
        assert_eq!(image_in_link(&t, first(&t, "img")).as_deref(), Some("news.example: harbour-closed"));
        let t = Tree::parse("<a href=/a title=' Harbour '><img src=x.jpg></a>");
        assert_eq!(image_in_link(&t, first(&t, "img")).as_deref(), Some("Harbour"));
        let t = Tree::parse("<a href=/a><img src=x.jpg> Harbour</a>");
        assert_eq!(image_in_link(&t, first(&t, "img")), None, "the link's text names it");
        let t = Tree::parse("<p><img src=x.jpg></p>");
        assert_eq!(image_in_link(&t, first(&t, "img")), None, "not in a link");
    }

    #[test]
    fn a_textless_link_is_named_by_its_destination_unless_something_names_it() {
        let t = Tree::parse("<a href='https://social.example/share?u=1'><svg></svg></a>");
        assert_eq!(textless_link(&t, first(&t, "a")).as_deref(), Some("social.example: share"));
        for html in ["<a href=/x>text</a>", "<a href=/x aria-label=Share></a>", "<a href=/x><img src=i></a>", "<a name=top></a>"] {
            let t = Tree::parse(html);
            assert_eq!(textless_link(&t, first(&t, "a")), None, "{html}");
        }
        assert_eq!(destination("#"), None);
        assert_eq!(destination("#page-2").as_deref(), Some("page-2"));
        let t = Tree::parse("<a href=#page-2> </a><a href=/photos>\n <img src=p.jpg alt=''>\n</a>");
        let links: Vec<_> = t.descendants(t.root()).filter(|&d| t.tag(d) == Some("a")).collect();
        assert_eq!(textless_link(&t, links[0]).as_deref(), Some("page-2"), "white space is no name");
        assert_eq!(image_in_link(&t, first(&t, "img")).as_deref(), Some("photos"));
        let mut t = Tree::parse("<a href=/story><div>Teaser headline</div><img src=t.jpg alt=''></a>");
        let teaser = first(&t, "div");
        t.remove(teaser);
        assert_eq!(image_in_link(&t, first(&t, "img")).as_deref(), Some("story"), "a removed headline names nothing");
        assert_eq!(destination("http://news.example/").as_deref(), Some("news.example"));
    }

    #[test]
    fn a_region_with_nothing_to_focus_needs_a_tab_stop() {
        let t = Tree::parse("<table><tr><td>1</td><td>2</td></tr></table>");
        assert!(needs_tab_stop(&t, first(&t, "table")));
        let t = Tree::parse("<table><tr><td><a href=/x>1</a></td></tr></table>");
        assert!(!needs_tab_stop(&t, first(&t, "table")));
        // The scan is bounded: a link past the first MAX_SCAN nodes is not looked for.
        let far = format!("<table><tr><td>{}<a href=/x>x</a></td></tr></table>", "<b></b>".repeat(MAX_SCAN));
        let t = Tree::parse(&far);
        assert!(needs_tab_stop(&t, first(&t, "table")));
        let mut t = Tree::parse("<table><tr><td><a href=/x>x</a></td></tr></table>");
        let link = first(&t, "a");
        t.remove(link);
        assert!(needs_tab_stop(&t, first(&t, "table")), "a removed link is no tab stop");
        let t = Tree::parse("<pre><span tabindex=-1>x</span></pre>");
        assert!(needs_tab_stop(&t, first(&t, "pre")), "tabindex -1 is not a tab stop");
        let t = Tree::parse("<div aria-hidden=true><span><a href=/x>x</a></span></div>");
        assert!(reaches_keyboard(&t, first(&t, "div")) && reaches_keyboard(&t, first(&t, "a")));
        let t = Tree::parse("<div aria-hidden=true><span>icon</span></div>");
        assert!(!reaches_keyboard(&t, first(&t, "div")));
    }

    #[test]
    fn content_outside_list_items_and_lists_of_no_terms_are_told() {
        let t = Tree::parse("<ul> <li>a</li><!--c--><script></script> </ul><ol><li>a</li>b</ol><ul><div>x</div></ul>");
        let lists: Vec<_> = t.descendants(t.root()).filter(|&d| matches!(t.tag(d), Some("ul" | "ol"))).collect();
        assert_eq!(lists.iter().map(|&l| has_strays(&t, l)).collect::<Vec<_>>(), [false, true, true]);
        let div = first(&t, "div");
        assert_eq!(in_list(&t, div), InList::Stray { block: true });
        let mut t = Tree::parse("<ul><li>a</li><span>x</span> <li>b</li></ul>");
        let li = first(&t, "li");
        assert_eq!(next_in_list(&t, li), InList::Stray { block: false });
        let span = first(&t, "span");
        assert_eq!(next_in_list(&t, span), InList::Item, "white space is passed over");
        t.remove(span);
        assert!(!has_strays(&t, first(&t, "ul")), "what a remover took is not there");
        for (html, terms) in [
            ("<dl><dt>a</dt><dd>b</dd></dl>", true),
            ("<dl><dt>a</dt><dt>a2</dt><dd>b</dd><dd>b2</dd></dl>", true),
            ("<dl><div><dt>a</dt><dd>b</dd></div> </dl>", true),
            ("<dl></dl>", true),
            ("<dl><dd>indent</dd></dl>", false),
            ("<dl><dt>headline</dt></dl>", false),
            ("<dl><dd>b</dd><dt>a</dt></dl>", false),
            ("<dl><dt>a</dt><dd>b</dd><p>c</p></dl>", false),
            ("<dl><dt>a</dt><dd>b</dd>text</dl>", false),
            ("<dl><div><dt>a</dt><p>b</p></div></dl>", false),
        ] {
            let t = Tree::parse(html);
            assert_eq!(is_definition_list(&t, first(&t, "dl")), terms, "{html}");
        }
    }

    #[test]
    fn a_widget_keeps_its_names_and_loses_its_role_and_state() {
        let t = Tree::parse("<div role='Tab extra'>a</div><div role=main>b</div><span role=none>c</span>");
        let divs: Vec<_> = t.descendants(t.root()).filter(|&d| t.tag(d).is_some()).filter(|&d| t.attr(d, "role").is_some()).collect();
        assert_eq!(divs.iter().map(|&d| t.is_widget(d)).collect::<Vec<_>>(), [true, false, false]);
        for name in ["role", "aria-expanded", "aria-controls", "aria-selected"] {
            assert!(is_widget_attribute(name), "{name}");
        }
        for name in ["aria-label", "aria-labelledby", "aria-describedby", "aria-hidden", "class", "tabindex"] {
            assert!(!is_widget_attribute(name), "{name}");
        }
    }
}
