//! A small CSS selector engine over [`Tree`]: parsing selector lists and matching them against
//! elements, one selector at a time or hundreds at once.
//!
//! Stage 2 needs selectors in two places: per-site rules (`keep` / `remove`) and the element-hiding
//! rules of the ad lists, thousands of which are plain `.class` and `#id` selectors. Stage 1's
//! selectors belong to the streaming rewriter and cannot look at a tree, so this module matches
//! on the tree itself. It owns the selector syntax and matching; which elements are then removed
//! or kept is the callers' business.
//!
//! # Supported syntax
//!
//! Type selectors and `*`, `#id`, `.class` (the `class` attribute split on ASCII whitespace),
//! `[attr]`, `[attr=v]`, `[attr~=v]`, `[attr|=v]`, `[attr^=v]`, `[attr$=v]`, `[attr*=v]` with
//! quoted or unquoted values and the `i` / `s` flags, compound selectors, the descendant (` `),
//! child (`>`), next-sibling (`+`) and subsequent-sibling (`~`) combinators, selector lists
//! (`,`), `:not(...)` over compound selectors without a nested `:not`, `:first-child` and
//! `:last-child`. CSS escapes are decoded in names and values.
//!
//! Anything else (`:has()`, `:nth-child()`, pseudo-elements, namespaces, the lists' procedural
//! `:-abp-*` forms, ...) is a [`SelectorError`], so that a caller can skip the selector instead of
//! matching something other than what its author meant.
//!
//! # Matching
//!
//! Tag and attribute names match ASCII case-insensitively, attribute values case-sensitively unless
//! the `i` flag is given. Structure (parents, siblings) is the tree as parsed: removal marks do not
//! change what `:first-child` or `+` mean, but [`select_all`] and [`SelectorSet::matching`] never
//! report an element that is already removed. Complex selectors are matched right to left with the
//! restart rules browsers use, so `a b c d` on a deep page does not backtrack exponentially; the
//! recursion depth is bounded by [`MAX_COMPOUNDS`], never by the document.
//!
//! # Layout
//!
//! This file holds the selectors and matching one against one element; `parse.rs` reads the
//! syntax; `set.rs` is [`SelectorSet`], the bulk index and its walk over a tree; `prefix.rs` the
//! radix tree that index files attribute values in.

use std::borrow::Cow;

use markup5ever::local_name;

use super::{LocalName, NodeId, Ns, Tree};
use parse::Parser;
pub use set::SelectorSet;

mod parse;
mod prefix;
mod set;

/// The most compound selectors one complex selector may chain: matching recurses once per
/// compound, and no real selector comes near this.
pub const MAX_COMPOUNDS: usize = 32;

/// A parsed selector list, ready to match elements of any tree.
///
/// Cheap enough to clone, `Send` and `Sync`: rules parsed once at start-up are shared by every
/// request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    text: String,
    complexes: Vec<Complex>,
    /// [`Selector::is_local`], worked out once.
    local: bool,
}

/// Why a selector was not accepted: the text as given and what is wrong or unsupported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CSS selector `{text}`: {kind}")]
pub struct SelectorError {
    /// The selector text as given.
    pub text: String,
    /// What is wrong with it.
    pub kind: SelectorErrorKind,
}

/// The two ways a selector can fail: valid CSS this engine does not implement (callers skip it
/// quietly, lists are full of them), or text that is not a selector at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorErrorKind {
    /// Valid or plausible CSS beyond the supported subset, named (e.g. "`:has()`").
    #[error("{0} is not supported")]
    Unsupported(String),
    /// Not a selector: what was expected, and at which byte offset of the text.
    #[error("{reason} at offset {at}")]
    Syntax {
        /// Byte offset into the text.
        at: usize,
        /// What the parser expected or found.
        reason: String,
    },
}

/// One complex selector: compound selectors joined by combinators, stored right to left.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Complex {
    /// `compounds[0]` is the subject, the element the selector selects.
    compounds: Vec<Compound>,
    /// `combinators[i]` relates `compounds[i]` to `compounds[i + 1]`, seen from the former.
    combinators: Vec<Combinator>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Combinator {
    /// `a b`: some ancestor.
    Descendant,
    /// `a > b`: the parent.
    Child,
    /// `a + b`: the previous element sibling.
    NextSibling,
    /// `a ~ b`: some previous element sibling.
    LaterSibling,
}

/// A compound selector: every part must hold for the same element.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Compound {
    /// Lower-case type name; `None` for `*` or no type.
    tag: Option<String>,
    ids: Vec<String>,
    classes: Vec<String>,
    attrs: Vec<AttrTest>,
    /// `:not(x, y)`: none of these may match.
    not: Vec<Compound>,
    /// The members of `:not()` that are one attribute test, by attribute name: none may pass.
    /// Grouped so that an element's attribute is looked up once per name, not once per test
    /// (stage 1's rules chain eight or nine on every `meta` and `link` of a page).
    not_attrs: Vec<(LocalName, Vec<AttrTest>)>,
    first_child: bool,
    last_child: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct AttrTest {
    /// Lower-case attribute name, interned: an HTML element's attribute is found by comparing
    /// two numbers.
    name: LocalName,
    op: AttrOp,
    /// The value to compare with; lower-case when `ignore_case`.
    value: String,
    ignore_case: bool,
    /// For a `*=` test, the value's searcher, built once: the lists test each link of a page
    /// against a dozen `a[href*="..."]`, and a searcher made per call costs more than the search.
    finder: Option<Finder>,
}

