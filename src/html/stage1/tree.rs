//! Stage 1 applied as a tree is built: [`TreeRules`] (the rule set compiled for it, kept with
//! the set in [`crate::html::rules`]) as the tree builder's [`BuildFilter`], deciding each element
//! from its name and attributes with the predicates the streaming handlers use
//! ([`super::predicates`]), so that a tree gets what a parse of the rewritten page would.

use std::borrow::Cow;
use std::sync::Arc;

use markup5ever::local_name;

use super::predicates::{decoded_url_scheme, hides, utf8_charset, utf8_content_type};
use super::{rewrite, RewriteError, Stage1Stats};
use crate::dom::{BuildFilter, Filtered, LocalName, TagAttr, Tree, Verdict};
use crate::html::rules::{AttrPass, AttrPattern, TreeRule, TreeRules};

/// The attribute a `<noscript>` held by [`TreeRules::parse`] carries until it is marked removed.
const HELD: &str = "data-pith-held";

impl TreeRules {
    /// Runs what lol_html still does of the rules, if anything: the page to parse with
    /// [`TreeRules::parse`], and what was removed so far.
    pub fn rewrite<'a>(&self, utf8: &'a str) -> Result<(Cow<'a, str>, Stage1Stats), RewriteError> {
        match &self.streaming {
            Some(rules) => rewrite(rules, utf8).map(|(html, stats)| (Cow::Owned(html), stats)),
            None => Ok((Cow::Borrowed(utf8), Stage1Stats::default())),
        }
    }

    /// Parses the page [`TreeRules::rewrite`] gave, applying the rest of the rules.
    ///
    /// A `<noscript>` a `remove` rule takes is held in the tree, marked removed, rather than
    /// left out: it is never served, but a lazy-loading page keeps the real address of an
    /// image only there, and stage 2 reads it from the copy ([`crate::images::page::source`]).
    pub fn parse(&self, html: &str) -> (Tree, Filtered) {
        let (mut tree, mut filtered) = Tree::parse_filtered(html, self);
        let held: Vec<_> = tree
            .html_elements_named(&local_name!("noscript"))
            .filter(|&id| tree.attr(id, HELD).is_some())
            .collect();
        for id in held {
            tree.remove(id);
            filtered.elements += 1;
        }
        (tree, filtered)
    }

    /// The rules for an element in file order, as the rewriter applies them: the first
    /// `remove` or `unwrap` that matches decides; a kept element then gets the attribute-wide
    /// work and the `strip-attr … in` rules that match it.
    fn decide(&self, element: &LocalName, attrs: &mut Vec<TagAttr<'_>>) -> Verdict {
        let tag: &str = element;
        let candidates = match self.by_tag.get(element) {
            Some(list) => list.as_slice(),
            // Foreign elements keep camel-cased names (`foreignObject`); the keys are lowercase.
            None if tag.bytes().any(|b| b.is_ascii_uppercase()) => self
                .by_tag
                .iter()
                .find(|(key, _)| str::eq_ignore_ascii_case(key, tag))
                .map_or(&self.any_tag[..], |(_, list)| list.as_slice()),
            None => &self.any_tag,
        };
        // Selectors are matched on the attributes as parsed, before any rule strips one.
        let mut strip: Vec<&Arc<[AttrPattern]>> = Vec::new();
        for &index in candidates {
            let rule = &self.rules[index];
            if !rule.selector().matches_local(tag, |name| attribute(attrs, name)) {
                continue;
            }
            match rule {
                TreeRule::Remove(_) if *element == local_name!("noscript") => {
                    // Held, for [`TreeRules::parse`] to mark removed.
                    attrs.clear();
                    attrs.push(TagAttr { name: LocalName::from(HELD), value: Cow::Borrowed("") });
                    return Verdict::Keep { stripped: 0 };
                }
                TreeRule::Remove(_) => return Verdict::Drop,
                TreeRule::Unwrap(_) => return Verdict::Unwrap,
                TreeRule::StripAttr(_, patterns) => strip.push(patterns),
            }
        }
        if *element == local_name!("meta") {
            declare_utf8_in_tree(attrs);
        }
        let Verdict::Keep { mut stripped } = self.pass.in_tree(element, attrs, &self.initials) else {
            return Verdict::Drop;
        };
        for patterns in strip {
            let before = attrs.len();
            attrs.retain(|a| !is_named_by(patterns, &a.name));
            stripped += before - attrs.len();
        }
        Verdict::Keep { stripped }
    }
}

impl BuildFilter for TreeRules {
    fn element(&self, element: &LocalName, attrs: &mut Vec<TagAttr<'_>>) -> Verdict {
        if self.streaming.is_some() {
            self.pass.in_tree(element, attrs, &self.initials)
        } else {
            self.decide(element, attrs)
        }
    }

    fn keeps_comments(&self) -> bool {
        !self.remove_comments
    }
}

