//! Stage 2: the algorithms that decide what of a parsed page to keep. Each works on one
//! [`dom::Tree`](crate::dom::Tree) and a settings struct and marks what goes
//! ([`Tree::remove`](crate::dom::Tree::remove)); none knows of HTTP or the streaming rewriter,
//! and none does I/O but [`sites`], which reads the site rule files a config names when the
//! config is loaded. What an algorithm removes depends on its page and settings alone, with one
//! exception: the `site-redundancy` extractor ([`site_redundancy`]) judges a page by what it
//! has learnt of the site's other pages, in a [`SiteMemory`](site_redundancy::SiteMemory) that
//! the proxy shares between connections behind a mutex.
//!
//! The Crunch removers, one file each, run in this order by [`declutter::run`]:
//!
//! | file | remover |
//! |---|---|
//! | [`sites`] | per-site rules: preset, thresholds, removers on/off, selectors always kept or removed |
//! | [`ads`] | elements whose link or source is an ad server, and the lists' element-hiding rules |
//! | [`landmarks`] | regions the page declares not content: site header and footer, sidebars, dialogs |
//! | [`boilerplate`] | lines that say what they are, in many languages: "Advertisement", "Comments", newsletter and cookie prompts, "You may also like" and its list |
//! | [`linklist`] | blocks whose links outnumber their non-link text (navigation, link farms, teaser grids) |
//! | [`leftovers`] | dialogs, modals, tooltips, fixed overlays, and short blocks holding a consent, session or newsletter phrase (`filters/leftovers.txt`) |
//! | [`headline`] | the site's menus, search and account strips left before the title heading |
//! | [`empty`] | tables and layout blocks left without substance by the others |
//! | [`retainer`] | the links the removers took out, listed at the end of the page |
//!
//! [`presets`] holds Crunch's named presets as data; [`prose`] finds paragraphs and the page's
//! main content, which the removers protect; [`declutter`] orchestrates and owns the safety net
//! (a page never loses its main prose: a run that takes it means a gentler preset). [`hidden`]
//! finds content only scripts would show (`<noscript>`, JSON-LD `articleBody`; template
//! scripts are never content), which reading mode reads when the visible page holds next to nothing.
//!
//! Reading mode's extractors, one file each with its source, are named by
//! [`algorithm`] ([`algorithm::Algorithm`]: `pith`, the default, with its parts under `pith/`,
//! `distribution`, `link-ratio`, `block-analysis`, `density`, `cetr`, `cetr-km`, `ccb`,
//! `info-optics`, `site-redundancy`, and `crunch`, the removers above taken as an extractor);
//! [`meta`] reads the page's title, byline, date and other metadata for the reading page.
//! [`lang`] gives the written pages their language: what the page states, else what its text
//! is written in.
//!
//! This module owns what the removers share: the resolved [`Settings`], what a profile asks for
//! ([`Options`]), the page [`Context`], the [`Removal`] report, statistics of the *kept* tree
//! ([`kept_stats`]; the tree's own statistics describe the page as parsed), and URL resolution
//! for links ([`resolve_url`], [`document_base`]).

pub mod ads;
pub mod boilerplate;
pub mod declutter;
pub mod empty;
pub mod headline;
pub mod leftovers;
pub mod landmarks;
pub mod linklist;
pub mod retainer;
pub mod algorithm;
pub mod block_analysis;
pub mod ccb;
pub mod cetr;
pub mod density;
pub mod distribution;
pub mod info_optics;
pub mod link_ratio;
pub mod pith;
pub mod site_redundancy;
pub mod hidden;
pub mod kind;
pub mod unsure;
pub mod lang;
pub mod meta;
pub mod presets;
pub mod prose;
pub mod sites;

use std::fmt;

use url::Url;

use crate::dom::{NodeId, NodeStats, Tree};
use crate::ads::AdFilter;

pub use presets::{Containers, PresetName};