/// A substring searcher; equal when searching for the same bytes.
#[derive(Clone, Debug)]
struct Finder(memchr::memmem::Finder<'static>);

impl Finder {
    fn new(needle: &str) -> Finder {
        Finder(memchr::memmem::Finder::new(needle.as_bytes()).into_owned())
    }
}

impl PartialEq for Finder {
    fn eq(&self, other: &Finder) -> bool {
        self.0.needle() == other.0.needle()
    }
}

impl Eq for Finder {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttrOp {
    Exists,
    Equals,
    Includes,
    DashMatch,
    Prefix,
    Suffix,
    Substring,
}

impl Selector {
    /// Parses a selector list; anything beyond the supported subset (module doc) is an error, so
    /// that callers can skip it.
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let complexes = Parser::new(text).list().map_err(|kind| SelectorError {
            text: text.to_string(),
            kind,
        })?;
        let local = complexes.iter().all(|c| c.combinators.is_empty() && c.compounds[0].is_local());
        Ok(Selector {
            text: text.to_string(),
            complexes,
            local,
        })
    }

    /// The text the selector was parsed from, for reports and error messages.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the node is an element matched by any selector of the list.
    pub fn matches(&self, tree: &Tree, id: NodeId) -> bool {
        tree.element(id).is_some() && self.complexes.iter().any(|c| c.matches(tree, id))
    }
}

/// Matching an element before it is in a tree, for selectors that need nothing else: how a
/// tree can be built without what stage 1's rules remove (see `crate::html::stage1`).
impl Selector {
    /// Whether every member is one compound selector that does not look at siblings: then
    /// [`Selector::matches_local`] decides it from the element's name and attributes alone.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// The element names (lower case) every member requires, or `None` when some member
    /// matches elements of any name: lets a caller try the selector only on those elements.
    pub fn subject_tags(&self) -> Option<Vec<&str>> {
        self.complexes.iter().map(|c| c.compounds[0].tag.as_deref()).collect()
    }

    /// Whether an element with this local name and attributes is matched, for a selector that
    /// [`Selector::is_local`]; `attr` looks up an attribute by its lower-case name. A selector
    /// that is not local never matches here.
    pub fn matches_local<'v>(&self, name: &str, attr: impl Fn(&str) -> Option<&'v str>) -> bool {
        let attr = |name: &LocalName| attr(name);
        self.local && self.complexes.iter().any(|c| c.compounds[0].matches_local(name, &attr))
    }
}

impl std::str::FromStr for Selector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Selector, SelectorError> {
        Selector::parse(text)
    }
}

/// Every element in the subtree of `root` (itself included) that `sel` matches, in document
/// order. Removed subtrees are skipped; ancestors outside `root` still count for combinators, as
/// in the DOM's `querySelectorAll`.
pub fn select_all(tree: &Tree, root: NodeId, sel: &Selector) -> Vec<NodeId> {
    tree.walk(root).filter(|&id| sel.matches(tree, id)).collect()
}

/// CSS and HTML whitespace: space, tab, line feed, form feed, carriage return.
fn is_ascii_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0c' | '\r')
}

/// The outcome of matching part of a complex selector, with the restart hints that keep
/// matching linear (as described in the Selectors spec's implementation notes and used by
/// browsers): a failure may rule out further candidates for an outer combinator.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Matched,
    RestartFromClosestLaterSibling,
    RestartFromClosestDescendant,
    NotMatchedGlobally,
}

impl Complex {
    /// Whether the selector is one id or one class and nothing else (`#ad`, `.ad-banner`).
    ///
    /// A parsed element has at most one `id` and one `class` attribute, lower case, so an
    /// element whose id or class token the set finds under this selector's key is matched.
    fn is_key_alone(&self) -> bool {
        let subject = &self.compounds[0];
        self.combinators.is_empty()
            && subject.ids.len() + subject.classes.len() == 1
            && subject.tag.is_none()
            && subject.attrs.is_empty()
            && subject.not.is_empty()
            && subject.not_attrs.is_empty()
            && !subject.first_child
            && !subject.last_child
    }

    fn matches(&self, tree: &Tree, id: NodeId) -> bool {
        self.match_from(tree, 0, id) == Outcome::Matched
    }

    /// Matches `compounds[index..]` with `id` as the element for `compounds[index]`.
    fn match_from(&self, tree: &Tree, index: usize, id: NodeId) -> Outcome {
        if !self.compounds[index].matches(tree, id) {
            return Outcome::RestartFromClosestLaterSibling;
        }
        let Some(&combinator) = self.combinators.get(index) else {
            return Outcome::Matched;
        };
        let not_found = match combinator {
            Combinator::NextSibling | Combinator::LaterSibling => {
                Outcome::RestartFromClosestDescendant
            }
            Combinator::Child | Combinator::Descendant => Outcome::NotMatchedGlobally,
        };
        let mut candidate = next_candidate(tree, id, combinator);
        while let Some(next) = candidate {
            let outcome = self.match_from(tree, index + 1, next);
            match (outcome, combinator) {
                (Outcome::Matched | Outcome::NotMatchedGlobally, _)
                | (_, Combinator::NextSibling) => return outcome,
                (_, Combinator::Child) => return Outcome::RestartFromClosestDescendant,
                (Outcome::RestartFromClosestDescendant, Combinator::LaterSibling) => {
                    return outcome
                }
                _ => {}
            }
            candidate = next_candidate(tree, next, combinator);
        }
        not_found
    }
}

