//! The headline first: what the other removers left before the page's title heading that is
//! the site's rather than the article's.
//!
//! On a phone, and to a screen reader going item by item, what comes before the headline is
//! met first. An article's own section label, picture and byline belong there; the site's
//! menus (navigation, account, search, categories) do not, and on shop and organisation pages
//! they pushed the headline below the first screen. Each block before the title heading (the
//! earlier siblings of the heading and of each of its ancestors up to `<body>`) goes when it
//! is, as the removers left it:
//!
//! - a navigation, search or menu region (`nav`, `form`, `role=navigation`, `search`, `menu`,
//!   `menubar`, `tablist`), or
//! - a list of links: two or more links whose text is at least half of its text, or
//! - a control strip: form controls with less than [`LABEL_CHARS`] of other text.
//!
//! Never: a block holding prose or the main content, one a site rule keeps, or a picture, label
//! or byline (text without links). The links of what goes are listed at the end of the page by
//! the retainer when it is on (its "Removed links" section). The walk visits only the
//! heading's ancestors and their earlier siblings.

use super::Keep;
use crate::dom::{NodeId, Tree};

/// Characters of non-link text beside form controls above which a block is more than a strip
/// of controls (a search box, a "Sign in" button).
pub const LABEL_CHARS: u32 = 80;

/// Removes the site's blocks before `title` (see the module); returns them in document order.
/// `main` is the page's main content and `prose` the prose characters per node
/// ([`super::prose::Paragraphs::prose`]).
pub fn remove(tree: &mut Tree, title: NodeId, main: NodeId, prose: &[u32], keep: &Keep) -> Vec<NodeId> {
    let Some(body) = tree.body() else { return Vec::new() };
    if !tree.holds(body, title) || tree.is_removed(title) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut node = title;
    while node != body {
        let Some(parent) = tree.parent(node) else { break };
        for sibling in tree.children(parent).take_while(|&c| c != node) {
            if is_site_block(tree, sibling, main, prose, keep) {
                found.push(sibling);
            }
        }
        node = parent;
    }
    found.sort_by_key(|id| id.index());
    for &id in &found {
        tree.remove(id);
    }
    found
}

fn is_site_block(tree: &Tree, id: NodeId, main: NodeId, prose: &[u32], keep: &Keep) -> bool {
    if tree.element(id).is_none() || tree.is_removed(id) || keep.contains(id) || tree.holds(id, main) {
        return false;
    }
    if prose.get(id.index()).copied().unwrap_or(0) > 0 {
        return false;
    }
    let role = tree.attr(id, "role").map(|r| r.trim().to_ascii_lowercase());
    if matches!(tree.tag(id), Some("nav" | "form" | "search" | "menu"))
        || matches!(role.as_deref(), Some("navigation" | "search" | "menu" | "menubar" | "tablist"))
    {
        return true;
    }
    let kept = super::kept_stats_of(tree, id);
    let other = super::non_link_chars(&kept);
    (kept.links >= 2 && kept.link_text_chars >= other) || (kept.controls > 0 && other < LABEL_CHARS && kept.images == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROSE: &str = "This is a paragraph of article text that runs long enough to be prose, with two full \
        sentences. It says something a reader came to read, not a menu.";

    fn run(html: &str) -> String {
        let mut tree = Tree::parse(html);
        let body = tree.body().expect("a body");
        let paragraphs = super::super::prose::paragraphs(&tree);
        let main = super::super::prose::main_content(&tree, body, &paragraphs);
        let title = tree.descendants(body).find(|&n| tree.tag(n) == Some("h1")).expect("a title");
        remove(&mut tree, title, main, &paragraphs.prose, &Keep::none());
        crate::render::text::render(&tree)
    }

    #[test]
    fn menus_search_and_account_strips_before_the_headline_go() {
        let html = format!(
            "<body><div class=top><a href=/>Shop</a> <a href=/men>Men</a> <a href=/women>Women</a></div>\
             <form><input name=q><button>Search</button></form>\
             <div><button>Sign in</button></div>\
             <main><div><ul><li><a href=/a>Home</a><li><a href=/b>Lamps</a></ul><p>Lamps</p>\
             <img src=lamp.jpg alt='The lamp'><h1>A lamp for reading</h1><p>By Ann Lee</p><p>{PROSE}</p><p>{PROSE}</p></div></main></body>"
        );
        assert_eq!(run(&html), format!("Lamps\nA lamp for reading\nBy Ann Lee\n{PROSE}\n{PROSE}\n"));
    }

    #[test]
    fn prose_and_what_comes_after_the_headline_stay() {
        // A story whose headline comes after its text (a recipe card's title): nothing above
        // holds only links, so nothing goes; links after the headline are not this remover's.
        let html = format!(
            "<body><p>{PROSE} <a href=/x>one</a> and <a href=/y>two</a>.</p><h1>Card</h1>\
             <ul><li><a href=/a>Next</a><li><a href=/b>Previous</a></ul></body>"
        );
        assert_eq!(run(&html), format!("{PROSE} one and two.\nCard\nNext\nPrevious\n"));
    }
}
