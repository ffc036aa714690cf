//! The "Removed links" section of the declutter page: the links the retainer
//! ([`crate::extract::retainer`]) collected, as an accessible section
//! (`<nav aria-label="Removed links"><h2>Removed links</h2><ul>…</ul></nav>`) spliced in just
//! before `</body>` of the rendered page, or as lines under a "Removed links" line in text
//! output.

use crate::dom::{NodeId, Tree};
use crate::extract::retainer::RetainedLink;
use crate::render::html::escape;

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
}