/// What a profile asks of stage 2: a starting preset and the few choices a user makes per
/// profile. Site rules may override all of it ([`Settings::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The preset to start from when no site rule names one.
    pub preset: PresetName,
    /// Append the "Removed links" section; `None` keeps the preset's choice.
    pub retain_links: Option<bool>,
    /// Override of the link-list threshold; `None` keeps the preset's.
    pub link_ratio: Option<f64>,
    /// The `lang` given to a written page (declutter or reading) that states no language and
    /// whose text is too short or too mixed for pith to tell: the language the gateway's
    /// readers read, so a screen reader picks their voice on purpose rather than by default.
    pub fallback_lang: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            preset: PresetName::Automatic,
            retain_links: None,
            link_ratio: None,
            fallback_lang: None,
        }
    }
}

/// Every knob of one declutter run, resolved from a preset, the profile's [`Options`] and the
/// site rule. Plain data, so a run is reproducible from it alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The preset the values started from (for reports and the fallback chain).
    pub preset: PresetName,
    /// The link-list remover removes a block of the page's main content when links ÷
    /// (non-link characters ÷ 5) is above this (Crunch: 0.25).
    pub link_ratio: f64,
    /// The same threshold for blocks outside the main content (sidebars, teaser grids, the
    /// areas around the article); the lower of the two applies there. See [`linklist`].
    pub strict_link_ratio: f64,
    /// Which elements the link-list remover judges.
    pub containers: Containers,
    /// Whether `<nav>` and `role=navigation` blocks are taken for navigation as soon as they
    /// are link-dense, without the paragraph protection other blocks get.
    pub nav_hints: bool,
    /// A link-dense block holding a paragraph with at least this many characters of non-link
    /// text is not removed whole: the link-list remover judges its parts instead.
    pub protect_paragraph_chars: u32,
    /// Characters of text a table or layout block needs to count as content (Crunch: 12).
    pub empty_min_chars: u32,
    /// Run the ad remover.
    pub ads: bool,
    /// Run the landmark remover (site header and footer, sidebars, dialogs).
    pub landmarks: bool,
    /// Run the boilerplate remover (labels, prompts, related-list headings by their words).
    pub boilerplate: bool,
    /// Run the link-list remover.
    pub link_lists: bool,
    /// Run the empty-table remover.
    pub empty_tables: bool,
    /// Append the links the removers took out as a "Removed links" section.
    pub retain_links: bool,
    /// The share of the main content's prose (of the page's non-link text, on a page without
    /// prose) the removers must leave; below it the page is redone with the next gentler
    /// preset ([`PresetName::fallback`]). See [`declutter`].
    pub min_kept_fraction: f64,
}

impl Settings {
    /// The settings a profile's options give on a page whose site rule (if any) is `site`:
    /// the site's preset replaces the profile's, then the profile's choices apply, then the
    /// site's thresholds and switches, which know the site best.
    pub fn resolve(options: &Options, site: Option<&sites::SiteRule>) -> Settings {
        let preset = site
            .and_then(|s| s.preset.as_deref())
            .and_then(PresetName::parse)
            .unwrap_or(options.preset);
        let mut settings = preset.settings();
        if let Some(retain) = options.retain_links {
            settings.retain_links = retain;
        }
        if let Some(ratio) = options.link_ratio {
            settings.link_ratio = ratio;
        }
        if let Some(site) = site {
            settings.apply_site(site);
        }
        settings
    }

    /// Applies a site rule's `set` and `on`/`off` lines. Names were validated when the rule
    /// was parsed; one this version does not know is ignored rather than failing a page.
    pub fn apply_site(&mut self, site: &sites::SiteRule) {
        for (name, value) in &site.overrides {
            match name.as_str() {
                "link-ratio" => self.link_ratio = value.max(0.0),
                "empty-min-chars" => {
                    self.empty_min_chars = value.clamp(0.0, u32::MAX as f64) as u32
                }
                "min-kept-fraction" => self.min_kept_fraction = value.clamp(0.0, 1.0),
                _ => {}
            }
        }
        for (name, on) in &site.switches {
            match name.as_str() {
                "ads" => self.ads = *on,
                "landmarks" => self.landmarks = *on,
                "boilerplate" => self.boilerplate = *on,
                "link-lists" => self.link_lists = *on,
                "empty-tables" => self.empty_tables = *on,
                "retainer" => self.retain_links = *on,
                _ => {}
            }
        }
    }
}

