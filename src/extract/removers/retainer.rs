//! The removed-link retainer: the links the removers took out, listed once each at the end of
//! the page, so that the site's navigation stays reachable from a de-cluttered page.
//!
//! Crunch re-emitted removed text links under "Removed Links:"; pith collects them from the
//! subtrees the link-list and empty-table removers removed (ads are not retained), resolves each
//! against the page's base URL ([`document_base`](super::document_base)), drops repeats of the
//! same absolute URL and links into the page itself (`#top`), and renders them as an accessible
//! section: `<nav aria-label="Removed links"><h2>Removed links</h2><ul>…</ul></nav>`, spliced in
//! just before `</body>` of the rendered page, or as lines under a "Removed links" line in text
//! output. The tree itself is not changed.

use std::collections::HashSet;

use crate::dom::{words, NodeId, NodeKind, Tree};
use crate::render::html::escape;

/// Link text longer than this (characters) is cut, so one odd link cannot flood the section.
const MAX_TEXT_CHARS: usize = 200;

/// One link of the "Removed links" section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetainedLink {
    /// The target: absolute when the page's base URL is known, as written otherwise.
    pub url: String,
    /// The link's visible text (or its image's alt text), whitespace collapsed.
    pub text: String,
}

/// The links inside the `removed` subtrees, in document order, each URL once. Links without
/// text (icons), into the page itself (`#...`), or to script URLs are left out.
pub fn collect(tree: &Tree, removed: &[NodeId], base: Option<&str>) -> Vec<RetainedLink> {
    let mut roots = removed.to_vec();
    roots.sort();
    let mut seen = HashSet::new();
    let mut links = Vec::new();
    let mut covered_until = 0usize;
    for root in roots {
        // A root inside one already walked (nested removals) adds nothing new.
        if root.index() < covered_until {
            continue;
        }
        let subtree = tree.descendants(root);
        covered_until = root.index() + subtree.len();
        for id in subtree {
            let Some(link) = link_at(tree, id, base) else {
                continue;
            };
            if seen.insert(link.url.clone()) {
                links.push(link);
            }
        }
    }
    links
}

/// The retained link for an `<a href>` element that shows, if it is worth listing.
fn link_at(tree: &Tree, id: NodeId, base: Option<&str>) -> Option<RetainedLink> {
    if tree.tag(id) != Some("a") || !tree.is_shown(id) {
        return None;
    }
    let href = tree.attr(id, "href")?.trim();
    let lower = href.get(..11).unwrap_or(href).to_ascii_lowercase();
    let scripted = ["javascript:", "vbscript:", "data:"]
        .iter()
        .any(|s| lower.starts_with(s));
    if href.is_empty() || href.starts_with('#') || scripted {
        return None;
    }
    let text = link_text(tree, id);
    if text.is_empty() {
        return None;
    }
    let url = base
        .and_then(|b| super::resolve_url(b, href))
        .unwrap_or_else(|| href.to_string());
    Some(RetainedLink { url, text })
}

/// The visible words of a link, or else the alt text of an image in it, cut at
/// [`MAX_TEXT_CHARS`].
fn link_text(tree: &Tree, link: NodeId) -> String {
    let mut text = String::new();
    let mut alt = None;
    for id in tree.descendants(link) {
        match tree.kind(id) {
            NodeKind::Text(span) if tree.is_shown(id) => {
                for word in words(tree.str(*span)) {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(word);
                }
            }
            NodeKind::Element(_) if alt.is_none() && tree.tag(id) == Some("img") => {
                alt = tree
                    .attr(id, "alt")
                    .map(|a| words(a).collect::<Vec<_>>().join(" "));
            }
            _ => {}
        }
        if text.len() > MAX_TEXT_CHARS * 4 {
            break;
        }
    }
    if text.is_empty() {
        text = alt.unwrap_or_default();
    }
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text,
    }
}

/// The section as HTML: a labelled `nav` with a heading and a list. Empty for no links.
pub fn html_section(links: &[RetainedLink]) -> String {
    if links.is_empty() {
        return String::new();
    }
    let mut out = String::from("<nav aria-label=\"Removed links\"><h2>Removed links</h2><ul>");
    for link in links {
        out.push_str("<li><a href=\"");
        escape(&link.url, true, &mut out);
        out.push_str("\">");
        escape(&link.text, false, &mut out);
        out.push_str("</a></li>");
    }
    out.push_str("</ul></nav>");
    out
}

/// The section as text lines: `Removed links`, then `text <url>` per link. Empty for no links.
pub fn text_section(links: &[RetainedLink]) -> String {
    if links.is_empty() {
        return String::new();
    }
    let mut out = String::from("Removed links\n");
    for link in links {
        out.push_str(&link.text);
        out.push_str(" <");
        out.push_str(&link.url);
        out.push_str(">\n");
    }
    out
}

