//! The landmark remover: the regions a page itself declares not to be its content.
//!
//! HTML and ARIA let an author say what each region of a page is, and screen readers let their
//! users jump past exactly these regions to the main content: the page's banner (site header),
//! its content-info (site footer), complementary content (sidebars, `<aside>`), search, and
//! dialogs (cookie notices, sign-up pop-ups). They are clutter by the page's own account, so a
//! de-cluttering proxy can take them out without guessing; no class or id names are read.
//!
//! Which elements:
//!
//! - `<aside>`, anywhere: the HTML standard defines it as content only loosely related to what
//!   surrounds it and separable from it (sidebars, pull quotes that repeat the text, boxes of
//!   links);
//! - `<footer>`, anywhere but in a `blockquote` (where it holds the quote's attribution): by
//!   the standard, facts about its section (author, related links, copyright), the site's or an
//!   article's;
//! - `<header>` only when it is the page's banner, not inside `article`, `aside`, `main`, `nav`
//!   or `section` (as the HTML accessibility mappings say): an article's own header holds its
//!   title and byline, which a reader wants;
//! - `role=banner`, `role=contentinfo`, `role=complementary`, `role=search`, `role=dialog` and
//!   `role=alertdialog` anywhere. Any other explicit `role` on a header, footer or aside says
//!   what it is instead, and it stays.
//!
//! Never removed: a region holding `<main>` or `role=main` (a template that wraps everything in
//! one of these did not mean it), a region with more than half of the page's prose (see
//! [`super::prose`]), and what a site rule keeps. The walk is top-down over the kept tree with
//! a skip per removed region; the scopes and the "holds main" marks come from two linear
//! passes. No recursion.

use markup5ever::local_name;

use super::linklist::{has_role, lists_any_role};
use super::prose::Paragraphs;
use super::Keep;
use crate::dom::{Element, LocalName, NodeId, Ns, Tree};

/// Removes the page's non-content landmark regions; returns those removed, outermost only, in
/// document order.
pub fn remove(tree: &mut Tree, keep: &Keep) -> Vec<NodeId> {
    let paragraphs = super::prose::paragraphs(tree);
    remove_with(tree, keep, &paragraphs)
}

/// [`remove`] with the page's paragraph figures at hand (a [`super::prose::Current`] kept
/// through the removers before this one).
pub fn remove_with(tree: &mut Tree, keep: &Keep, paragraphs: &Paragraphs) -> Vec<NodeId> {
    let found = find_with(tree, keep, paragraphs);
    for &id in &found {
        tree.remove(id);
    }
    found
}

/// The regions [`remove`] would remove, without removing them.
pub fn find(tree: &Tree, keep: &Keep) -> Vec<NodeId> {
    find_with(tree, keep, &super::prose::paragraphs(tree))
}

fn find_with(tree: &Tree, keep: &Keep, paragraphs: &Paragraphs) -> Vec<NodeId> {
    let Some(body) = tree.body() else {
        return Vec::new();
    };
    let marks = Marks::compute(tree, body);
    let prose = &paragraphs.prose;
    let page_prose = u64::from(prose[body.index()]);
    let mut found = Vec::new();
    let mut walk = tree.walk(body);
    while let Some(id) = walk.next() {
        let Some(e) = tree.element(id) else { continue };
        if !marks.is_landmark(tree, id, e) {
            continue;
        }
        let most_prose = u64::from(prose[id.index()]) * 2 > page_prose;
        if !most_prose && !marks.holds_main(tree, id) && !keep.contains(id) {
            found.push(id);
            walk.skip_children();
        }
    }
    found
}

/// What the decision needs from a node's ancestors and descendants.
struct Marks {
    /// The elements of the body that are `<main>` or `role=main`, in document order, removed
    /// ones included.
    mains: Vec<usize>,
}

impl Marks {
    /// One pass for the mains, over the body only: the regions judged are in it, and so are
    /// the mains they may hold. Scopes are looked up by climbing from the few headers and
    /// footers that need them, which costs less than carrying them down to every node.
    fn compute(tree: &Tree, body: NodeId) -> Marks {
        let mut mains = Vec::new();
        for id in tree.descendants(body) {
            let Some(e) = tree.element(id) else { continue };
            if e.name == local_name!("main") || has_role(tree, id, "main") {
                mains.push(id.index());
            }
        }
        Marks { mains }
    }