/// Removes every node that is neither inside one of `keep` nor an ancestor of one: what an
/// extractor that *selects* subtrees leaves. Linear in the size of the tree.
pub fn keep_only(tree: &mut Tree, keep: &[NodeId]) {
    let mut marks = vec![0u8; tree.len()]; // 1: ancestor of kept, 2: kept subtree
    for &id in keep {
        for d in tree.descendants(id) {
            marks[d.index()] = 2;
        }
        for p in tree.ancestors(id) {
            if marks[p.index()] != 0 {
                break;
            }
            marks[p.index()] = 1;
        }
    }
    let root = tree.root();
    let doomed: Vec<NodeId> = tree
        .descendants(root)
        .filter(|&id| marks[id.index()] == 0 && tree.parent(id).is_some_and(|p| marks[p.index()] == 1))
        .collect();
    for id in doomed {
        tree.remove(id);
    }
}

/// What the removers know about the page beyond its tree.
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    /// The page's absolute URL, when known: links are resolved against it (and `<base href>`).
    pub page_url: Option<&'a str>,
    /// The ad matcher, when the ad remover is to run.
    pub ads: Option<&'a AdFilter>,
    /// The site rule for the page's host, if any.
    pub site: Option<&'a sites::SiteRule>,
}

impl fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("page_url", &self.page_url)
            .field("ads", &self.ads.is_some())
            .field("site", &self.site.map(|s| &s.origin))
            .finish()
    }
}

/// Elements a site rule keeps, with their ancestors: no remover removes them (their other
/// descendants may still go).
#[derive(Debug, Clone, Default)]
pub struct Keep {
    /// One mark per node of the tree it was built for; empty when nothing is kept.
    marks: Vec<bool>,
}

impl Keep {
    /// Nothing kept.
    pub fn none() -> Keep {
        Keep::default()
    }

    /// Keeps `nodes` and all their ancestors. Climbing stops at a node already marked, so the
    /// cost is linear in the size of the tree whatever the number of nodes.
    pub fn from_nodes(tree: &Tree, nodes: impl IntoIterator<Item = NodeId>) -> Keep {
        let mut marks = vec![false; tree.len()];
        for node in nodes {
            let mut current = Some(node);
            while let Some(id) = current {
                if marks[id.index()] {
                    break;
                }
                marks[id.index()] = true;
                current = tree.parent(id);
            }
        }
        Keep { marks }
    }

    /// Whether the node must stay.
    pub fn contains(&self, id: NodeId) -> bool {
        self.marks.get(id.index()).copied().unwrap_or(false)
    }
}

/// What one declutter run did, for the response header, logs and tests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Removal {
    /// The preset whose result is served (after any fallback).
    pub preset: Option<PresetName>,
    /// Elements removed by the site rule's `remove` selectors.
    pub site: usize,
    /// Elements removed by the ad remover.
    pub ads: usize,
    /// Regions removed by the landmark remover.
    pub landmarks: usize,
    /// Lines and blocks removed by the boilerplate remover.
    pub boilerplate: usize,
    /// Blocks removed by the link-list remover.
    pub link_lists: usize,
    /// Tables and layout blocks removed by the empty-table remover.
    pub empty: usize,
    /// Links listed in the "Removed links" section.
    pub links_retained: usize,
    /// Visible characters of the page's body before stage 2.
    pub page_chars: u32,
    /// Visible characters left.
    pub kept_chars: u32,
    /// Set when the first preset removed too much and a gentler one was used.
    pub fallback: Option<Fallback>,
}

