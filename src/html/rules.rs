//! Rule files: the small line-based language that says what stage 1 removes.
//!
//! This module owns parsing and validating rule files into a compiled [`RuleSet`], and the
//! set's form for pages parsed into a tree ([`TreeRules`]); applying the rules to a page is
//! [`super::stage1`]'s job. A profile names one rule file (a built-in one,
//! embedded in the binary, or a file on disk), so a rule set is parsed once at start-up and
//! shared by every request.
//!
//! # Format
//!
//! One rule per line. Blank lines are ignored, and so is a line whose first non-blank character
//! is `#` (a comment). There are no trailing comments: `#` inside a rule is part of the rule,
//! because CSS selectors use it for ids (`remove #cookie-banner`). Selectors are CSS selectors
//! as lol_html supports them (type, class, id, attribute with `= ~= ^= $= *= |=` and the `i`
//! flag, `:not()`, `:nth-child()`, descendant and child combinators, comma lists); each is
//! checked when the file is parsed.
//!
//! | rule | effect |
//! |---|---|
//! | `remove SELECTOR` | drop every matching element with all its content |
//! | `unwrap SELECTOR` | drop the matching element's tags, keep its content |
//! | `strip-attr PATTERN... [in SELECTOR]` | drop attributes whose name matches a pattern (exact, or a prefix ending in `*` such as `on*`), on matching elements or, without `in`, on every element |
//! | `strip-url SCHEME...` | drop the attributes through which a URL runs when followed or loaded (`a href`, `form action`, `iframe src`, ...) if the URL uses one of these schemes, read as browsers read it (entities, tabs and newlines, leading spaces, case) |
//! | `remove-hidden` | drop elements hidden by the `hidden` attribute or an inline `display: none` / `visibility: hidden` style, which would show once styles are stripped |
//! | `remove-comments` | drop every HTML comment |
//!
//! Every bad line of a file is reported, each with its line number, not just the first one.
//! All `strip-attr` rules without `in`, `strip-url` and `remove-hidden` share one pass over each
//! element's attributes, however many such rules a file has.
//! `filters/README.md` documents the format for users, with examples.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use lol_html::Selector;
use markup5ever::LocalName;
use rustc_hash::FxHashMap;

use crate::dom::select::Selector as DomSelector;

/// The built-in rule files, by the name a profile uses for them.
pub const BUILTIN: &[(&str, &str)] = &[
    ("declutter", include_str!("../../filters/declutter.rules")),
    ("reader", include_str!("../../filters/reader.rules")),
];

/// A compiled rule file: what one profile removes in stage 1.
///
/// Cheap to clone (the rules are shared), `Send` and `Sync`, so one parsed set serves every
/// connection.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Arc<[Rule]>,
    /// Each rule's selector as written, beside `rules`.
    selectors: Arc<[String]>,
    everywhere: Arc<[AttrPattern]>,
    url_schemes: Arc<[String]>,
    remove_hidden: bool,
    remove_comments: bool,
    fingerprint: u64,
    /// The set compiled for pages parsed into a tree, made on first use ([`TreeRules`]).
    tree: Arc<OnceLock<TreeRules>>,
}

/// One rule with a selector, in file order.
#[derive(Debug, Clone)]
pub(crate) enum Rule {
    /// `remove SELECTOR`
    Remove(Selector),
    /// `unwrap SELECTOR`
    Unwrap(Selector),
    /// `strip-attr PATTERN... in SELECTOR`
    StripAttr {
        selector: Selector,
        patterns: Arc<[AttrPattern]>,
    },
}

/// An attribute-name pattern of `strip-attr`; names are matched in ASCII lowercase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AttrPattern {
    /// The whole name, e.g. `style`.
    Exact(String),
    /// A name prefix, written with a trailing `*`, e.g. `on*`.
    Prefix(String),
}

impl AttrPattern {
    /// True when `name` (already lowercase) matches the pattern.
    pub(crate) fn is_match(&self, name: &str) -> bool {
        match self {
            AttrPattern::Exact(exact) => name == exact,
            AttrPattern::Prefix(prefix) => name.starts_with(prefix.as_str()),
        }
    }

