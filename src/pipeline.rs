//! One whole-document transform, shared by the proxy and `pith extract`.
//!
//! Both callers hand over a complete, decoded document (the proxy buffers a page up to
//! `limits.max_rewrite_bytes` before rewriting, so a page is either rewritten whole or passed
//! through whole), and get back the bytes to serve. Keeping this in one function is what makes
//! `pith extract` a faithful offline twin of the proxy: the same profile gives the same output.
//!
//! The steps: find the charset and transcode to UTF-8 ([`crate::html::charset`]), apply the
//! profile's stage-1 rules ([`crate::html::stage1`]); then, for a profile with stage 2, parse
//! the filtered page into a [`Tree`], run the removers ([`crate::extract::declutter`]) with the
//! settings of the profile and the page's site rule, and render the requested [`Output`]. A
//! profile without stage 2 serves the stage-1 page (its text form still goes through a tree).

use std::sync::Arc;

use crate::dom::Tree;
use crate::extract::declutter::{self, Outcome};
use crate::extract::sites::SiteRules;
use crate::extract::{retainer, url_host, Context, Options, Removal, Settings};
use crate::html::ads::AdFilter;
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
    /// Stage 2 (the removers on a tree), `None` for a profile that serves the stage-1 page.
    pub stage2: Option<Arc<Stage2>>,
    pass: bool,
}

/// A profile's stage 2: what it asks of the removers, and the site rules that refine that per
/// host. Shared (`Arc`) because it is built once from the config.
#[derive(Debug, Clone, Default)]
pub struct Stage2 {
    /// The profile's preset and choices.
    pub options: Options,
    /// Per-site rules, looked up by the page's host.
    pub sites: Arc<SiteRules>,
}

impl Profile {
    /// A named profile without stage 2.
    pub fn new(name: &str, rules: Arc<RuleSet>, output: Output) -> Profile {
        Profile { name: name.to_string(), rules, output, stage2: None, pass: false }
    }

    /// The profile with stage 2 run as `stage2` says.
    pub fn with_stage2(mut self, stage2: Stage2) -> Profile {
        self.stage2 = Some(Arc::new(stage2));
        self
    }

