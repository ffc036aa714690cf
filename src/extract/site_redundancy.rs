//! Site redundancy: blocks whose words recur on every page of a site are its template (menus,
//! footers, boilerplate), not a page's content. The proxy learns this from the pages it serves.
//!
//! Source: S.-H. Lin and J.-M. Ho, "Discovering Informative Content Blocks from Web Documents"
//! (InfoDiscoverer), KDD 2002.
//!
//! # The algorithm, as published
//!
//! The pages of one site are partitioned into content blocks by their `<TABLE>` structure. A
//! block is described by its features, the terms it contains. The entropy of a feature over
//! the site's N pages, H(F) = −Σ w·log_N w with w the feature's normalised weight on each page,
//! is 1 when it appears evenly on every page (a template term) and 0 when it appears on one
//! page only. A block's entropy is the mean entropy of its features; blocks above a threshold
//! are redundant, the others informative.
//!
//! # What pith implements, and the choices it made
//!
//! - **Blocks** are the text of a page grouped by its nearest *container* ancestor: `table`
//!   and its cells, and the `div` family of today's layouts (`div`, `section`, `article`,
//!   `aside`, `nav`, `header`, `footer`, `main`, `form`, lists, `body`). A container's own
//!   text is one block; the text of containers nested in it forms their own blocks, as nested
//!   tables do in the paper.
//! - **Features** are the words of a block, lower-cased, punctuation left out; words of fewer
//!   than [`MIN_FEATURE_CHARS`] letters or digits are skipped as a language-neutral stand-in
//!   for the paper's stop-word list (pages come in every language, so there is no stemming).
//! - **Entropy from document frequencies.** What is stored per site is, for every feature, the
//!   number of learnt pages it appears on (df); with presence as the weight, the paper's
//!   entropy becomes H(F) = ln df ÷ ln N. A feature no learnt page has is treated as df = 1.
//! - **Threshold** 0.8 ([`Params::threshold`]): a block is template when its features appear,
//!   on average, on nearly every page (with N = 16, a feature on 9 of 16 pages scores 0.79).
//!   The paper observes that the best threshold differs from site to site and searches for it
//!   per site; pith uses one value, chosen without looking at any evaluation page, and keeps it
//!   a parameter.
//! - **Minimum** [`Params::min_pages`] = 3 learnt pages of the host: with two pages, any word
//!   the two articles share looks like template.
//! - **Fallback.** Without a memory, without a host, or with fewer pages learnt, the page is
//!   judged alone: a block more than half of whose text is link text
//!   ([`Params::link_density`]) is navigation and goes. That is the one template signal a
//!   single page carries (menus, footers and "related" lists are lists of links).
//!
//! # Memory, bounded ([`SiteMemory`])
//!
//! Per host: a table of [`Limits::slots`] 16-bit counters, features being hashed into it (FNV-1a;
//! a collision only raises a count), and a sliding window of the last [`Limits::window`] pages,
//! each kept as a bit set of its slots so that the oldest page's counts can be taken back out.
//! A page identical to one in the window (a reload) is not counted twice. At most
//! [`Limits::hosts`] hosts are kept; a new host evicts the least recently used one. With the
//! defaults (64 hosts, 8,192 slots, 16 pages) that is 16 KiB + 16 KiB per host, about 2 MiB in
//! all. One mutex guards it: the proxy shares one memory between connections, and both
//! learning and lookups are short (lookups copy the host's counters out).
//!
//! Callers learn a page before extracting it, so that its own words count once; the offline
//! `pith extract` learns every input file of a host first.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use markup5ever::local_name;

use crate::dom::{words, Edge, Element, NodeId, NodeKind, Ns, Tree};

/// Words shorter than this (in letters and digits) are not features.
pub const MIN_FEATURE_CHARS: usize = 3;

/// The redundancy test's parameters (see the module doc for their origin).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// A block whose mean feature entropy is above this is template (0.8).
    pub threshold: f64,
    /// Pages of a host that must have been learnt before the entropy test is used (3).
    pub min_pages: usize,
    /// The fallback removes a block whose link text exceeds this share of its text (0.5).
    pub link_density: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            threshold: 0.8,
            min_pages: 3,
            link_density: 0.5,
        }
    }
}

