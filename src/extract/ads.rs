//! The tree ad remover: Crunch's "an element whose `href`, else `src`, host is an ad server is
//! removed", plus the element-hiding rules of the ad lists.
//!
//! This module owns deciding which elements of a parsed page are ads and removing them; which
//! URLs and selectors the lists condemn is [`crate::ads::AdFilter`]'s business, and
//! matching selectors is [`crate::dom::select`]'s.
//!
//! # What goes
//!
//! 1. **By URL.** `a[href]` and `area[href]` are judged as links; `img[src]`,
//!    `input[type=image][src]` and `picture > source[src]` as images; `video`, `audio`, `track`
//!    and other `source` sources as media; `iframe` and `frame` as subdocuments; `embed[src]` and
//!    `object[data]` as other requests. Relative URLs are resolved against the document's
//!    `<base href>` and the page URL first. Without a page URL only absolute URLs (or URLs
//!    relative to an absolute `<base href>`) can be judged, as requests from an unknown page:
//!    every request is third-party, and only the lists' generic hiding rules apply.
//!
//!    An element that does nothing but wrap an ad goes with it: the removal climbs through
//!    `div`, `span`, `p`, `a`, `li`, `figure` and similar wrappers whose every other child is
//!    removed, blank text, a comment or something never displayed. So
//!    `<div class=slot><a href=AD><img></a></div>` leaves no empty box behind, while a paragraph
//!    with text beside the ad link keeps its text. Table parts, forms and sectioning roots
//!    (`body`, `main`, `article`) are never climbed into: the empty-table remover decides about
//!    those once every remover has run.
//! 2. **By element-hiding selector.** The classes and ids present in the page select the lists'
//!    generic hiding rules, the page's host adds its specific ones
//!    ([`AdFilter::host_hiding`], [`AdFilter::class_id_selectors`]); each is parsed with [`crate::dom::select`] (forms it
//!    does not support are skipped and counted) and every match is removed, without climbing.
//!
//! # The guard
//!
//! Lists are written for browsers, which hide an element but keep the page; a removal here is for
//! good. A rule that matches a page's main container (`.ad-wrapper` around the whole layout,
//! page-skin links wrapped around the body) would remove the page. So no removal ever takes
//! `html`, `body`, `main`, `article`, or an element holding more than half of the page's visible
//! text (as parsed); [`AdReport::guarded`] counts how often that saved something.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use markup5ever::local_name;
use rustc_hash::{FxHashMap, FxHashSet};
use url::Url;

use crate::dom::select::{Selector, SelectorSet};
use crate::dom::{NodeId, NodeKind, Ns, Tree};
use crate::ads::{AdFilter, RequestKind};

/// The page requests are judged from when the page URL is unknown: a host that cannot exist
/// (`.invalid` is reserved), so every request is third-party and no site-specific rule applies.
const UNKNOWN_PAGE: &str = "http://unknown.invalid/";

/// The host of [`UNKNOWN_PAGE`].
const UNKNOWN_HOST: &str = "unknown.invalid";

/// What the ad remover took out, for logs, response headers and the retainer (which should not
/// re-list links to ad servers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdReport {
    /// The roots of the removed subtrees, in document order.
    pub removed: Vec<NodeId>,
    /// Removals because a URL is an ad or tracker (wrappers climbed count once).
    pub by_url: usize,
    /// Removals because an element-hiding selector matched.
    pub by_selector: usize,
    /// Removals refused by the guard (module doc) or because the element or one of its
    /// descendants was to be kept.
    pub guarded: usize,
    /// Hiding selectors that applied to the page but use syntax the selector engine lacks.
    pub unsupported_selectors: usize,
}

/// Removes the ads of a page: elements whose URL the filter blocks, then elements its hiding
/// rules select. `page_url` is the page's absolute URL, if known (see the module doc).
pub fn remove_ads(tree: &mut Tree, filter: &AdFilter, page_url: Option<&str>) -> AdReport {
    remove_ads_keeping(tree, filter, page_url, &[])
}

/// [`remove_ads`], but never removing the elements of `keep` nor their ancestors: the `keep`
/// selectors of a site rule.
pub fn remove_ads_keeping(
    tree: &mut Tree,
    filter: &AdFilter,
    page_url: Option<&str>,
    keep: &[NodeId],
) -> AdReport {
    let page = page_url.and_then(|url| Url::parse(url).ok());
    let base = super::base_url(tree, page.as_ref());
    // Not the base: it often names a CDN, whose host says nothing of the page's.
    let judged_from = page.as_ref().map_or(UNKNOWN_PAGE, Url::as_str).to_string();
    // Its host, as parsing it again would give.
    let judged_host = page.as_ref().map_or(Some(UNKNOWN_HOST), Url::host_str).unwrap_or_default();
    let guard = Guard::new(tree, keep);
    let mut report = AdReport::default();

    for ad in blocked_elements(tree, filter, base.as_ref(), page.as_ref(), &judged_from) {
        if tree.is_removed(ad) {
            continue;
        }
        // A kept wrapper keeps only itself: the ad inside it can still go.
        let root = Some(outermost_wrapper(tree, ad))
            .filter(|&root| !guard.refuses(tree, root))
            .or(Some(ad).filter(|&ad| !guard.refuses(tree, ad)));
        let Some(root) = root else {
            report.guarded += 1;
            continue;
        };
        tree.remove(root);
        report.removed.push(root);
        report.by_url += 1;
    }
    remove_hidden(tree, filter, (&judged_from, judged_host), &guard, &mut report);
    report.removed.sort_unstable();
    report
}