impl Removal {
    /// The stage-2 part of the proxy's `x-pith` header: the preset served and what each
    /// remover took, e.g. `preset=automatic; ads=2; landmarks=3; boilerplate=2; link-lists=7; empty=1;
    /// kept-chars=4210/9800`, so a user can see why a page looks as it does.
    pub fn summary(&self) -> String {
        format!(
            "preset={}; site={}; ads={}; landmarks={}; boilerplate={}; link-lists={}; empty={}; links-retained={}; kept-chars={}/{}",
            self.preset.map_or("none", PresetName::as_str),
            self.site,
            self.ads,
            self.landmarks,
            self.boilerplate,
            self.link_lists,
            self.empty,
            self.links_retained,
            self.kept_chars,
            self.page_chars
        )
    }
}

/// The safety net fired: the preset tried first left too little of the page's text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fallback {
    /// The preset that removed too much.
    pub from: PresetName,
    /// The preset used instead ([`PresetName::None`] when even the gentlest removed too much).
    pub to: PresetName,
    /// The share of the main content's prose (see [`declutter`]) the `from` run would have
    /// kept.
    pub kept_fraction: f64,
}

impl fmt::Display for Fallback {
    /// The value of the proxy's `x-pith-fallback` header, e.g. `gentle; automatic kept 12% of
    /// text`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; {} kept {:.0}% of text",
            self.to,
            self.from,
            self.kept_fraction * 100.0
        )
    }
}

/// Statistics of every node's subtree counting only what is not removed: the tree's own
/// [`Tree::stats`] describe the page as parsed and do not change when a remover marks a node.
///
/// A copy of the parsed statistics, from which each removed subtree comes off: its nodes keep
/// only their `depth`, and the statistics of its top come off every ancestor's. Removed tops
/// are few and trees shallow, so that costs little more than the copy; when the ancestors to
/// visit would outnumber the nodes, one reverse pass over the tree totals the losses instead.
pub fn kept_stats(tree: &Tree) -> Vec<NodeStats> {
    let n = tree.len();
    let mut kept = tree.all_stats().to_vec();
    let (tops, climbs) = removed_tops(tree);
    if climbs > n {
        return kept_stats_by_pass(tree);
    }
    for top in tops {
        let lost = *tree.stats(top);
        let range = top.index()..top.index() + tree.descendants(top).len();
        for stats in &mut kept[range] {
            *stats = NodeStats { depth: stats.depth, ..NodeStats::default() };
        }
        for a in tree.ancestors(top) {
            kept[a.index()] = minus(&kept[a.index()], &lost);
        }
    }
    kept
}

/// The tops of the removed subtrees in document order, and how many ancestors they have in all
/// (what subtracting each from its ancestors would visit).
fn removed_tops(tree: &Tree) -> (Vec<NodeId>, usize) {
    let mut tops = Vec::new();
    let mut climbs = 0usize;
    let mut i = 0;
    while let Some(id) = tree.node_at(i) {
        if tree.is_removed(id) {
            tops.push(id);
            climbs += tree.stats(id).depth as usize;
            i += tree.descendants(id).len();
        } else {
            i += 1;
        }
    }
    (tops, climbs)
}

/// [`kept_stats`] for a remover that asks about some of the nodes only (the link-list
/// remover, about its candidate blocks): what each removed subtree took from its ancestors,
/// kept for those ancestors alone, so that the statistics of every node are not copied.
pub struct KeptStats<'t> {
    tree: &'t Tree,
    lost: Lost,
}

enum Lost {
    /// Per ancestor of a removed subtree (by index), the statistics of the removed subtrees
    /// below it.
    Sparse(rustc_hash::FxHashMap<u32, NodeStats>),
    /// Every node's kept statistics, when the ancestors to visit would outnumber the nodes
    /// (see [`kept_stats`]).
    Dense(Vec<NodeStats>),
}