/// The element a combinator leads to from `id`: its parent element or previous element sibling.
fn next_candidate(tree: &Tree, id: NodeId, combinator: Combinator) -> Option<NodeId> {
    match combinator {
        Combinator::Descendant | Combinator::Child => {
            tree.parent(id).filter(|&p| tree.element(p).is_some())
        }
        Combinator::NextSibling | Combinator::LaterSibling => previous_element_sibling(tree, id),
    }
}

/// The element sibling right before `id`. The tree stores no backward links, so this walks the
/// parent's children: linear in the siblings, which only `+`, `~` and `:first-child` pay.
fn previous_element_sibling(tree: &Tree, id: NodeId) -> Option<NodeId> {
    let parent = tree.parent(id)?;
    let mut previous = None;
    for child in tree.children(parent) {
        if child == id {
            return previous;
        }
        if tree.element(child).is_some() {
            previous = Some(child);
        }
    }
    None
}

fn next_element_sibling(tree: &Tree, id: NodeId) -> Option<NodeId> {
    let mut next = tree.next_sibling(id);
    while let Some(sibling) = next {
        if tree.element(sibling).is_some() {
            return Some(sibling);
        }
        next = tree.next_sibling(sibling);
    }
    None
}

impl Compound {
    fn matches(&self, tree: &Tree, id: NodeId) -> bool {
        let Some(element) = tree.element(id) else {
            return false;
        };
        let attr = |name: &LocalName| attr(tree, id, element.ns, name);
        self.matches_parts(&element.name, attr)
            && !self.negated_attr_passes(attr)
            && !self.not.iter().any(|negated| negated.matches(tree, id))
            && (!self.first_child || previous_element_sibling(tree, id).is_none())
            && (!self.last_child || next_element_sibling(tree, id).is_none())
    }

    /// The tests on the element itself: type, id, classes and attributes (not `:not()`, not
    /// the position among siblings). `attr` looks up an attribute by its lower-case name.
    fn matches_parts<'v>(&self, name: &str, attr: impl Fn(&LocalName) -> Option<&'v str>) -> bool {
        if let Some(tag) = &self.tag {
            if !str::eq_ignore_ascii_case(name, tag) {
                return false;
            }
        }
        if !self.ids.is_empty() {
            let own = attr(&local_name!("id"));
            if !self.ids.iter().all(|want| own == Some(want.as_str())) {
                return false;
            }
        }
        if !self.classes.is_empty() {
            let own = attr(&local_name!("class")).unwrap_or("");
            let has = |want: &String| own.split_ascii_whitespace().any(|t| t == want);
            if !self.classes.iter().all(has) {
                return false;
            }
        }
        self.attrs.iter().all(|test| attr(&test.name).is_some_and(|value| test.matches_value(value)))
    }

    /// Whether the compound can be decided from the element alone: no position among siblings.
    fn is_local(&self) -> bool {
        !self.first_child && !self.last_child && self.not.iter().all(Compound::is_local)
    }

    /// [`Compound::matches`] for a [`Compound::is_local`] compound, from the element's parts.
    fn matches_local<'v>(&self, name: &str, attr: &impl Fn(&LocalName) -> Option<&'v str>) -> bool {
        self.matches_parts(name, attr)
            && !self.negated_attr_passes(attr)
            && !self.not.iter().any(|negated| negated.matches_local(name, attr))
    }

    /// Whether an attribute test of `:not()` passes (the element is then not matched).
    fn negated_attr_passes<'v>(&self, attr: impl Fn(&LocalName) -> Option<&'v str>) -> bool {
        self.not_attrs
            .iter()
            .any(|(name, tests)| attr(name).is_some_and(|value| tests.iter().any(|test| test.matches_value(value))))
    }

    /// Adds the members of a `:not()`: one attribute test joins those of its name.
    fn negate(&mut self, negated: Vec<Compound>) {
        for mut compound in negated {
            let attrs = std::mem::take(&mut compound.attrs);
            let bare = compound == Compound::default();
            match <[AttrTest; 1]>::try_from(attrs) {
                Ok([test]) if bare => match self.not_attrs.iter_mut().find(|(name, _)| *name == test.name) {
                    Some((_, tests)) => tests.push(test),
                    None => self.not_attrs.push((test.name.clone(), vec![test])),
                },
                Ok(attrs) => {
                    compound.attrs = attrs.into();
                    self.not.push(compound);
                }
                Err(attrs) => {
                    compound.attrs = attrs;
                    self.not.push(compound);
                }
            }
        }
    }
}

/// The value of attribute `name` (lower case) of an element in namespace `ns`. Attribute names
/// of HTML elements are lower case as parsed, so the interned names compare; foreign elements
/// keep camel-cased ones (`viewBox`), found ASCII case-insensitively.
fn attr<'t>(tree: &'t Tree, id: NodeId, ns: Ns, name: &LocalName) -> Option<&'t str> {
    let mut attrs = tree.attrs(id);
    let found = if ns == Ns::Html {
        attrs.find(|(n, _)| *n == name)
    } else {
        attrs.find(|(n, _)| str::eq_ignore_ascii_case(n, name))
    };
    found.map(|(_, v)| v)
}