/// Removes what the lists' element-hiding rules select.
fn remove_hidden(
    tree: &mut Tree,
    filter: &AdFilter,
    (judged_from, judged_host): (&str, &str),
    guard: &Guard,
    report: &mut AdReport,
) {
    let root = tree.body().unwrap_or(tree.root());
    let host = host_selectors(filter, judged_from, judged_host);
    report.unsupported_selectors += host.unsupported;
    let matched = if !host.generichide && host.exceptions.is_empty() {
        // All the lists' class and id rules, parsed once and indexed by class and id: an
        // element tests only those keyed by its own. One walk serves both sets and the count
        // of unparsable rules keyed by the page's classes and ids.
        let generic = generic_selectors(filter);
        let mut unsupported = UnsupportedSeen::default();
        let sets = [&host.set, &generic.set];
        // In document order, each element once, as the other branches leave theirs.
        let matched = SelectorSet::matching_any(&sets, tree, root, |is_class, token| {
            unsupported.note(&generic, is_class, token)
        });
        report.unsupported_selectors += unsupported.count(&generic);
        matched
    } else if !host.generichide {
        // The host cancels some generic rules: ask the lists for those that apply here.
        let mut matched = host.set.matching(tree, root);
        let (classes, ids) = classes_and_ids(tree, root);
        let texts = filter.class_id_selectors(&classes, &ids, &host.exceptions);
        let (page, unsupported) = parse_selectors(texts.iter().filter(|t| !host.texts.contains(*t)));
        report.unsupported_selectors += unsupported;
        matched.extend(page.matching(tree, root));
        matched.sort_unstable();
        matched.dedup();
        matched
    } else {
        host.set.matching(tree, root)
    };
    for id in matched {
        if tree.is_removed(id) {
            continue; // inside an element removed a moment ago
        }
        if guard.refuses(tree, id) {
            report.guarded += 1;
            continue;
        }
        tree.remove(id);
        report.removed.push(id);
        report.by_selector += 1;
    }
}

/// The hiding rules of the lists for one host, parsed once: a host's pages share them, and
/// the lists give every host a few hundred generic selectors (`a[href^="https://ad-host/"]`),
/// whose parsing and indexing used to cost as much per page as building the page's tree.
struct HostSelectors {
    set: SelectorSet,
    /// The selectors' texts, so the page's class/id selectors are not matched twice.
    texts: HashSet<String>,
    exceptions: HashSet<String>,
    generichide: bool,
    /// Selectors the engine of [`crate::dom::select`] does not support.
    unsupported: usize,
}

/// How many hosts' parsed hiding rules are kept (a few hundred KiB each at most).
const HOSTS_KEPT: u64 = 512;

/// The parsed hiding rules for `host`, the host of `page_url`, from a process-wide cache keyed
/// by the filter's identity and the host.
fn host_selectors(filter: &AdFilter, page_url: &str, host: &str) -> Arc<HostSelectors> {
    static CACHE: OnceLock<moka::sync::Cache<(u64, String), Arc<HostSelectors>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| moka::sync::Cache::new(HOSTS_KEPT));
    cache.get_with((filter.id(), host.to_string()), || {
        let hiding = filter.host_hiding(page_url);
        let (set, unsupported) = parse_selectors(hiding.selectors.iter());
        Arc::new(HostSelectors {
            set,
            texts: hiding.selectors.into_iter().collect(),
            exceptions: hiding.exceptions,
            generichide: hiding.generichide,
            unsupported,
        })
    })
}

/// The lists' generic class and id hiding rules as one indexed set, parsed once per filter
/// (about 13,000 rules for the shipped lists, a few MiB), and the rules the engine cannot parse
/// by the class or id that keys them, so a page's report still counts those that applied.
struct GenericSelectors {
    set: SelectorSet,
    /// Unparsable rules per class that keys them (`.class…`).
    unsupported_classes: FxHashMap<String, usize>,
    /// Unparsable rules per id that keys them (`#id…`).
    unsupported_ids: FxHashMap<String, usize>,
}

impl GenericSelectors {
    fn new(texts: &[String]) -> GenericSelectors {
        let (mut unsupported_classes, mut unsupported_ids) = (FxHashMap::default(), FxHashMap::default());
        let mut selectors = Vec::with_capacity(texts.len());
        for text in texts {
            match Selector::parse(text) {
                Ok(selector) => selectors.push(selector),
                Err(_) => {
                    let (mark, key) = leading_key(text);
                    let map = if mark == '.' { &mut unsupported_classes } else { &mut unsupported_ids };
                    *map.entry(key.to_string()).or_default() += 1;
                }
            }
        }
        let mut set = SelectorSet::new(selectors);
        // The walk then reports where the page holds one of these keys, from the lookup it
        // makes anyway (see `UnsupportedSeen`).
        for (is_class, map) in [(true, &unsupported_classes), (false, &unsupported_ids)] {
            for key in map.keys() {
                set.note(is_class, key);
            }
        }
        GenericSelectors { set, unsupported_classes, unsupported_ids }
    }

    /// The unparsable rules per class (`true`) or per id (`false`) that keys them.
    fn unsupported(&self, is_class: bool) -> &FxHashMap<String, usize> {
        if is_class {
            &self.unsupported_classes
        } else {
            &self.unsupported_ids
        }
    }
}

/// The unparsable generic rules keyed by a class or id of the page, gathered as the walk finds
/// their keys (noted in the generic set) in the page: each key counts once however often the
/// page repeats it.
#[derive(Default)]
struct UnsupportedSeen<'g> {
    seen: FxHashSet<(bool, &'g str)>,
}