impl<'t> KeptStats<'t> {
    /// The kept statistics of `tree` as its removals stand.
    pub fn of(tree: &'t Tree) -> KeptStats<'t> {
        let (tops, climbs) = removed_tops(tree);
        if climbs > tree.len() {
            return KeptStats { tree, lost: Lost::Dense(kept_stats_by_pass(tree)) };
        }
        let mut lost = rustc_hash::FxHashMap::<u32, NodeStats>::default();
        for top in tops {
            let taken = *tree.stats(top);
            for a in tree.ancestors(top) {
                lost.entry(a.index() as u32).or_default().add(&taken);
            }
        }
        KeptStats { tree, lost: Lost::Sparse(lost) }
    }

    /// What [`kept_stats`] gives for `id`: the removed subtrees inside it are disjoint and
    /// their parsed statistics add up into `id`'s, so their sum comes off at once.
    pub fn get(&self, id: NodeId) -> NodeStats {
        let parsed = self.tree.stats(id);
        match &self.lost {
            Lost::Dense(kept) => kept[id.index()],
            Lost::Sparse(_) if self.tree.is_removed(id) => minus(parsed, parsed),
            Lost::Sparse(lost) => lost.get(&(id.index() as u32)).map_or(*parsed, |lost| minus(parsed, lost)),
        }
    }
}

/// [`kept_stats`] in one reverse pass over the arena (children follow their parents in it):
/// each node's loss is its whole parsed statistics if it is removed, else the sum of its
/// children's losses; kept = parsed − lost. Linear in the size of the tree whatever was removed.
fn kept_stats_by_pass(tree: &Tree) -> Vec<NodeStats> {
    let n = tree.len();
    let mut lost = vec![NodeStats::default(); n];
    for i in (0..n).rev() {
        let Some(id) = tree.node_at(i) else { continue };
        if tree.is_removed(id) {
            lost[i] = *tree.stats(id);
        }
        if let Some(parent) = tree.parent(id) {
            let child = lost[i];
            lost[parent.index()].add(&child);
        }
    }
    (0..n)
        .filter_map(|i| tree.node_at(i))
        .map(|id| minus(tree.stats(id), &lost[id.index()]))
        .collect()
}

/// [`kept_stats`] of one node, without a table for the whole tree: its parsed statistics less
/// those of the removed subtrees inside it (each counted whole, once).
pub fn kept_stats_of(tree: &Tree, root: NodeId) -> NodeStats {
    let parsed = tree.stats(root);
    if tree.is_removed(root) {
        return minus(parsed, parsed);
    }
    let mut lost = NodeStats::default();
    let end = root.index() + tree.descendants(root).len();
    let mut i = root.index() + 1;
    while let Some(id) = tree.node_at(i).filter(|_| i < end) {
        if tree.is_removed(id) {
            lost.add(tree.stats(id));
            // Its descendants are inside what was just counted.
            i += tree.descendants(id).len();
        } else {
            i += 1;
        }
    }
    minus(parsed, &lost)
}

fn minus(a: &NodeStats, b: &NodeStats) -> NodeStats {
    NodeStats {
        text_chars: a.text_chars.saturating_sub(b.text_chars),
        words: a.words.saturating_sub(b.words),
        link_text_chars: a.link_text_chars.saturating_sub(b.link_text_chars),
        link_words: a.link_words.saturating_sub(b.link_words),
        links: a.links.saturating_sub(b.links),
        images: a.images.saturating_sub(b.images),
        controls: a.controls.saturating_sub(b.controls),
        tags: a.tags.saturating_sub(b.tags),
        depth: a.depth,
    }
}

/// Visible characters of a subtree that are not link text: the quantity Crunch divides by five
/// to estimate the words a block says besides its links.
pub fn non_link_chars(stats: &NodeStats) -> u32 {
    stats.text_chars.saturating_sub(stats.link_text_chars)
}

/// Whether an `<img>` shows a picture: it shows, names one to load (its own, lazy or
/// `<noscript>` address, as [`crate::images::page::source`] finds it, not a `data:`
/// placeholder), and is not declared at most 2 px wide or high (a tracking pixel, a spacer).
pub(crate) fn is_picture(tree: &Tree, img: NodeId) -> bool {
    let pixel = ["width", "height"]
        .iter()
        .filter_map(|a| tree.attr(img, a))
        .any(|v| v.trim().parse::<u32>().is_ok_and(|n| n <= 2));
    !pixel && tree.is_shown(img) && crate::images::page::source(tree, img, u32::MAX).is_some()
}

/// The URL links of the document resolve against: the first `<base href>` resolved against the
/// page URL, else the page URL. `None` when the page URL is unknown and there is no absolute
/// `<base href>`.
pub fn document_base(tree: &Tree, page_url: Option<&str>) -> Option<String> {
    let page = page_url.and_then(|url| Url::parse(url.trim()).ok());
    base_url(tree, page.as_ref()).map(String::from)
}

/// [`document_base`] for callers that hold parsed URLs: the first `<base href>` of the
/// document in tree order (as HTML freezes it), resolved against `page`, else `page`.
pub fn base_url(tree: &Tree, page: Option<&Url>) -> Option<Url> {
    let href = tree
        .html_elements_named(&markup5ever::local_name!("base"))
        .find_map(|id| tree.attr(id, "href"));
    let from_base = href.and_then(|href| match page {
        Some(page) => page.join(href.trim()).ok(),
        None => Url::parse(href.trim()).ok(),
    });
    from_base.or_else(|| page.cloned())
}

/// Resolves a link `href` against an absolute `base` URL as browsers do (the WHATWG URL
/// standard: whitespace trimmed, dot segments removed, percent-encoding applied). `None` when
/// `base` is not an absolute URL or `href` cannot be resolved.
pub fn resolve_url(base: &str, href: &str) -> Option<String> {
    let base = Url::parse(base.trim()).ok()?;
    base.join(href.trim()).ok().map(String::from)
}

/// The host of an absolute URL (with `:port` when one is given), for site-rule lookup.
pub fn url_host(url: &str) -> Option<String> {
    let url = Url::parse(url.trim()).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_only_leaves_the_subtree_and_its_ancestors() {
        let mut tree = Tree::parse("<body><div>nav</div><main><p id=k>content</p><p>other</p></main></body>");
        let k = tree.descendants(tree.root()).find(|&id| tree.attr(id, "id") == Some("k")).unwrap();
        keep_only(&mut tree, &[k]);
        assert_eq!(crate::render::text::render(&tree), "content\n");
    }

    macro_rules! resolves {
        ($($name:ident: $base:expr, $href:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(resolve_url($base, $href).as_deref(), $expected);
            }
        )*};
    }