impl AttrPass {
    /// The attribute-wide work on an element of a tree being built: `Drop` when
    /// `remove-hidden` hides it, else the attributes to strip go.
    /// `initials` are those of the patterns (`TreeRules::initials`).
    fn in_tree(&self, element: &LocalName, attrs: &mut Vec<TagAttr<'_>>, initials: &[bool; 256]) -> Verdict {
        if attrs.is_empty() {
            return Verdict::Keep { stripped: 0 };
        }
        // Looked up once per element: most elements hold no URL that runs.
        let url_names = if self.schemes.is_empty() { &[][..] } else { url_attributes(element) };
        let strips = |a: &TagAttr<'_>| {
            (might_be_named_by(initials, &a.name) && is_named_by(&self.patterns, &a.name))
                || (url_names.contains(&a.name)
                    && decoded_url_scheme(&a.value).is_some_and(|s| s.is_one_of(&self.schemes)))
        };
        // One look at each attribute for both questions; most elements keep all of theirs,
        // and their vector is then left as it is.
        let (mut hidden, mut strip) = (false, false);
        for a in attrs.iter() {
            hidden |= self.remove_hidden && hides_in_tree(&a.name, &a.value);
            strip = strip || strips(a);
        }
        if hidden && !matches!(*element, local_name!("html") | local_name!("body")) {
            return Verdict::Drop;
        }
        if !strip {
            return Verdict::Keep { stripped: 0 };
        }
        let before = attrs.len();
        attrs.retain(|a| !strips(a));
        Verdict::Keep { stripped: before - attrs.len() }
    }
}

/// The attributes [`URL_TARGETS`] lists for an element, found by its interned name and given
/// as interned names, which a tree's attributes are compared with as atoms (a test keeps the
/// two lists in step).
pub(super) fn url_attributes(element: &LocalName) -> &'static [LocalName] {
    const A: &[LocalName] = &[local_name!("href"), local_name!("xlink:href")];
    const AREA: &[LocalName] = &[local_name!("href")];
    const FORM: &[LocalName] = &[local_name!("action")];
    const BUTTON: &[LocalName] = &[local_name!("formaction")];
    const INPUT: &[LocalName] = &[local_name!("formaction"), local_name!("src")];
    const FRAME: &[LocalName] = &[local_name!("src")];
    const OBJECT: &[LocalName] = &[local_name!("data"), local_name!("codebase")];
    const APPLET: &[LocalName] = &[local_name!("codebase")];
    const VIDEO: &[LocalName] = &[local_name!("poster")];
    const BACKGROUND: &[LocalName] = &[local_name!("background")];
    match *element {
        local_name!("a") => A,
        local_name!("area") | local_name!("link") | local_name!("base") => AREA,
        local_name!("form") => FORM,
        local_name!("button") => BUTTON,
        local_name!("input") => INPUT,
        local_name!("iframe") | local_name!("frame") | local_name!("embed") | local_name!("img") => FRAME,
        local_name!("object") => OBJECT,
        local_name!("applet") => APPLET,
        local_name!("video") => VIDEO,
        local_name!("body") | local_name!("table") | local_name!("td") => BACKGROUND,
        _ => &[],
    }
}

/// False when no pattern with these initials (`super::rules::initials`) can match the attribute's name.
pub(super) fn might_be_named_by(initials: &[bool; 256], name: &LocalName) -> bool {
    name.as_bytes().first().is_none_or(|&first| initials[usize::from(first.to_ascii_lowercase())])
}

/// Whether a tree attribute's name matches one of `patterns` as its lowercase copy would (the
/// patterns are lowercase, the names of foreign attributes keep some capitals: `viewBox`),
/// matched in place.
pub(super) fn is_named_by(patterns: &[AttrPattern], name: &LocalName) -> bool {
    patterns.iter().any(|p| p.is_match_any_case(name))
}

/// [`hides`] for an attribute of a tree: only `hidden` and `style` can hide, which interned
/// names tell apart without reading the name.
fn hides_in_tree(name: &LocalName, value: &str) -> bool {
    matches!(*name, local_name!("hidden") | local_name!("style")) && hides(name, value)
}

/// The value of an element's attribute by its lower-case name (with its prefix, if any), as a
/// lowercase copy of the tree's name would match it.
pub(super) fn attribute<'a>(attrs: &'a [TagAttr<'_>], name: &str) -> Option<&'a str> {
    attrs.iter().find(|a| str::eq_ignore_ascii_case(&a.name, name)).map(|a| &*a.value)
}

/// [`declare_utf8_charset`] and [`declare_utf8_content_type`] on a tree's `<meta>`.
fn declare_utf8_in_tree(attrs: &mut Vec<TagAttr<'_>>) {
    let set = |attrs: &mut Vec<TagAttr<'_>>, name: LocalName, value: &'static str| {
        match attrs.iter_mut().find(|a| a.name == name) {
            Some(attr) => attr.value = Cow::Borrowed(value),
            None => attrs.push(TagAttr { name, value: Cow::Borrowed(value) }),
        }
    };
    if let Some(value) = attribute(attrs, "charset").and_then(utf8_charset) {
        set(attrs, markup5ever::local_name!("charset"), value);
    }
    if attribute(attrs, "http-equiv").is_some_and(|v| v.eq_ignore_ascii_case("content-type")) {
        if let Some(value) = utf8_content_type(attribute(attrs, "content")) {
            set(attrs, markup5ever::local_name!("content"), value);
        }
    }
}
