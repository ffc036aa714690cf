//! One whole-document transform, shared by the proxy and `pith extract`.
//!
//! Both callers hand over a complete, decoded document (the proxy buffers a page up to
//! `limits.max_rewrite_bytes` before rewriting, so a page is either rewritten whole or passed
//! through whole), and get back the bytes to serve. Keeping this in one function is what makes
//! `pith extract` a faithful offline twin of the proxy: the same profile gives the same output.
//!
//! The steps: find the charset and transcode to UTF-8 ([`crate::html::charset`]), apply the
//! profile's stage-1 rules ([`crate::html::stage1`]); then, for a profile with stage 2, run the
//! removers ([`crate::extract::declutter`]) on the page's [`Tree`] with the settings of the
//! profile and the page's site rule, and render the requested [`Output`]. A profile without
//! stage 2 serves the stage-1 page from the streaming rewriter; wherever a tree is built (stage
//! 2, reading mode, a text form) the stage-1 rules are applied as it is built
//! ([`TreeRules`]), so the page is parsed once, not rewritten and then parsed.
//!
//! A profile with a [`Reader`] runs reading mode instead of the removers: the page's metadata
//! is read ([`crate::extract::meta`]), the extractor chosen by the site rule or the profile
//! ([`Algorithm`]) leaves the main content, and the reading page is rendered
//! ([`crate::render::reader`]). When the extractor leaves no clear main content (see
//! [`judge`]), the declutter page is served instead, with a note on the page and in the
//! [`Page::fallback_header`].
//!
//! A page too deep for the tree is served as the stage-1 HTML page whatever form was asked
//! ([`ServedForm::TooDeep`]). That is decided here and returned in [`Page::form`], which the
//! proxy and `pith extract` both obey, so neither refuses a page the other serves.

use crate::dom::{Filtered, Tree};
use crate::extract::algorithm::Algorithm;
use crate::extract::declutter::{self, Outcome};
use crate::extract::hidden::{self, HiddenSource};
use crate::extract::kind::{self, Kind, PageKind, Signals};
use crate::extract::unsure::{self, Evidence};
use crate::extract::lang;
use crate::extract::meta::{self, Meta};
use crate::extract::pith::Choice;
use crate::extract::{
    document_base, kept_stats_of, non_link_chars, url_host, Context, Removal,
    Settings,
};
use crate::ads::AdFilter;
use crate::html::charset::{self, CharsetSource};
use crate::html::translit::OutCharset;
use crate::html::{rules::TreeRules, stage1::{self, RewriteError, Stage1Stats}};
use crate::profile::{Output, Profile, Reader, Stage2};

/// A transformed document.
#[derive(Debug)]
pub struct Page {
    /// The bytes to serve: UTF-8, unless the profile's last pass ([`Profile::adapt`]) wrote
    /// them in another charset, which `content_type` then names.
    pub body: Vec<u8>,
    /// The form they are in, and whether it is the form asked for.
    pub form: ServedForm,
    /// The Content-Type to serve them with ([`ServedForm::content_type`]).
    pub content_type: &'static str,
    /// What stage 1 did.
    pub stats: Stage1Stats,
    /// Where the source charset came from.
    pub charset_source: CharsetSource,
    /// The source charset's name.
    pub charset: &'static str,
    /// What stage 2 removed; `None` when the profile has no stage 2 (or reading mode used
    /// an extractor other than the removers and did not fall back).
    pub removal: Option<Removal>,
    /// What reading mode did; `None` for other profiles.
    pub reading: Option<Reading>,
}

impl Page {
    /// What reading mode adds to the proxy's `x-pith` header ([`Reading::summary`]); `None` for
    /// other profiles.
    pub fn reading_summary(&self) -> Option<String> {
        self.reading.as_ref().map(Reading::summary)
    }

    /// The value of the proxy's `x-pith-fallback` header: set when a text form was asked of a
    /// page too deep for the tree ([`ServedForm::TooDeep`]), when reading mode served the declutter
    /// page, or when the removers' safety net served a gentler preset.
    pub fn fallback_header(&self) -> Option<String> {
        if self.form.is_fallback() {
            return Some(TOO_DEEP_NOTE.to_string());
        }
        let reading = self.reading.as_ref().and_then(|r| r.fallback.as_ref()).map(ToString::to_string);
        reading.or_else(|| self.removal.as_ref().and_then(|r| r.fallback).map(|f| f.to_string()))
    }
}

/// What reading mode did with one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The extractor that ran (the site rule's or the profile's).
    pub algorithm: Algorithm,
    /// Set when the extractor left no clear main content and the declutter page was served.
    pub fallback: Option<NoMainContent>,
    /// Set when the content came from a copy only scripts would show ([`hidden`]).
    pub hidden: Option<HiddenSource>,
    /// How `pith` chose the content; `None` for the other extractors.
    pub choice: Option<Choice>,
    /// The page's metadata.
    pub meta: Meta,
    /// What kind of page it is ([`crate::extract::kind::classify`]), decided on the page as
    /// parsed, before extraction.
    pub kind: Kind,
    /// What the kind was decided from.
    pub signals: Signals,
    /// What reading mode kept of the page's prose ([`unsure`]).
    pub evidence: Evidence,
    /// Reading mode served a block it is unsure of ([`Evidence::is_unsure`]): the reading page
    /// says so after its headline. Never set when the declutter page was served instead.
    pub unsure: bool,
}

impl Reading {
    /// What reading mode decided, as the `reader=` part of the proxy's `x-pith` header:
    /// `article`, `moved`, `unstripped`, `whole-page` (pith's [`Choice`]; `extracted` for the
    /// other extractors), or `fallback:REASON` when the declutter page was served; then
    /// `; source=WHERE` when the content came from a copy only scripts would show (e.g.
    /// `source=noscript`); then `; kind=KIND; kind-confidence=C`, the kind of page
    /// ([`PageKind::name`](crate::extract::kind::PageKind::name)) and how sure, 0.00 to 1.00.
    pub fn summary(&self) -> String {
        let mut summary = match (&self.fallback, self.choice) {
            (Some(f), _) => format!("reader=fallback:{}", f.reason()),
            (None, Some(c)) => format!("reader={c}"),
            (None, None) => "reader=extracted".to_string(),
        };
        if let Some(hidden) = self.hidden {
            summary.push_str(&format!("; source={hidden}"));
        }
        summary.push_str(&format!("; kind={}; kind-confidence={:.2}", self.kind.kind, self.kind.confidence));
        summary
    }
}

/// The extractor's result was judged not to be a page's main content ([`judge`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoMainContent {
    /// The extractor whose result was rejected.
    pub algorithm: Algorithm,
    /// Characters of text outside links it kept.
    pub non_link_chars: u32,
    /// The share of the kept text that is link text.
    pub link_share: f64,
    /// `pith` doubted its own choice: a region it had ruled out holds far more prose
    /// ([`Choice::Doubt`]).
    pub doubt: bool,
}

impl NoMainContent {
    /// Why, in one word: `prose-elsewhere`, `mostly-links` or `little-text`.
    pub fn reason(&self) -> &'static str {
        if self.doubt {
            "prose-elsewhere"
        } else if self.link_share > MAX_LINK_SHARE {
            "mostly-links"
        } else {
            "little-text"
        }
    }
}

