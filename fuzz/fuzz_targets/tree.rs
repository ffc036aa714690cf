//! Stage 2 on arbitrary pages: the tree, every extractor, the declutter removers and every
//! renderer.
//!
//! Input: a page (UTF-8, invalid bytes replaced) followed by 2 control bytes: the declutter
//! preset, and whether a site rule with `keep`/`remove` selectors applies.
//!
//! Properties:
//! - nothing panics, whatever the markup;
//! - the HTML renderer's output shows the same text once re-parsed, and re-rendering it is
//!   stable: parse + render is a fixed point from its first result on;
//! - extractors and removers only remove: the text left by each algorithm (every name of
//!   `Algorithm`, site-redundancy both with and without a learnt template) and by the declutter
//!   run keeps the page's characters unaltered and in order (see
//!   `pith_fuzz::kept_text_violation` for why this is the exact form);
//! - a kept tree's HTML carries its text: re-parsed, it renders the same text;
//! - the reading page has exactly one `<h1>`, and the declutter page with the removed-links
//!   section and a note still parses.

#![no_main]

use std::sync::{Arc, LazyLock};

use libfuzzer_sys::fuzz_target;
use pith::dom::{Ns, Tree};
use pith::extract::algorithm::Algorithm;
use pith::extract::site_redundancy::{Limits, SiteMemory};
use pith::extract::sites::{SiteRule, SiteRules};
use pith::extract::{declutter, document_base, meta, retainer, Context, PresetName};
use pith::html::ads::AdFilter;
use pith::render::{html, reader, text};
use pith_fuzz::{kept_text_violation, split_control};

const PAGE_URL: &str = "https://www.fuzz.example/news/story.html";
const HOST: &str = "www.fuzz.example";

/// A site rule that exercises the selector paths of the declutter run.
const SITE: &str = "\
site fuzz.example
set link-ratio 0.4
on retainer
keep article, .keep, p:first-child
remove .ad, #banner, aside > a, h1 + p
";

static ADS: LazyLock<Arc<AdFilter>> = LazyLock::new(AdFilter::builtin);
static SITE_RULE: LazyLock<SiteRule> =
    LazyLock::new(|| SiteRules::parse_str(SITE, "fuzz.rules").expect("the fuzz site rule parses"));

fuzz_target!(|data: &[u8]| {
    let (body, control) = split_control::<2>(data);
    let page = String::from_utf8_lossy(body);
    let tree = Tree::parse(&page);
    let page_html = html::render(&tree);
    let page_text = text::render(&tree);

    check_round_trip(&page_html, &page_text);
    for algorithm in Algorithm::ALL {
        let mut kept = tree.clone();
        algorithm.run(&mut kept, None, Some(HOST));
        check_kept(&kept, &page_text, algorithm.name());
    }
    let memory = SiteMemory::new(Limits { hosts: 1, slots: 1024, window: 4 });
    for _ in 0..3 {
        memory.learn(HOST, &tree);
    }
    let mut kept = tree.clone();
    Algorithm::SiteRedundancy.run(&mut kept, Some(&memory), Some(HOST));
    check_kept(&kept, &page_text, "site-redundancy (learnt)");

    check_declutter(&tree, &page_text, control);
    check_reader(&tree);
});

/// The page's HTML re-parsed shows the same text, and from there on the HTML is a fixed point.
///
/// Not "the first rendering re-parses to the same HTML": the parser builds trees that no markup
/// produces (a `<div>` foster-parented into an open `<p>` of a quirks-mode page, a `<p>` inside
/// a `<p>` through the adoption agency), and serialising them is necessarily lossy; browsers
/// have the same limit. What must hold is that nothing visible changes, and that the page, once
/// served, no longer changes when stage 2 runs over it again.
fn check_round_trip(page_html: &str, page_text: &str) {
    let again = Tree::parse(page_html);
    let text_again = text::render(&again);
    if text_again != page_text {
        panic!("re-parsed HTML renders other text:\nhtml:  {page_html:?}\nfirst:  {page_text:?}\nsecond: {text_again:?}");
    }
    let second = html::render(&again);
    let third = html::render(&Tree::parse(&second));
    if third != second {
        panic!("HTML is not stable under re-parsing:\nsecond: {second:?}\nthird:  {third:?}");
    }
}

/// What an algorithm left keeps the page's text unaltered, and its HTML carries that text.
fn check_kept(kept: &Tree, page_text: &str, who: &str) {
    let kept_text = text::render(kept);
    if let Some(line) = kept_text_violation(&kept_text, page_text) {
        panic!("{who} altered kept text at line {line}:\nkept: {kept_text:?}\npage: {page_text:?}");
    }
    let kept_html = html::render(kept);
    let reparsed = text::render(&Tree::parse(&kept_html));
    if reparsed != kept_text {
        panic!("{who}: kept HTML renders other text:\nhtml: {kept_html:?}\ntext: {kept_text:?}\nreparsed: {reparsed:?}");
    }
}

fn check_declutter(tree: &Tree, page_text: &str, control: [u8; 2]) {
    let preset = PresetName::ALL[usize::from(control[0]) % PresetName::ALL.len()];
    let site = (control[1] % 2 == 1).then_some(&*SITE_RULE);
    let ctx = Context { page_url: Some(PAGE_URL), ads: Some(&**ADS), site };
    let mut kept = tree.clone();
    let outcome = declutter::run(&mut kept, &preset.settings(), &ctx);
    check_kept(&kept, page_text, "declutter");

    let section = retainer::html_section(&outcome.retained);
    let served = retainer::insert_html(&kept, html::render(&kept), &section);
    let served = reader::insert_note(served, "A note & <a test>");
    let reparsed = text::render(&Tree::parse(&served));
    assert!(reparsed.contains("A note & <a test>"), "the note does not show:\npage: {served:?}\ntext: {reparsed:?}");
    let _ = retainer::text_section(&outcome.retained);
}

/// The reading page of the default extractor's result has one `<h1>`, the title.
fn check_reader(tree: &Tree) {
    let mut kept = tree.clone();
    let found = meta::extract(&kept, Some(PAGE_URL));
    Algorithm::Pith.run(&mut kept, None, Some(HOST));
    let base = document_base(&kept, Some(PAGE_URL));
    let page = reader::Page { meta: &found, base: base.as_deref(), original: Some(PAGE_URL) };
    let out = reader::render(&mut kept, &page);
    let parsed = Tree::parse(&out);
    let h1s = parsed
        .descendants(parsed.root())
        .filter(|&id| parsed.element(id).is_some_and(|e| e.ns == Ns::Html && &*e.name == "h1"))
        .count();
    assert_eq!(h1s, 1, "the reading page has one <h1>:\n{out}");
}
