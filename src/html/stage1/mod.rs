//! Stage 1: the streaming rewrite of a UTF-8 page by a profile's rules.
//!
//! This module owns driving lol_html: it turns a [`RuleSet`] into lol_html handlers, feeds the
//! page through them (whole, with [`rewrite`], or chunk by chunk, with [`Rewriter`]) and counts
//! what was removed. It also re-declares the charset, because its input is always UTF-8 (the
//! caller transcodes first, see [`super::charset`]). It knows nothing of HTTP or tokio.
//!
//! # Failure
//!
//! A page is never truncated. lol_html's graceful bail-out is on for both of its recoverable
//! failures: the memory limit (a huge tag or comment split across chunks, very deep nesting) and
//! an error from a handler. When either fires mid-page, lol_html flushes every byte it was given
//! but had not yet written, the rest of the page passes through unfiltered, and
//! [`Stage1Stats::bailed_out`] says so.
//!
//! lol_html's strict mode is off. In strict mode a "parsing ambiguity" (a raw-text tag such as
//! `<style>` inside `<select>`, or anything after `<frameset>`, where only a full tree builder
//! knows how a browser would parse the rest) is a fatal error with no graceful bail-out: the
//! output written so far is all there is, so the page would be cut short. Strict mode exists to
//! stop a sanitiser from being tricked into letting a script through; pith is not a sanitiser
//! (the origin can always serve scripts to a client that bypasses the proxy), and a best-effort
//! parse of rare non-conforming markup is better for the reader than an unfiltered rest of the
//! page, let alone a truncated one.
//!
//! # Trees
//!
//! A profile that parses the page into a tree anyway has the rules applied as the tree is built
//! instead: the rule set compiles itself for that ([`TreeRules`](super::rules::TreeRules), kept with
//! the set), and [`tree`] implements the tree builder's [`BuildFilter`](crate::dom::BuildFilter)
//! for it, with the same predicates the streaming handlers use ([`predicates`]). The compiled
//! form lives with the rules so that this module uses the rules and the rules never use this
//! module.
//!
//! # Layout
//!
//! This file drives lol_html (settings, handlers, [`Rewriter`]); `tree.rs` is the tree build
//! filter; `predicates.rs` holds what both ask of an attribute (hiding styles, URL schemes with
//! their character references, the charset declarations).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use lol_html::errors::RewritingError;
use lol_html::html_content::{Attribute, BailOut, Comment};
use lol_html::send::{
    DocumentContentHandlers, Element, ElementContentHandlers, HtmlRewriter, Settings,
};
use lol_html::{HandlerResult, MemorySettings, OutputSink, Selector};

use super::rules::{AttrPass, Rule, RuleSet};
use predicates::{hides, is_url_attribute, url_scheme, utf8_charset, utf8_content_type, URL_TARGETS};

mod predicates;
pub(crate) use predicates::{decoded_chars, scheme_of};
mod tree;

/// lol_html's memory limit per page by default. Its buffers hold at most one unfinished tag,
/// comment or text run plus the open-element stack, so real pages stay far below this; a page
/// that does not (say a multi-megabyte `data:` URL split across chunks) passes through
/// unfiltered from there on instead of growing memory without bound.
pub const DEFAULT_MEMORY_LIMIT: usize = 16 * 1024 * 1024;

/// The elements of [`URL_TARGETS`] that carry their attribute, as one selector. Each selector
/// names its element, so lol_html reads the attributes of these few tags only.
static URL_ELEMENTS: LazyLock<Selector> = LazyLock::new(|| {
    let list: Vec<String> = URL_TARGETS
        .iter()
        .map(|(tag, attr)| format!("{tag}[{}]", attr.replace(':', "\\:")))
        .collect();
    list.join(", ")
        .parse()
        .expect("the URL target list is a valid selector")
});

static ANY_ELEMENT: LazyLock<Selector> =
    LazyLock::new(|| "*".parse().expect("a valid selector literal"));

static META_CHARSET: LazyLock<Selector> =
    LazyLock::new(|| "meta[charset]".parse().expect("a valid selector literal"));

static META_CONTENT_TYPE: LazyLock<Selector> = LazyLock::new(|| {
    "meta[http-equiv=content-type i]"
        .parse()
        .expect("a valid selector literal")
});

/// What stage 1 did, for logs and response headers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stage1Stats {
    /// Elements removed by `remove`, `unwrap` or `remove-hidden` (an element inside one already
    /// removed may be counted too: lol_html still visits it).
    pub elements_removed: u64,
    /// Attributes removed by `strip-attr` and `strip-url`, on elements that were kept.
    pub attributes_removed: u64,
    /// Rewriting stopped mid-page (memory limit or handler error) and the rest of the page
    /// passed through unfiltered.
    pub bailed_out: bool,
}

/// Why stage 1 could not produce a page at all. A bail-out is not an error (see the module
/// docs): this only happens when lol_html fails in a way it cannot recover from.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    /// lol_html failed and the output could not be completed.
    #[error("stage 1 could not rewrite the page")]
    Rewriting {
        /// lol_html's error.
        #[source]
        source: RewritingError,
    },
}

/// Rewrites a whole UTF-8 document with the rules. Output is UTF-8 and declares it: an existing
/// `<meta charset>` or `<meta http-equiv=content-type>` is rewritten to utf-8 (unless the rules
/// remove it; the proxy's `Content-Type` header declares the charset anyway).
pub fn rewrite(rules: &RuleSet, html: &str) -> Result<(String, Stage1Stats), RewriteError> {
    rewrite_with_limit(rules, html, DEFAULT_MEMORY_LIMIT)
}