impl<'g> UnsupportedSeen<'g> {
    fn note(&mut self, generic: &'g GenericSelectors, is_class: bool, token: &str) {
        let map = generic.unsupported(is_class);
        if map.is_empty() {
            return;
        }
        if let Some((key, _)) = map.get_key_value(token) {
            self.seen.insert((is_class, key));
        }
    }

    /// How many unparsable rules the keys seen stand for.
    fn count(&self, generic: &GenericSelectors) -> usize {
        self.seen.iter().map(|&(is_class, key)| generic.unsupported(is_class)[key]).sum()
    }
}

/// The mark (`.` or `#`) and the class or id a generic hiding rule starts with.
fn leading_key(text: &str) -> (char, &str) {
    let mark = text.chars().next().unwrap_or('.');
    let rest = &text[mark.len_utf8().min(text.len())..];
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')).unwrap_or(rest.len());
    (mark, &rest[..end])
}

/// The lists' generic class and id rules of `filter`, made once per filter.
fn generic_selectors(filter: &AdFilter) -> Arc<GenericSelectors> {
    static CACHE: OnceLock<moka::sync::Cache<u64, Arc<GenericSelectors>>> = OnceLock::new();
    // A filter is replaced on a config reload; two cover the swap.
    let cache = CACHE.get_or_init(|| moka::sync::Cache::new(2));
    cache.get_with(filter.id(), || Arc::new(GenericSelectors::new(filter.generic_class_id_selectors())))
}

/// Parses selector texts into one set; the count is of those the engine cannot parse.
fn parse_selectors<'a>(texts: impl Iterator<Item = &'a String>) -> (SelectorSet, usize) {
    let mut unsupported = 0;
    let mut selectors = Vec::new();
    for text in texts {
        match Selector::parse(text) {
            Ok(selector) => selectors.push(selector),
            Err(_) => unsupported += 1,
        }
    }
    (SelectorSet::new(selectors), unsupported)
}

/// The elements (not yet removed) whose URL the filter blocks, in document order.
///
/// Each distinct attribute value is resolved and judged once per page (menus repeat links),
/// and links to the page's own host are not judged at all: a link is judged by host rules only
/// (see [`crate::ads`]), and a page on a blocked host would not be served as a page.
fn blocked_elements(
    tree: &Tree,
    filter: &AdFilter,
    base: Option<&Url>,
    page: Option<&Url>,
    judged_from: &str,
) -> Vec<NodeId> {
    let page_host = page.and_then(Url::host_str);
    // A relative link resolves to the base's host; when that is the page's, it is not judged,
    // and need not be resolved either (most of a page's links are its own site's).
    let base_is_page = page_host.is_some() && base.and_then(Url::host_str) == page_host;
    // Keyed by the attribute value as written: a repeated value resolves to the same URL, so
    // it is resolved and judged once. The keys come from the page, so the hasher is seeded per
    // process (which values collide is not known in advance), and it is fast on short strings.
    let mut verdicts: HashMap<(&str, RequestKind), bool, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(256, foldhash::fast::RandomState::default());
    let mut blocked = Vec::new();
    for id in tree.walk(tree.root()) {
        let Some((raw, kind)) = request_of(tree, id) else {
            continue;
        };
        if kind == RequestKind::Link && base_is_page && is_same_host_relative(raw) {
            continue;
        }
        let verdict = *verdicts.entry((raw, kind)).or_insert_with(|| {
            let trimmed = trim_url(raw);
            if let Some(host) = plain_absolute(trimmed) {
                // Written as the parser would write it: judged as it stands.
                if kind == RequestKind::Link && page_host == Some(host) {
                    return false;
                }
                return filter.is_blocked(trimmed, judged_from, kind);
            }
            if let Some((url, host)) = base.and_then(|base| plain_relative(trimmed, base)) {
                if kind == RequestKind::Link && page_host == Some(host) {
                    return false;
                }
                return filter.is_blocked(&url, judged_from, kind);
            }
            let Some(url) = resolve(raw, base) else {
                return false;
            };
            if kind == RequestKind::Link && page_host.is_some() && url.host_str() == page_host {
                return false;
            }
            filter.is_blocked(url.as_str(), judged_from, kind)
        });
        if verdict {
            blocked.push(id);
        }
    }
    blocked
}

/// The URL an element would request or lead to, and as what kind of request.
fn request_of(tree: &Tree, id: NodeId) -> Option<(&str, RequestKind)> {
    let element = tree.element(id)?;
    if element.ns != Ns::Html {
        return None;
    }
    let (attr, kind) = match element.name {
        local_name!("a") | local_name!("area") => (local_name!("href"), RequestKind::Link),
        local_name!("img") => (local_name!("src"), RequestKind::Image),
        local_name!("input") => {
            let is_image = tree
                .attr_named(id, &local_name!("type"))
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("image"));
            (is_image.then_some(local_name!("src"))?, RequestKind::Image)
        }
        local_name!("source") => {
            let in_picture = tree
                .parent(id)
                .is_some_and(|p| tree.tag(p) == Some("picture"));
            let kind = if in_picture {
                RequestKind::Image
            } else {
                RequestKind::Media
            };
            (local_name!("src"), kind)
        }
        local_name!("video") | local_name!("audio") | local_name!("track") => {
            (local_name!("src"), RequestKind::Media)
        }
        local_name!("iframe") | local_name!("frame") => (local_name!("src"), RequestKind::Subdocument),
        local_name!("embed") => (local_name!("src"), RequestKind::Other),
        local_name!("object") => (local_name!("data"), RequestKind::Other),
        _ => return None,
    };
    Some((tree.attr_named(id, &attr)?, kind))
}