    /// The built-in `pass` profile: responses are forwarded untouched.
    pub fn pass() -> Profile {
        Profile { name: "pass".to_string(), rules: Arc::new(RuleSet::empty()), output: Output::Html, stage2: None, pass: true }
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
    /// What stage 2 removed; `None` when the profile has no stage 2.
    pub removal: Option<Removal>,
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
    /// The page nests elements too deeply to be parsed whole into a tree.
    #[error("the page nests elements more than {depth} deep; it cannot be rendered as text")]
    TooDeep {
        /// The tree's depth limit.
        depth: u32,
    },
}

/// Transforms one whole document. `content_type` is the response's header, if any, for its
/// charset parameter; `output` is the profile's form unless the caller overrides it;
/// `page_url` is the page's absolute address when known (the proxy's request URL, `pith
/// extract --url`): stage 2 resolves links against it and picks the site rule by its host.
pub fn process(
    profile: &Profile,
    doc: &[u8],
    content_type: Option<&str>,
    output: Output,
    page_url: Option<&str>,
) -> Result<Page, PipelineError> {
    let detected = charset::detect(content_type, doc);
    let utf8 = charset::to_utf8(doc, detected.encoding);
    // Even with no rules the rewriter runs: it re-declares the charset as UTF-8.
    let (html, stats) = stage1::rewrite(&profile.rules, &utf8)?;
    let (body, removal) = match &profile.stage2 {
        None if output == Output::Html => (html, None),
        _ => {
            // The tree stops at `dom::MAX_DEPTH` (html5ever is quadratic on deep nesting), so
            // a deeper page cannot be judged or rendered whole from it: the HTML form falls
            // back to the stage-1 page, the text form is refused rather than cut short.
            let tree = Tree::parse(&html);
            match (tree.is_truncated(), &profile.stage2) {
                (true, _) if output == Output::Html => (html, None),
                (true, _) => return Err(PipelineError::TooDeep { depth: crate::dom::MAX_DEPTH }),
                (false, Some(stage2)) => {
                    let (body, removal) = declutter_page(tree, stage2, output, page_url);
                    (body, Some(removal))
                }
                (false, None) => (crate::render::text::render(&tree), None),
            }
        }
    };
    let content_type = match output {
        Output::Html => "text/html; charset=utf-8",
        Output::Text => "text/plain; charset=utf-8",
    };
    Ok(Page {
        body: body.into_bytes(),
        content_type,
        stats,
        charset_source: detected.source,
        charset: detected.encoding.name(),
        removal,
    })
}

/// Stage 2 over a stage-1 page: parse, remove, render (with the "Removed links" section when
/// the retainer is on).
fn declutter_page(mut tree: Tree, stage2: &Stage2, output: Output, page_url: Option<&str>) -> (String, Removal) {
    let host = page_url.and_then(url_host);
    let site = host.and_then(|host| stage2.sites.for_host(&host));
    let settings = Settings::resolve(&stage2.options, site);
    // The shipped lists, parsed once per process on first use.
    let filter = settings.ads.then(AdFilter::builtin);
    let ctx = Context { page_url, ads: filter.as_deref(), site };
    let Outcome { removal, retained } = declutter::run(&mut tree, &settings, &ctx);
    let body = match output {
        Output::Html => {
            let page = crate::render::html::render(&tree);
            retainer::insert_html(&tree, page, &retainer::html_section(&retained))
        }
        Output::Text => {
            let mut text = crate::render::text::render(&tree);
            text.push_str(&retainer::text_section(&retained));
            text
        }
    };
    (body, removal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declutter(output: Output) -> Profile {
        let rules = RuleSet::builtin("declutter").expect("built-in rules");
        Profile::new("declutter", Arc::new(rules), output).with_stage2(Stage2::default())
    }

    const PAGE: &str = concat!(
        "<html><body><ul><li><a href=/a>Home</a><li><a href=/b>World</a></ul>",
        "<p>A paragraph of real article text, long enough to be what the page is about, and then some more words.</p>",
        "<script>track()</script></body></html>"
    );

    #[test]
    fn too_deep_pages_fall_back_whole_or_are_refused() {
        let depth = crate::dom::MAX_DEPTH as usize + 50;
        let doc = format!("<html><body>{}<p>deep text</p>{}</body></html>", "<div>".repeat(depth), "</div>".repeat(depth));
        let stage1_only = process(&Profile::new("s1", declutter(Output::Html).rules, Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        let page = process(&declutter(Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        assert_eq!(page.body, stage1_only.body, "the stage-1 page, whole");
        assert!(String::from_utf8_lossy(&page.body).contains("deep text"));
        assert!(page.removal.is_none());
        let text = process(&declutter(Output::Text), doc.as_bytes(), None, Output::Text, None);
        assert!(matches!(text, Err(PipelineError::TooDeep { .. })), "{text:?}");
    }

    #[test]
    fn stage2_removes_the_menu_in_both_outputs() {
        let page = process(&declutter(Output::Text), PAGE.as_bytes(), None, Output::Text, None).expect("page");
        let text = String::from_utf8(page.body).expect("utf-8");
        assert!(text.starts_with("A paragraph") && !text.contains("Home"), "{text}");
        assert_eq!(page.content_type, "text/plain; charset=utf-8");
        assert_eq!(page.removal.as_ref().map(|r| r.link_lists), Some(1));

        let page = process(&declutter(Output::Html), PAGE.as_bytes(), None, Output::Html, None).expect("page");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains("<p>A paragraph") && !html.contains("Home") && !html.contains("track"), "{html}");
    }

    #[test]
    fn retained_links_are_absolute_and_at_the_end() {
        let mut profile = declutter(Output::Html);
        let stage2 = Stage2 { options: Options { retain_links: Some(true), ..Options::default() }, ..Stage2::default() };
        profile = profile.with_stage2(stage2);
        let url = Some("https://news.example/story/1");
        let html = String::from_utf8(process(&profile, PAGE.as_bytes(), None, Output::Html, url).expect("page").body).expect("utf-8");
        assert!(html.ends_with("<li><a href=\"https://news.example/b\">World</a></li></ul></nav></body></html>"), "{html}");
        let text = String::from_utf8(process(&profile, PAGE.as_bytes(), None, Output::Text, url).expect("page").body).expect("utf-8");
        assert!(text.ends_with("Removed links\nHome <https://news.example/a>\nWorld <https://news.example/b>\n"), "{text}");
    }

    #[test]
    fn without_stage2_the_stage1_page_is_served() {
        let rules = RuleSet::builtin("declutter").expect("built-in rules");
        let profile = Profile::new("light", Arc::new(rules), Output::Html);
        let page = process(&profile, PAGE.as_bytes(), None, Output::Html, None).expect("page");
        assert!(String::from_utf8_lossy(&page.body).contains("Home"));
        assert!(page.removal.is_none());
    }
}