    /// [`AttrPattern::is_match`] on `name` in any case. The pattern is lowercase, so this is
    /// the same as lowering the name first, without the copy a camel-cased SVG name would cost.
    #[inline]
    pub(crate) fn is_match_any_case(&self, name: &str) -> bool {
        match self {
            AttrPattern::Exact(exact) => name.eq_ignore_ascii_case(exact),
            AttrPattern::Prefix(prefix) => name
                .as_bytes()
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes())),
        }
    }
}

/// Why a rule file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// The file could not be read.
    #[error("cannot read rule file {}", path.display())]
    Io {
        /// The file named by the configuration.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// One or more lines are not valid rules; all of them are listed.
    #[error("{}", DisplayLines(origin, errors))]
    Invalid {
        /// The file name the rules came from.
        origin: String,
        /// Every bad line, in file order.
        errors: Vec<LineError>,
    },
}

/// One bad line of a rule file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// The line as written (trimmed).
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Formats the error list as `origin:line: reason: `text``, one per line.
struct DisplayLines<'a>(&'a str, &'a [LineError]);

impl fmt::Display for DisplayLines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.1.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}:{}: {}: `{}`", self.0, e.line, e.reason, e.text)?;
        }
        Ok(())
    }
}

impl RuleSet {
    /// Reads and parses a rule file; errors name the file (and each bad line).
    pub fn parse(path: &Path) -> Result<RuleSet, RuleError> {
        let text = std::fs::read_to_string(path).map_err(|source| RuleError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        RuleSet::parse_str(&text, &path.display().to_string())
    }

    /// Parses rule text; `origin` is the file name used in error messages.
    pub fn parse_str(text: &str, origin: &str) -> Result<RuleSet, RuleError> {
        let mut builder = Builder::default();
        let mut errors = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Err(reason) = builder.add(line) {
                errors.push(LineError {
                    line: index + 1,
                    text: line.to_string(),
                    reason,
                });
            }
        }
        if errors.is_empty() {
            Ok(builder.build())
        } else {
            Err(RuleError::Invalid {
                origin: origin.to_string(),
                errors,
            })
        }
    }

    /// A rule file shipped inside the binary, by name (see [`BUILTIN`]); `None` for an unknown
    /// name. The built-in files are checked by the test suite, so they always parse.
    pub fn builtin(name: &str) -> Option<RuleSet> {
        let (file, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        RuleSet::parse_str(text, &format!("{file}.rules")).ok()
    }

    /// No rules: stage 1 then only re-declares the charset.
    pub fn empty() -> RuleSet {
        Builder::default().build()
    }

    /// True when the set removes nothing.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && self.everywhere.is_empty()
            && self.url_schemes.is_empty()
            && !self.remove_hidden
            && !self.remove_comments
    }

    /// A stable 64-bit hash (FNV-1a) of the rules, ignoring comments, blank lines and
    /// indentation, so cached pages can be keyed by the rules that produced them.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The rules with a selector, in file order.
    pub(crate) fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The patterns of every `strip-attr` written without `in`, merged.
    pub(crate) fn everywhere(&self) -> &Arc<[AttrPattern]> {
        &self.everywhere
    }

    /// True when `remove-hidden` is on.
    pub(crate) fn removes_hidden(&self) -> bool {
        self.remove_hidden
    }

    /// The URL schemes `strip-url` removes, lowercase, without the colon.
    pub(crate) fn url_schemes(&self) -> &[String] {
        &self.url_schemes
    }

    /// True when `remove-comments` is on.
    pub(crate) fn removes_comments(&self) -> bool {
        self.remove_comments
    }

    /// Each rule's selector as written, in the order of [`RuleSet::rules`].
    pub(crate) fn selector_texts(&self) -> &[String] {
        &self.selectors
    }

    /// The set without its attribute-wide work (`strip-attr` without `in`, `strip-url`,
    /// `remove-hidden`), for a page whose tree applies that work as it is built
    /// ([`TreeRules`]). Its fingerprint differs from the whole set's.
    pub(crate) fn without_attribute_pass(&self) -> RuleSet {
        RuleSet {
            rules: Arc::clone(&self.rules),
            selectors: Arc::clone(&self.selectors),
            tree: Arc::default(),
            everywhere: Arc::from([]),
            url_schemes: Arc::from([]),
            remove_hidden: false,
            remove_comments: self.remove_comments,
            fingerprint: !self.fingerprint,
        }
    }
}