/// The absolute http(s) or ws(s) URL an attribute value stands for, or `None` when it is empty,
/// a fragment of the same page, another scheme, or relative with no base to resolve it against.
fn resolve(raw: &str, base: Option<&Url>) -> Option<Url> {
    let raw = trim_url(raw);
    if raw.is_empty() || raw.starts_with('#') || has_scheme(raw, "data") {
        return None;
    }
    let url = match base {
        Some(base) => base.join(raw).ok()?,
        None => Url::parse(raw).ok()?,
    };
    matches!(url.scheme(), "http" | "https" | "ws" | "wss").then_some(url)
}

/// An attribute's URL without the whitespace around it, which the URL parser ignores.
fn trim_url(raw: &str) -> &str {
    raw.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0c')
}

/// The host of an absolute URL written exactly as the URL parser would serialise it, so that
/// it can be judged without parsing (a page's links to other sites are mostly of this form,
/// and parsing was a tenth of the ad remover's cost); `None` for anything else, which is then
/// parsed. The form: `http://` or `https://`, a host of lower-case letters, digits, dots and
/// hyphens (no IDNA label, no trailing dot, no last label starting with a digit, which the
/// parser would read as an IPv4 address, no port, no user), then `/` and printable ASCII that
/// the parser leaves as it is (no `%`, quotes, `<>`, `\`, `^`, backquote, braces, `|`) with
/// no `/.` (a dot segment the parser would resolve). Tested against the parser.
fn plain_absolute(raw: &str) -> Option<&str> {
    let rest = raw.strip_prefix("https://").or_else(|| raw.strip_prefix("http://"))?;
    let slash = memchr::memchr(b'/', rest.as_bytes())?;
    let (host, path) = rest.split_at(slash);
    let host_ok = !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && !host.starts_with('.')
        && !host.ends_with('.')
        && !has_pair(host, b'.', b'.')
        // Labels on bytes: a `.` is one byte, and a character searcher per label cost more
        // than the rest of the test.
        && !host.as_bytes().split(|&b| b == b'.').any(|label| label.starts_with(b"xn--"))
        && !host.as_bytes().rsplit(|&b| b == b'.').next().is_some_and(|last| last.first().is_some_and(u8::is_ascii_digit));
    let path_ok = path.bytes().all(|b| PLAIN_PATH_BYTES[usize::from(b)]) && !has_pair(path, b'/', b'.');
    (host_ok && path_ok).then_some(host)
}

/// What `base.join(raw)` serialises to, and its host, made without parsing when `raw` is a
/// path (`/i/a.png`, `i/a.png`) or a query (`?p=2`) in bytes the parser leaves as they are
/// (those of [`plain_absolute`], no `/.`, no leading `.`, no `:` that could end a scheme) and
/// `base` an http(s) URL: the base's start then `raw` as written. A page's images and its
/// links to its CDN are mostly of this form, and parsing them was most of the ad remover's
/// URL work. `None` for anything else, which is then parsed. Tested against the parser.
/// An empty `raw` is `None`: it stands for no request.
fn plain_relative<'b>(raw: &str, base: &'b Url) -> Option<(String, &'b str)> {
    let host = base.host_str().filter(|_| matches!(base.scheme(), "http" | "https"))?;
    let plain = raw.bytes().all(|b| PLAIN_PATH_BYTES[usize::from(b)]) && !has_pair(raw, b'/', b'.');
    let first_segment = &raw[..raw.bytes().position(|b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(raw.len())];
    if !plain || raw.is_empty() || raw.starts_with(['.', '#']) || raw.starts_with("//") || memchr::memchr(b':', first_segment.as_bytes()).is_some() {
        return None;
    }
    let whole = base.as_str();
    let kept = if raw.starts_with('/') {
        &whole[..whole.len() - base[url::Position::BeforePath..].len()]
    } else if raw.starts_with('?') {
        &whole[..whole.len() - base[url::Position::AfterPath..].len()]
    } else {
        let path_end = whole.len() - base[url::Position::AfterPath..].len();
        &whole[..memchr::memrchr(b'/', &whole.as_bytes()[..path_end])? + 1]
    };
    Some(([kept, raw].concat(), host))
}

/// The bytes the URL parser leaves as they are in a path: printable ASCII but `%`, quotes,
/// `<>`, `\`, `^`, backquote, braces and `|`. A table, because every link of a page is read
/// through it.
const PLAIN_PATH_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0x21;
    while b <= 0x7e {
        table[b] = !matches!(b as u8, b'%' | b'"' | b'\'' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}');
        b += 1;
    }
    table
};

/// Whether byte `second` follows byte `first` somewhere in `text`: a two-byte search that,
/// unlike `str::contains`, builds no searcher per call (it runs on every link of a page).
fn has_pair(text: &str, first: u8, second: u8) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(second, bytes).any(|at| at > 0 && bytes[at - 1] == first)
}