/// [`rewrite`] with a chosen lol_html memory limit.
fn rewrite_with_limit(
    rules: &RuleSet,
    html: &str,
    memory_limit: usize,
) -> Result<(String, Stage1Stats), RewriteError> {
    let mut rewriter = Rewriter::build(rules, memory_limit, html.len());
    rewriter.write(html.as_bytes())?;
    let (bytes, stats) = rewriter.end()?;
    // lol_html only cuts UTF-8 input at token boundaries, so this never has to repair anything.
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok((text, stats))
}

/// Streaming form of [`rewrite`]: feed chunks with [`Rewriter::write`], collect what is ready
/// with [`Rewriter::take_output`], finish with [`Rewriter::end`]. It is `Send`, so a response
/// body stream that owns it can move between threads.
///
/// After a bail-out the remaining chunks are copied through unchanged. After an error the
/// rewriter is finished: every further call returns an error.
#[derive(Debug)]
pub struct Rewriter {
    state: State,
    output: Arc<Mutex<Vec<u8>>>,
    counters: Arc<Counters>,
}

#[derive(Debug)]
enum State {
    // Boxed: lol_html's rewriter is about a kilobyte, and a `Rewriter` moves into body streams.
    Rewriting(Box<HtmlRewriter<'static, SharedSink>>),
    PassingThrough,
    Failed,
}

/// Counts shared between the handlers (which must be `Send`) and the [`Rewriter`].
#[derive(Debug, Default)]
struct Counters {
    elements: AtomicU64,
    attributes: AtomicU64,
    bailed_out: AtomicBool,
}

/// lol_html owns its output sink; this one writes into a buffer the [`Rewriter`] shares.
struct SharedSink(Arc<Mutex<Vec<u8>>>);

impl OutputSink for SharedSink {
    fn handle_chunk(&mut self, chunk: &[u8]) {
        lock(&self.0).extend_from_slice(chunk);
    }
}

/// The buffer stays usable even if a panic elsewhere poisoned the lock: it only holds bytes.
fn lock(buffer: &Mutex<Vec<u8>>) -> MutexGuard<'_, Vec<u8>> {
    buffer.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error for a call after a fatal error (lol_html itself would panic).
#[derive(Debug, thiserror::Error)]
#[error("the stage-1 rewriter was used after a fatal error")]
struct UsedAfterFailure;

impl Rewriter {
    /// A rewriter for one page, with [`DEFAULT_MEMORY_LIMIT`].
    pub fn new(rules: &RuleSet) -> Rewriter {
        Rewriter::build(rules, DEFAULT_MEMORY_LIMIT, 0)
    }

    /// A rewriter whose lol_html buffers may use at most `max_bytes`; past it, the rest of the
    /// page passes through unfiltered.
    pub fn with_memory_limit(rules: &RuleSet, max_bytes: usize) -> Rewriter {
        Rewriter::build(rules, max_bytes, 0)
    }

    fn build(rules: &RuleSet, memory_limit: usize, capacity: usize) -> Rewriter {
        let output = Arc::new(Mutex::new(Vec::with_capacity(capacity)));
        let counters = Arc::new(Counters::default());
        let settings = settings(rules, &counters, memory_limit);
        let rewriter = HtmlRewriter::new(settings, SharedSink(Arc::clone(&output)));
        Rewriter {
            state: State::Rewriting(Box::new(rewriter)),
            output,
            counters,
        }
    }

    /// Feeds the next chunk of the page (chunks may split tags and characters anywhere).
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), RewriteError> {
        let result = match &mut self.state {
            State::Rewriting(rewriter) => rewriter.write(chunk),
            State::PassingThrough => {
                lock(&self.output).extend_from_slice(chunk);
                return Ok(());
            }
            State::Failed => return Err(used_after_failure()),
        };
        result.or_else(|error| self.recover(error))
    }

    /// Drains the output produced so far.
    pub fn take_output(&mut self) -> Vec<u8> {
        let mut buffer = lock(&self.output);
        // The next chunk's output is about as large: start from the same capacity rather than
        // growing from nothing again.
        let capacity = buffer.capacity();
        std::mem::replace(&mut *buffer, Vec::with_capacity(capacity))
    }

    /// What the rewriter has done so far.
    pub fn stats(&self) -> Stage1Stats {
        Stage1Stats {
            elements_removed: self.counters.elements.load(Ordering::Relaxed),
            attributes_removed: self.counters.attributes.load(Ordering::Relaxed),
            bailed_out: self.counters.bailed_out.load(Ordering::Relaxed),
        }
    }

    /// Finishes the page: the output not yet taken, and the final counts.
    pub fn end(mut self) -> Result<(Vec<u8>, Stage1Stats), RewriteError> {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Rewriting(rewriter) => {
                if let Err(error) = rewriter.end() {
                    self.recover(error)?;
                }
            }
            State::PassingThrough => {}
            State::Failed => return Err(used_after_failure()),
        }
        let output = std::mem::take(&mut *lock(&self.output));
        Ok((output, self.stats()))
    }

    /// After a lol_html error: a graceful bail-out (our bail-out handler ran, so the sink has
    /// every byte fed so far) switches to pass-through; anything else is fatal.
    fn recover(&mut self, error: RewritingError) -> Result<(), RewriteError> {
        if self.counters.bailed_out.load(Ordering::Relaxed) {
            tracing::debug!(%error, "stage 1 bailed out; the rest of the page passes through unfiltered");
            self.state = State::PassingThrough;
            Ok(())
        } else {
            self.state = State::Failed;
            Err(RewriteError::Rewriting { source: error })
        }
    }
}