/// Accumulates valid rules while a file is parsed.
#[derive(Default)]
struct Builder {
    rules: Vec<Rule>,
    selectors: Vec<String>,
    /// The patterns of `strip-attr` rules without `in`, merged so that a page pays for one pass
    /// over each element's attributes, not one per rule.
    everywhere: Vec<AttrPattern>,
    url_schemes: Vec<String>,
    remove_hidden: bool,
    remove_comments: bool,
    fingerprint: Fnv1a,
}

impl Builder {
    /// Parses one non-blank, non-comment line; the error is the reason shown to the user.
    fn add(&mut self, line: &str) -> Result<(), String> {
        let (directive, rest) = match line.split_once(char::is_whitespace) {
            Some((d, r)) => (d, r.trim()),
            None => (line, ""),
        };
        match directive {
            "remove" => self.push(Rule::Remove(parse_selector(rest)?), rest),
            "unwrap" => self.push(Rule::Unwrap(parse_selector(rest)?), rest),
            "strip-attr" => self.add_strip_attr(rest)?,
            "strip-url" => self.url_schemes.extend(parse_schemes(rest)?),
            "remove-hidden" if rest.is_empty() => self.remove_hidden = true,
            "remove-comments" if rest.is_empty() => self.remove_comments = true,
            "remove-hidden" | "remove-comments" => return Err(format!("{directive} takes no arguments")),
            other => {
                return Err(format!(
                    "unknown directive `{other}` (expected remove, unwrap, strip-attr, strip-url, remove-hidden or remove-comments)"
                ))
            }
        }
        // Only valid rules reach the hash: it fingerprints what runs, in a canonical form.
        self.fingerprint.write(directive.as_bytes());
        for word in rest.split_whitespace() {
            self.fingerprint.write(b" ");
            self.fingerprint.write(word.as_bytes());
        }
        self.fingerprint.write(b"\n");
        Ok(())
    }

    fn push(&mut self, rule: Rule, selector: &str) {
        self.rules.push(rule);
        self.selectors.push(selector.to_string());
    }

    /// Adds a `strip-attr` rule, merging the ones that apply everywhere.
    fn add_strip_attr(&mut self, rest: &str) -> Result<(), String> {
        let (pattern_text, selector_text) = split_at_word(rest, "in");
        let patterns = pattern_text
            .split_whitespace()
            .map(parse_attr_pattern)
            .collect::<Result<Vec<_>, _>>()?;
        if patterns.is_empty() {
            return Err("strip-attr needs at least one attribute name or prefix*".to_string());
        }
        match selector_text {
            None => self.everywhere.extend(patterns),
            Some(text) => self.push(
                Rule::StripAttr {
                    selector: parse_selector(text)?,
                    patterns: patterns.into(),
                },
                text,
            ),
        }
        Ok(())
    }

    fn build(self) -> RuleSet {
        let mut url_schemes = self.url_schemes;
        url_schemes.sort();
        url_schemes.dedup();
        let mut everywhere: Vec<AttrPattern> = Vec::with_capacity(self.everywhere.len());
        for pattern in self.everywhere {
            if !everywhere.contains(&pattern) {
                everywhere.push(pattern);
            }
        }
        RuleSet {
            rules: self.rules.into(),
            selectors: self.selectors.into(),
            tree: Arc::default(),
            everywhere: everywhere.into(),
            url_schemes: url_schemes.into(),
            remove_hidden: self.remove_hidden,
            remove_comments: self.remove_comments,
            fingerprint: self.fingerprint.0,
        }
    }
}

/// Checks a selector with lol_html's own parser, so a rule that parses here always compiles
/// into the rewriter.
fn parse_selector(text: &str) -> Result<Selector, String> {
    if text.is_empty() {
        return Err("missing CSS selector".to_string());
    }
    text.parse::<Selector>()
        .map_err(|e| format!("bad CSS selector ({e})"))
}