/// Whether a link resolves against its base without changing host: a path (`/a`, `a/b`,
/// `../c`), a query or a fragment, but not `//host/…` nor anything with a scheme. Leading and
/// trailing whitespace and control characters are ignored as the URL parser ignores them; a
/// backslash counts as a slash, as it does for http(s) URLs; tabs and newlines inside
/// (which the parser drops) make the answer "no", to be safe.
fn is_same_host_relative(raw: &str) -> bool {
    let raw = raw.trim_matches(|c: char| c <= ' ');
    let bytes = raw.as_bytes();
    if bytes.len() >= 2 && matches!(bytes[0], b'/' | b'\\') && matches!(bytes[1], b'/' | b'\\') {
        return false; // scheme-relative: another host
    }
    if memchr::memchr3(b'\t', b'\n', b'\r', bytes).is_some() {
        return false;
    }
    // A scheme is letters, digits, `+`, `-`, `.` before the first `:`, starting with a letter.
    let scheme_end = raw.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')));
    let has_scheme = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme_end.is_some_and(|end| bytes[end] == b':');
    !has_scheme
}

/// Whether `url` starts with `scheme:` in any letter case; used to skip inline data cheaply.
fn has_scheme(url: &str, scheme: &str) -> bool {
    url.len() > scheme.len()
        && url.as_bytes()[scheme.len()] == b':'
        && url[..scheme.len()].eq_ignore_ascii_case(scheme)
}


/// The outermost element around `ad` that holds nothing else worth showing (module doc).
fn outermost_wrapper(tree: &Tree, ad: NodeId) -> NodeId {
    let mut current = ad;
    while let Some(parent) = tree.parent(current) {
        if !is_wrapper(tree, parent) || has_other_content(tree, parent, current) {
            break;
        }
        current = parent;
    }
    current
}

/// Elements that only group or style their content, which an ad can leave empty.
fn is_wrapper(tree: &Tree, id: NodeId) -> bool {
    let Some(element) = tree.element(id) else {
        return false;
    };
    element.ns == Ns::Html
        && matches!(
            element.name,
            local_name!("div")
                | local_name!("span")
                | local_name!("p")
                | local_name!("a")
                | local_name!("center")
                | local_name!("figure")
                | local_name!("picture")
                | local_name!("aside")
                | local_name!("section")
                | local_name!("li")
                | local_name!("ul")
                | local_name!("ol")
                | local_name!("font")
                | local_name!("b")
                | local_name!("strong")
                | local_name!("i")
                | local_name!("em")
                | local_name!("small")
                | local_name!("ins")
        )
}

/// Whether `parent` shows anything besides `child`: a child not removed that is visible text,
/// or a displayed element other than a line break.
fn has_other_content(tree: &Tree, parent: NodeId, child: NodeId) -> bool {
    tree.children(parent).any(|c| {
        c != child
            && !tree.is_removed(c)
            && tree.is_shown(c)
            && match tree.kind(c) {
                NodeKind::Text(span) => !tree.str(*span).trim().is_empty(),
                NodeKind::Element(e) => !matches!(e.name, local_name!("br") | local_name!("wbr")),
                _ => false,
            }
    })
}

/// The distinct class names and ids of the elements under `root`, for the lists' generic rules.
fn classes_and_ids(tree: &Tree, root: NodeId) -> (Vec<String>, Vec<String>) {
    let mut classes = HashSet::new();
    let mut ids = HashSet::new();
    for_each_class_and_id(tree, root, |is_class, token| {
        if is_class { classes.insert(token) } else { ids.insert(token) };
    });
    let owned = |set: HashSet<&str>| set.into_iter().map(str::to_string).collect();
    (owned(classes), owned(ids))
}

/// Calls `f` with each class name (`true`) and each non-empty id (`false`) of the elements
/// under `root`, in document order, repeats included.
fn for_each_class_and_id<'t>(tree: &'t Tree, root: NodeId, mut f: impl FnMut(bool, &'t str)) {
    for id in tree.walk(root) {
        for (name, value) in tree.attrs(id) {
            if *name == local_name!("class") {
                value.split_ascii_whitespace().for_each(|class| f(true, class));
            } else if *name == local_name!("id") && !value.is_empty() {
                f(false, value);
            }
        }
    }
}

/// Decides which removals are too dangerous (module doc) or unwanted (`keep`).
struct Guard {
    /// The page's visible characters: an element holding more than half is never removed.
    page_text: u64,
    /// Per node: a kept element or an ancestor of one.
    kept: Vec<bool>,
}

impl Guard {
    fn new(tree: &Tree, keep: &[NodeId]) -> Guard {
        let page = tree.body().unwrap_or(tree.root());
        let mut kept = vec![false; if keep.is_empty() { 0 } else { tree.len() }];
        for &id in keep {
            for node in std::iter::once(id).chain(tree.ancestors(id)) {
                if kept[node.index()] {
                    break;
                }
                kept[node.index()] = true;
            }
        }
        Guard {
            page_text: u64::from(tree.stats(page).text_chars),
            kept,
        }
    }