impl std::fmt::Display for NoMainContent {
    /// E.g. `declutter; pith kept 120 characters of non-link text, 64% links`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.doubt {
            return write!(f, "declutter; {} found far more prose outside its choice than in it", self.algorithm);
        }
        write!(
            f,
            "declutter; {} kept {} characters of non-link text, {:.0}% links",
            self.algorithm,
            self.non_link_chars,
            self.link_share * 100.0
        )
    }
}

/// Fewer characters of non-link text than this is not an article: about 40 words, shorter
/// than the lead paragraph of any news story, blog post or documentation page.
pub const MIN_CONTENT_CHARS: u32 = 250;

/// A result whose text is more than this share link text is a list of links (a home page, a
/// portal, search results), which the declutter page shows better than a reading page.
pub const MAX_LINK_SHARE: f64 = 0.5;

/// Whether an extractor's result (the kept part of `tree`) is a page's main content: enough
/// text outside links ([`MIN_CONTENT_CHARS`]), and not mostly links ([`MAX_LINK_SHARE`]). Both
/// come from the kept tree's statistics, so the test costs one linear pass.
pub fn judge(tree: &Tree, algorithm: Algorithm) -> Option<NoMainContent> {
    let body = tree.body()?;
    let kept = kept_stats_of(tree, body);
    let text = non_link_chars(&kept);
    let link_share = match kept.text_chars {
        0 => 0.0,
        all => f64::from(kept.link_text_chars) / f64::from(all),
    };
    let verdict = NoMainContent { algorithm, non_link_chars: text, link_share, doubt: false };
    (text < MIN_CONTENT_CHARS || link_share > MAX_LINK_SHARE).then_some(verdict)
}

/// [`judge`] for a listing ([`Choice::Listing`]): its items' titles are links, so all its
/// text counts and the link share does not.
fn judge_listing(tree: &Tree, algorithm: Algorithm) -> Option<NoMainContent> {
    let body = tree.body()?;
    let kept = kept_stats_of(tree, body);
    let link_share = match kept.text_chars {
        0 => 0.0,
        all => f64::from(kept.link_text_chars) / f64::from(all),
    };
    let verdict = NoMainContent { algorithm, non_link_chars: non_link_chars(&kept), link_share, doubt: false };
    (kept.text_chars < MIN_CONTENT_CHARS).then_some(verdict)
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

/// The form [`process`] served. It is decided here, once, and every caller obeys it: the
/// proxy serves the page with its content type and says in `x-pith-fallback` when it is not
/// the form asked for, and `pith extract` writes it as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedForm {
    /// The form asked for.
    Asked(Output),
    /// The page nests deeper than the tree holds ([`crate::dom::MAX_DEPTH`]) or is longer than
    /// it takes ([`crate::dom::MAX_INPUT`]), so it cannot be judged or rendered whole from a
    /// tree: the stage-1 page is served as HTML (the streaming rewriter's, which has no depth
    /// limit), whatever form was asked. A text form is not cut short, nor refused.
    TooDeep {
        /// The form asked for.
        asked: Output,
    },
}

impl ServedForm {
    /// The form of the bytes served.
    pub fn output(self) -> Output {
        match self {
            ServedForm::Asked(output) => output,
            ServedForm::TooDeep { .. } => Output::Html,
        }
    }

    /// The Content-Type to serve the bytes with.
    pub fn content_type(self) -> &'static str {
        match self.output() {
            Output::Html => "text/html; charset=utf-8",
            Output::Text | Output::Content => "text/plain; charset=utf-8",
        }
    }

    /// True when the form served is not the form asked for.
    pub fn is_fallback(self) -> bool {
        match self {
            ServedForm::Asked(_) => false,
            ServedForm::TooDeep { asked } => asked != Output::Html,
        }
    }
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
    let Transformed { body, form, stats, removal, reading } =
        if profile.stage2.is_none() && profile.reader.is_none() && output == Output::Html {
            // Even with no rules the rewriter runs: it re-declares the charset as UTF-8.
            let (body, stats) = stage1::rewrite(&profile.rules, &utf8)?;
            Transformed { body, form: ServedForm::Asked(output), stats, removal: None, reading: None }
        } else {
            parsed(profile, &utf8, output, page_url)?
        };
    let (body, content_type) = match &profile.adapt {
        None => (body.into_bytes(), form.content_type()),
        Some(adapt) if form.output().is_text() => (adapt.text(&body), content_type_in(form, adapt.charset)),
        Some(adapt) => (adapt.html(&body, page_url), content_type_in(form, adapt.charset)),
    };
    Ok(Page {
        body,
        form,
        content_type,
        stats,
        charset_source: detected.source,
        charset: detected.encoding.name(),
        removal,
        reading,
    })
}

/// The `Content-Type` of `form` written in `charset`.
fn content_type_in(form: ServedForm, charset: OutCharset) -> &'static str {
    match (form.output().is_text(), charset) {
        (_, OutCharset::Utf8) => form.content_type(),
        (false, OutCharset::Latin1) => "text/html; charset=iso-8859-1",
        (false, OutCharset::Windows1252) => "text/html; charset=windows-1252",
        (false, OutCharset::Ascii) => "text/html; charset=us-ascii",
        (true, OutCharset::Latin1) => "text/plain; charset=iso-8859-1",
        (true, OutCharset::Windows1252) => "text/plain; charset=windows-1252",
        (true, OutCharset::Ascii) => "text/plain; charset=us-ascii",
    }
}

/// What [`process`] serves, before its content type is chosen.
struct Transformed {
    body: String,
    form: ServedForm,
    stats: Stage1Stats,
    removal: Option<Removal>,
    reading: Option<Reading>,
}

/// The page a tree is built from, with the rules that build it ([`TreeRules`]): kept for the
/// reading mode's fallback, which parses the page again, and for its hidden copies.
#[derive(Clone, Copy)]
struct Source<'a> {
    /// The decoded page before stage 1 (which removes `<noscript>` and template scripts).
    page: &'a str,
    /// The page as stage 1 left it.
    html: &'a str,
    rules: &'a TreeRules,
}

impl Source<'_> {
    fn parse(&self) -> (Tree, Filtered) {
        self.rules.parse(self.html)
    }
}

/// [`process`] for a profile that parses the page: stage 1's rules applied as the tree is
/// built ([`TreeRules`]), then stage 2 or reading mode, or the text of the page.
fn parsed(profile: &Profile, utf8: &str, output: Output, page_url: Option<&str>) -> Result<Transformed, PipelineError> {
    let rules = TreeRules::of(&profile.rules);
    let (html, mut stats) = rules.rewrite(utf8)?;
    let source = Source { page: utf8, html: &html, rules };
    let (tree, filtered) = source.parse();
    stats.elements_removed += filtered.elements;
    stats.attributes_removed += filtered.attributes;
    // The tree stops at `dom::MAX_DEPTH`, so a deeper page cannot be judged or rendered whole
    // from it: every form falls back to the stage-1 page ([`ServedForm::TooDeep`]).
    let (body, removal, reading) = match (tree.is_truncated(), &profile.reader, &profile.stage2) {
        (true, ..) => {
            let (body, stats) = stage1::rewrite(&profile.rules, utf8)?;
            return Ok(Transformed { body, form: ServedForm::TooDeep { asked: output }, stats, removal: None, reading: None });
        }
        (false, Some(reader), stage2) => {
            let (body, removal, reading) = reading_page(tree, source, (reader, profile.declutter_link.as_deref()), stage2.as_deref(), output, (page_url, profile.bar_original));
            (body, removal, Some(reading))
        }
        (false, None, Some(stage2)) => {
            let (body, removal) = declutter_page(tree, stage2, output, page_url, Some(&source));
            (body, Some(removal), None)
        }
        (false, None, None) => (crate::render::text::render(&tree), None, None),
    };
    Ok(Transformed { body, form: ServedForm::Asked(output), stats, removal, reading })
}