/// Splits `text` at the first whitespace-separated occurrence of `word`: what comes before, and
/// (trimmed) what comes after, if the word occurs.
fn split_at_word<'a>(text: &'a str, word: &str) -> (&'a str, Option<&'a str>) {
    let mut word_start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_whitespace(), word_start) {
            (false, None) => word_start = Some(i),
            (true, Some(start)) => {
                if &text[start..i] == word {
                    return (&text[..start], Some(text[i..].trim()));
                }
                word_start = None;
            }
            _ => {}
        }
    }
    (text, None)
}

/// An attribute name, or a non-empty prefix followed by `*`; lowercased, as HTML attribute
/// names are case-insensitive.
fn parse_attr_pattern(word: &str) -> Result<AttrPattern, String> {
    if word == "*" {
        return Err(
            "a bare `*` is not an attribute pattern (write `strip-attr NAME... in SELECTOR`)"
                .to_string(),
        );
    }
    let (name, is_prefix) = match word.strip_suffix('*') {
        Some(prefix) => (prefix, true),
        None => (word, false),
    };
    if let Some(bad) = name
        .chars()
        .find(|c| matches!(c, '"' | '\'' | '<' | '>' | '/' | '=' | '*' | ',') || c.is_control())
    {
        return Err(format!(
            "`{bad}` cannot appear in an attribute name pattern"
        ));
    }
    let name = name.to_ascii_lowercase();
    Ok(if is_prefix {
        AttrPattern::Prefix(name)
    } else {
        AttrPattern::Exact(name)
    })
}

/// One or more URL schemes (`javascript` or `javascript:`), as RFC 3986 spells them.
fn parse_schemes(rest: &str) -> Result<Vec<String>, String> {
    let schemes: Vec<&str> = rest.split_whitespace().collect();
    if schemes.is_empty() {
        return Err("strip-url needs at least one URL scheme".to_string());
    }
    schemes
        .into_iter()
        .map(|word| {
            let scheme = word.strip_suffix(':').unwrap_or(word);
            let mut chars = scheme.chars();
            let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if valid {
                Ok(scheme.to_ascii_lowercase())
            } else {
                Err(format!("`{word}` is not a URL scheme"))
            }
        })
        .collect()
}

/// 64-bit FNV-1a: tiny, dependency-free and stable across builds and platforms, which is all a
/// cache-key fingerprint needs (it is not a defence against chosen collisions).
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Stage 1 for a profile that parses the page into a tree anyway: the rules applied as the
/// tree is built ([`Tree::parse_filtered`](crate::dom::Tree::parse_filtered)) instead of by
/// the streaming rewriter first.
///
/// Rewriting the page with lol_html and then parsing its output costs two passes over the page,
/// and the rewriter's selector matching on every tag (and reading every tag's attributes for
/// `strip-attr on*`, `strip-url` and `remove-hidden`) cost as much as the parse itself. The
/// tree builder has read every element and attribute already, so the rules are decided there,
/// once per element, as the tree is laid out: an element removed by a rule is gone with its
/// subtree, an unwrapped one leaves its content in its place, and text on either side of
/// what went becomes one text node, as a parse of the rewritten page would have it. The
/// `<meta>` charset is re-declared as UTF-8 as the rewriter does.
///
/// This needs every selector to be decidable from the element alone (one compound selector
/// per member, no `:first-child` and the like): the built-in rule files are. A rule file with
/// a combinator runs its rules in the rewriter as before, and only the attribute-wide work
/// moves to the tree. Where lol_html and the tree builder disagree on where an element ends
/// (misnested markup), the tree is the browser's reading; on the development pages the output
/// is byte-identical.
///
/// The compiled form is defined here, beside the [`RuleSet`] that keeps it (made on first use
/// and shared by every clone of the set), and applied by [`super::stage1`], which implements
/// the tree builder's filter for it: stage 1 uses the rules, and the rules know nothing of
/// stage 1. (The set once kept a type of stage 1's, which made the two modules use each other.)
#[derive(Debug)]
pub struct TreeRules {
    /// The rules lol_html still applies first: `None` when the tree builder applies them all.
    pub(super) streaming: Option<RuleSet>,
    /// The rules with a selector, when the tree builder applies them.
    pub(super) rules: Vec<TreeRule>,
    /// Indexes into `rules` by the element name their selector requires (lowercase). Keyed by
    /// the interned name, so that looking an element up hashes and compares one word.
    pub(super) by_tag: FxHashMap<LocalName, Vec<usize>>,
    /// Indexes of rules whose selector matches elements of any name.
    pub(super) any_tag: Vec<usize>,
    pub(super) pass: AttrPass,
    /// [`initials`] of the attribute-wide patterns.
    pub(super) initials: [bool; 256],
    pub(super) remove_comments: bool,
}