/// The bounds of a [`SiteMemory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Hosts remembered; the least recently used goes first (64).
    pub hosts: usize,
    /// Counters per host that features are hashed into (8,192; at most 65,536).
    pub slots: usize,
    /// Pages per host counted, the most recent ones (16; at most 65,535).
    pub window: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            hosts: 64,
            slots: 8192,
            window: 16,
        }
    }
}

/// What has been learnt of each site's template, bounded in memory; shared between requests.
pub struct SiteMemory {
    limits: Limits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    hosts: HashMap<String, Host>,
    /// Incremented on every use, to find the least recently used host.
    clock: u64,
}

/// One host's document frequencies and the pages they were counted from.
struct Host {
    /// Per slot: the learnt pages in the window with a feature hashed there.
    counts: Vec<u16>,
    /// The window of pages, oldest first: (fingerprint, bit set of slots).
    pages: VecDeque<(u64, Vec<u64>)>,
    last_used: u64,
}

impl Default for SiteMemory {
    fn default() -> Self {
        SiteMemory::new(Limits::default())
    }
}

impl fmt::Debug for SiteMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SiteMemory")
            .field("limits", &self.limits)
            .field("hosts", &self.hosts())
            .finish()
    }
}

impl SiteMemory {
    /// An empty memory with the given bounds (clamped to at least one host, slot and page).
    pub fn new(limits: Limits) -> SiteMemory {
        let limits = Limits {
            hosts: limits.hosts.max(1),
            slots: limits.slots.clamp(1, 1 << 16),
            window: limits.window.clamp(1, usize::from(u16::MAX)),
        };
        SiteMemory {
            limits,
            state: Mutex::new(State::default()),
        }
    }

    /// Records the features of one page of `host` (its body's visible words).
    pub fn learn(&self, host: &str, tree: &Tree) {
        let bits = page_bits(tree, self.limits.slots);
        let fingerprint = fnv_words(&bits);
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        if !state.hosts.contains_key(host) {
            if state.hosts.len() >= self.limits.hosts {
                evict_oldest(&mut state.hosts);
            }
            let new = Host {
                counts: vec![0; self.limits.slots],
                pages: VecDeque::new(),
                last_used: now,
            };
            state.hosts.insert(host.to_string(), new);
        }
        let Some(entry) = state.hosts.get_mut(host) else {
            return;
        };
        entry.last_used = now;
        if entry.pages.iter().any(|(f, _)| *f == fingerprint) {
            return;
        }
        if entry.pages.len() >= self.limits.window {
            if let Some((_, old)) = entry.pages.pop_front() {
                for slot in set_bits(&old) {
                    entry.counts[slot] = entry.counts[slot].saturating_sub(1);
                }
            }
        }
        for slot in set_bits(&bits) {
            entry.counts[slot] = entry.counts[slot].saturating_add(1);
        }
        entry.pages.push_back((fingerprint, bits));
    }

    /// Pages of `host` currently counted (0 for a host not remembered).
    pub fn pages(&self, host: &str) -> usize {
        self.lock().hosts.get(host).map_or(0, |h| h.pages.len())
    }

    /// Hosts currently remembered.
    pub fn hosts(&self) -> usize {
        self.lock().hosts.len()
    }

    /// A copy of the host's counters and its number of pages, marking the host used.
    fn snapshot(&self, host: &str) -> Option<(Vec<u16>, usize)> {
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        let entry = state.hosts.get_mut(host)?;
        entry.last_used = now;
        Some((entry.counts.clone(), entry.pages.len()))
    }

    /// The state, also after a panic elsewhere while it was held: every update leaves the
    /// counters consistent with the window or merely stale, never unsafe to read.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn evict_oldest(hosts: &mut HashMap<String, Host>) {
    let oldest = hosts
        .iter()
        .min_by_key(|(_, h)| h.last_used)
        .map(|(name, _)| name.clone());
    if let Some(name) = oldest {
        hosts.remove(&name);
    }
}