/// Reading mode over a parsed stage-1 page: metadata, extraction, judgement, then the reading
/// page, or the declutter page when the extractor left no clear main content. A page whose
/// content only scripts would show is read from its hidden copy instead ([`from_hidden`]).
fn reading_page(
    mut tree: Tree,
    source: Source<'_>,
    (reader, declutter_link): (&Reader, Option<&str>),
    stage2: Option<&Stage2>,
    output: Output,
    (page_url, bar): (Option<&str>, bool),
) -> (String, Option<Removal>, Reading) {
    // Before `prepare` strips the scripts: the kind reads the page's JSON-LD.
    let (kind, signals) = kind::classify_with_signals(&tree, page_url);
    let (mut meta, host) = prepare(&mut tree, page_url);
    let mut evidence = Evidence { page_prose: unsure::body_prose(&tree), kept_prose: 0, kind_confidence: kind.confidence, kind: kind.kind };
    if meta.title.is_none() {
        // A page with no title in its metadata is titled by its own headline, which the
        // extractors take out of the content as the title again.
        meta.title = crate::extract::declutter::title_heading(&tree).map(|h| crate::extract::meta::text_of(&tree, h)).filter(|t| !t.trim().is_empty());
    }
    let site = host.as_deref().zip(stage2).and_then(|(host, s)| s.sites.for_host(host));
    let algorithm = site.and_then(|s| s.algorithm).unwrap_or(reader.algorithm);
    let job = Extraction { algorithm, reader, stage2, host: host.as_deref(), page_url, kind };
    let (mut removal, mut choice) = job.run(&mut tree, reader.learn);
    let original = page_url.or(meta.canonical.as_deref());
    // From the page itself: a hidden copy has no <base> of its own.
    let base = if output == Output::Html { document_base(&tree, original) } else { None };
    let doubt = (choice == Some(Choice::Doubt))
        .then_some(NoMainContent { algorithm, non_link_chars: 0, link_share: 0.0, doubt: true });
    let mut fallback = doubt.or_else(|| match choice {
        // A listing's items are links: judged by all its text.
        Some(Choice::Listing) => judge_listing(&tree, algorithm),
        _ => judge(&tree, algorithm),
    });
    let mut hidden = None;
    if let Some(copy) = from_hidden(&tree, &source, &job) {
        (tree, removal, choice, hidden, fallback) = (copy.tree, copy.removal, copy.choice, Some(copy.source), None);
    }
    if let Some(verdict) = fallback {
        // The page as stage 1 left it, judged by the removers instead.
        let (mut fresh, _) = source.parse();
        strip_scripts(&mut fresh);
        let (body, removal) = match stage2 {
            Some(stage2) => {
                let (body, removal) = declutter_page(fresh, stage2, output, page_url, None);
                (body, Some(removal))
            }
            None if output.is_text() => (crate::render::text::render(&fresh), None),
            None => (crate::render::html::render(&fresh), None),
        };
        let body = match output {
            Output::Html => crate::render::reader::insert_note(body, FALLBACK_NOTE),
            Output::Text | Output::Content => body,
        };
        return (body, removal, Reading { algorithm, fallback: Some(verdict), choice, hidden, meta, kind, signals, evidence, unsure: false });
    }
    if let Some(body) = tree.body() {
        // What the extractor kept around the article's text inside its container: an
        // "Advertisement" label, a newsletter pitch, the heading of a related list.
        crate::extract::boilerplate::remove(&mut tree, body, None, &crate::extract::Keep::none(), crate::extract::boilerplate::Phrases::builtin());
    }
    if meta.lang.is_none() {
        // Other statements of the page's language, else the language of the content kept.
        meta.lang = tree.body().and_then(|body| lang::of(&tree, body)).or_else(|| stage2?.options.fallback_lang.clone());
    }
    if meta.dir.as_deref().is_none_or(|d| d.trim().is_empty()) && meta.lang.as_deref().is_some_and(lang::is_rtl) {
        // Browsers do not infer the direction from `lang`: a Hebrew page stating none reads
        // right to left only with `dir`.
        meta.dir = Some("rtl".into());
    }
    evidence.kept_prose = unsure::body_prose(&tree);
    let unsure = evidence.is_unsure();
    let body = match output {
        Output::Text => crate::render::reader::render_text(&mut tree, &meta),
        Output::Content => crate::render::reader::render_content(&tree),
        Output::Html => {
            // One link to the original: the bar's ("original") when the proxy's bar has one,
            // else the header's.
            let original = original.filter(|_| !bar);
            let page = crate::render::reader::Page { meta: &meta, base: base.as_deref(), original, images: stage2.map(|s| s.images).unwrap_or_default() };
            let html = crate::render::reader::render(&mut tree, &page);
            let about = crate::render::reader::About { kind, unsure, declutter: declutter_link };
            crate::render::reader::insert_about(html, &about)
        }
    };
    (body, removal, Reading { algorithm, fallback: None, choice, hidden, meta, kind, signals, evidence, unsure })
}

/// One page's extractor and what it runs with, so that a hidden copy of the page is extracted
/// exactly as the page was.
struct Extraction<'a> {
    algorithm: Algorithm,
    reader: &'a Reader,
    stage2: Option<&'a Stage2>,
    host: Option<&'a str>,
    page_url: Option<&'a str>,
    /// The page's kind, for the extractors that read by kind (`pith`).
    kind: Kind,
}

impl Extraction<'_> {
    /// Runs the extractor over `tree`, learning the page first when `learn` (and the
    /// extractor learns): the removers' report when the extractor is theirs, and how `pith`
    /// chose when it is pith's.
    fn run(&self, tree: &mut Tree, learn: bool) -> (Option<Removal>, Option<Choice>) {
        if self.algorithm == Algorithm::Crunch {
            return (self.stage2.map(|s| run_removers(tree, s, self.page_url).removal), None);
        }
        if let (Algorithm::SiteRedundancy, true, Some(host)) = (self.algorithm, learn, self.host) {
            self.reader.memory.learn(host, tree);
        }
        (None, self.algorithm.run_as(tree, Some(&self.reader.memory), self.host, Some(self.kind)))
    }
}

/// The most hidden copies extracted for one page: the largest are tried first, and a page
/// whose two largest copies both fail is not worth more parses.
const MAX_HIDDEN_TRIES: usize = 2;

/// A page read from a hidden copy ([`hidden`]).
struct HiddenPage {
    tree: Tree,
    removal: Option<Removal>,
    choice: Option<Choice>,
    source: HiddenSource,
}