    /// Whether the subtree holds `<main>` or `role=main` (the node itself included).
    fn holds_main(&self, tree: &Tree, id: NodeId) -> bool {
        let (start, end) = (id.index(), id.index() + tree.descendants(id).len());
        let first = self.mains.partition_point(|&m| m < start);
        self.mains.get(first).is_some_and(|&m| m < end)
    }

    /// Whether the element is a non-content landmark.
    fn is_landmark(&self, tree: &Tree, id: NodeId, e: &Element) -> bool {
        const ROLES: [&str; 6] = [
            "banner",
            "contentinfo",
            "complementary",
            "search",
            "dialog",
            "alertdialog",
        ];
        if let Some(role) = tree.attr_named(id, &local_name!("role")) {
            // An explicit role says what the element is.
            return lists_any_role(role, &ROLES);
        }
        if e.ns != Ns::Html {
            return false;
        }
        match e.name {
            // Not inside `article`, `aside`, `main`, `nav` or `section`.
            local_name!("header") => !tree.ancestors(id).any(|a| tree.element(a).is_some_and(is_sectioning)),
            // Not inside a `blockquote`, whose footer is the quote's attribution.
            local_name!("footer") => !tree
                .ancestors(id)
                .any(|a| tree.element(a).is_some_and(|e| html_named(e, &local_name!("blockquote")))),
            local_name!("aside") => true,
            _ => false,
        }
    }
}

fn html_named(e: &Element, name: &LocalName) -> bool {
    e.ns == Ns::Html && e.name == *name
}

/// Sectioning content and `main`: what scopes a header to a part of the page.
fn is_sectioning(e: &Element) -> bool {
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("article")
                | local_name!("aside")
                | local_name!("main")
                | local_name!("nav")
                | local_name!("section")
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROSE: &str = "This is a paragraph of article text that runs long enough to be \
        prose, with two full sentences. It says something a reader came to read, not a menu.";

    fn removed_ids(html: &str) -> Vec<String> {
        let mut tree = Tree::parse(html);
        remove(&mut tree, &Keep::none())
            .iter()
            .map(|&id| tree.attr(id, "id").unwrap_or("?").to_string())
            .collect()
    }

    macro_rules! landmarks {
        ($($name:ident: $html:expr => [$($id:expr),*];)*) => {$(
            #[test]
            fn $name() {
                let expected: Vec<&str> = vec![$($id),*];
                assert_eq!(removed_ids(&$html), expected);
            }
        )*};
    }

    landmarks! {
        page_header_footer_and_aside_go: format!(
            "<header id=h>Site</header><aside id=a>Side</aside><p>{PROSE}</p><footer id=f>(c) 2024</footer>"
        ) => ["h", "a", "f"];
        article_header_stays_its_footer_goes: format!(
            "<article><header id=h><h1>Title</h1></header><p>{PROSE}</p><footer id=f>Tags</footer></article>"
        ) => ["f"];
        asides_go_everywhere: format!(
            "<main><article><aside id=quote>Quote</aside><p>{PROSE}</p></article><aside id=side>More</aside></main>"
        ) => ["quote", "side"];
        quote_attribution_stays: format!("<blockquote><p>{PROSE}</p><footer id=f>Someone</footer></blockquote>") => [];
        roles_anywhere: format!(
            "<article><div role=dialog id=d>Cookies</div><div role=complementary id=c>Box</div><p>{PROSE}</p></article>"
        ) => ["d", "c"];
        explicit_role_overrides_the_tag: format!("<header role=presentation id=h>x</header><p>{PROSE}</p>") => [];
        region_holding_main_stays: format!("<header id=h><main><p>{PROSE}</p></main></header>") => [];
        region_with_most_of_the_text_stays: format!("<aside id=a><p>{PROSE}</p></aside><p>short</p>") => [];
    }

    #[test]
    fn kept_regions_stay() {
        let html = format!("<footer id=f>Contact</footer><p>{PROSE}</p>");
        let mut tree = Tree::parse(&html);
        let footer = tree
            .descendants(tree.root())
            .find(|&id| tree.attr(id, "id") == Some("f"))
            .expect("footer");
        let keep = Keep::from_nodes(&tree, [footer]);
        assert!(remove(&mut tree, &keep).is_empty());
    }

    #[test]
    fn deep_trees_do_not_overflow() {
        let depth = 100_000;
        let html = format!(
            "<p>{PROSE}</p>{}<footer>x</footer>{}",
            "<section>".repeat(depth),
            "</section>".repeat(depth)
        );
        let mut tree = Tree::parse(&html);
        assert!(remove(&mut tree, &Keep::none()).is_empty());
    }
}