/// Removes the template blocks of the page (contract in [`super::algorithm`]): by entropy
/// when `memory` holds enough pages of `host`, else by the link-density fallback.
pub fn extract(tree: &mut Tree, memory: Option<&SiteMemory>, host: Option<&str>, params: &Params) {
    let Some(body) = tree.body() else {
        return;
    };
    let blocks = blocks(tree, body);
    let learnt = memory
        .zip(host)
        .and_then(|(m, h)| m.snapshot(h))
        .filter(|(_, pages)| *pages >= params.min_pages.max(2));
    let mut doomed = Vec::new();
    for block in &blocks {
        let redundant = match &learnt {
            Some((counts, pages)) => block_entropy(tree, block, counts, *pages)
                .is_some_and(|h| h > params.threshold),
            None => is_link_dense(tree, block, params.link_density),
        };
        if redundant {
            doomed.extend_from_slice(&block.texts);
        }
    }
    for id in doomed {
        tree.remove(id);
    }
}

/// A content block: the visible text nodes whose nearest container is the same element.
#[derive(Debug, Default)]
struct Block {
    texts: Vec<NodeId>,
}

/// The page's blocks, in document order of their first text.
fn blocks(tree: &Tree, body: NodeId) -> Vec<Block> {
    let mut index_of = vec![u32::MAX; tree.len()];
    let mut blocks: Vec<Block> = Vec::new();
    let mut containers = vec![body];
    let mut walk = tree.traverse(body);
    while let Some(edge) = walk.next() {
        match edge {
            Edge::Open(id) => match tree.kind(id) {
                NodeKind::Element(_) if id != body && tree.is_content_hidden(id) => {
                    walk.skip_children()
                }
                NodeKind::Element(e) if id != body && is_container(e) => containers.push(id),
                NodeKind::Text(span) if tree.is_shown(id) && words(tree.str(*span)).next().is_some() => {
                    let container = containers.last().copied().unwrap_or(body);
                    let slot = &mut index_of[container.index()];
                    if *slot == u32::MAX {
                        *slot = blocks.len() as u32;
                        blocks.push(Block::default());
                    }
                    blocks[*slot as usize].texts.push(id);
                }
                _ => {}
            },
            Edge::Close(id) => {
                if id != body && containers.last() == Some(&id) {
                    containers.pop();
                }
            }
        }
    }
    blocks
}

/// The elements that delimit blocks: tables and their cells, the `div` family, lists.
fn is_container(e: &Element) -> bool {
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("table")
                | local_name!("td")
                | local_name!("th")
                | local_name!("div")
                | local_name!("section")
                | local_name!("article")
                | local_name!("aside")
                | local_name!("nav")
                | local_name!("header")
                | local_name!("footer")
                | local_name!("main")
                | local_name!("form")
                | local_name!("center")
                | local_name!("ul")
                | local_name!("ol")
                | local_name!("dl")
                | local_name!("menu")
        )
}

/// The block's mean feature entropy, `None` when it has no features.
fn block_entropy(tree: &Tree, block: &Block, counts: &[u16], pages: usize) -> Option<f64> {
    let mut slots = Vec::new();
    for &id in &block.texts {
        let text = tree.text(id).unwrap_or("");
        slots.extend(features(text).map(|h| slot_of(h, counts.len())));
    }
    slots.sort_unstable();
    slots.dedup();
    if slots.is_empty() {
        return None;
    }
    let total: f64 = slots
        .iter()
        .map(|&s| entropy(usize::from(counts[s]), pages))
        .sum();
    Some(total / slots.len() as f64)
}

/// The entropy of a feature present on `df` of `pages` pages with equal weight:
/// ln df ÷ ln pages, df taken in 1..=pages.
fn entropy(df: usize, pages: usize) -> f64 {
    if pages < 2 {
        return 0.0;
    }
    (df.clamp(1, pages) as f64).ln() / (pages as f64).ln()
}

/// Whether more than `limit` of the block's characters are link text.
fn is_link_dense(tree: &Tree, block: &Block, limit: f64) -> bool {
    let (mut chars, mut link_chars) = (0u64, 0u64);
    for &id in &block.texts {
        let n = tree.stats(id).text_chars as u64;
        chars += n;
        if tree.is_in_link(id) {
            link_chars += n;
        }
    }
    chars > 0 && link_chars as f64 > limit * chars as f64
}