/// Reading mode from content only scripts would show: the largest hidden copy of the page
/// (`<noscript>` or JSON-LD `articleBody`), put through stage 1 and, unless it
/// is the article itself, the page's extractor; taken when it holds far more non-link text
/// than the visible result ([`hidden::is_far_more`]) and passes [`judge`]. Only a short visible
/// result is compared ([`hidden::MAX_VISIBLE`]), and the hidden copies are measured by one
/// search over the bytes first, so most pages are not parsed again.
fn from_hidden(visible: &Tree, source: &Source<'_>, job: &Extraction<'_>) -> Option<HiddenPage> {
    let (kept, copies) = hidden_copies(visible, source)?;
    for (mut tree, copy) in copies {
        // A copy that is the article itself (JSON-LD `articleBody`) is taken whole.
        let (removal, choice) = if copy.source.is_article() { (None, Some(Choice::Article)) } else { job.run(&mut tree, false) };
        let got = tree.body().map_or(0, |b| non_link_chars(&kept_stats_of(&tree, b)));
        if hidden::is_far_more(got, kept, MIN_CONTENT_CHARS) && judge(&tree, job.algorithm).is_none() {
            return Some(HiddenPage { tree, removal, choice, source: copy.source });
        }
    }
    None
}

/// The non-link text `visible` keeps, and the page's hidden copies that could hold far more
/// ([`hidden::bytes_needed`]), largest first, at most [`MAX_HIDDEN_TRIES`], each put through
/// stage 1 and parsed without scripts (a copy that fails stage 1 or is too deep is skipped);
/// `None` when no copy is large enough, found by one search over the bytes before any parse.
/// Shared by reading mode ([`from_hidden`]) and the declutter page ([`script_copy`]).
fn hidden_copies<'a>(visible: &Tree, source: &'a Source<'_>) -> Option<(u32, impl Iterator<Item = (Tree, hidden::Hidden)> + 'a)> {
    let kept = visible.body().map_or(0, |b| non_link_chars(&kept_stats_of(visible, b)));
    let needed = hidden::bytes_needed(kept, MIN_CONTENT_CHARS)?;
    if hidden::largest_bytes(source.page) < needed {
        return None;
    }
    let copies = hidden::find(source.page, needed).into_iter().take(MAX_HIDDEN_TRIES).filter_map(|copy| {
        let (html, _) = source.rules.rewrite(&copy.html).ok()?;
        let (mut tree, _) = source.rules.parse(&html);
        if tree.is_truncated() {
            return None;
        }
        strip_scripts(&mut tree);
        Some((tree, copy))
    });
    Some((kept, copies))
}

/// `x-pith-fallback` for a text form asked of a page too deep for the tree ([`ServedForm::TooDeep`]).
pub const TOO_DEEP_NOTE: &str = "too-deep; served as de-cluttered HTML, not text";

/// The note on a declutter page served in place of a reading page.
pub const FALLBACK_NOTE: &str =
    "Reading mode found no clear main content on this page (it may be a home page, a list of links or search results), so this is the whole page, de-cluttered.";

/// Reads the metadata of a parsed reading-mode page, then removes its scripts (the reader
/// rules keep JSON-LD for the metadata; nothing script-like reaches an extractor or the page).
/// Returns the metadata and the page's host: the page URL's, else the canonical address's.
fn prepare(tree: &mut Tree, page_url: Option<&str>) -> (Meta, Option<String>) {
    let meta = meta::extract(tree, page_url);
    strip_scripts(tree);
    let host = page_url.and_then(url_host).or_else(|| meta.canonical.as_deref().and_then(url_host));
    (meta, host)
}

fn strip_scripts(tree: &mut Tree) {
    let scripts: Vec<_> = tree.descendants(tree.root()).filter(|&id| tree.tag(id) == Some("script")).collect();
    for id in scripts {
        tree.remove(id);
    }
}

/// Learns one page for the site-redundancy extractor of a reading profile, as `pith extract`
/// does with all its inputs before extracting any: decode, stage 1, parse, then
/// [`crate::extract::site_redundancy::SiteMemory::learn`] under the page's host (`page_url`'s, else its canonical address's).
/// Returns the host learnt under; `None` when the profile has no reading mode, the page is too
/// deep to parse whole, or no host is known.
pub fn learn(profile: &Profile, doc: &[u8], content_type: Option<&str>, page_url: Option<&str>) -> Result<Option<String>, PipelineError> {
    let Some(reader) = &profile.reader else { return Ok(None) };
    let detected = charset::detect(content_type, doc);
    let utf8 = charset::to_utf8(doc, detected.encoding);
    let rules = TreeRules::of(&profile.rules);
    let (html, _) = rules.rewrite(&utf8)?;
    let (mut tree, _) = rules.parse(&html);
    if tree.is_truncated() {
        return Ok(None);
    }
    let (_, host) = prepare(&mut tree, page_url);
    if let Some(host) = &host {
        reader.memory.learn(host, &tree);
    }
    Ok(host)
}

/// Stage 2 over a stage-1 page: parse, remove, render (with the "Removed links" section when
/// the retainer is on).
fn declutter_page(mut tree: Tree, stage2: &Stage2, output: Output, page_url: Option<&str>, source: Option<&Source<'_>>) -> (String, Removal) {
    let Outcome { mut removal, mut retained, title: mut title_heading } = run_removers(&mut tree, stage2, page_url);
    // What the page states of itself, kept when its hidden copy is shown instead.
    let mut stated: Option<(Option<String>, Option<String>)> = None;
    if let Some(copy) = source.and_then(|s| script_copy(&tree, s)) {
        let title = meta::extract(&tree, page_url).title.or_else(|| title_heading.map(|h| meta::text_of(&tree, h)));
        let lang = tree.body().and_then(|body| lang::of(&tree, body));
        let mut copy_tree = copy.tree;
        let outcome = if copy.article { Outcome::default() } else { run_removers(&mut copy_tree, stage2, page_url) };
        (tree, removal, retained, title_heading) = (copy_tree, outcome.removal, outcome.retained, None);
        stated = Some((title, lang));
    }
    let titled = title_heading.is_some();
    // A page without a title heading gets one from its metadata: the first thing a person on
    // a phone, or a screen reader, meets is then what the page is. A page without a `<title>`
    // gets one from the same metadata, else its first `<h1>`, else its address: a browser tab,
    // a bookmark and a screen reader's first words name the page.
    let untitled = output == Output::Html && !has_title(&tree);
    let title = match &stated {
        Some((title, _)) => title.clone().filter(|_| output != Output::Content),
        None if (titled && !untitled) || output == Output::Content => None,
        None => meta::extract(&tree, page_url).title,
    };
    let doc_title = if untitled {
        title.clone().or_else(|| first_heading(&tree)).or_else(|| page_url.and_then(crate::render::access::destination))
    } else {
        None
    };
    let body = match output {
        Output::Html => {
            let heading = title.as_deref().filter(|_| !titled).map(|t| {
                let mut h = String::from("<h1>");
                crate::render::html::escape(t, false, &mut h);
                h.push_str("</h1>");
                h
            });
            // Only a page whose `<html>` names no language is looked at further.
            let stated_lang = tree.document_element().and_then(|h| tree.attr(h, "lang")).is_some_and(|l| !l.trim().is_empty());
            let lang = if stated_lang {
                None
            } else if let Some((_, lang)) = &stated {
                lang.clone().or_else(|| stage2.options.fallback_lang.clone())
            } else {
                tree.body().and_then(|body| lang::of(&tree, body)).or_else(|| stage2.options.fallback_lang.clone())
            };
            // A right-to-left page (by its stated or found language) that states no direction.
            let page_lang = lang.clone().or_else(|| lang::declared(&tree));
            let dir = (!lang::states_dir(&tree) && page_lang.as_deref().is_some_and(lang::is_rtl)).then_some("rtl");
            let dress = crate::render::html::Dress {
                head: crate::render::html::PHONE_HEAD,
                lang: lang.as_deref(),
                dir,
                h1: title_heading.filter(|&h| !tree.is_removed(h)),
                body: heading.as_deref().unwrap_or_default(),
                title: doc_title.as_deref(),
                images: Some(&stage2.images),
            };
            let page = crate::render::html::render_dressed(&tree, &dress);
            let section = crate::render::retained::html_section(&tree, &retained, Some(&stage2.images));
            crate::render::retained::insert_html(&tree, page, &section)
        }
        Output::Text | Output::Content => {
            // The listener's form opens on the title too (`title` is never set for the content form).
            let mut text = title.map(|t| t + "\n").unwrap_or_default();
            text.push_str(&crate::render::text::render(&tree));
            text.push_str(&crate::render::retained::text_section(&retained));
            text
        }
    };
    (body, removal)
}