fn used_after_failure() -> RewriteError {
    RewriteError::Rewriting {
        source: RewritingError::ContentHandlerError(Box::new(UsedAfterFailure)),
    }
}

/// lol_html settings for one page: the fixed part ([`base_settings`]), then `remove` and
/// `unwrap` rules in file order, then the attribute work.
fn settings<'s>(
    rules: &'s RuleSet,
    counters: &Arc<Counters>,
    memory_limit: usize,
) -> Settings<'static, 's> {
    let mut settings = base_settings(counters, memory_limit);
    // Removals first: an element that goes needs no attribute work, and is not counted for it.
    for rule in rules.rules() {
        let handler = match rule {
            Rule::Remove(selector) => removal(selector, false, counters),
            Rule::Unwrap(selector) => removal(selector, true, counters),
            Rule::StripAttr { .. } => continue,
        };
        settings = settings.append_element_content_handler(handler);
    }
    if let Some(handler) = attribute_pass(rules, counters) {
        settings = settings.append_element_content_handler(handler);
    }
    for rule in rules.rules() {
        if let Rule::StripAttr { selector, patterns } = rule {
            let pass = AttrPass {
                patterns: Arc::clone(patterns),
                schemes: Arc::from([]),
                remove_hidden: false,
            };
            let handler = pass.into_handler(counters);
            settings = settings.append_element_content_handler((Cow::Borrowed(selector), handler));
        }
    }
    if rules.removes_comments() {
        let remove = |comment: &mut Comment<'_>| {
            comment.remove();
            Ok(())
        };
        settings = settings
            .append_document_content_handler(DocumentContentHandlers::default().comments(remove));
    }
    settings
}

/// What every page gets: the memory limit and graceful bail-outs (recorded in `counters`), no
/// strict mode (see the module docs), and the charset handlers, first so that a rule removing
/// the element still wins.
fn base_settings<'s>(counters: &Arc<Counters>, memory_limit: usize) -> Settings<'static, 's> {
    let memory = MemorySettings::new()
        .with_max_allowed_memory_usage(memory_limit)
        .with_graceful_bail_out_on_memory_limit_exceeded(true);
    let counters = Arc::clone(counters);
    Settings::new_send()
        .with_strict(false)
        .with_memory_settings(memory)
        .with_graceful_bail_out_on_content_handler_error(true)
        .append_bail_out_handler(move |_: &RewritingError, _: &mut BailOut<'_>| {
            counters.bailed_out.store(true, Ordering::Relaxed);
        })
        .append_element_content_handler((
            Cow::Borrowed(&*META_CHARSET),
            on_element(declare_utf8_charset),
        ))
        .append_element_content_handler((
            Cow::Borrowed(&*META_CONTENT_TYPE),
            on_element(declare_utf8_content_type),
        ))
}

/// Wraps a closure as an element handler (this pins the closure's argument type for inference).
fn on_element(
    handler: impl FnMut(&mut Element<'_, '_>) -> HandlerResult + Send + 'static,
) -> ElementContentHandlers<'static> {
    ElementContentHandlers::default().element(handler)
}

/// The handler of a `remove` rule, or of an `unwrap` rule when `keep_content`.
fn removal<'s>(
    selector: &'s Selector,
    keep_content: bool,
    counters: &Arc<Counters>,
) -> (Cow<'s, Selector>, ElementContentHandlers<'static>) {
    let counters = Arc::clone(counters);
    let handler = on_element(move |el: &mut Element<'_, '_>| {
        if !el.removed() {
            if keep_content {
                el.remove_and_keep_content();
            } else {
                el.remove();
            }
            counters.elements.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    });
    (Cow::Borrowed(selector), handler)
}

/// The one handler for the work that looks at every element's attributes: `strip-attr` without
/// `in`, `remove-hidden`, and `strip-url`. Sharing one pass matters: each selector lol_html must
/// try on every element costs throughput on every page. `strip-url` alone is cheaper with its own
/// selector, which names the few elements where a URL can run code.
fn attribute_pass(
    rules: &RuleSet,
    counters: &Arc<Counters>,
) -> Option<(Cow<'static, Selector>, ElementContentHandlers<'static>)> {
    let pass = AttrPass::of(rules);
    let selector = if !pass.patterns.is_empty() || pass.remove_hidden {
        &*ANY_ELEMENT
    } else if !pass.schemes.is_empty() {
        &*URL_ELEMENTS
    } else {
        return None;
    };
    Some((Cow::Borrowed(selector), pass.into_handler(counters)))
}

impl AttrPass {
    fn into_handler(self, counters: &Arc<Counters>) -> ElementContentHandlers<'static> {
        let counters = Arc::clone(counters);
        on_element(move |el: &mut Element<'_, '_>| {
            self.apply(el, &counters);
            Ok(())
        })
    }

    /// Reads each attribute name once (an allocation each: lol_html offers no borrowed name),
    /// which beats a lookup per pattern on elements with few attributes.
    fn apply(&self, el: &mut Element<'_, '_>, counters: &Counters) {
        if el.removed() {
            return;
        }
        let (mut hidden, mut tag) = (false, None);
        let names: Vec<String> = el
            .attributes()
            .iter()
            .filter_map(|attr| {
                let name = attr.name();
                hidden = hidden || (self.remove_hidden && hides(&name, &attr.value()));
                let strip = self.patterns.iter().any(|p| p.is_match(&name))
                    || runs_code(el, attr, &name, &self.schemes, &mut tag);
                strip.then_some(name)
            })
            .collect();
        if hidden
            && !matches!(
                tag.get_or_insert_with(|| el.tag_name()).as_str(),
                "html" | "body"
            )
        {
            el.remove();
            counters.elements.fetch_add(1, Ordering::Relaxed);
            return;
        }
        for name in &names {
            el.remove_attribute(name);
        }
        counters
            .attributes
            .fetch_add(names.len() as u64, Ordering::Relaxed);
    }
}