/// The features of a text: the FNV-1a hash of each word's lower-cased letters and digits, for
/// words with at least [`MIN_FEATURE_CHARS`] of them.
fn features(text: &str) -> impl Iterator<Item = u64> + '_ {
    words(text).filter_map(|word| {
        let mut hash = FNV_OFFSET;
        let mut len = 0;
        for c in word.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase) {
            let mut buf = [0u8; 4];
            for &b in c.encode_utf8(&mut buf).as_bytes() {
                hash = (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME);
            }
            len += 1;
        }
        (len >= MIN_FEATURE_CHARS).then_some(hash)
    })
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn slot_of(hash: u64, slots: usize) -> usize {
    (hash % slots.max(1) as u64) as usize
}

/// The bit set of the slots of a page's visible body words.
fn page_bits(tree: &Tree, slots: usize) -> Vec<u64> {
    let mut bits = vec![0u64; slots.div_ceil(64)];
    if let Some(body) = tree.body() {
        for block in blocks(tree, body) {
            for &id in &block.texts {
                for hash in features(tree.text(id).unwrap_or("")) {
                    let s = slot_of(hash, slots);
                    bits[s / 64] |= 1 << (s % 64);
                }
            }
        }
    }
    bits
}

fn set_bits(bits: &[u64]) -> impl Iterator<Item = usize> + '_ {
    bits.iter().enumerate().flat_map(|(i, &word)| {
        (0..64).filter(move |b| word & (1 << b) != 0).map(move |b| i * 64 + b)
    })
}