/// A rule with a selector, compiled for elements of a tree.
#[derive(Debug)]
pub(super) enum TreeRule {
    Remove(DomSelector),
    Unwrap(DomSelector),
    StripAttr(DomSelector, Arc<[AttrPattern]>),
}

impl TreeRule {
    pub(super) fn selector(&self) -> &DomSelector {
        match self {
            TreeRule::Remove(s) | TreeRule::Unwrap(s) | TreeRule::StripAttr(s, _) => s,
        }
    }
}

impl TreeRules {
    /// The rule set compiled for trees, made once per set and kept with it.
    pub fn of(rules: &RuleSet) -> &TreeRules {
        rules.tree.get_or_init(|| TreeRules::compile(rules))
    }

    fn compile(set: &RuleSet) -> TreeRules {
        let pass = AttrPass::of(set);
        let mut rules = Vec::new();
        for (rule, text) in set.rules().iter().zip(set.selector_texts()) {
            let Some(selector) = DomSelector::parse(text).ok().filter(DomSelector::is_local) else {
                // Not decidable from the element alone: lol_html runs the rules.
                return TreeRules {
                    streaming: Some(set.without_attribute_pass()),
                    rules: Vec::new(),
                    by_tag: FxHashMap::default(),
                    any_tag: Vec::new(),
                    initials: initials(&pass.patterns),
                    pass,
                    remove_comments: false,
                };
            };
            rules.push(match rule {
                Rule::Remove(_) => TreeRule::Remove(selector),
                Rule::Unwrap(_) => TreeRule::Unwrap(selector),
                Rule::StripAttr { patterns, .. } => TreeRule::StripAttr(selector, Arc::clone(patterns)),
            });
        }
        let (mut by_tag, mut any_tag) = (FxHashMap::<LocalName, Vec<usize>>::default(), Vec::new());
        for (index, rule) in rules.iter().enumerate() {
            match rule.selector().subject_tags() {
                Some(mut tags) => {
                    tags.dedup();
                    for tag in tags {
                        by_tag.entry(LocalName::from(tag)).or_default().push(index);
                    }
                }
                None => any_tag.push(index),
            }
        }
        for list in by_tag.values_mut() {
            list.extend_from_slice(&any_tag);
            list.sort_unstable();
            list.dedup();
        }
        let initials = initials(&pass.patterns);
        TreeRules { streaming: None, rules, by_tag, any_tag, pass, initials, remove_comments: set.removes_comments() }
    }
}

/// The attribute-wide work of a set, done in one pass over each element's attributes (by
/// stage 1's handler or as a tree is built): drop names matching `patterns`, drop URL
/// attributes (of stage 1's `URL_TARGETS`) whose URL uses one of `schemes`, and, with
/// `remove_hidden`, drop the whole element if it is hidden.
#[derive(Debug, Clone)]
pub(super) struct AttrPass {
    pub(super) patterns: Arc<[AttrPattern]>,
    pub(super) schemes: Arc<[String]>,
    pub(super) remove_hidden: bool,
}

impl AttrPass {
    /// The attribute-wide work of `set`.
    pub(super) fn of(set: &RuleSet) -> AttrPass {
        AttrPass { patterns: Arc::clone(set.everywhere()), schemes: set.url_schemes().into(), remove_hidden: set.removes_hidden() }
    }
}