/// A hidden copy of a page built by script ([`hidden`]: JSON-LD `articleBody`, a `<noscript>`
/// copy), parsed through the profile's stage 1 without scripts.
struct ScriptCopy {
    tree: Tree,
    /// Whether it is the article itself (JSON-LD), shown whole.
    article: bool,
}

/// The hidden copy a declutter page shows instead of what the removers left of the visible
/// markup, when that holds far less text ([`hidden::is_far_more`]): a blog whose article is
/// rendered from data in the page is otherwise a tagline and a "Share" link. Only a short
/// visible result is compared ([`hidden::MAX_VISIBLE`]), and the copies are measured by one
/// search over the bytes first.
fn script_copy(visible: &Tree, source: &Source<'_>) -> Option<ScriptCopy> {
    let (kept, copies) = hidden_copies(visible, source)?;
    for (tree, copy) in copies {
        let got = tree.body().map_or(0, |b| non_link_chars(&kept_stats_of(&tree, b)));
        if hidden::is_far_more(got, kept, MIN_CONTENT_CHARS) {
            return Some(ScriptCopy { tree, article: copy.source.is_article() });
        }
    }
    None
}

/// The text of the page's first `<h1>` left in, if it has words.
fn first_heading(tree: &Tree) -> Option<String> {
    let h1 = tree.html_elements_named(&markup5ever::local_name!("h1")).find(|&h| !tree.is_removed(h))?;
    Some(meta::text_of(tree, h1)).filter(|t| !t.is_empty())
}

/// Whether the page's `<head>` holds a `<title>` with text.
fn has_title(tree: &Tree) -> bool {
    tree.head().is_some_and(|head| {
        // Not `stats`: a title's text is not shown, so the statistics leave it out.
        tree.children(head).any(|c| {
            tree.tag(c) == Some("title")
                && !tree.is_removed(c)
                && tree.children(c).any(|t| tree.text(t).is_some_and(|t| !t.trim().is_empty()))
        })
    })
}

/// The removers with the settings of the profile and the page's site rule.
/// The link-list threshold inside the main content of a page that is a list ([`run_removers`]):
/// the `news-home` preset's, at which a block goes only when it has more links than words.
const LIST_PAGE_LINK_RATIO: f64 = 1.0;

