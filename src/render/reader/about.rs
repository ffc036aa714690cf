//! What the reading page says of the page right after its headline: the kind of page
//! ("Forum thread, 14 posts", "Product", "Listing, 24 items"), and, when reading mode is unsure
//! of the block it serves ([`crate::extract::unsure`]), a note saying so with a link to the
//! de-cluttered page. The words are here, with the reading page's other strings.

use crate::extract::kind::{Kind, PageKind};

/// What [`insert_about`] writes.
#[derive(Debug, Clone, Copy)]
pub struct About<'a> {
    /// The kind of page.
    pub kind: Kind,
    /// Reading mode is unsure of what it kept: say so.
    pub unsure: bool,
    /// The address of the page de-cluttered, when one is known (the proxy's one-shot link).
    pub declutter: Option<&'a str>,
}

/// The note of an unsure reading page, before its link.
pub const UNSURE_NOTE: &str = "Reading mode is not sure it kept the right part of this page.";
/// The link after [`UNSURE_NOTE`] (or, without a link, the words).
pub const UNSURE_LINK: &str = "See the whole page, de-cluttered";

/// The short line that names the kind of page, with its items when it has them: "Forum
/// thread, 14 posts", "Listing, 24 items", "Product".
pub fn kind_line(kind: &Kind) -> String {
    let (name, unit) = match kind.kind {
        PageKind::Article => ("Article", None),
        PageKind::Documentation => ("Documentation", None),
        PageKind::Service => ("Service page", None),
        PageKind::Forum => ("Forum thread", Some(("post", "posts"))),
        PageKind::Collection => ("Shop collection", Some(("item", "items"))),
        PageKind::Listing => ("Listing", Some(("item", "items"))),
        PageKind::Product => ("Product", None),
    };
    match unit {
        Some((one, _)) if kind.items == 1 => format!("{name}, 1 {one}"),
        Some((_, many)) if kind.items > 1 => format!("{name}, {} {many}", kind.items),
        _ => name.to_string(),
    }
}

/// `page` (a reading page as [`super::render`] writes it) with the kind line and, when unsure,
/// the note inserted right after the headline's `</h1>`, inside the page's `<header>`: the
/// first things a screen reader reads after the title. A page without an `</h1>` is returned
/// as it is.
pub fn insert_about(page: String, about: &About<'_>) -> String {
    let Some(at) = page.find("</h1>").map(|i| i + "</h1>".len()) else {
        return page;
    };
    let mut html = String::with_capacity(256);
    html.push_str("<p>");
    super::escape(&kind_line(&about.kind), &mut html);
    html.push_str("</p>");
    if about.unsure {
        html.push_str("<p role=\"note\">");
        super::escape(UNSURE_NOTE, &mut html);
        html.push(' ');
        match about.declutter {
            Some(link) => {
                html.push_str("<a");
                super::attr(&mut html, "href", link);
                html.push('>');
                super::escape(UNSURE_LINK, &mut html);
                html.push_str("</a>.");
            }
            None => {
                super::escape(UNSURE_LINK, &mut html);
                html.push_str(" with the bar's “de-cluttered” link.");
            }
        }
        html.push_str("</p>");
    }
    let mut out = page;
    out.insert_str(at, &html);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(kind: PageKind, items: u32) -> Kind {
        Kind {
            kind,
            confidence: 0.5,
            items,
        }
    }

    #[test]
    fn lines_name_the_kind_and_its_items() {
        assert_eq!(
            kind_line(&kind(PageKind::Forum, 14)),
            "Forum thread, 14 posts"
        );
        assert_eq!(kind_line(&kind(PageKind::Forum, 1)), "Forum thread, 1 post");
        assert_eq!(kind_line(&kind(PageKind::Listing, 24)), "Listing, 24 items");
        assert_eq!(kind_line(&kind(PageKind::Listing, 0)), "Listing");
        assert_eq!(kind_line(&kind(PageKind::Product, 3)), "Product");
    }

    #[test]
    fn the_line_and_note_follow_the_headline() {
        let page = "<body><header><h1>T</h1><p>By A</p></header><main></main></body>".to_string();
        let about = About {
            kind: kind(PageKind::Forum, 2),
            unsure: true,
            declutter: Some("http://pith/once?a=1&b=\"2\""),
        };
        let out = insert_about(page.clone(), &about);
        assert_eq!(
            out,
            "<body><header><h1>T</h1><p>Forum thread, 2 posts</p><p role=\"note\">Reading mode is not sure it kept the right part of this page. \
             <a href=\"http://pith/once?a=1&amp;b=&quot;2&quot;\">See the whole page, de-cluttered</a>.</p><p>By A</p></header><main></main></body>"
        );
        let sure = insert_about(
            page.clone(),
            &About {
                unsure: false,
                ..about
            },
        );
        assert!(!sure.contains("role=\"note\""), "{sure}");
        assert_eq!(
            insert_about("<p>no headline</p>".to_string(), &about),
            "<p>no headline</p>"
        );
    }
}