/// True when `attr` is a URL attribute of [`URL_TARGETS`] whose URL uses one of `schemes`. The
/// element's name is only needed, and then kept in `tag`, once a URL matches.
fn runs_code(
    el: &Element<'_, '_>,
    attr: &Attribute<'_>,
    name: &str,
    schemes: &[String],
    tag: &mut Option<String>,
) -> bool {
    if schemes.is_empty() || !is_url_attribute(name) {
        return false;
    }
    if !url_scheme(&attr.value()).is_some_and(|scheme| schemes.iter().any(|s| **s == *scheme)) {
        return false;
    }
    let tag = tag.get_or_insert_with(|| el.tag_name());
    URL_TARGETS.contains(&(tag.as_str(), name))
}

/// `<meta charset=...>` becomes `utf-8`, unless it already says so.
fn declare_utf8_charset(el: &mut Element<'_, '_>) -> HandlerResult {
    if let Some(value) = el.get_attribute("charset").as_deref().and_then(utf8_charset) {
        el.set_attribute("charset", value)?;
    }
    Ok(())
}

/// `<meta http-equiv=content-type content=...>` gets `charset=utf-8`, unless it already says so.
fn declare_utf8_content_type(el: &mut Element<'_, '_>) -> HandlerResult {
    if let Some(value) = utf8_content_type(el.get_attribute("content").as_deref()) {
        el.set_attribute("content", value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::predicates::{decoded_url_scheme, is_url_attribute};
    use super::tree::{attribute, is_named_by, might_be_named_by, url_attributes};
    use super::*;
    use crate::dom::{LocalName, TagAttr};
    use crate::html::rules::{initials, AttrPattern, TreeRules};
    use proptest::prelude::*;

    fn rules(text: &str) -> RuleSet {
        RuleSet::parse_str(text, "test.rules").unwrap_or_else(|e| panic!("{e}"))
    }

    fn declutter() -> RuleSet {
        RuleSet::builtin("declutter").expect("declutter is built in")
    }

    #[test]
    fn a_removed_noscript_is_held_for_the_image_it_names() {
        let set = declutter();
        let tree_rules = TreeRules::of(&set);
        let html = "<p>x<img src='data:image/gif;base64,R0'><noscript><img src=/real.jpg></noscript></p>";
        let (html, _) = tree_rules.rewrite(html).expect("rewrites");
        let (tree, filtered) = tree_rules.parse(&html);
        let noscript = tree.html_elements_named(&markup5ever::local_name!("noscript")).next().expect("held in the tree");
        assert!(tree.is_removed(noscript), "marked removed");
        assert_eq!(filtered.elements, 1, "counted as removed");
        let img = tree.html_elements_named(&markup5ever::local_name!("img")).next().expect("the image");
        assert_eq!(crate::images::page::source(&tree, img, 800).as_deref(), Some("/real.jpg"));
        assert!(!crate::render::html::render(&tree).contains("noscript"), "never served");
    }

    fn run(rule_text: &str, html: &str) -> (String, Stage1Stats) {
        rewrite(&rules(rule_text), html).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Compares long outputs without printing them whole: where they part, and around it.
    fn assert_same(got: &str, expected: &str) {
        if got != expected {
            let at = got
                .bytes()
                .zip(expected.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            let around = |s: &str| {
                s.get(at.saturating_sub(40)..)
                    .unwrap_or("")
                    .chars()
                    .take(120)
                    .collect::<String>()
            };
            panic!(
                "outputs differ at byte {at} (lengths {} and {}):\n got: {:?}\nwant: {:?}",
                got.len(),
                expected.len(),
                around(got),
                around(expected)
            );
        }
    }

    /// `rewrites!(name, "rules", "input", "expected output", elements_removed, attributes_removed)`
    macro_rules! rewrites {
        ($name:ident, $rules:expr, $input:expr, $expected:expr, $elements:expr, $attributes:expr) => {
            #[test]
            fn $name() {
                let (out, stats) = run($rules, $input);
                assert_eq!(out, $expected);
                let expected = Stage1Stats {
                    elements_removed: $elements,
                    attributes_removed: $attributes,
                    bailed_out: false,
                };
                assert_eq!(stats, expected);
            }
        };
    }

    rewrites!(
        remove_drops_element_and_content,
        "remove script",
        "<p>a</p><script>if (a < b) x('</p>')</script><p>b</p>",
        "<p>a</p><p>b</p>",
        1,
        0
    );
    rewrites!(
        remove_with_selector_list,
        "remove iframe, embed",
        "<p>a<iframe src=x>no</iframe><embed src=y>b</p>",
        "<p>ab</p>",
        2,
        0
    );
    rewrites!(
        remove_by_attribute,
        "remove link[rel~=stylesheet i]",
        "<link rel=\"Stylesheet\" href=a.css><link rel=canonical href=/a>",
        "<link rel=canonical href=/a>",
        1,
        0
    );
    rewrites!(
        unwrap_keeps_content,
        "unwrap font",
        "<font color=red>hi <b>there</b></font>!",
        "hi <b>there</b>!",
        1,
        0
    );
    rewrites!(
        unwrap_form_remove_controls,
        "unwrap form\nremove input, button",
        "<form action=/s><p>Text<input name=q><button>Go</button></p></form>",
        "<p>Text</p>",
        3,
        0
    );
    rewrites!(
        strip_attr_everywhere,
        "strip-attr on* style",
        "<div onclick=\"x()\" style=\"color:red\" class=\"c\" ONMOUSEOVER=y>t</div><p>u</p>",
        "<div class=\"c\">t</div><p>u</p>",
        0,
        3
    );
    rewrites!(
        strip_attr_in_selector,
        "strip-attr width height in table, td",
        "<table width=600><tr><td width=10 height=3>x</td></tr></table><img width=5>",
        "<table><tr><td>x</td></tr></table><img width=5>",
        0,
        3
    );
    rewrites!(
        strip_attr_skips_removed_elements,
        "remove script\nstrip-attr on*",
        "<script onload=x></script><b onclick=y>b</b>",
        "<b>b</b>",
        1,
        1
    );
    rewrites!(strip_url_normalises_like_a_browser, "strip-url javascript",
        "<a href=\"javascript:void(0)\">a</a><a href=\" JaVa&#x53;cript&colon;x\">b</a><a href=\"java\tscript:x\">c</a><a href=\"/js/javascript:x\">d</a><a href=\"https://e.x/\">e</a><iframe src=\"&#106;avascript:x\" title=f></iframe>",
        "<a>a</a><a>b</a><a>c</a><a href=\"/js/javascript:x\">d</a><a href=\"https://e.x/\">e</a><iframe title=f></iframe>", 0, 4);
    rewrites!(
        strip_url_leaves_inert_urls,
        "strip-url javascript",
        "<img src=\"data:image/gif;base64,R0l\" alt=\"javascript:x\"><a title=\"javascript:y\">t</a>",
        "<img src=\"data:image/gif;base64,R0l\" alt=\"javascript:x\"><a title=\"javascript:y\">t</a>",
        0,
        0
    );
    rewrites!(
        strip_url_checks_every_url_attribute,
        "strip-url vbscript",
        "<form action=\"vbscript:x\"><button formaction=\"VBScript:y\">b</button></form>",
        "<form><button>b</button></form>",
        0,
        2
    );
    rewrites!(
        remove_hidden_attribute,
        "remove-hidden",
        "<div hidden>a</div><p hidden=\"\">b</p><div hidden=UNTIL-FOUND>c</div><input type=hidden>",
        "<div hidden=UNTIL-FOUND>c</div><input type=hidden>",
        2,
        0
    );
    rewrites!(remove_hidden_inline_styles, "remove-hidden",
        "<div style=\"color:red; DISPLAY : None !important\">a</div><span style=\"visibility:hidden\">b</span><b style=\"visibility: collapse\">c</b><i style=\"display:none\"><p>d</p></i>e",
        "e", 4, 0);
    rewrites!(remove_hidden_keeps_visible_styles, "remove-hidden",
        "<div style=\"content-visibility: hidden\">a</div><p style=\"display:block;background:url(x;display:none)\">b</p><i style=\"--display:none\">c</i>",
        "<div style=\"content-visibility: hidden\">a</div><p style=\"display:block;background:url(x;display:none)\">b</p><i style=\"--display:none\">c</i>", 0, 0);
    rewrites!(
        remove_hidden_never_empties_the_page,
        "remove-hidden",
        "<html hidden><body style=\"display:none\"><p>a</p></body></html>",
        "<html hidden><body style=\"display:none\"><p>a</p></body></html>",
        0,
        0
    );
    rewrites!(
        remove_hidden_before_strip_style,
        "strip-attr style\nremove-hidden",
        "<p style=\"display:none\">gone</p><p style=\"color:red\">kept</p>",
        "<p>kept</p>",
        1,
        1
    );
    rewrites!(
        remove_comments_everywhere,
        "remove-comments",
        "<!-- top --><p>a<!--x-->b</p><!--[if IE]><p>ie</p><![endif]-->",
        "<p>ab</p>",
        0,
        0
    );
    rewrites!(
        meta_charset_becomes_utf8,
        "",
        "<meta charset=\"windows-1251\"><p>a</p>",
        "<meta charset=\"utf-8\"><p>a</p>",
        0,
        0
    );
    rewrites!(
        meta_content_type_becomes_utf8,
        "",
        "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\">",
        "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">",
        0,
        0
    );
    rewrites!(
        meta_utf8_left_alone,
        "",
        "<meta charset=UTF-8><meta http-equiv=content-type content='text/html;charset=utf8'>",
        "<meta charset=UTF-8><meta http-equiv=content-type content='text/html;charset=utf8'>",
        0,
        0
    );
    rewrites!(
        meta_removed_by_rules_stays_removed,
        "remove meta",
        "<meta charset=\"koi8-r\"><title>t</title>",
        "<title>t</title>",
        1,
        0
    );
    rewrites!(
        empty_rules_pass_through,
        "",
        "<!doctype html><p onclick=x>a<script>b</script><!--c-->",
        "<!doctype html><p onclick=x>a<script>b</script><!--c-->",
        0,
        0
    );

    #[test]
    fn declutter_on_a_small_page() {
        let page = concat!(
            "<!DOCTYPE html><html><head><meta charset=\"iso-8859-1\"><meta property=\"og:title\" content=\"T\">",
            "<meta name=\"viewport\" content=\"width=device-width\"><meta http-equiv=\"refresh\" content=\"30\">",
            "<base href=\"https://example.org/\"><title>T</title><link rel=\"stylesheet\" href=\"s.css\">",
            "<link rel=\"canonical\" href=\"https://example.org/a\"><link rel=\"preconnect\" href=\"https://ads.example\">",
            "<style>p{color:red}</style><script>track()</script></head>",
            "<body onload=\"init()\" bgcolor=\"#fff\"><form id=\"aspnetForm\" action=\"/a\"><!-- header -->",
            "<div style=\"display:none\">menu</div><div hidden>modal</div><div hidden=until-found>found</div>",
            "<svg viewBox=\"0 0 9 9\"><path d=\"M0\"/></svg><svg width=\"90\" height=\"90\"><path d=\"M1\"/></svg>",
            "<h1 style=\"color:red\">Title</h1><p>Body <a href=\"javascript:share()\" onclick=\"s()\">share</a>",
            "<a href=\"/next\" ping=\"https://t.example/\">next</a></p><font face=\"x\">old</font>",
            "<table width=\"800\"><tr><td width=\"200\" bgcolor=\"red\">cell</td></tr></table>",
            "<img src=\"https://t.example/p.gif\" width=\"1\" height=\"1\"><img src=\"photo.jpg\" width=\"640\">",
            "<input type=\"text\" name=\"q\"><button>Search</button><select><option>a</option></select>",
            "<iframe src=\"https://ads.example/\"></iframe><noscript><img src=\"https://t.example/ns.gif\"></noscript>",
            "<video src=\"v.mp4\" autoplay controls></video></form></body></html>",
        );
        let expected = concat!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\">",
            "<meta name=\"viewport\" content=\"width=device-width\">",
            "<base href=\"https://example.org/\"><title>T</title>",
            "<link rel=\"canonical\" href=\"https://example.org/a\">",
            "</head>",
            "<body>",
            "<div hidden=until-found>found</div>",
            "<svg width=\"90\" height=\"90\"><path d=\"M1\"/></svg>",
            "<h1>Title</h1><p>Body <a>share</a>",
            "<a href=\"/next\">next</a></p>old",
            "<table><tr><td>cell</td></tr></table>",
            "<img src=\"photo.jpg\" width=\"640\">",
            "<video src=\"v.mp4\" controls></video></body></html>",
        );
        let (out, stats) = rewrite(&declutter(), page).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out, expected);
        assert_eq!(
            stats,
            Stage1Stats {
                elements_removed: 17,
                attributes_removed: 10,
                bailed_out: false
            }
        );
    }

    #[test]
    fn strip_url_alone_and_folded_into_strip_attr_agree() {
        let page = concat!(
            "<a href=\"javascript:a()\" src=\"javascript:b()\">a</a><img src=\"javascript:c\">",
            "<form action=\" JavaScript:d\"><input formaction=\"javascript:e\" src=\"javascript:f\"></form>",
            "<iframe src=\"java&#x09;script:g\"></iframe><object data=\"javascript:h\" codebase=\"/x\"></object>",
            "<svg><a xlink:href=\"javascript:i\">i</a></svg><area href=\"vbscript:j\"><link href=\"javascript:k\">",
        );
        // Images and stylesheets too: the older browsers pith serves ran such URLs.
        let expected = concat!(
            "<a src=\"javascript:b()\">a</a><img>",
            "<form><input></form>",
            "<iframe></iframe><object codebase=\"/x\"></object>",
            "<svg><a>i</a></svg><area><link>",
        );
        for rule_text in [
            "strip-url javascript vbscript",
            "strip-url javascript vbscript\nstrip-attr never-there*",
        ] {
            let (out, stats) = run(rule_text, page);
            assert_eq!(out, expected, "rules: {rule_text:?}");
            assert_eq!(stats.attributes_removed, 10, "rules: {rule_text:?}");
        }
    }

    #[test]
    fn memory_limit_bails_out_and_passes_the_rest_through() {
        let huge = "A".repeat(16 * 1024);
        let page = format!(
            "<script>1</script><p>a</p><div title=\"{huge}\">x</div><script>2</script><p>b</p>"
        );
        // `strip-attr` on every element makes lol_html buffer whole tags, so the huge one overflows.
        let mut rewriter =
            Rewriter::with_memory_limit(&rules("remove script\nstrip-attr on*"), 4096);
        let mut out = Vec::new();
        for chunk in page.as_bytes().chunks(512) {
            rewriter.write(chunk).unwrap_or_else(|e| panic!("{e}"));
            out.extend(rewriter.take_output());
        }
        let (rest, stats) = rewriter.end().unwrap_or_else(|e| panic!("{e}"));
        out.extend(rest);
        let expected = format!("<p>a</p><div title=\"{huge}\">x</div><script>2</script><p>b</p>");
        assert_same(&String::from_utf8_lossy(&out), &expected);
        assert_eq!(
            stats,
            Stage1Stats {
                elements_removed: 1,
                attributes_removed: 0,
                bailed_out: true
            }
        );
    }

    #[test]
    fn whole_document_bail_out_keeps_the_page_whole() {
        let depth = 300;
        let page = format!(
            "<script>1</script>{}<script>2</script>{}",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        let (out, stats) = rewrite_with_limit(&rules("remove script\nstrip-attr on*"), &page, 4096)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_same(&out, &page.replacen("<script>1</script>", "", 1));
        assert!(stats.bailed_out);
    }

    #[test]
    fn output_can_be_drained_while_streaming() {
        let mut rewriter = Rewriter::new(&rules("remove script"));
        rewriter
            .write(b"<p>first</p><scr")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rewriter.take_output(), b"<p>first</p>");
        rewriter
            .write(b"ipt>x</script><p>second</p>")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rewriter.stats().elements_removed, 1);
        let (rest, stats) = rewriter.end().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rest, b"<p>second</p>");
        assert_eq!(stats.elements_removed, 1);
    }

    #[test]
    fn rewriter_is_send() {
        fn assert_send<T: Send>() {}
        assert_send::<Rewriter>();
    }

    /// Pieces of real-world markup, including the awkward ones, to build pages from.
    const FRAGMENTS: &[&str] = &[
        "<p>",
        "</p>",
        "<div class=\"a\">",
        "</div>",
        "<script>var s = '</p>' < 1;</script>",
        "<!-- c -->",
        "<a href=\"javascript:go()\" onclick=\"x\">",
        "<a href=\"/ok\">",
        "</a>",
        "<div style=\"display:none\">",
        "<font size=2>",
        "</font>",
        "<form action=/s>",
        "</form>",
        "<input name=q>",
        "<meta charset=\"latin1\">",
        "<svg><path d=\"M0\"/></svg>",
        "<noscript><img src=t></noscript>",
        "<table width=5><tr><td bgcolor=red>",
        "</td></tr></table>",
        "héllo wörld ",
        "日本語 ",
        "<textarea><b></textarea>",
        "<style>p{}</style>",
        "<img width=1 height=1 src=x>",
        "<select><option>a</select>",
        "<title>t</title>",
        "&amp; &lt; ",
        "<br/>",
        "<![CDATA[x]]>",
        "<template><p>t</p></template>",
        "<iframe src=x>",
        "</iframe>",
        "<",
    ];

    fn page() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            prop::sample::select(FRAGMENTS).prop_map(String::from),
            "[a-z<>/=\"' !-]{0,8}"
        ];
        prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    fn rewrite_in_chunks(rules: &RuleSet, bytes: &[u8], cuts: &[usize]) -> (Vec<u8>, Stage1Stats) {
        let mut rewriter = Rewriter::new(rules);
        let (mut out, mut last) = (Vec::new(), 0);
        for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
            rewriter
                .write(&bytes[last..cut])
                .unwrap_or_else(|e| panic!("{e}"));
            out.extend(rewriter.take_output());
            last = cut;
        }
        let (rest, stats) = rewriter.end().unwrap_or_else(|e| panic!("{e}"));
        out.extend(rest);
        (out, stats)
    }

    /// The page as the tree of a profile that parses it.
    fn tree_of(rules: &RuleSet, page: &str) -> (crate::dom::Tree, Stage1Stats) {
        let tree_rules = TreeRules::of(rules);
        let (html, mut stats) = tree_rules.rewrite(page).unwrap_or_else(|e| panic!("{e}"));
        let (tree, filtered) = tree_rules.parse(&html);
        stats.elements_removed += filtered.elements;
        stats.attributes_removed += filtered.attributes;
        (tree, stats)
    }

    #[test]
    fn every_url_target_passes_the_quick_tests() {
        assert!(URL_TARGETS.iter().all(|&(_, attr)| is_url_attribute(attr)));
        for &(tag, attr) in URL_TARGETS {
            let in_tree = url_attributes(&LocalName::from(tag));
            assert!(in_tree.contains(&LocalName::from(attr)), "{tag} {attr}");
            assert!(in_tree.iter().all(|a| URL_TARGETS.contains(&(tag, &**a))), "{tag}");
        }
    }

    #[test]
    fn attribute_names_are_matched_as_lowercase_copies_would_be() {
        let names = ["onClick", "viewBox", "o", "xlink:href", ":xmlns", "xlink:Href"].map(LocalName::from);
        let patterns = ["on*", "onclick", "viewbox", "view*", "o", "xlink:href", "xlink:*", ":xmlns", "x*", "*"];
        for name in &names {
            let lowered = str::to_ascii_lowercase(name);
            for text in patterns {
                let pattern = match text.strip_suffix('*') {
                    Some(prefix) => AttrPattern::Prefix(prefix.to_string()),
                    None => AttrPattern::Exact(text.to_string()),
                };
                let expected = pattern.is_match(&lowered);
                let patterns = std::slice::from_ref(&pattern);
                assert_eq!(is_named_by(patterns, name), expected, "{lowered} {text}");
                assert!(!expected || might_be_named_by(&initials(patterns), name), "{lowered} {text}");
                let want = text.trim_end_matches('*');
                let attrs = [TagAttr { name: name.clone(), value: Cow::Borrowed("v") }];
                assert_eq!(attribute(&attrs, want).is_some(), lowered == want, "{lowered} {want}");
            }
        }
    }

    #[test]
    fn built_in_rules_are_applied_as_the_tree_is_built() {
        for name in ["declutter", "reader"] {
            let rules = RuleSet::builtin(name).expect("built in");
            assert!(TreeRules::of(&rules).streaming.is_none(), "{name} runs in lol_html");
        }
        let combinator = rules("remove div > p\nstrip-attr on*");
        assert!(TreeRules::of(&combinator).streaming.is_some());
    }

    /// Pages where the tree must come out as a parse of the rewriter's output would: node for
    /// node, attribute for attribute.
    const TREE_PAGES: &[&str] = &[
        "<p onclick=\"x()\" style=\"color:red\" class=a>kept <b onmouseover=y>bold</b></p>",
        "<div hidden>menu</div><div hidden=until-found>found</div><p style=\"display: none !important\">x</p>",
        "<div style=\"visibility:collapse\">c</div><div style=\"display:block\">shown</div>",
        "<body hidden style=\"display:none\"><p>a page hidden until its scripts run</p></body>",
        "<a href=\"  JavaScript:alert(1)\">run</a><a href=\"java&#x09;script:x\">tab</a><a href=\"/ok\">ok</a>",
        "<a href=\"java&#115;cript:x\">ref</a><a href=\"vbscript:x\">vb</a><a href=\"javascript/not-a-scheme\">rel</a>",
        "<form action=\"javascript:send()\"><p>in a form</p><input name=q><button>Go</button></form><iframe src=\"javascript:x\"></iframe>",
        "<svg width=10><a xlink:href=\"javascript:x\" onload=\"y\"><text>svg link</text></a></svg><svg><path d=M0 /></svg>",
        "<video autoplay src=v.mp4 ping=p></video><img src=a.png ping=\"/t\" alt=\"a picture\"><img width=1 height=1 src=t>",
        "<table width=600><tr><td nowrap bgcolor=red style=\"x\">cell</td></tr></table>",
        "<head><meta charset=latin1><meta http-equiv=Content-Type content=\"text/html; charset=iso-8859-1\"><meta name=author content=A><link rel=stylesheet href=s.css><link rel=canonical href=/c><style>p{}</style><script>var a = 1;</script><script type=application/ld+json>{}</script></head>",
        "<head><meta http-equiv=content-type><meta charset=utf8><meta http-equiv=Content-Type content=\"text/html; charset=UTF-8\"></head>",
        "<p>one <script>x()</script>two<!-- note --> three <font color=red>four</font> five<noscript><img src=p></noscript>.</p>",
        "<body bgcolor=white text=black><p>a<template><b>t</b></template>b<marquee>m</marquee>c</p><dialog>d</dialog><canvas>c</canvas></body>",
    ];

    #[test]
    fn the_tree_gets_what_a_parse_of_the_rewritten_page_gets() {
        use crate::dom::Tree;
        use crate::render::html::render;
        let with_combinator = format!("{}\nremove div > .never", crate::html::rules::BUILTIN[0].1);
        for rules in [declutter(), RuleSet::builtin("reader").expect("built in"), rules(&with_combinator)] {
            for page in TREE_PAGES {
                let (rewritten, stats) = rewrite(&rules, page).unwrap_or_else(|e| panic!("{e}"));
                let expected = Tree::parse(&rewritten);
                let (tree, tree_stats) = tree_of(&rules, page);
                assert_same(&render(&tree), &render(&expected));
                // A held `<noscript>` ([`TreeRules::parse`]) is a node, marked removed.
                if !page.contains("<noscript") {
                    assert_eq!(tree.len(), expected.len(), "{page}");
                }
                assert_eq!(tree_stats.attributes_removed, stats.attributes_removed, "{page}");
                assert_eq!(tree_stats.elements_removed == 0, stats.elements_removed == 0, "{page}");
            }
        }
    }

    proptest! {
        /// Whatever the markup, a tree built with the rules holds no event handler, no style,
        /// no `javascript:` URL where one runs, no element hidden by an attribute and nothing the
        /// rules remove.
        #[test]
        fn the_tree_keeps_nothing_the_rules_remove(page in page()) {
            let (tree, _) = tree_of(&declutter(), &page);
            // What is marked removed (a held `<noscript>`) is never served.
            for id in tree.descendants(tree.root()).filter(|&id| !tree.is_removed(id)) {
                prop_assert!(!matches!(tree.kind(id), crate::dom::NodeKind::Comment(_)));
                let Some(tag) = tree.tag(id) else { continue };
                prop_assert!(!["script", "style", "noscript", "font", "form", "input", "iframe"].contains(&tag), "{tag}");
                for (name, value) in tree.attrs(id) {
                    prop_assert!(!name.starts_with("on") && &**name != "style" && &**name != "hidden", "{tag} {name}");
                    let runs = URL_TARGETS.contains(&(tag, &**name))
                        && decoded_url_scheme(value).is_some_and(|s| &*s == "javascript" || &*s == "vbscript");
                    prop_assert!(!runs, "{tag} {name}={value}");
                }
            }
        }

        #[test]
        fn any_split_gives_the_same_output(page in page(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10)) {
            let rules = declutter();
            let (whole, whole_stats) = rewrite(&rules, &page).unwrap_or_else(|e| panic!("{e}"));
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(page.len() + 1)).collect();
            cuts.sort_unstable();
            let (chunked, stats) = rewrite_in_chunks(&rules, page.as_bytes(), &cuts);
            prop_assert_eq!(String::from_utf8_lossy(&chunked), whole);
            prop_assert_eq!(stats, whole_stats);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), chunk in 1usize..300) {
            let cuts: Vec<usize> = (chunk..bytes.len()).step_by(chunk).collect();
            let (out, stats) = rewrite_in_chunks(&declutter(), &bytes, &cuts);
            prop_assert!(out.len() <= bytes.len() + 64 * stats.attributes_removed as usize + 64);
            // With no rules nothing but a <meta> is ever touched: the bytes pass through as they came.
            let has_meta = bytes.windows(4).any(|w| w.eq_ignore_ascii_case(b"meta"));
            let (passed, _) = rewrite_in_chunks(&RuleSet::empty(), &bytes, &cuts);
            if !has_meta {
                prop_assert_eq!(passed, bytes);
            }
        }
    }
}