/// Which first bytes (lowercase) the names `patterns` match can start with: one lookup rules
/// out most names (`class`, `href`, `id`) before the patterns are tried one by one.
pub(super) fn initials(patterns: &[AttrPattern]) -> [bool; 256] {
    let mut table = [false; 256];
    for pattern in patterns {
        let (AttrPattern::Exact(text) | AttrPattern::Prefix(text)) = pattern;
        match text.as_bytes().first() {
            Some(&first) => table[usize::from(first)] = true,
            // An empty prefix matches every name.
            None => return [true; 256],
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> RuleSet {
        match RuleSet::parse_str(text, "test.rules") {
            Ok(rules) => rules,
            Err(e) => panic!("{e}"),
        }
    }

    fn line_errors(text: &str) -> Vec<(usize, String)> {
        match RuleSet::parse_str(text, "test.rules") {
            Ok(_) => panic!("expected errors in {text:?}"),
            Err(RuleError::Invalid { errors, .. }) => {
                errors.into_iter().map(|e| (e.line, e.text)).collect()
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    /// `rejects!(name, "line", "part of the reason")`
    macro_rules! rejects {
        ($name:ident, $line:expr, $reason:expr) => {
            #[test]
            fn $name() {
                match RuleSet::parse_str($line, "x.rules") {
                    Err(RuleError::Invalid { errors, .. }) => {
                        assert_eq!(errors.len(), 1, "{errors:?}");
                        assert!(
                            errors[0].reason.contains($reason),
                            "reason was {:?}",
                            errors[0].reason
                        );
                    }
                    other => panic!("{:?} was accepted: {other:?}", $line),
                }
            }
        };
    }

    rejects!(
        unknown_directive,
        "delete script",
        "unknown directive `delete`"
    );
    rejects!(remove_without_selector, "remove", "missing CSS selector");
    rejects!(remove_bad_selector, "remove div >", "bad CSS selector");
    rejects!(unsupported_selector, "unwrap a + b", "bad CSS selector");
    rejects!(
        strip_attr_without_patterns,
        "strip-attr in table",
        "at least one attribute"
    );
    rejects!(
        strip_attr_in_without_selector,
        "strip-attr width in",
        "missing CSS selector"
    );
    rejects!(strip_attr_old_order, "strip-attr * on*", "bare `*`");
    rejects!(
        strip_attr_bad_name,
        "strip-attr wi=dth",
        "`=` cannot appear"
    );
    rejects!(
        strip_url_without_scheme,
        "strip-url",
        "at least one URL scheme"
    );
    rejects!(strip_url_bad_scheme, "strip-url 1http", "not a URL scheme");
    rejects!(
        remove_comments_with_argument,
        "remove-comments please",
        "takes no arguments"
    );
    rejects!(
        remove_hidden_with_argument,
        "remove-hidden [style]",
        "remove-hidden takes no arguments"
    );

    #[test]
    fn remove_and_unwrap_parse_whole_selectors() {
        let rules = parse("remove div.ad > p, aside\nunwrap font");
        match rules.rules() {
            [Rule::Remove(_), Rule::Unwrap(_)] => {}
            other => panic!("{other:?}"),
        }
        assert!(!rules.is_empty());
    }

    #[test]
    fn strip_attr_patterns_and_selector() {
        let rules =
            parse("strip-attr ON* Style\nstrip-attr width height in table, td[class~=\"a in b\"]");
        let [Rule::StripAttr {
            patterns: tables,
            selector,
        }] = rules.rules()
        else {
            panic!("{:?}", rules.rules());
        };
        assert_eq!(
            &rules.everywhere()[..],
            &[
                AttrPattern::Prefix("on".into()),
                AttrPattern::Exact("style".into())
            ]
        );
        assert_eq!(
            &tables[..],
            &[
                AttrPattern::Exact("width".into()),
                AttrPattern::Exact("height".into())
            ]
        );
        assert!(format!("{selector:?}").contains("table"));
        assert!(AttrPattern::Prefix("on".into()).is_match("onclick"));
        assert!(!AttrPattern::Exact("style".into()).is_match("styles"));
    }

    #[test]
    fn strip_attr_everywhere_rules_merge_into_one() {
        let rules =
            parse("strip-attr on*\nremove aside\nstrip-attr style on*\nstrip-attr width in td");
        let [Rule::Remove(_), Rule::StripAttr { patterns: td, .. }] = rules.rules() else {
            panic!("{:?}", rules.rules());
        };
        assert_eq!(
            &rules.everywhere()[..],
            &[
                AttrPattern::Prefix("on".into()),
                AttrPattern::Exact("style".into())
            ]
        );
        assert_eq!(&td[..], &[AttrPattern::Exact("width".into())]);
    }

    #[test]
    fn strip_url_collects_schemes() {
        let rules = parse("strip-url JavaScript: vbscript\nstrip-url javascript");
        assert_eq!(rules.url_schemes(), ["javascript", "vbscript"]);
        assert!(rules.rules().is_empty());
        assert!(!rules.is_empty());
    }

    #[test]
    fn remove_hidden_parses() {
        let rules = parse("remove-hidden");
        assert!(rules.removes_hidden() && !rules.is_empty() && rules.rules().is_empty());
    }

    #[test]
    fn remove_comments_and_blank_and_comment_lines() {
        let rules = parse("# a comment\n\n   # indented comment\nremove-comments\n");
        assert!(rules.removes_comments());
        assert!(parse("# only comments\n\n").is_empty());
        assert!(RuleSet::empty().is_empty());
    }

    #[test]
    fn hash_inside_a_rule_is_a_css_id() {
        let rules = parse("remove #cookie-banner");
        assert_eq!(rules.rules().len(), 1);
    }

    #[test]
    fn every_bad_line_is_reported_with_its_number() {
        let text = "remove script\nbogus line\n# fine\nremove ]]\nstrip-url\nunwrap font\n";
        assert_eq!(
            line_errors(text),
            vec![
                (2, "bogus line".to_string()),
                (4, "remove ]]".to_string()),
                (5, "strip-url".to_string())
            ]
        );
        let Err(e) = RuleSet::parse_str(text, "mine.rules") else {
            panic!("accepted")
        };
        let shown = e.to_string();
        assert!(
            shown.starts_with("mine.rules:2: unknown directive `bogus`"),
            "{shown}"
        );
        assert!(
            shown.contains("\nmine.rules:4: bad CSS selector"),
            "{shown}"
        );
        assert!(
            shown.ends_with("mine.rules:5: strip-url needs at least one URL scheme: `strip-url`"),
            "{shown}"
        );
    }

    #[test]
    fn parse_reads_files_and_names_missing_ones() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("site.rules");
        std::fs::write(&path, "remove aside\nnope\n").expect("writable temporary file");
        let Err(RuleError::Invalid { origin, errors }) = RuleSet::parse(&path) else {
            panic!("accepted")
        };
        assert!(origin.ends_with("site.rules"));
        assert_eq!(errors[0].line, 2);
        let missing = dir.path().join("missing.rules");
        let Err(RuleError::Io { path, .. }) = RuleSet::parse(&missing) else {
            panic!("read a missing file")
        };
        assert_eq!(path, missing);
    }

    #[test]
    fn fingerprint_ignores_comments_and_spacing_only() {
        let a = parse("remove script\nstrip-attr on*   style");
        let b = parse("# why\n  remove   script\n\nstrip-attr on* style\n");
        let c = parse("remove script\nstrip-attr on*");
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_ne!(RuleSet::empty().fingerprint(), a.fingerprint());
        assert_eq!(
            RuleSet::empty().fingerprint(),
            0xcbf2_9ce4_8422_2325,
            "FNV-1a of nothing"
        );
    }

    #[test]
    fn builtin_declutter_parses() {
        for (name, text) in BUILTIN {
            if let Err(e) = RuleSet::parse_str(text, name) {
                panic!("built-in {name} does not parse:\n{e}");
            }
        }
        let declutter = RuleSet::builtin("declutter").expect("declutter is built in");
        assert!(declutter.removes_comments() && declutter.removes_hidden());
        assert_eq!(declutter.url_schemes(), ["javascript", "vbscript"]);
        assert!(declutter
            .everywhere()
            .contains(&AttrPattern::Prefix("on".into())));
        assert!(declutter
            .everywhere()
            .contains(&AttrPattern::Exact("style".into())));
        assert!(declutter.rules().len() > 15);
        assert!(RuleSet::builtin("no-such-profile").is_none());
    }

    #[test]
    fn rule_sets_are_shareable() {
        fn assert_shareable<T: Send + Sync + Clone + 'static>() {}
        assert_shareable::<RuleSet>();
    }
}