impl AttrTest {
    /// Whether an attribute of this test's name, with this value, passes the test.
    fn matches_value(&self, value: &str) -> bool {
        let want = self.value.as_str();
        // `want` is lowercase when `ignore_case`: comparing ASCII case-insensitively is the
        // same as lowering `value` first, without the scan and the copy (`=` and `~=` are tried
        // on every `<meta>` and `<link>` of a page).
        match self.op {
            AttrOp::Exists => true,
            AttrOp::Equals if self.ignore_case => value.eq_ignore_ascii_case(want),
            AttrOp::Equals => value == want,
            // On bytes: splitting at ASCII spaces cuts no character.
            AttrOp::Includes => {
                let is_space = |b: &u8| is_ascii_whitespace(char::from(*b));
                let is_want = |token: &[u8]| match self.ignore_case {
                    true => token.eq_ignore_ascii_case(want.as_bytes()),
                    false => token == want.as_bytes(),
                };
                !want.is_empty()
                    && !want.as_bytes().iter().any(is_space)
                    && value.as_bytes().split(is_space).any(is_want)
            }
            // `want` is ASCII-lowered: comparing the bytes ASCII case-insensitively is lowering the
            // value first, without the copy.
            AttrOp::DashMatch => {
                let (value, want) = (value.as_bytes(), want.as_bytes());
                value.len() >= want.len()
                    && self.same(&value[..want.len()], want)
                    && value.get(want.len()).is_none_or(|&b| b == b'-')
            }
            AttrOp::Prefix => {
                let (value, want) = (value.as_bytes(), want.as_bytes());
                !want.is_empty() && value.len() >= want.len() && self.same(&value[..want.len()], want)
            }
            AttrOp::Suffix => {
                let (value, want) = (value.as_bytes(), want.as_bytes());
                !want.is_empty() && value.len() >= want.len() && self.same(&value[value.len() - want.len()..], want)
            }
            AttrOp::Substring => {
                let value = self.folded(value);
                !want.is_empty()
                    && match &self.finder {
                        Some(finder) => finder.0.find(value.as_bytes()).is_some(),
                        None => value.contains(want),
                    }
            }
        }
    }

    /// Whether part of a value equals `want` as the test compares: ASCII case-insensitively
    /// when `ignore_case` (`want` is then lower case).
    fn same(&self, part: &[u8], want: &[u8]) -> bool {
        if self.ignore_case {
            part.eq_ignore_ascii_case(want)
        } else {
            part == want
        }
    }