/// FNV-1a over a bit set: the page's fingerprint, to recognise a page seen again.
fn fnv_words(bits: &[u64]) -> u64 {
    bits.iter().fold(FNV_OFFSET, |hash, &w| {
        w.to_le_bytes()
            .iter()
            .fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::text::render;

    const STORIES: [&str; 5] = [
        "Engineers finished the harbour crane after eleven months of welding and painting.",
        "Volunteers planted seven hundred oak saplings along the northern riverbank meadow.",
        "Municipal orchestra rehearsals resume Thursday inside the restored granary hall.",
        "Archivists digitised fragile parish ledgers describing eighteenth century harvests.",
        "Cyclists petitioned councillors demanding protected lanes beside the tram depot.",
    ];

    /// A page of one site: the same navigation and footer around a page-specific story.
    fn site_page(story: &str) -> String {
        format!(
            "<body><div class=nav>Welcome subscribers browse sections politics culture \
             sport weather <span>archive</span></div><article><p>{story}</p></article>\
             <div class=foot>Copyright newsroom company privacy policy contact</div></body>"
        )
    }

    fn extracted(html: &str, memory: Option<&SiteMemory>, host: Option<&str>) -> String {
        let mut tree = Tree::parse(html);
        extract(&mut tree, memory, host, &Params::default());
        render(&tree)
    }

    #[test]
    fn blocks_recurring_on_every_page_of_a_host_are_removed() {
        let memory = SiteMemory::default();
        for story in STORIES {
            memory.learn("news.example", &Tree::parse(&site_page(story)));
        }
        let text = extracted(&site_page(STORIES[2]), Some(&memory), Some("news.example"));
        assert_eq!(text, format!("{}\n", STORIES[2]));
    }

    #[test]
    fn another_host_is_not_judged_by_this_hosts_template() {
        let memory = SiteMemory::default();
        for story in STORIES {
            memory.learn("news.example", &Tree::parse(&site_page(story)));
        }
        // Unknown host: the fallback, which keeps these (they have no links).
        let text = extracted(&site_page(STORIES[0]), Some(&memory), Some("other.example"));
        assert!(text.contains("Welcome subscribers"), "{text}");
        assert!(text.contains(STORIES[0]), "{text}");
    }

    #[test]
    fn without_enough_pages_link_dense_blocks_go() {
        let html = "<body><ul><li><a href=/a>Home page</a></li><li><a href=/b>World news</a></li>\
                    </ul><div><p>A long story about the weather, with a <a href=/c>link</a> \
                    inside one of its sentences.</p></div></body>";
        let alone = extracted(html, None, None);
        assert!(!alone.contains("Home page"), "{alone}");
        assert!(alone.contains("A long story about the weather"), "{alone}");
        let memory = SiteMemory::default();
        memory.learn("one.example", &Tree::parse(html));
        memory.learn("one.example", &Tree::parse(&html.replace("weather", "harbour")));
        assert_eq!(memory.pages("one.example"), 2);
        assert_eq!(extracted(html, Some(&memory), Some("one.example")), alone);
    }

    #[test]
    fn entropy_is_zero_on_one_page_and_one_on_all() {
        assert_eq!(entropy(1, 16), 0.0);
        assert!((entropy(16, 16) - 1.0).abs() < 1e-12);
        assert!((entropy(4, 16) - 0.5).abs() < 1e-12);
        assert_eq!(entropy(0, 16), 0.0);
        assert_eq!(entropy(5, 1), 0.0);
    }

    #[test]
    fn memory_keeps_a_window_of_pages_and_forgets_the_oldest() {
        let limits = Limits { hosts: 4, slots: 1024, window: 3 };
        let memory = SiteMemory::new(limits);
        for i in 0..5 {
            memory.learn("h", &Tree::parse(&format!("<p>common uniqueword{i}</p>")));
        }
        assert_eq!(memory.pages("h"), 3);
        let (counts, pages) = memory.snapshot("h").expect("host");
        assert_eq!(pages, 3);
        let count = |word: &str| {
            let hash = features(word).next().expect("a feature");
            counts[slot_of(hash, 1024)]
        };
        assert_eq!(count("common"), 3);
        assert_eq!(count("uniqueword4"), 1);
        assert_eq!(count("uniqueword0"), 0, "left the window");
        // A page seen again is not counted twice.
        memory.learn("h", &Tree::parse("<p>common uniqueword4</p>"));
        let (again, pages) = memory.snapshot("h").expect("host");
        assert_eq!(pages, 3);
        assert_eq!(again, counts);
    }

    #[test]
    fn memory_keeps_at_most_its_hosts_least_recently_used_out() {
        let memory = SiteMemory::new(Limits { hosts: 3, slots: 64, window: 2 });
        let page = Tree::parse("<p>some words here</p>");
        for host in ["a", "b", "c"] {
            memory.learn(host, &page);
        }
        memory.learn("a", &page); // a is used again: b is now the oldest
        memory.learn("d", &page);
        assert_eq!(memory.hosts(), 3);
        assert_eq!(memory.pages("b"), 0);
        assert_eq!(memory.pages("a"), 1);
        assert_eq!(memory.pages("d"), 1);
    }

    #[test]
    fn blocks_follow_the_nearest_container() {
        let tree = Tree::parse(
            "<body>top<div>one <b>two</b><ul><li>three</li><li>four</li></ul>five</div>\
             <p hidden>hidden</p></body>",
        );
        let body = tree.body().expect("body");
        let texts: Vec<Vec<&str>> = blocks(&tree, body)
            .iter()
            .map(|b| b.texts.iter().map(|&t| tree.text(t).unwrap_or("").trim()).collect())
            .collect();
        assert_eq!(texts, vec![vec!["top"], vec!["one", "two", "five"], vec!["three", "four"]]);
    }

    #[test]
    fn degenerate_pages_do_not_panic() {
        let memory = SiteMemory::new(Limits { hosts: 0, slots: 0, window: 0 });
        for html in ["", "<body></body>", "<frameset></frameset>", "<p>!! ?? ..</p>"] {
            let tree = Tree::parse(html);
            memory.learn("x", &tree);
            memory.learn("x", &tree);
            let mut tree = Tree::parse(html);
            extract(&mut tree, Some(&memory), Some("x"), &Params::default());
        }
        let deep = format!("{}deep text{}", "<div>".repeat(5000), "</div>".repeat(5000));
        let mut tree = Tree::parse_with_max_depth(&deep, u32::MAX);
        memory.learn("x", &tree);
        extract(&mut tree, Some(&memory), Some("x"), &Params::default());
        assert_eq!(render(&tree), "deep text\n");
    }
}