/// Puts `section` into a page rendered by [`crate::render::html::render`] from `tree`, just
/// before the body's end tag. The end tag is located from what follows the body in the tree,
/// so a `</body>` in a comment or script cannot mislead it; when the page has no body end tag
/// (no body, or a `<plaintext>` in it), the section goes at the very end.
pub fn insert_html(tree: &Tree, mut page: String, section: &str) -> String {
    if section.is_empty() {
        return page;
    }
    let at = body_end(tree, &page).unwrap_or(page.len());
    page.insert_str(at, section);
    page
}

/// The byte offset of the body's `</body>` in `page`.
fn body_end(tree: &Tree, page: &str) -> Option<usize> {
    let body = tree.body()?;
    let html = tree.parent(body)?;
    let mut tail = String::new();
    let after = |first: Option<NodeId>, tail: &mut String| {
        let mut next = first;
        while let Some(id) = next {
            tail.push_str(&crate::render::html::render_node(tree, id));
            next = tree.next_sibling(id);
        }
    };
    after(tree.next_sibling(body), &mut tail);
    tail.push_str("</html>");
    after(tree.next_sibling(html), &mut tail);
    let before = page.strip_suffix(tail.as_str())?;
    before.strip_suffix("</body>").map(str::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree_and_removed(html: &str) -> (Tree, Vec<NodeId>) {
        let mut tree = Tree::parse(html);
        let removed: Vec<NodeId> = tree
            .descendants(tree.root())
            .filter(|&id| tree.attr(id, "class") == Some("gone"))
            .collect();
        for &id in &removed {
            tree.remove(id);
        }
        (tree, removed)
    }

    #[test]
    fn links_are_collected_resolved_and_deduplicated() {
        let (tree, removed) = tree_and_removed(concat!(
            "<div class=gone><a href='/a'>Alpha</a> <a href='b'>Beta <b>bold</b></a>",
            "<a href='#top'>Top</a><a href='javascript:x()'>JS</a><a href=/icon><img src=i.png></a>",
            "<a href=/pic><img alt='A picture' src=p.png></a></div>",
            "<p><a href=/kept>Kept</a></p>",
            "<ul class=gone><li><a href='https://e.example/a'>Alpha again</a><li><a href=/c>Gamma</a></ul>"
        ));
        let links = collect(&tree, &removed, Some("https://e.example/dir/page"));
        let got: Vec<(&str, &str)> = links
            .iter()
            .map(|l| (l.url.as_str(), l.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("https://e.example/a", "Alpha"),
                ("https://e.example/dir/b", "Beta bold"),
                ("https://e.example/pic", "A picture"),
                ("https://e.example/c", "Gamma"),
            ]
        );
    }

    #[test]
    fn without_a_base_urls_stay_as_written() {
        let (tree, removed) = tree_and_removed("<div class=gone><a href='x/y'>XY</a></div>");
        let links = collect(&tree, &removed, None);
        assert_eq!(
            links,
            [RetainedLink {
                url: "x/y".into(),
                text: "XY".into()
            }]
        );
    }

    #[test]
    fn section_is_escaped_and_goes_before_the_body_end() {
        let tree = Tree::parse("<p>content</p><!-- </body> -->");
        let links = [RetainedLink {
            url: "/a?b=1&c=\"2\"".into(),
            text: "<Home> & away".into(),
        }];
        let page = crate::render::html::render(&tree);
        let out = insert_html(&tree, page, &html_section(&links));
        assert_eq!(
            out,
            concat!(
                "<html><head></head><body><p>content</p><!-- </body> -->",
                "<nav aria-label=\"Removed links\"><h2>Removed links</h2><ul><li>",
                "<a href=\"/a?b=1&amp;c=&quot;2&quot;\">&lt;Home&gt; &amp; away</a></li></ul></nav>",
                "</body></html>"
            )
        );
        assert_eq!(
            text_section(&links),
            "Removed links\n<Home> & away </a?b=1&c=\"2\">\n"
        );
    }

    #[test]
    fn trailing_comments_after_the_body_do_not_mislead() {
        let tree = Tree::parse("<body><p>x</p></body><!-- </body> --></html><!-- end </body> -->");
        let page = crate::render::html::render(&tree);
        let out = insert_html(&tree, page, "<nav>S</nav>");
        assert!(out.contains("<p>x</p><nav>S</nav></body>"), "{out}");
    }

    #[test]
    fn no_links_no_section() {
        assert_eq!(html_section(&[]), "");
        assert_eq!(text_section(&[]), "");
        let tree = Tree::parse("<p>x</p>");
        let page = crate::render::html::render(&tree);
        assert_eq!(insert_html(&tree, page.clone(), ""), page);
    }

    #[test]
    fn long_link_text_is_cut() {
        let long = "word ".repeat(100);
        let (tree, removed) =
            tree_and_removed(&format!("<div class=gone><a href=/l>{long}</a></div>"));
        let links = collect(&tree, &removed, None);
        assert_eq!(links[0].text.chars().count(), MAX_TEXT_CHARS);
        assert!(links[0].text.ends_with('…'));
    }
}
