//! A profile: what a client gets from a page. Its name, its stage-1 rules, the form served
//! ([`Output`]), stage 2's removers and site rules ([`Stage2`]), reading mode ([`Reader`]) and
//! the listener's last pass ([`Adapt`]).
//!
//! This is the vocabulary the configuration builds, the cache keys on, the pipeline obeys and
//! the network layer chooses per request; it sits below all of them so that none imports
//! another for it.

use std::sync::Arc;

use crate::ads::AdFilter;
use crate::extract::algorithm::Algorithm;
use crate::extract::site_redundancy::SiteMemory;
use crate::extract::sites::SiteRules;
use crate::extract::Options;
use crate::html::adapt::Adapt;
use crate::html::rules::RuleSet;
use crate::images::Images;
/// The form a profile serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The filtered page, as HTML.
    Html,
    /// Its visible text, one block per line (Crunch's "print only text"); in reading mode
    /// after a title line and a byline-and-date line, so a listener hears what the page is.
    Text,
    /// The text form without reading mode's title lines: the main content alone, which is
    /// what extraction benchmarks compare (`pith extract --format text`). For a profile
    /// without reading mode it is the text form.
    Content,
}

impl Output {
    /// True for the plain-text forms.
    pub fn is_text(self) -> bool {
        matches!(self, Output::Text | Output::Content)
    }
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
    /// A reading profile uses it for the `crunch` algorithm and for its fallback page.
    pub stage2: Option<Arc<Stage2>>,
    /// Reading mode: the main content alone, in the reading page. `None` for other profiles.
    pub reader: Option<Arc<Reader>>,
    /// The control bar ("original", "reading mode") atop each page rewritten in this profile
    /// (`profiles.NAME.bar`); shown only while `control.choices` is on.
    pub bar: bool,
    /// The last pass for the listener serving the page ([`Adapt`]): set per request by the
    /// proxy, `None` everywhere else.
    pub adapt: Option<Arc<Adapt>>,
    /// The address of this page de-cluttered, which a reading page that is unsure of its
    /// content links to ([`crate::extract::unsure`]): set per request by the proxy (a signed
    /// one-shot link, as the bar's), `None` everywhere else.
    pub declutter_link: Option<String>,
    /// The bar the proxy puts atop this page links to the original: a reading page then drops
    /// its own link to it (one link, not two). Set per request by the proxy, `false` everywhere
    /// else, so a reading page without the bar (`pith extract`, `control.choices` off) keeps it.
    pub bar_original: bool,
    pass: bool,
}

/// A profile's reading mode: which extractor, and what the site-redundancy extractor has
/// learnt. Shared (`Arc`) because it is built once from the config and learns across requests.
#[derive(Debug, Clone)]
pub struct Reader {
    /// The extractor used where no site rule names another.
    pub algorithm: Algorithm,
    /// What the site-redundancy extractor has learnt of each site's template; bounded.
    pub memory: Arc<SiteMemory>,
    /// Whether each page served is learnt from before it is extracted (the proxy); `pith
    /// extract` learns from all its inputs first ([`crate::pipeline::learn`]) and turns this off.
    pub learn: bool,
}

impl Default for Reader {
    fn default() -> Self {
        Reader { algorithm: Algorithm::default(), memory: Arc::default(), learn: true }
    }
}

/// A profile's stage 2: what it asks of the removers, and the site rules that refine that per
/// host. Shared (`Arc`) because it is built once from the config.
#[derive(Debug, Clone, Default)]
pub struct Stage2 {
    /// The profile's preset and choices.
    pub options: Options,
    /// Per-site rules, looked up by the page's host.
    pub sites: Arc<SiteRules>,
    /// The ad matcher from the config's `filters.ad_lists`; `None` means the lists shipped in
    /// the binary ([`AdFilter::builtin`]).
    pub ads: Option<Arc<AdFilter>>,
    /// What happens to images: in the pages written here, and (read by the proxy) to image
    /// responses.
    pub images: Images,
}

impl Profile {
    /// A named profile without stage 2.
    pub fn new(name: &str, rules: Arc<RuleSet>, output: Output) -> Profile {
        Profile { name: name.to_string(), rules, output, stage2: None, reader: None, bar: true, adapt: None, declutter_link: None, bar_original: false, pass: false }
    }

    /// The profile in reading mode, as `reader` says.
    pub fn with_reader(mut self, reader: Reader) -> Profile {
        self.reader = Some(Arc::new(reader));
        self
    }

    /// The profile with stage 2 run as `stage2` says.
    pub fn with_stage2(mut self, stage2: Stage2) -> Profile {
        self.stage2 = Some(Arc::new(stage2));
        self
    }

    /// The built-in `pass` profile: responses are forwarded untouched.
    pub fn pass() -> Profile {
        Profile { name: "pass".to_string(), rules: Arc::new(RuleSet::empty()), output: Output::Html, stage2: None, reader: None, bar: false, adapt: None, declutter_link: None, bar_original: false, pass: true }
    }

    /// The profile with `adapt` as its last pass; an identity pass is none.
    pub fn with_adapt(mut self, adapt: Adapt) -> Profile {
        self.adapt = (!adapt.is_identity()).then(|| Arc::new(adapt));
        self
    }

    /// The profile's image settings: its stage 2's, else keep.
    pub fn images(&self) -> Images {
        self.stage2.as_ref().map(|s| s.images).unwrap_or_default()
    }

    /// True for `pass`: the proxy never buffers or rewrites for it.
    pub fn is_pass(&self) -> bool {
        self.pass
    }
}