    const B: &str = "http://a/b/c/d;p?q";

    // Examples of RFC 3986 section 5.4, and what browsers add.
    resolves! {
        relative_path: B, "g" => Some("http://a/b/c/g");
        absolute_path: B, "/g" => Some("http://a/g");
        network_path: B, "//g" => Some("http://g/");
        query_only: B, "?y" => Some("http://a/b/c/d;p?y");
        fragment_only: B, "#s" => Some("http://a/b/c/d;p?q#s");
        dot_dot: B, "../g" => Some("http://a/b/g");
        above_root: B, "../../../g" => Some("http://a/g");
        absolute_kept: B, "HTTPS://x.example/y" => Some("https://x.example/y");
        mailto_kept: B, "mailto:a@b.example" => Some("mailto:a@b.example");
        whitespace_trimmed: "https://e.example/a/", " \n x\ty\n " => Some("https://e.example/a/xy");
        base_relative: "/a/b", "p" => None;
    }

    #[test]
    fn hosts_of_urls() {
        assert_eq!(
            url_host("https://user:pw@www.e.example:8443/p?q").as_deref(),
            Some("www.e.example:8443")
        );
        assert_eq!(url_host("http://E.example").as_deref(), Some("e.example"));
        assert_eq!(url_host("/relative"), None);
    }