fn run_removers(tree: &mut Tree, stage2: &Stage2, page_url: Option<&str>) -> Outcome {
    let host = page_url.and_then(url_host);
    let site = host.and_then(|host| stage2.sites.for_host(&host));
    let mut settings = Settings::resolve(&stage2.options, site);
    // A page whose content is a list of links (a listing's items, a collection's products, a
    // forum's posts) keeps the link lists of its main content; those beside it still go (the
    // strict ratio outside the main content is unchanged). A site rule's preset decides alone.
    let kind = kind::classify(tree, page_url);
    if matches!(kind.kind, PageKind::Listing | PageKind::Collection | PageKind::Forum) && kind.confidence >= Kind::UNSURE && site.is_none_or(|s| s.preset.is_none()) {
        settings.link_ratio = settings.link_ratio.max(LIST_PAGE_LINK_RATIO);
    }
    // The shipped lists, parsed once per process on first use.
    let filter = settings.ads.then(|| stage2.ads.clone().unwrap_or_else(AdFilter::builtin));
    let ctx = Context { page_url, ads: filter.as_deref(), site };
    declutter::run(tree, &settings, &ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::sites::SiteRules;
    use crate::extract::Options;
    use crate::html::rules::RuleSet;
    use std::sync::Arc;

    fn declutter(output: Output) -> Profile {
        let rules = RuleSet::builtin("declutter").expect("built-in rules");
        Profile::new("declutter", Arc::new(rules), output).with_stage2(Stage2::default())
    }

    const PAGE: &str = concat!(
        "<html><body><ul><li><a href=/a>Home</a><li><a href=/b>World</a></ul>",
        "<p>A paragraph of real article text, long enough to be what the page is about, and then some more words.</p>",
        "<script>track()</script></body></html>"
    );

    fn reader(output: Output, algorithm: Algorithm) -> Profile {
        let rules = RuleSet::builtin("reader").expect("the built-in reader rules parse");
        let reader = Reader { algorithm, ..Reader::default() };
        Profile::new("reader", Arc::new(rules), output).with_stage2(Stage2::default()).with_reader(reader)
    }

    fn read(profile: &Profile, doc: &str, url: Option<&str>) -> (String, Reading) {
        let page = process(profile, doc.as_bytes(), None, profile.output, url).expect("page");
        (String::from_utf8(page.body).expect("utf-8"), page.reading.expect("reading mode ran"))
    }

    const PROSE: &str = "A paragraph of real article text, long enough to be what the page is about, and then some more words to make it so. ";

    #[test]
    fn a_reading_page_without_a_title_in_its_metadata_is_titled_by_its_headline() {
        let doc = format!("<html><body><article><h1>Harbour closed for a week</h1><p>{}</p></article></body></html>", PROSE.repeat(4));
        let (html, _) = read(&reader(Output::Html, Algorithm::Pith), &doc, None);
        assert!(html.contains("<h1>Harbour closed for a week</h1>"), "not an untitled page: {html}");
        assert_eq!(html.matches("Harbour closed").count(), 2, "in <title> and the one <h1>: {html}");
    }

    #[test]
    fn a_reading_page_links_its_original_once_with_or_without_the_bar() {
        let doc = format!("<html><body><article><h1>Harbour closed</h1><p>{}</p></article></body></html>", PROSE.repeat(4));
        let url = Some("https://news.example/harbour");
        // Without the proxy's bar (`pith extract`, `control.choices` off) the header links it.
        let (html, _) = read(&reader(Output::Html, Algorithm::Pith), &doc, url);
        assert_eq!(html.matches(">Original page").count(), 1, "{html}");
        // Under a bar that links the original, the header does not link it again.
        let mut barred = reader(Output::Html, Algorithm::Pith);
        barred.bar_original = true;
        let (html, _) = read(&barred, &doc, url);
        assert!(!html.contains(">Original page"), "{html}");
    }

    #[test]
    fn a_page_too_short_to_tell_its_language_gets_the_profiles_fallback() {
        let doc = "<html><head><title>Test</title></head><body><p>abc def ghi</p></body></html>";
        let with = |profile: Profile, lang: Option<&str>| {
            let mut stage2 = (*profile.stage2.clone().expect("stage 2")).clone();
            stage2.options.fallback_lang = lang.map(str::to_string);
            let profile = profile.with_stage2(stage2);
            let page = process(&profile, doc.as_bytes(), None, Output::Html, None).expect("page");
            String::from_utf8(page.body).expect("utf-8")
        };
        assert!(with(declutter(Output::Html), Some("de-CH")).contains("<html lang=\"de-CH\">"));
        assert!(!with(declutter(Output::Html), None).contains("lang="), "unset: no guess");
        assert!(with(reader(Output::Html, Algorithm::Pith), Some("fr")).contains("<html lang=\"fr\""));
        // A page that states its language, or whose words tell it, keeps its own.
        let stated = "<html lang=nl><body><p>abc def ghi</p></body></html>";
        let mut stage2 = Stage2::default();
        stage2.options.fallback_lang = Some("en".into());
        let profile = declutter(Output::Html).with_stage2(stage2);
        let page = process(&profile, stated.as_bytes(), None, Output::Html, None).expect("page");
        assert!(String::from_utf8(page.body).expect("utf-8").contains("<html lang=\"nl\">"));
    }

    #[test]
    fn the_declutter_page_fits_a_phone_and_opens_on_its_title() {
        let doc = format!(
            concat!(
                "<html><head><title>Harbour closed for a week | Daily Site</title>",
                "<meta name=viewport content=\"width=1024, user-scalable=no\"></head>",
                "<body><p>{}</p></body></html>"
            ),
            PROSE.repeat(2)
        );
        let page = process(&declutter(Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains(crate::render::html::PHONE_HEAD), "{html}");
        assert!(!html.contains("user-scalable=no") && html.matches("name=\"viewport\"").count() == 1, "{html}");
        assert!(html.contains("<body><h1>Harbour closed for a week</h1><p>"), "the metadata's title, site name cut: {html}");
        let text = process(&declutter(Output::Text), doc.as_bytes(), None, Output::Text, None).expect("page");
        assert!(String::from_utf8(text.body).expect("utf-8").starts_with("Harbour closed for a week\n"));
        let content = process(&declutter(Output::Text), doc.as_bytes(), None, Output::Content, None).expect("page");
        assert!(String::from_utf8(content.body).expect("utf-8").starts_with("A paragraph"), "the content form is the content alone");

        // A page with its own title heading gets no second one.
        let titled = doc.replace("<body>", "<body><h1>Harbour closed for a week</h1>");
        let page = process(&declutter(Output::Html), titled.as_bytes(), None, Output::Html, None).expect("page");
        assert_eq!(String::from_utf8(page.body).expect("utf-8").matches("<h1>").count(), 1);
    }

    #[test]
    fn the_declutter_page_names_what_the_page_left_unnamed() {
        let doc = format!(
            concat!(
                "<html><head><meta property=og:title content='Harbour closed'></head><body><h1>Harbour closed</h1><p>{}</p>",
                "<p><img src=/storm.jpg> <img src=/boat.jpg title=' The ferry '> <img src=/rule.png alt=''></p>",
                "<p><a href='https://news.example/world/harbour-photos'><img src=/t.jpg></a> <a href=/share/mail><svg></svg></a></p>",
                "<p>{}<span aria-hidden=true><a href=/more>More on the storm</a></span><i aria-hidden=true>*</i></p>",
                "<table><tr><th>Tide</th><th>Height</th></tr><tr><td>High water, Monday noon</td><td>4.2 metres</td></tr></table>",
                "<table><tr><th>Tide</th><th>Height</th></tr><tr><td>High water on <a href=/t>Monday</a> at noon, low water at six in the evening</td><td>4.2 metres</td></tr></table>",
                "</body></html>"
            ),
            PROSE.repeat(2),
            PROSE
        );
        let page = process(&declutter(Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains("<title>Harbour closed</title>"), "a page without a title gets one: {html}");
        assert!(html.contains(r#"<span aria-hidden="false"><a href="/more">"#), "a keyboard reaches it: {html}");
        assert!(html.contains(r#"<i aria-hidden="true">*</i>"#), "an icon stays hidden: {html}");
        assert!(html.contains(r#"<img src="/storm.jpg" alt="">"#), "nothing known of it: {html}");
        assert!(html.contains(r#"<img src="/boat.jpg" title=" The ferry " alt="The ferry">"#), "{html}");
        assert!(html.contains(r#"<img src="/rule.png" alt="">"#), "decoration stays decoration: {html}");
        assert!(html.contains(r#"<img src="/t.jpg" alt="news.example: harbour-photos">"#), "{html}");
        assert!(html.contains(r#"<a href="/share/mail" aria-label="mail">"#), "{html}");
        assert!(html.contains(r#"<a href="/t">Monday</a>"#), "the second table keeps its link: {html}");
        assert_eq!(html.matches(r#"<table tabindex="0">"#).count(), 1, "only the table with nothing to focus: {html}");

        // Nothing names the page but its address.
        let bare = format!("<body><p>{PROSE}</p><p>{PROSE}</p></body>");
        let page = process(&declutter(Output::Html), bare.as_bytes(), None, Output::Html, Some("https://news.example/world/storm-story")).expect("page");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains("<title>news.example: storm-story</title>"), "{html}");
    }

    #[test]
    fn the_declutter_page_drops_the_roles_and_states_of_widgets_whose_scripts_are_gone() {
        let doc = format!(
            "<body><div role=main aria-label=Story><p>{}<span role=button aria-pressed=false aria-controls=p1 \
             aria-label='More photos' tabindex=0>Photos</span></p><p>{}</p></div></body>",
            PROSE, PROSE
        );
        let page = process(&declutter(Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains(r#"<div role="main" aria-label="Story">"#), "a landmark and a name stay: {html}");
        assert!(html.contains(r#"<span aria-label="More photos" tabindex="0">Photos</span>"#), "{html}");
    }

    #[test]
    fn judge_wants_enough_text_and_not_mostly_links() {
        let article = Tree::parse(&format!("<p>{}</p><a href=/x>one link</a>", PROSE.repeat(3)));
        assert_eq!(judge(&article, Algorithm::Pith), None);
        let short = Tree::parse(&format!("<p>{PROSE}</p>"));
        let verdict = judge(&short, Algorithm::Cetr).expect("too little text");
        assert_eq!((verdict.algorithm, verdict.non_link_chars), (Algorithm::Cetr, PROSE.trim().len() as u32));
        let links = format!("<p>{}</p><ul>{}</ul>", PROSE.repeat(3), "<li><a href=/x>a link with a long title here</a></li>".repeat(20));
        let verdict = judge(&Tree::parse(&links), Algorithm::Pith).expect("mostly links");
        assert!(verdict.link_share > 0.5, "{verdict:?}");
        assert!(verdict.to_string().starts_with("declutter; pith kept "), "{verdict}");
        let mut emptied = Tree::parse(&format!("<p>{}</p>", PROSE.repeat(3)));
        let p = emptied.descendants(emptied.root()).find(|&id| emptied.tag(id) == Some("p")).expect("p");
        emptied.remove(p);
        assert!(judge(&emptied, Algorithm::Pith).is_some(), "kept statistics, not parsed ones");
    }

    #[test]
    fn reading_mode_with_the_removers_renders_the_reading_page() {
        let doc = format!(
            "<html lang=en><head><title>Story | Site</title><script type=application/ld+json>{{\"datePublished\":\"2024-01-02\"}}</script></head>\
             <body><ul><li><a href=/a>Home</a><li><a href=/b>World</a></ul><h1>Story</h1><p>{prose}</p><p><a href=more>more</a></p></body></html>",
            prose = PROSE.repeat(3)
        );
        let (html, reading) = read(&reader(Output::Html, Algorithm::Crunch), &doc, Some("https://e.example/s/1"));
        assert_eq!((reading.algorithm, reading.fallback), (Algorithm::Crunch, None));
        assert_eq!(reading.meta.published.as_deref(), Some("2024-01-02"), "JSON-LD survives stage 1");
        assert!(html.contains("<header><h1>Story</h1>") && html.contains("<main><p>A paragraph"), "{html}");
        assert!(html.contains("href=\"https://e.example/s/more\""), "{html}");
        assert!(!html.contains("Home") && !html.contains("<script") && !html.contains("datePublished"), "{html}");
        let (text, _) = read(&reader(Output::Text, Algorithm::Crunch), &doc, None);
        assert!(text.starts_with("Story\n2024-01-02\nA paragraph"), "title and date lines first: {text}");
        let content = process(&reader(Output::Text, Algorithm::Crunch), doc.as_bytes(), None, Output::Content, None).expect("page");
        assert_eq!(content.content_type, "text/plain; charset=utf-8");
        let content = String::from_utf8(content.body).expect("utf-8");
        assert!(content.starts_with("Story\nA paragraph"), "the content alone, its heading kept: {content}");
    }

    /// A blog page whose post only scripts would show: the visible page is a menu and a
    /// tagline, and `hidden` holds the post.
    fn shell(hidden: &str) -> String {
        format!(
            "<html><head><title>A post | Blog</title>{head}</head><body><nav><a href=/>Home</a> <a href=/about>About</a></nav>\
             <h1>Blog</h1><p>Thoughts on tides and harbours.</p>{body}<footer>(c) Blog</footer></body></html>",
            head = if hidden.contains("ld+json") { hidden } else { "" },
            body = if hidden.contains("ld+json") { "" } else { hidden },
        )
    }

    fn post() -> String {
        format!("<nav><a href=/a>Home</a> <a href=/b>Archive</a></nav><article><h2>A post</h2><p>{p}</p><p>{p}</p></article>", p = PROSE.repeat(2))
    }

    #[test]
    fn a_post_only_in_noscript_is_read_from_there() {
        let doc = shell(&format!("<noscript>{}</noscript><noscript><img src=/pixel.gif></noscript>", post()));
        let page = process(&reader(Output::Content, Algorithm::Pith), doc.as_bytes(), None, Output::Content, None).expect("page");
        assert_eq!(page.reading_summary().as_deref().and_then(|s| s.split("; kind=").next()), Some("reader=article; source=noscript"));
        let reading = page.reading.as_ref().expect("reading mode ran");
        assert_eq!((reading.hidden, reading.fallback), (Some(HiddenSource::Noscript), None));
        let text = String::from_utf8(page.body).expect("utf-8");
        assert!(text.contains(PROSE.trim()) && !text.contains("Archive") && !text.contains("tagline"), "{text}");
    }

    #[test]
    fn a_template_script_is_never_read_as_the_post() {
        // Markup with holes that scripts fill: read aloud, it is code.
        let doc = shell(&format!("<script type=\"text/x-template\" id=post><# if ( data.x ) {{ #>{}<# }} #></script>", post()));
        let (html, reading) = read(&reader(Output::Html, Algorithm::Pith), &doc, Some("https://blog.example/p/1"));
        assert_eq!(reading.hidden, None);
        assert!(!html.contains(">A post</h2>") && !html.contains("<#") && !html.contains("data.x"), "{html}");
    }

    #[test]
    fn a_post_only_in_json_ld_is_read_from_its_article_body() {
        let body = format!("{p}\\n\\n{p}", p = PROSE.repeat(2).trim());
        let doc = shell(&format!("<script type=application/ld+json>{{\"@type\":\"BlogPosting\",\"articleBody\":\"{body}\"}}</script>"));
        let (text, reading) = read(&reader(Output::Content, Algorithm::Pith), &doc, None);
        assert_eq!(reading.hidden, Some(HiddenSource::JsonLd));
        assert_eq!(text, format!("{p}\n{p}\n", p = PROSE.repeat(2).trim()), "two paragraphs");
    }

    #[test]
    fn a_visible_article_beats_its_hidden_copy() {
        let visible = format!("<article><p>{}</p></article>", PROSE.repeat(4));
        let doc = format!("<body>{visible}<noscript>{visible}{visible}</noscript></body>");
        let page = process(&reader(Output::Content, Algorithm::Pith), doc.as_bytes(), None, Output::Content, None).expect("page");
        assert_eq!(page.reading.as_ref().and_then(|r| r.hidden), None, "twice as much is not far more");
        assert_eq!(page.reading_summary().as_deref().and_then(|s| s.split("; kind=").next()), Some("reader=article"));
    }

    #[test]
    fn the_reading_summary_says_how_pith_chose_and_a_doubt_falls_back() {
        let doc = format!("<html><body><div id=story><p>{}</p><p>{}</p></div></body></html>", PROSE.repeat(2), PROSE.repeat(2));
        let (_, reading) = read(&reader(Output::Text, Algorithm::Pith), &doc, None);
        assert_eq!(reading.summary(), format!("reader=article; kind=article; kind-confidence={:.2}", reading.kind.confidence));
        // The article's class carries a tag read as a cookie banner; the bio after it is long
        // enough to stand alone, and far shorter than the article.
        let bio = "<p>About the author: she has written about health, food and family since 2010, and lives with two children and a dog by the sea.</p>";
        let doc = format!(
            "<html><body><div class='entry tag-cookies'>{}</div><div class=bio>{bio}{bio}</div></body></html>",
            format!("<p>{}</p>", PROSE.repeat(2)).repeat(6)
        );
        let (text, reading) = read(&reader(Output::Text, Algorithm::Pith), &doc, None);
        assert!(reading.summary().starts_with("reader=fallback:prose-elsewhere; kind="), "{}", reading.summary());
        let verdict = reading.fallback.expect("declutter page served");
        assert_eq!(verdict.to_string(), "declutter; pith found far more prose outside its choice than in it");
        assert!(text.contains(PROSE.trim()), "the declutter page keeps the article: {text}");
        let (_, other) = read(&reader(Output::Text, Algorithm::Cetr), &doc, None);
        assert!(other.summary().starts_with("reader="), "{}", other.summary());
    }

    #[test]
    fn no_clear_main_content_serves_the_declutter_page_with_a_note() {
        // The removers take the list of links as navigation: what is left is short.
        let doc = format!("<body><h1>Portal</h1><ul>{}</ul></body>", "<li><a href=/x>Another story title on the portal</a></li>".repeat(12));
        let profile = reader(Output::Html, Algorithm::Crunch);
        let page = process(&profile, doc.as_bytes(), None, Output::Html, None).expect("page");
        let header = page.fallback_header().expect("x-pith-fallback");
        assert!(header.starts_with("declutter; crunch kept "), "{header}");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains(&format!("<body><p role=\"note\">{FALLBACK_NOTE}</p>")), "{html}");
        let text = process(&reader(Output::Text, Algorithm::Crunch), doc.as_bytes(), None, Output::Text, None).expect("page");
        let text = String::from_utf8(text.body).expect("utf-8");
        assert!(text.starts_with("Portal\n") && !text.contains("Reading mode"), "the declutter text: {text}");
    }

    #[test]
    fn a_site_rule_chooses_the_algorithm() {
        let dir = tempfile::tempdir().expect("temporary folder");
        std::fs::write(dir.path().join("e.rules"), "site e.example\nalgorithm crunch\n").expect("write the rule");
        let sites = Arc::new(SiteRules::parse_dir(dir.path()).expect("valid rule"));
        let mut profile = reader(Output::Text, Algorithm::Pith);
        profile = profile.with_stage2(Stage2 { sites, ..Stage2::default() });
        let doc = format!("<p>{}</p>", PROSE.repeat(3));
        assert_eq!(read(&profile, &doc, Some("https://www.e.example/")).1.algorithm, Algorithm::Crunch);
        assert_eq!(read(&profile, &doc, Some("https://other.example/")).1.algorithm, Algorithm::Pith);
    }

    #[test]
    fn too_deep_pages_fall_back_whole_to_the_stage1_page_in_every_form() {
        let depth = crate::dom::MAX_DEPTH as usize + 50;
        let doc = format!("<html><body>{}<p>deep text</p>{}</body></html>", "<div>".repeat(depth), "</div>".repeat(depth));
        let stage1_only = process(&Profile::new("s1", declutter(Output::Html).rules, Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        let page = process(&declutter(Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        assert_eq!(page.body, stage1_only.body, "the stage-1 page, whole");
        assert!(String::from_utf8_lossy(&page.body).contains("deep text"));
        assert!(page.removal.is_none());
        assert_eq!((page.form, page.fallback_header()), (ServedForm::TooDeep { asked: Output::Html }, None));
        for output in [Output::Text, Output::Content] {
            let text = process(&declutter(Output::Text), doc.as_bytes(), None, output, None).expect("page");
            assert_eq!(text.body, stage1_only.body, "{output:?}: the stage-1 page, whole");
            assert_eq!((text.form, text.content_type), (ServedForm::TooDeep { asked: output }, "text/html; charset=utf-8"));
            assert_eq!(text.fallback_header().as_deref(), Some(TOO_DEEP_NOTE));
        }
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

    #[test]
    fn a_right_to_left_page_stating_no_direction_is_served_right_to_left() {
        let hebrew = "זהו משפט ארוך בעברית שמספר על הנמל שנסגר לשבוע שלם בגלל הסערה הגדולה שפקדה את האזור כולו. ";
        let found = format!("<html><head><title>הנמל נסגר</title></head><body><article><h1>הנמל נסגר לשבוע</h1><p>{}</p><p>{}</p></article></body></html>", hebrew.repeat(3), hebrew.repeat(3));
        let stated = found.replacen("<html>", "<html lang=he>", 1);
        let ltr = found.replacen("<html>", "<html lang=he dir=ltr>", 1);
        for profile in [declutter(Output::Html), reader(Output::Html, Algorithm::Pith)] {
            for doc in [&found, &stated] {
                let page = process(&profile, doc.as_bytes(), None, Output::Html, None).expect("page");
                let html = String::from_utf8(page.body).expect("utf-8");
                let start = &html[..html.find('>').expect("a tag") + 1];
                assert!(html.contains(" dir=\"rtl\"") && html.contains("lang=\"he\""), "{}: {start}", profile.name);
            }
            // A page that states its direction keeps it.
            let page = process(&profile, ltr.as_bytes(), None, Output::Html, None).expect("page");
            let html = String::from_utf8(page.body).expect("utf-8");
            assert!(!html.contains("dir=\"rtl\""), "{}", profile.name);
        }
        // A left-to-right page gets no direction.
        let page = process(&declutter(Output::Html), PAGE.as_bytes(), None, Output::Html, None).expect("page");
        assert!(!String::from_utf8(page.body).expect("utf-8").contains(" dir="));
    }


    #[test]
    fn a_page_built_by_script_is_decluttered_from_its_hidden_copy() {
        let article = PROSE.repeat(6);
        let doc = format!(
            concat!(
                r#"<html lang="en"><head><title>Harbour closed | Boats</title><script type="application/ld+json">"#,
                r#"{{"@type":"BlogPosting","headline":"Harbour closed","articleBody":"{}"}}</script></head>"#,
                r#"<body><p>A blog about boats</p><div id="app"></div><a href="https://t.example/share">Share on Twitter</a></body></html>"#
            ),
            article.trim()
        );
        let page = process(&declutter(Output::Html), doc.as_bytes(), None, Output::Html, None).expect("page");
        let html = String::from_utf8(page.body).expect("utf-8");
        assert!(html.contains(PROSE.trim()), "the article shows:\n{html}");
        assert!(html.contains("<h1>Harbour closed | Boats</h1>") && html.starts_with("<html lang=\"en\">"), "titled from the page:\n{html}");
        assert!(!html.contains("Share on Twitter"), "{html}");
        // A page whose markup holds its text is decluttered as it is.
        let page = process(&declutter(Output::Html), PAGE.as_bytes(), None, Output::Html, None).expect("page");
        assert!(String::from_utf8(page.body).expect("utf-8").contains("A paragraph of real article text"));
    }


    #[test]
    fn a_forum_thread_keeps_its_posts_and_loses_the_menu_beside_them() {
        // Posts of short lines among user links, dates and "Reply": link-dense blocks that are
        // the page's content, judged with the list pages' threshold inside the main content.
        let mut doc = String::from("<html><body><nav><a href=/a>Forums</a> <a href=/b>Members</a> <a href=/c>Search</a> <a href=/d>Help</a></nav><h1>Why does my boiler click?</h1><div class=thread>");
        for i in 0..8 {
            doc.push_str(&format!(
                "<div class=message><div class=user-info><a href=/u/{i}>user{i}</a></div><time datetime=2024-03-0{}>3 March</time><p>Post {i}: it was the <a href=/p>pump</a>, not the <a href=/v>valve</a>, and it clicks less now.</p><a href=#r>Reply</a> <a href=#q>Quote</a></div>",
                i % 9 + 1
            ));
        }
        doc.push_str("</div></body></html>");
        let tree = Tree::parse(&doc);
        assert_eq!(kind::classify(&tree, None).kind, PageKind::Forum, "the page is a forum thread");
        let (body, removal) = declutter_page(tree, &Stage2::default(), Output::Text, None, None);
        // Without the list pages' threshold the posts went, and the safety net redid the page.
        assert_eq!(removal.fallback, None, "{removal:?}");
        for i in 0..8 {
            assert!(body.contains(&format!("Post {i}: it was the pump, not the valve")), "post {i} kept:\n{body}");
        }
        assert!(!body.contains("Members"), "the site's menu goes:\n{body}");
    }

}
