//! One whole-document transform, shared by the proxy and `pith extract`.
//!
//! Both callers hand over a complete, decoded document (the proxy buffers a page up to
//! `limits.max_rewrite_bytes` before rewriting, so a page is either rewritten whole or passed
//! through whole), and get back the bytes to serve. Keeping this in one function is what makes
//! `pith extract` a faithful offline twin of the proxy: the same profile gives the same output.
//!
//! The steps: find the charset and transcode to UTF-8 ([`crate::html::charset`]), apply the
//! profile's stage-1 rules ([`crate::html::stage1`]), then render the requested [`Output`]
//! (the text form parses the filtered page into a [`crate::dom::Tree`]).

use std::sync::Arc;

use crate::html::charset::{self, CharsetSource};
use crate::html::rules::RuleSet;
use crate::html::stage1::{self, RewriteError, Stage1Stats};

/// The form a profile serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The filtered page, as HTML.
    Html,
    /// Its visible text, one block per line (Crunch's "print only text").
    Text,
}

/// What a client gets: a named set of rules and an output form.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Name from the config (`pass`, `declutter`, ...).
    pub name: String,
    /// Stage-1 rules; empty for `pass`.
    pub rules: Arc<RuleSet>,
    /// The form served.
    pub output: Output,
    pass: bool,
}

impl Profile {
    /// A named profile.
    pub fn new(name: &str, rules: Arc<RuleSet>, output: Output) -> Profile {
        Profile { name: name.to_string(), rules, output, pass: false }
    }

    /// The built-in `pass` profile: responses are forwarded untouched.
    pub fn pass() -> Profile {
        Profile { name: "pass".to_string(), rules: Arc::new(RuleSet::empty()), output: Output::Html, pass: true }
    }

    /// True for `pass`: the proxy never buffers or rewrites for it.
    pub fn is_pass(&self) -> bool {
        self.pass
    }
}

/// A transformed document.
#[derive(Debug)]
pub struct Page {
    /// UTF-8 bytes to serve.
    pub body: Vec<u8>,
    /// The Content-Type to serve them with.
    pub content_type: &'static str,
    /// What stage 1 did.
    pub stats: Stage1Stats,
    /// Where the source charset came from.
    pub charset_source: CharsetSource,
    /// The source charset's name.
    pub charset: &'static str,
}

/// Why a document could not be transformed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// Stage 1 could not produce the page whole.
    #[error("rewriting failed: {source}")]
    Rewrite {
        /// The rewriter's error.
        #[from]
        source: RewriteError,
    },
}

/// Transforms one whole document. `content_type` is the response's header, if any, for its
/// charset parameter; `output` is the profile's form unless the caller overrides it.
pub fn process(profile: &Profile, doc: &[u8], content_type: Option<&str>, output: Output) -> Result<Page, PipelineError> {
    let detected = charset::detect(content_type, doc);
    let utf8 = charset::to_utf8(doc, detected.encoding);
    // Even with no rules the rewriter runs: it re-declares the charset as UTF-8.
    let (html, stats) = stage1::rewrite(&profile.rules, &utf8)?;
    let (body, content_type) = match output {
        Output::Html => (html.into_bytes(), "text/html; charset=utf-8"),
        Output::Text => {
            let tree = crate::dom::Tree::parse(&html);
            (crate::render::text::render(&tree).into_bytes(), "text/plain; charset=utf-8")
        }
    };
    Ok(Page { body, content_type, stats, charset_source: detected.source, charset: detected.encoding.name() })
}