    #[test]
    fn base_element_is_resolved_against_the_page() {
        let tree = Tree::parse("<head><base href='/docs/'></head><body><a href=x>x</a></body>");
        assert_eq!(
            document_base(&tree, Some("https://e.example/a/b")).as_deref(),
            Some("https://e.example/docs/")
        );
        let tree = Tree::parse("<p>no base</p>");
        assert_eq!(document_base(&tree, None), None);
        assert_eq!(
            document_base(&tree, Some("https://e.example/a")).as_deref(),
            Some("https://e.example/a")
        );
        let tree = Tree::parse("<head><base href='https://cdn.example/'></head>");
        assert_eq!(
            document_base(&tree, None).as_deref(),
            Some("https://cdn.example/")
        );
        // The first with an `href`, wherever it is; a foreign `base` is none.
        let tree = Tree::parse(
            "<head><base target=_top></head><body><svg><base href='https://svg.example/'></base></svg>\
             <base href='https://body.example/'><base href='https://late.example/'></body>",
        );
        assert_eq!(document_base(&tree, None).as_deref(), Some("https://body.example/"));
    }

    #[test]
    fn kept_stats_subtract_removed_subtrees() {
        let mut tree = Tree::parse(
            "<div id=a><p>hello world</p><ul id=u><li><a href=/1>one</a><li><a href=/2>two</a></ul></div>",
        );
        let find = |tree: &Tree, id: &str| {
            tree.descendants(tree.root())
                .find(|&n| tree.attr(n, "id") == Some(id))
                .expect("element")
        };
        let (div, ul) = (find(&tree, "a"), find(&tree, "u"));
        assert_eq!(kept_stats(&tree)[div.index()].links, 2);
        tree.remove(ul);
        let kept = kept_stats(&tree);
        assert_eq!(kept, kept_stats_by_pass(&tree));
        for id in tree.descendants(tree.root()) {
            assert_eq!(kept_stats_of(&tree, id), kept[id.index()], "node {}", id.index());
        }
        assert_eq!(kept[div.index()].links, 0);
        assert_eq!(kept[div.index()].text_chars, 11);
        assert_eq!(non_link_chars(&kept[div.index()]), 11);
        assert_eq!(
            kept[ul.index()],
            NodeStats {
                depth: tree.stats(ul).depth,
                ..NodeStats::default()
            }
        );
        assert_eq!(kept[tree.root().index()].text_chars, 11);
    }

    proptest::proptest! {
        /// Subtracting each removed top from its ancestors gives what the reverse pass gives.
        #[test]
        fn kept_stats_match_the_pass(
            parts in proptest::collection::vec(
                "<(div|p|ul|li|a href=x|img|input|table|td)>|</(div|p|ul|a|td)>|word|two words| ",
                0..60,
            ),
            removed in proptest::collection::vec(0usize..80, 0..6),
        ) {
            let tree = crate::dom::tests::parse_removing(&parts.concat(), &removed);
            let kept = kept_stats(&tree);
            proptest::prop_assert_eq!(&kept, &kept_stats_by_pass(&tree));
            let lookup = KeptStats::of(&tree);
            for (i, want) in kept.iter().enumerate() {
                let id = tree.node_at(i).expect("node");
                proptest::prop_assert_eq!(lookup.get(id), *want, "node {}", i);
            }
        }
    }

    #[test]
    fn fallback_reads_as_a_header_value() {
        let f = Fallback {
            from: PresetName::Automatic,
            to: PresetName::Gentle,
            kept_fraction: 0.123,
        };
        assert_eq!(f.to_string(), "gentle; automatic kept 12% of text");
    }
}