    fn refuses(&self, tree: &Tree, id: NodeId) -> bool {
        let structural = tree.element(id).is_some_and(|e| {
            matches!(
                e.name,
                local_name!("html")
                    | local_name!("body")
                    | local_name!("main")
                    | local_name!("article")
            )
        });
        structural
            || self.kept.get(id.index()).copied().unwrap_or(false)
            || 2 * u64::from(tree.stats(id).text_chars) > self.page_text.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host rules, a third-party rule, an image path rule, an exception, generic and
    /// host-specific hiding rules.
    const LIST: &str = "[Adblock Plus 2.0]
||ads.example.net^
||tracker.example.org^$third-party
/banner/*$image
@@||ads.example.net/allowed/
##.ad-banner
###top-ad
##div[class^=\"sponsor-\"]
##.giant
##.frame-ad
##.boxed:has(> .ad-label)
example.com##.promo
";

    fn filter() -> AdFilter {
        AdFilter::from_lists(&[("test.txt", LIST)])
    }

    const PAGE: &str = r#"<html><head><base href="https://cdn.example.com/assets/"></head><body>
<main id="main">
  <p id="story">A story of some length, so that no single ad holds most of the text.
    <a id="normal" href="/story/2">the next story</a></p>
  <div id="slot"><!-- ad --> <a id="ad-link" href="https://ads.example.net/click?id=1"><img id="ad-img" src="ad.png"></a><br></div>
  <p id="mixed">Sponsored: <a id="ad-inline" href="//ads.example.net/c">buy now</a> and some words.</p>
  <img id="banner" src="../banner/top.png">
  <img id="photo" src="photo.jpg" alt="a photo">
  <a id="allowed" href="https://ads.example.net/allowed/offer">an allowed offer</a>
  <a id="tracked" href="https://tracker.example.org/t">tracker</a>
  <iframe id="frame" src="https://ads.example.net/frame.html"></iframe>
  <div class="ad-banner" id="hidden-class">class</div>
  <div id="top-ad">id</div>
  <div class="sponsor-box" id="hidden-attr">attr</div>
  <div class="promo" id="promo">promo</div>
</main></body></html>"#;

    /// The ids of the removed roots, in document order.
    fn removed_ids(tree: &Tree, report: &AdReport) -> Vec<String> {
        report
            .removed
            .iter()
            .map(|&id| tree.attr(id, "id").unwrap_or("-").to_string())
            .collect()
    }

    fn by_id(tree: &Tree, id: &str) -> NodeId {
        tree.descendants(tree.root())
            .find(|&n| tree.attr(n, "id") == Some(id))
            .unwrap_or_else(|| panic!("no #{id}"))
    }

    #[test]
    fn ads_go_with_their_wrappers_and_content_stays() {
        let mut tree = Tree::parse(PAGE);
        let report = remove_ads(&mut tree, &filter(), Some("https://www.example.com/news/1"));
        assert_eq!(
            removed_ids(&tree, &report),
            [
                "slot",
                "ad-inline",
                "banner",
                "tracked",
                "frame",
                "hidden-class",
                "top-ad",
                "hidden-attr",
                "promo"
            ]
        );
        assert_eq!(
            (report.by_url, report.by_selector, report.guarded),
            (5, 4, 0)
        );
        for kept in ["story", "normal", "mixed", "photo", "allowed", "main"] {
            assert!(!tree.is_removed(by_id(&tree, kept)), "#{kept} kept");
        }
    }

    #[test]
    fn without_a_page_url_an_absolute_base_still_resolves() {
        let mut tree = Tree::parse(PAGE);
        let report = remove_ads(&mut tree, &filter(), None);
        let removed = removed_ids(&tree, &report);
        // `../banner/top.png` against the base; `.promo` is example.com's rule only.
        assert!(removed.contains(&"banner".to_string()), "{removed:?}");
        assert!(removed.contains(&"ad-inline".to_string()), "{removed:?}");
        assert!(!removed.contains(&"promo".to_string()), "{removed:?}");
    }

    #[test]
    fn without_any_base_only_absolute_urls_are_judged() {
        let html = r#"<p>Text enough to hold the page together, whatever the ads do.</p>
            <img id="relative" src="/banner/a.png"><img id="scheme-relative" src="//x.example/banner/b.png">
            <img id="absolute" src="https://x.example/banner/c.png"><a id="link" href="HTTPS://ADS.EXAMPLE.NET/">ad</a>"#;
        let mut tree = Tree::parse(html);
        let report = remove_ads(&mut tree, &filter(), None);
        assert_eq!(removed_ids(&tree, &report), ["absolute", "link"]);
        let mut tree = Tree::parse(html);
        let report = remove_ads(&mut tree, &filter(), Some("https://site.example/a/b"));
        assert_eq!(
            removed_ids(&tree, &report),
            ["relative", "scheme-relative", "absolute", "link"]
        );
    }

    #[test]
    fn the_page_url_resolves_when_there_is_no_base() {
        let mut tree = Tree::parse(
            r#"<p>Enough words here to keep the guard quiet for this test.</p><p><img id="i" src="banner/x.png"></p>"#,
        );
        let report = remove_ads(&mut tree, &filter(), Some("https://site.example/"));
        // The paragraph held only the image: it goes with it.
        assert_eq!(report.removed.len(), 1);
        assert_eq!(tree.tag(report.removed[0]), Some("p"));
        assert!(tree.is_removed(by_id(&tree, "i")));
    }

    #[test]
    fn non_http_inline_and_same_host_urls_are_left_alone() {
        let mut tree = Tree::parse(
            r##"<p>Some text that is the content of this page.</p><a href="javascript:ads()">j</a>
            <a href="mailto:x@ads.example.net">m</a><a href="#ads">f</a>
            <img src="data:image/gif;base64,R0lGOD"><img src="  "><a href="/next">same host</a>"##,
        );
        let report = remove_ads(&mut tree, &filter(), Some("https://ads.example.net/page"));
        assert_eq!(report, AdReport::default());
    }

    #[test]
    fn the_guard_keeps_structure_and_most_of_the_text() {
        let mut tree = Tree::parse(
            r#"<body class="ad-banner"><div class="giant" id="giant"><p>Most of the page's text is in
            here, far more than anywhere else on it.</p><div class="ad-banner" id="inner">ad</div></div>
            <article class="ad-banner" id="article">short</article><p>a little more</p>"#,
        );
        let report = remove_ads(&mut tree, &filter(), Some("https://site.example/"));
        assert_eq!(removed_ids(&tree, &report), ["inner"]);
        // body, the giant div and the article.
        assert_eq!(report.guarded, 3);
        for kept in ["giant", "article"] {
            assert!(!tree.is_removed(by_id(&tree, kept)), "#{kept}");
        }
    }

    #[test]
    fn the_guard_keeps_an_ad_link_around_the_page() {
        let mut tree = Tree::parse(
            r#"<p>A short intro.</p><a id="skin" href="https://ads.example.net/skin"><div>All the
            rest of the text, as page skins wrap the whole layout in one link.</div></a>"#,
        );
        let report = remove_ads(&mut tree, &filter(), Some("https://site.example/"));
        assert_eq!((report.removed.len(), report.guarded), (0, 1));
        assert!(!tree.is_removed(by_id(&tree, "skin")));
    }

    #[test]
    fn the_unknown_page_has_the_unknown_host() {
        let page = Url::parse(UNKNOWN_PAGE).expect("valid");
        assert_eq!(page.host_str(), Some(UNKNOWN_HOST));
    }

    #[test]
    fn plain_absolute_urls_are_read_without_parsing_only_when_the_parser_agrees() {
        for (url, host) in [
            ("https://ads.example.net/click?id=1&x=y#top", "ads.example.net"),
            ("http://a-b.example/", "a-b.example"),
            ("https://cdn3.example.com/i/1.png", "cdn3.example.com"),
        ] {
            assert_eq!(plain_absolute(url), Some(host), "{url}");
        }
        for url in [
            "https://Ads.example/", "https://ads.example", "https://ads.example:443/", "https://u@ads.example/",
            "https://xn--bcher-kva.example/", "https://127.0.0.1/", "https://0x7f.1/", "https://a.example./",
            "https://a..example/", "https://a.example/x/../y", "https://a.example/%2e%2e/", "https://a.example/a b",
            "HTTPS://a.example/", "https://a.example/\\x", "https://a.example/{x}", "ftp://a.example/", "//a.example/",
        ] {
            assert_eq!(plain_absolute(url), None, "{url}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_plain_absolute_url_is_what_the_parser_makes_of_it(
            scheme in proptest::sample::select(vec!["http://", "https://", "HTTP://", "https:/"]),
            host in proptest::prop_oneof!["[a-z0-9.-]{1,12}", "[a-z0-9.A-Z_:@x-]{0,12}"],
            path in r#"/?[/a-zA-Z0-9.%?#=&;:@!$'()*+,~\\\[\]{}|^`<>" -]{0,16}"#,
        ) {
            let raw = format!("{scheme}{host}{path}");
            if let Some(found) = plain_absolute(&raw) {
                let url = Url::parse(&raw).expect("a plain URL parses");
                proptest::prop_assert_eq!(url.as_str(), raw.as_str());
                proptest::prop_assert_eq!(url.host_str(), Some(found));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_plain_relative_url_is_what_the_parser_makes_of_it(
            base in proptest::sample::select(vec![
                "https://cdn.example.com/assets/", "http://a.example/dir/page.html?q=1#f", "https://b.example/",
                "https://u:p@xn--bcher-kva.example:8443/x/y", "http://c.example", "ws://d.example/a/b", "file:///a/b",
            ]),
            raw in r#"[/?#.:a-z0-9%\ "'<>{}|^`~=&-]{0,12}"#,
        ) {
            let base = Url::parse(base).expect("a valid base");
            if let Some((url, host)) = plain_relative(&raw, &base) {
                let joined = base.join(&raw).expect("a plain relative URL joins");
                proptest::prop_assert_eq!(joined.as_str(), url.as_str());
                proptest::prop_assert_eq!(joined.host_str(), Some(host));
                proptest::prop_assert!(resolve(&raw, Some(&base)).is_some());
            }
        }
    }

    #[test]
    fn plain_relative_urls_are_resolved_without_parsing() {
        let base = Url::parse("https://cdn.example.com/assets/page.html?x=1#top").expect("valid");
        for (raw, url) in [
            ("/i/a.png", "https://cdn.example.com/i/a.png"),
            ("i/a.png?w=2#f", "https://cdn.example.com/assets/i/a.png?w=2#f"),
            ("?p=2", "https://cdn.example.com/assets/page.html?p=2"),
        ] {
            assert_eq!(plain_relative(raw, &base), Some((url.to_string(), "cdn.example.com")), "{raw}");
        }
        for raw in ["", "#f", "./a", "../a", "a/../b", "//x.example/a", "data:x", "a b", "%41", "a\\b"] {
            assert_eq!(plain_relative(raw, &base), None, "{raw}");
        }
    }

    #[test]
    fn relative_links_are_told_apart_without_parsing() {
        for same in ["/story/2", "story", "../up", "?q=1", "#top", " /padded ", "a:b/../c".trim_start_matches("a:b"), "/p?u=http://x"] {
            assert!(is_same_host_relative(same), "{same}");
        }
        for other in ["//ads.example.net/c", "\\\\ads.example.net", "https://x", "HTTP://x", "javascript:x", "mailto:a@b", " //x", "ja\tvascript:x", "a+b.c-d:x"] {
            assert!(!is_same_host_relative(other), "{other}");
        }
    }

    #[test]
    fn generic_class_and_id_rules_honour_host_exceptions() {
        let list = format!("{LIST}quiet.example#@#.ad-banner\n@@||plain.example^$generichide\n");
        let filter = AdFilter::from_lists(&[("test.txt", &list)]);
        let page = r#"<p>Some text that is the content of this page, long enough.</p>
            <div class="ad-banner" id="b">class</div><div id="top-ad">id</div>"#;
        let removed = |url: &str| {
            let mut tree = Tree::parse(page);
            let report = remove_ads(&mut tree, &filter, Some(url));
            removed_ids(&tree, &report)
        };
        assert_eq!(removed("https://any.example/"), ["b", "top-ad"]);
        // The host cancels one generic rule: the other still applies.
        assert_eq!(removed("https://quiet.example/"), ["top-ad"]);
        // No generic rule at all.
        assert!(removed("https://plain.example/").is_empty());
    }

    #[test]
    fn hiding_selectors_beyond_the_engine_are_skipped_and_counted() {
        let mut tree = Tree::parse(
            r#"<p>Some text that is the content of this page.</p>
            <div class="boxed" id="boxed"><span class="ad-label">Ad</span></div>"#,
        );
        let report = remove_ads(&mut tree, &filter(), Some("https://site.example/"));
        assert_eq!(report.unsupported_selectors, 1);
        assert_eq!(report.removed, []);
        assert!(!tree.is_removed(by_id(&tree, "boxed")));
    }

    #[test]
    fn kept_elements_and_their_ancestors_are_not_removed() {
        let mut tree = Tree::parse(PAGE);
        let keep = [by_id(&tree, "ad-img"), by_id(&tree, "top-ad")];
        let report = remove_ads_keeping(&mut tree, &filter(), Some("https://site.example/"), &keep);
        let removed = removed_ids(&tree, &report);
        for kept in ["slot", "ad-link", "ad-img", "top-ad"] {
            assert!(!removed.contains(&kept.to_string()), "{removed:?}");
            assert!(!tree.is_removed(by_id(&tree, kept)));
        }
        assert_eq!(report.guarded, 2);
        assert!(removed.contains(&"hidden-class".to_string()));
    }

    #[test]
    fn a_kept_wrapper_still_loses_the_ad_inside() {
        let mut tree = Tree::parse(PAGE);
        let keep = [by_id(&tree, "slot")];
        let report = remove_ads_keeping(&mut tree, &filter(), None, &keep);
        let removed = removed_ids(&tree, &report);
        assert!(removed.contains(&"ad-link".to_string()), "{removed:?}");
        assert!(!tree.is_removed(by_id(&tree, "slot")));
    }

    #[test]
    fn already_removed_elements_are_not_counted() {
        let mut tree = Tree::parse(PAGE);
        let main = by_id(&tree, "main");
        tree.remove(main);
        let report = remove_ads(&mut tree, &filter(), Some("https://www.example.com/"));
        assert_eq!(report, AdReport::default());
    }

    #[test]
    fn wrappers_stop_at_content_and_table_cells() {
        let mut tree = Tree::parse(
            r#"<p>Plenty of ordinary text on this page to stay clear of the guard.</p>
            <table><tr><td id="cell"><span id="span"><a id="a" href="https://ads.example.net/">x</a></span></td>
            <td>next</td></tr></table>
            <ul id="list"><li id="li1"><a href="https://ads.example.net/1">1</a></li></ul>
            <div id="figure"><figure id="fig"><img src="https://ads.example.net/i.png"><figcaption>Advertisement</figcaption></figure></div>"#,
        );
        let report = remove_ads(&mut tree, &filter(), None);
        let removed = removed_ids(&tree, &report);
        assert_eq!(
            removed,
            ["span", "list", "-"],
            "the cell stays; the img alone goes"
        );
        assert!(!tree.is_removed(by_id(&tree, "cell")));
        assert!(!tree.is_removed(by_id(&tree, "fig")));
    }

    /// Cost and effect over the development set; run with
    /// `cargo test --release --lib extract::ads::tests::zz_measure -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement over the development set, not a test; run in release"]
    fn zz_measure() {
        let pages = crate::dom::tests::bench_pages();
        let filter = AdFilter::builtin();
        let bytes: usize = pages.iter().map(String::len).sum();
        for page_url in [None, Some("https://example.com/")] {
            let (mut parse, mut ads) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
            let mut total = AdReport::default();
            let mut elements_removed = 0;
            for page in &pages {
                let start = std::time::Instant::now();
                let mut tree = Tree::parse(page);
                parse += start.elapsed();
                let start = std::time::Instant::now();
                let report = remove_ads(&mut tree, &filter, page_url);
                ads += start.elapsed();
                elements_removed += (0..tree.len())
                    .filter_map(|i| tree.node_at(i))
                    .filter(|&id| tree.is_removed(id) && tree.element(id).is_some())
                    .count();
                total.by_url += report.by_url;
                total.by_selector += report.by_selector;
                total.guarded += report.guarded;
                total.unsupported_selectors += report.unsupported_selectors;
                total.removed.extend(report.removed);
            }
            eprintln!(
                "page_url {page_url:?}: {} pages, {:.1} MB; parse {parse:?}, remove_ads {ads:?} \
                 ({:.0} pages/s, {:.2} ms/page); roots removed {} (by URL {}, by selector {}), \
                 elements removed {elements_removed}, guarded {}, unsupported selectors {}",
                pages.len(),
                bytes as f64 / 1e6,
                pages.len() as f64 / ads.as_secs_f64(),
                ads.as_secs_f64() * 1e3 / pages.len() as f64,
                total.removed.len(),
                total.by_url,
                total.by_selector,
                total.guarded,
                total.unsupported_selectors,
            );
        }
    }
}
