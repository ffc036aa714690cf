//! The removed-link retainer: the links the removers took out, listed once each at the end of
//! the page, so that the site's navigation stays reachable from a de-cluttered page.
//!
//! Crunch re-emitted removed text links under "Removed Links:"; pith collects them from the
//! subtrees the link-list and empty-table removers removed (ads are not retained), resolves each
//! against the page's base URL ([`document_base`](super::document_base)), drops repeats of the
//! same absolute URL and links into the page itself (`#top`). A link that showed a picture
//! (a teaser's thumbnail, a gallery's, a logo) keeps it, so the section loses no image the page
//! showed; a repeat of the same URL gives its picture to a first that had none. The tree itself
//! is not changed; [`crate::render::retained`] writes the section.

use std::collections::HashMap;

use crate::dom::{words, NodeId, NodeKind, Tree};

/// Link text longer than this (characters) is cut, so one odd link cannot flood the section.
const MAX_TEXT_CHARS: usize = 200;

/// One link of the "Removed links" section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetainedLink {
    /// The target: absolute when the page's base URL is known, as written otherwise.
    pub url: String,
    /// The link's visible text (or its image's alt text), whitespace collapsed.
    pub text: String,
    /// The first picture the link showed: an `<img>` of the tree, which the removers marked
    /// removed and left in place.
    pub image: Option<NodeId>,
}

/// The links inside the `removed` subtrees, in document order, each URL once. Links with
/// neither text nor a picture, into the page itself (`#...`), or to script URLs are left out;
/// a picture's link without words has an empty `text` (the section names it).
pub fn collect(tree: &Tree, removed: &[NodeId], base: Option<&str>) -> Vec<RetainedLink> {
    let mut roots = removed.to_vec();
    roots.sort();
    let mut seen: HashMap<String, usize> = HashMap::new();
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
            match seen.get(&link.url) {
                None => {
                    seen.insert(link.url.clone(), links.len());
                    links.push(link);
                }
                Some(&at) => {
                    let first = &mut links[at];
                    first.image = first.image.or(link.image);
                    if first.text.is_empty() {
                        first.text = link.text;
                    }
                }
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
    let image = tree
        .descendants(id)
        .find(|&i| tree.tag(i) == Some("img") && super::is_picture(tree, i));
    if text.is_empty() && image.is_none() {
        return None;
    }
    let url = base
        .and_then(|b| super::resolve_url(b, href))
        .unwrap_or_else(|| href.to_string());
    Some(RetainedLink { url, text, image })
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
                ("https://e.example/icon", ""),
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
                text: "XY".into(),
                image: None,
            }]
        );
    }

    #[test]
    fn a_link_keeps_its_picture_and_a_repeat_gives_one() {
        let (tree, removed) = tree_and_removed(concat!(
            "<ul class=gone><li><a href=/story>Story</a> <a href=/story><img id=s src=s.jpg alt=''></a>",
            "<li><a href=/logo><img id=l src=l.png alt=Home></a>",
            "<li><a href=/pixel><img width=1 height=1 src=t.gif>Tracked</a>",
            "<li><a href=/gallery/1><img id=g src=g1.jpg alt=''></a><a href=/gallery/1>First</a>",
            "<li><a href=/hidden><img hidden src=h.jpg>Hidden</a></ul>"
        ));
        let id = |name: &str| tree.descendants(tree.root()).find(|&n| tree.attr(n, "id") == Some(name));
        let links = collect(&tree, &removed, None);
        let got: Vec<(&str, Option<NodeId>)> = links.iter().map(|l| (l.url.as_str(), l.image)).collect();
        assert_eq!(
            got,
            [("/story", id("s")), ("/logo", id("l")), ("/pixel", None), ("/gallery/1", id("g")), ("/hidden", None)],
            "the repeat's picture goes to the first; pixels and hidden images are none"
        );
        assert_eq!(links[3].text, "First", "a picture's link without words takes a repeat's");
        assert_eq!(links[1].text, "Home", "an image-only link is named by its alt text");
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