    /// `value` as the test compares it: lowercase when `ignore_case`.
    fn folded<'v>(&self, value: &'v str) -> Cow<'v, str> {
        if self.ignore_case && value.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(value.to_ascii_lowercase())
        } else {
            Cow::Borrowed(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use rustc_hash::FxHashMap;

    use super::set::{ByAtom, ClassTokens, KeyFilter};
    use super::*;
    use crate::dom::Edge;

    /// A page with one of everything the tests select; every element that matters has an id.
    const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en-GB"><head><title>t</title></head><body id="body">
<div id="top" class="Banner ad  wide" data-slot="ad-top-1">
  <a id="l1" href="https://ads.example/click" rel="nofollow sponsored">Buy</a>
  <img id="i1" src="/img/AD.png" alt="x">
</div>
<main id="main">
  <h1 id="h">Title</h1>
  <p id="p1" class="lead">One <a id="l2" href="/story" lang="en-US">story</a></p>
  <p id="p2">Two</p>
  text between
  <p id="p3" title="Hello World">Three</p>
  <ul id="list"><li id="li1">a</li><li id="li2" class="x">b</li><li id="li3">c</li></ul>
</main>
<aside id="side" class="sidebar"><div id="inner"><span id="deep" class="ad">d</span></div></aside>
<svg id="svg"><foreignObject id="fo" requiredExtensions="x"></foreignObject></svg>
</body></html>"#;

    /// The id of every element `selector` selects in [`PAGE`], in document order; `-` stands
    /// for an element without id.
    fn ids(tree: &Tree, selector: &str) -> Vec<String> {
        let sel = Selector::parse(selector).unwrap_or_else(|e| panic!("{e}"));
        let found = select_all(tree, tree.root(), &sel);
        let set = SelectorSet::new([sel]);
        assert_eq!(
            set.matching(tree, tree.root()),
            found,
            "{selector}: set and single agree"
        );
        found
            .iter()
            .map(|&id| tree.attr(id, "id").unwrap_or("-").to_string())
            .collect()
    }

    /// `selects!(name: "selector" => ["id", ...];)`: exact matches on [`PAGE`].
    macro_rules! selects {
        ($($name:ident: $selector:expr => [$($id:expr),*];)*) => {$(
            #[test]
            fn $name() {
                let tree = Tree::parse(PAGE);
                let expected: Vec<String> = vec![$($id.to_string()),*];
                assert_eq!(ids(&tree, $selector), expected, "{}", $selector);
            }
        )*};
    }

    selects! {
        type_selector: "p" => ["p1", "p2", "p3"];
        type_is_case_insensitive: "P, LI" => ["p1", "p2", "p3", "li1", "li2", "li3"];
        svg_type_ignores_case: "foreignobject" => ["fo"];
        universal_in_main: "main > *" => ["h", "p1", "p2", "p3", "list"];
        id: "#top" => ["top"];
        id_is_case_sensitive: "#TOP" => [];
        class_among_several: ".ad" => ["top", "deep"];
        class_is_case_sensitive: ".banner" => [];
        two_classes: ".Banner.wide" => ["top"];
        tag_and_class: "span.ad" => ["deep"];
        attribute_exists: "[rel]" => ["l1"];
        attribute_name_ignores_case: "[REL], [requiredextensions]" => ["l1", "fo"];
        attribute_equals: "[href='/story']" => ["l2"];
        attribute_equals_unquoted: "[data-slot=ad-top-1]" => ["top"];
        attribute_includes: "[rel~=sponsored]" => ["l1"];
        attribute_includes_needs_a_whole_word: "[rel~=spons]" => [];
        attribute_dash: "[lang|=en]" => ["-", "l2"];
        attribute_prefix: "a[href^='https://ads.']" => ["l1"];
        attribute_suffix: "[src$='.png']" => ["i1"];
        attribute_substring: "[title*='lo Wo']" => ["p3"];
        attribute_value_case: "[src*=ad]" => [];
        attribute_value_ignore_case: "[src*=ad i]" => ["i1"];
        empty_prefix_never_matches: "[title^='']" => [];
        descendant: "aside span" => ["deep"];
        descendant_through_many: "body span.ad" => ["deep"];
        child: "aside > span" => [];
        child_of_child: "aside > div > span" => ["deep"];
        adjacent: "h1 + p" => ["p1"];
        adjacent_skips_text: "#p2 + p" => ["p3"];
        later_siblings: "#p1 ~ p" => ["p2", "p3"];
        sibling_then_descendant: "div ~ main li.x" => ["li2"];
        first_child: "li:first-child" => ["li1"];
        last_child: "li:last-child, main > :last-child" => ["list", "li3"];
        first_child_ignores_text: "#top > :first-child" => ["l1"];
        not: "li:not(.x)" => ["li1", "li3"];
        not_list: "p:not(#p1, [title])" => ["p2"];
        list_in_document_order: "#p3, #h, #p3" => ["h", "p3"];
        no_match: "table" => [];
    }

    #[test]
    fn matches_checks_one_node() {
        let tree = Tree::parse(PAGE);
        let sel = Selector::parse("main p.lead").expect("valid");
        let hits: Vec<NodeId> = tree
            .descendants(tree.root())
            .filter(|&id| sel.matches(&tree, id))
            .collect();
        assert_eq!(hits.len(), 1);
        assert_eq!(tree.attr(hits[0], "id"), Some("p1"));
        // Text nodes never match, even `*`.
        let any = Selector::parse("*").expect("valid");
        let text = tree.first_child(hits[0]).expect("text");
        assert!(!any.matches(&tree, text));
        assert_eq!(sel.text(), "main p.lead");
    }

    #[test]
    fn select_all_stays_in_the_root_but_sees_ancestors() {
        let tree = Tree::parse(PAGE);
        let main = select_all(&tree, tree.root(), &Selector::parse("main").expect("valid"))[0];
        let sel = Selector::parse("body p").expect("valid");
        let inside = select_all(&tree, main, &sel);
        assert_eq!(inside.len(), 3);
        let list = select_all(&tree, tree.root(), &Selector::parse("ul").expect("valid"))[0];
        assert_eq!(select_all(&tree, list, &sel), Vec::<NodeId>::new());
        assert_eq!(
            select_all(&tree, list, &Selector::parse("ul").expect("valid")),
            [list]
        );
    }

    #[test]
    fn removed_elements_are_not_reported_but_structure_stays() {
        let mut tree = Tree::parse(PAGE);
        let first = select_all(&tree, tree.root(), &Selector::parse("#li1").expect("valid"));
        tree.remove(first[0]);
        assert_eq!(ids(&tree, "li"), ["li2", "li3"]);
        assert_eq!(ids(&tree, "li:first-child"), Vec::<String>::new());
        assert_eq!(ids(&tree, "li + li"), ["li2", "li3"]);
    }

    #[test]
    fn a_set_reports_each_element_once_in_document_order() {
        let tree = Tree::parse(PAGE);
        let selectors = [
            "#deep",
            ".ad",
            "span",
            "[data-slot]",
            "div",
            "*:first-child",
            "p ~ ul",
        ];
        let set = SelectorSet::new(selectors.iter().map(|s| Selector::parse(s).expect("valid")));
        assert_eq!(set.len(), 7);
        let found: Vec<&str> = set
            .matching(&tree, tree.root())
            .into_iter()
            .map(|id| tree.attr(id, "id").unwrap_or("-"))
            .collect();
        // html, head and title are first children (the id-less `-`); text before `l2` does
        // not count; `list` comes before its own first child.
        assert_eq!(
            found,
            ["-", "-", "-", "top", "l1", "h", "l2", "list", "li1", "inner", "deep", "fo"]
        );
        assert!(SelectorSet::new([]).matching(&tree, tree.root()).is_empty());
    }

    #[test]
    fn prefix_filed_selectors_match_like_the_others() {
        let tree = Tree::parse(
            r#"<a id=a href="https://ads.example/x">1</a><a id=b href="https://ads.example.org/">2</a>
            <a id=c href="https://news.example/">3</a><img id=d src="https://ads.example/i.png">"#,
        );
        let set = SelectorSet::new(
            [
                r#"a[href^="https://ads.example/"]"#,
                r#"[href^="https://ads.example.org"][id=b]"#,
                r#"a[href^="https://ads"][href$=".net"]"#,
                r#"img[src^="https://ads.example/"]"#,
                r#"a[href^="HTTPS://NEWS" i]"#,
            ]
            .iter()
            .map(|s| Selector::parse(s).expect("valid")),
        );
        let found: Vec<_> = set
            .matching(&tree, tree.root())
            .into_iter()
            .map(|id| tree.attr(id, "id").unwrap_or("-"))
            .collect();
        assert_eq!(found, ["a", "b", "c", "d"]);
    }

    #[test]
    fn deep_descendant_chains_stay_fast() {
        // Without the restart rules this is exponential in the number of compounds.
        const DEPTH: usize = 5_000;
        let html = format!(
            "{}<b>x</b>{}",
            "<div>".repeat(DEPTH),
            "</div>".repeat(DEPTH)
        );
        let tree = Tree::parse_with_max_depth(&html, u32::MAX);
        let sel = Selector::parse(&format!("{} span b", ["div"; 20].join(" "))).expect("valid");
        assert!(select_all(&tree, tree.root(), &sel).is_empty());
        let sel = Selector::parse(&format!("{} b", ["div"; 20].join(" "))).expect("valid");
        assert_eq!(select_all(&tree, tree.root(), &sel).len(), 1);
        // Every div is a subject here; each fails once its ancestors run out, without retrying
        // the other ways of assigning ancestors to compounds.
        let html = format!("{}{}", "<div>".repeat(1_000), "</div>".repeat(1_000));
        let tree = Tree::parse_with_max_depth(&html, u32::MAX);
        let sel = Selector::parse("section div div div div").expect("valid");
        assert!(select_all(&tree, tree.root(), &sel).is_empty());
    }

    #[test]
    fn bare_keys_match_without_tests_and_others_still_test() {
        let tree = Tree::parse(
            r#"<div id=a class="x y"><p id=b class=y>t</p></div><svg><g id=c class="x"/></svg><p id=d class="X"></p>"#,
        );
        let set = SelectorSet::new(
            ["#b", ".x", "p.y", ".y > p", "#c.z"]
                .iter()
                .map(|s| Selector::parse(s).expect("valid")),
        );
        assert!(set.by_id["b"].alone);
        assert!(set.by_class["x"].alone);
        assert_eq!(set.by_class["y"].others.len(), 1);
        assert_eq!(set.by_id["c"].others.len(), 1);
        let found: Vec<_> = set
            .matching(&tree, tree.root())
            .into_iter()
            .map(|id| tree.attr(id, "id").unwrap_or("-"))
            .collect();
        assert_eq!(found, ["a", "b", "c"]);
    }

    #[test]
    fn a_bare_subject_under_a_prefix_keyed_parent_is_armed_by_the_parent() {
        let tree = Tree::parse(concat!(
            r#"<a id=l1 href="https://ads.example/x"><img id=i1></a>"#,
            r#"<a id=l2 href="https://news.example/"><img id=i2></a>"#,
            r#"<div data-x="https://ads.example/"><img id=i3><p><img id=i4></p></div>"#,
        ));
        let set = SelectorSet::new(
            ["a[href^='https://ads.example/'] > img", "[data-x^='https://ads'] > img"]
                .iter()
                .map(|s| Selector::parse(s).expect("valid")),
        );
        assert!(set.by_tag.is_empty() && set.everywhere.is_empty());
        assert_eq!(set.by_name.len(), 2);
        let found: Vec<_> = set
            .matching(&tree, tree.root())
            .into_iter()
            .map(|id| tree.attr(id, "id").unwrap_or("-"))
            .collect();
        assert_eq!(found, ["i1", "i3"]);
    }

    #[test]
    fn one_walk_over_several_sets_reports_their_union_and_every_noted_key() {
        let tree = Tree::parse(PAGE);
        let host = SelectorSet::new(
            ["a[href^='https://ads.']", "li:last-child", "#p2"]
                .iter()
                .map(|s| Selector::parse(s).expect("valid")),
        );
        let mut generic = SelectorSet::new(
            [".ad", "#p2", ".sidebar > div", "#deep.ad"]
                .iter()
                .map(|s| Selector::parse(s).expect("valid")),
        );
        // Every class and non-empty id of the page, in document order, but `wide`.
        let mut expected = Vec::new();
        for edge in tree.traverse(tree.root()) {
            let Edge::Open(id) = edge else { continue };
            for (name, value) in tree.attrs(id) {
                if &**name == "id" && !value.is_empty() {
                    expected.push((false, value.to_string()));
                } else if &**name == "class" {
                    expected.extend(value.split_ascii_whitespace().map(|c| (true, c.to_string())));
                }
            }
        }
        expected.retain(|(_, key)| key != "wide");
        for (is_class, key) in &expected {
            generic.note(*is_class, key);
        }
        // Keys the page lacks, and an id noted as a class, are never reported.
        generic.note(true, "absent");
        generic.note(true, "top");
        let mut keys = Vec::new();
        let sets = [&host, &generic, &SelectorSet::default()];
        let found = SelectorSet::matching_any(&sets, &tree, tree.root(), |is_class, key| {
            keys.push((is_class, key.to_string()))
        });
        let mut union = host.matching(&tree, tree.root());
        union.extend(generic.matching(&tree, tree.root()));
        union.sort_unstable();
        union.dedup();
        assert_eq!(found, union);
        let ids: Vec<_> = found.iter().map(|&id| tree.attr(id, "id").unwrap_or("-")).collect();
        assert_eq!(ids, ["top", "l1", "p2", "li3", "inner", "deep"]);
        // Every noted key where it occurs, whatever matched.
        assert_eq!(keys, expected);
        // No set at all: no key, no element; a set of notes alone still reports them.
        let mut count = 0;
        assert!(SelectorSet::matching_any(&[], &tree, tree.root(), |_, _| count += 1).is_empty());
        assert_eq!(count, 0);
        let mut notes = SelectorSet::default();
        notes.note(true, "ad");
        notes.note(false, "p2");
        let mut keys = Vec::new();
        let found = SelectorSet::matching_any(&[&notes], &tree, tree.root(), |is_class, key| {
            keys.push((is_class, key.to_string()))
        });
        assert!(found.is_empty());
        let expected = [(true, "ad"), (false, "p2"), (true, "ad")].map(|(c, k)| (c, k.to_string()));
        assert_eq!(keys, expected);
    }

    proptest::proptest! {
        /// Class names are what splitting at ASCII whitespace gives.
        #[test]
        fn class_tokens_split_like_std(value in "([a-z]{0,9}|[ \t\n\r\x0b\x0c\x01\x1f!é€]){0,12}") {
            let ours: Vec<&str> = ClassTokens::of(&value).collect();
            let std: Vec<&str> = value.split_ascii_whitespace().collect();
            proptest::prop_assert_eq!(ours, std);
        }
    }

    proptest::proptest! {
        /// Names are found by their bit where they own it and through the map where they share
        /// it; names not held are not found.
        #[test]
        fn names_are_found_by_their_bit_or_through_the_map(
            names in proptest::collection::vec("[a-z-]{1,6}", 0..300),
            others in proptest::collection::vec("[a-z-]{1,6}", 0..40),
        ) {
            let map: FxHashMap<LocalName, usize> =
                names.iter().enumerate().map(|(i, n)| (LocalName::from(n.as_str()), i)).collect();
            let index = ByAtom::new(map.clone());
            proptest::prop_assert_eq!(index.len(), map.len());
            for name in names.iter().chain(&others) {
                let name = LocalName::from(name.as_str());
                proptest::prop_assert_eq!(index.get(&name), map.get(&name));
            }
        }
    }

    proptest::proptest! {
        /// A key filter never rules out a key it holds.
        #[test]
        fn key_filters_hold_what_was_inserted(keys in proptest::collection::vec("[a-zA-Z0-9_-]{0,12}", 0..40)) {
            let mut filter = KeyFilter::default();
            let mut names = KeyFilter::default();
            for key in &keys {
                filter.insert(KeyFilter::str_bit(key));
                names.insert(KeyFilter::atom_bit(&LocalName::from(key.as_str())));
            }
            for key in &keys {
                proptest::prop_assert!(filter.may_hold(KeyFilter::str_bit(key)));
                proptest::prop_assert!(names.may_hold(KeyFilter::atom_bit(&LocalName::from(key.as_str()))));
            }
        }
    }

    /// Markup from a small vocabulary, so that random selectors of the same vocabulary match.
    fn random_page() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let open = (
            prop::sample::select(vec!["div", "p", "a", "span", "li", "svg"]),
            prop::collection::vec(prop::sample::select(vec!["ad", "x", "y", "Ad", ""]), 0..3),
            prop::option::of(prop::sample::select(vec!["ad", "top", "", "x"])),
            prop::option::of(prop::sample::select(vec!["https://ads.example/1", "/x", "https://ads"])),
        )
            .prop_map(|(tag, classes, id, href)| {
                let mut html = format!("<{tag} class=\"{}\"", classes.join(" "));
                if let Some(id) = id {
                    html += &format!(" id=\"{id}\"");
                }
                if let Some(href) = href {
                    html += &format!(" href=\"{href}\" data-x=\"{href}\"");
                }
                html + ">"
            });
        let close = prop::sample::select(vec!["</div>", "</p>", "t"]).prop_map(str::to_string);
        let piece = prop_oneof![open, close];
        prop::collection::vec(piece, 0..30).prop_map(|v| v.concat())
    }

    const RANDOM_SELECTORS: &[&str] = &[
        ".ad", "#ad", "#top", ".x", ".Ad", "div.ad", ".ad > p", ".x .y", "#ad.x", ".y:first-child",
        "a[href^='https://ads']", "[data-x^='https://ads.example/']", "[href]", "p", "*:last-child",
        "span + p", ".ad ~ div", "li:not(.x)", "[id=top]", "#x",
        "a[href^='https://ads'] > span", "[data-x^='https://ads.example/'] > p",
        "a[href^='https://ads.'] > *", "[href^='https://ads'] p", "[href='/x'] span",
        "a[data-x*='ads'] > p", "div[href] *", "[href$='/1'] [href] p",
        "[href*='ads']", "a[href*='example/']", "[href*='s']", "[href*='ads'] p",
        "[data-x*='/x'] > span", "[href*='ads']:not(.x)",
    ];

    proptest::proptest! {
        #[test]
        fn one_walk_matches_like_separate_selectors(
            html in random_page(),
            first in proptest::collection::vec(proptest::sample::select(RANDOM_SELECTORS), 0..6),
            second in proptest::collection::vec(proptest::sample::select(RANDOM_SELECTORS), 0..6),
        ) {
            let tree = Tree::parse(&html);
            let parse = |list: &[&str]| {
                list.iter().map(|s| Selector::parse(s).expect("valid")).collect::<Vec<_>>()
            };
            let (first, second) = (parse(&first), parse(&second));
            let singles: Vec<Selector> = first.iter().chain(&second).cloned().collect();
            let mut expected: Vec<NodeId> = singles
                .iter()
                .flat_map(|sel| select_all(&tree, tree.root(), sel))
                .collect();
            expected.sort_unstable();
            expected.dedup();
            let (first, second) = (SelectorSet::new(first), SelectorSet::new(second));
            let sets = [&first, &second];
            let mut found = SelectorSet::matching_any(&sets, &tree, tree.root(), |_, _| {});
            found.sort_unstable();
            proptest::prop_assert_eq!(&found, &expected, "{:?}", html);
            let mut separate = first.matching(&tree, tree.root());
            separate.extend(second.matching(&tree, tree.root()));
            separate.sort_unstable();
            separate.dedup();
            proptest::prop_assert_eq!(found, separate);
            // From inside the page, ancestors above the walk's root still count.
            if let Some(inner) = tree.traverse(tree.root()).find_map(|edge| match edge {
                Edge::Open(id) if tree.element(id).is_some()
                    && tree.ancestors(id).count() >= 4 =>
                {
                    Some(id)
                }
                _ => None,
            }) {
                let mut expected: Vec<NodeId> = singles
                    .iter()
                    .flat_map(|sel| select_all(&tree, inner, sel))
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                let mut found = SelectorSet::matching_any(&sets, &tree, inner, |_, _| {});
                found.sort_unstable();
                proptest::prop_assert_eq!(found, expected);
            }
        }
    }

    const RANDOM_ATTR_TESTS: &[&str] = &[
        "[href]", "[href^='https://ads']", "[href*='ads']", "[href='/x']", "[data-x$='/1']", "[class~=ad]",
        "[class~=AD i]", "[id=top]", "[id|=to]", "[href*='EXAMPLE' i]", "[data-x]", "[class]",
    ];

    proptest::proptest! {
        /// `X:not([a]):not([b], [c])`, whose attribute tests are grouped by name, matches where
        /// `X` does and none of the tests, each matched as a selector of its own, does.
        #[test]
        fn negated_attribute_tests_match_like_separate_selectors(
            html in random_page(),
            base in proptest::sample::select(vec!["", "a", "div.ad", "*", "p#top"]),
            negated in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(RANDOM_ATTR_TESTS), 1..3), 0..5,
            ),
        ) {
            let tree = Tree::parse(&html);
            let nots: String = negated.iter().map(|tests| format!(":not({})", tests.join(", "))).collect();
            let text = if base.is_empty() && nots.is_empty() { "*".to_string() } else { format!("{base}{nots}") };
            let combined = Selector::parse(&text).expect("valid");
            let base = Selector::parse(if base.is_empty() { "*" } else { base }).expect("valid");
            let tests: Vec<Selector> =
                negated.iter().flatten().map(|t| Selector::parse(t).expect("valid")).collect();
            for id in tree.walk(tree.root()) {
                let Some(element) = tree.element(id) else { continue };
                let expected = base.matches(&tree, id) && !tests.iter().any(|t| t.matches(&tree, id));
                proptest::prop_assert_eq!(combined.matches(&tree, id), expected, "{} {:?}", text, html);
                if element.ns == Ns::Html {
                    let local = combined.matches_local(&element.name, |name| tree.attr(id, name));
                    proptest::prop_assert_eq!(local, expected, "{} {:?}", text, html);
                }
            }
        }
    }

    #[test]
    fn substring_tests_of_one_attribute_are_searched_for_together() {
        let html = "<a id=a1 href='https://ads.example/ads/1'>x</a><a id=a2 href='/news/1'>y</a>\
                    <a id=a3 href='/jump/next.php?r=1'>z</a><a id=a4 href='https://ADS.example/'>w</a>\
                    <p id=p1 data-x='ads'><span id=s1>t</span></p>";
        let tree = Tree::parse(html);
        let texts = [
            "a[href*='ads']", "a[href*='ads'].x", "[href*='/ads/1']", "[href*='/jump/next.php?r=']",
            "[href*='ads' i]", "[data-x*='ad'] > span", "[data-x*='ds'] span",
        ];
        let selectors: Vec<Selector> = texts.iter().map(|t| Selector::parse(t).expect("valid")).collect();
        let set = SelectorSet::new(selectors.clone());
        let by_name = set.by_name.get(&LocalName::from("href")).expect("filed under href");
        assert!(by_name.subject.substrings.is_some(), "the case-sensitive *= tests share a searcher");
        let mut expected: Vec<NodeId> = selectors.iter().flat_map(|s| select_all(&tree, tree.root(), s)).collect();
        expected.sort_unstable();
        expected.dedup();
        let ids = |found: &[NodeId]| found.iter().map(|&id| tree.attr(id, "id").unwrap_or("").to_string()).collect::<Vec<_>>();
        assert_eq!(ids(&set.matching(&tree, tree.root())), ids(&expected));
        assert_eq!(ids(&expected), ["a1", "a3", "a4", "s1"]);
    }

    #[test]
    fn an_ancestor_with_the_attribute_arms_the_rules_below_it() {
        let tree = Tree::parse(concat!(
            r#"<div id=out data-x="https://ads.example/"><p id=p0></p>"#,
            r#"<a id=l1 href="https://ads.example/x"><span><img id=i1></span></a>"#,
            r#"<a id=l2 href="https://news.example/"><img id=i2></a>"#,
            r#"</div><img id=i3>"#,
        ));
        let set = SelectorSet::new(
            ["a[href^='https://ads.'] img", "[data-x$='example/'] > p"]
                .iter()
                .map(|s| Selector::parse(s).expect("valid")),
        );
        assert!(set.by_tag.is_empty() && set.everywhere.is_empty());
        assert_eq!(set.by_name.len(), 2);
        let names = |found: Vec<NodeId>| -> Vec<String> {
            found.iter().map(|&id| tree.attr(id, "id").unwrap_or("-").to_string()).collect()
        };
        assert_eq!(names(set.matching(&tree, tree.root())), ["p0", "i1"]);
        // Walked from inside the link or the div: their own attributes still arm the rules.
        let span = tree.parent(select_all(&tree, tree.root(), &"#i1".parse().expect("valid"))[0]);
        assert_eq!(names(set.matching(&tree, span.expect("a parent"))), ["i1"]);
        let p0 = select_all(&tree, tree.root(), &"#p0".parse().expect("valid"))[0];
        assert_eq!(names(set.matching(&tree, p0)), ["p0"]);
    }

    #[test]
    fn selectors_can_be_shared_between_threads() {
        fn assert_send_sync<T: Send + Sync + Clone + std::fmt::Debug>() {}
        assert_send_sync::<Selector>();
        assert_send_sync::<SelectorSet>();
    }
}
