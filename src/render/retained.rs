//! The "Removed links" section of the declutter page: the links the retainer
//! ([`crate::extract::retainer`]) collected, as an accessible section
//! (`<nav aria-label="Removed links"><h2>Removed links</h2><ul>…</ul></nav>`) spliced in just
//! before `</body>` of the rendered page, or as lines under a "Removed links" line in text
//! output. A link that showed a picture shows it again, small and loaded lazily
//! (`render::html::thumbnail`), as the profile's `images` allow.

use crate::dom::{NodeId, Tree};
use crate::extract::retainer::RetainedLink;
use crate::images::Images;
use crate::render::access::destination;
use crate::render::html::{escape, thumbnail};

/// The section as HTML: a labelled `nav` with a heading and a list. Empty for no links. `tree`
/// is the one the links were collected from (their pictures are its nodes).
pub fn html_section(tree: &Tree, links: &[RetainedLink], images: Option<&Images>) -> String {
    if links.is_empty() {
        return String::new();
    }
    let mut out = String::from("<nav aria-label=\"Removed links\"><h2>Removed links</h2><ul>");
    for link in links {
        out.push_str("<li><a href=\"");
        escape(&link.url, true, &mut out);
        out.push_str("\">");
        if let Some(img) = link.image {
            thumbnail(tree, img, images, &mut out);
        }
        escape(&name(link), false, &mut out);
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
        out.push_str(&name(link));
        out.push_str(" <");
        out.push_str(&link.url);
        out.push_str(">\n");
    }
    out
}

/// What a link is called: its text, or for a picture's link without words its destination
/// ([`destination`]: host and last path segment).
fn name(link: &RetainedLink) -> std::borrow::Cow<'_, str> {
    if link.text.is_empty() {
        destination(&link.url).map_or(std::borrow::Cow::Borrowed(link.url.as_str()), std::borrow::Cow::Owned)
    } else {
        std::borrow::Cow::Borrowed(&link.text)
    }
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
            image: None,
        }];
        let page = crate::render::html::render(&tree);
        let out = insert_html(&tree, page, &html_section(&tree, &links, None));
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
    fn a_link_shows_its_picture_as_the_profile_allows() {
        use crate::images::{Images, Policy};
        let tree = Tree::parse(concat!(
            "<a href=/s><img data-src=big.jpg data-srcset='s.jpg 200w, m.jpg 600w, l.jpg 1200w' ",
            "src='data:image/gif;base64,R0lGOD'></a>"
        ));
        let img = tree.descendants(tree.root()).find(|&n| tree.tag(n) == Some("img"));
        let links = [RetainedLink { url: "/s".into(), text: "Story".into(), image: img }];
        let with = |policy| html_section(&tree, &links, Some(&Images { policy, ..Images::default() }));
        let shown = concat!(
            "<li><a href=\"/s\"><img src=\"s.jpg\" alt=\"\" width=\"96\" loading=\"lazy\" ",
            "decoding=\"async\"> Story</a></li>"
        );
        assert!(with(Policy::Keep).contains(shown), "the lazy address made real, a small candidate");
        let compressed = shown.replace("s.jpg", "s.jpg?pith-width=192");
        assert!(with(Policy::Compress).contains(&compressed), "asked for at twice its width: {}", with(Policy::Compress));
        assert!(html_section(&tree, &links, None).contains(shown));
        for policy in [Policy::Placeholder, Policy::None] {
            assert!(with(policy).contains("<li><a href=\"/s\">Story</a></li>"), "{}", with(policy));
        }
        let unnamed = [RetainedLink { url: "https://e.example/gallery/photo-3/".into(), text: String::new(), image: img }];
        let section = html_section(&tree, &unnamed, None);
        assert!(section.contains("decoding=\"async\"> e.example: photo-3</a>"), "named by its destination: {section}");
        assert_eq!(text_section(&unnamed), "Removed links\ne.example: photo-3 <https://e.example/gallery/photo-3/>\n");
    }

    #[test]
    fn no_links_no_section() {
        assert_eq!(html_section(&Tree::parse(""), &[], None), "");
        assert_eq!(text_section(&[]), "");
        let tree = Tree::parse("<p>x</p>");
        let page = crate::render::html::render(&tree);
        assert_eq!(insert_html(&tree, page.clone(), ""), page);
    }
}
