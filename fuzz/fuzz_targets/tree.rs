//! Stage 2 on arbitrary pages: the tree, every extractor, the declutter removers and every
//! renderer.
//!
//! Input: a page (UTF-8, invalid bytes replaced) followed by 2 control bytes: the declutter
//! preset, and whether a site rule with `keep`/`remove` selectors applies.
//!
//! Properties:
//! - nothing panics, whatever the markup;
//! - the HTML renderer's output shows the same text once re-parsed, and re-parsing and
//!   re-rendering it settles on a fixed point within a few rounds, the text unchanged at each;
//! - extractors and removers only remove: the text left by each algorithm (every name of
//!   `Algorithm`, site-redundancy both with and without a learnt template) and by the declutter
//!   run keeps the page's characters unaltered and in order (see
//!   `pith_fuzz::kept_text_violation` for why this is the exact form);
//! - a kept tree's HTML carries its text: re-parsed, it renders the same text;
//! - the reading page has exactly one `<h1>`; on the declutter page, the removed-links
//!   section shows whenever links were retained, and so does a note put at the top (where the
//!   page's markup cannot mislead the note's placement; see the README).

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
use pith_fuzz::{difference, kept_text_violation, split_control};

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

    // Nothing can follow `<plaintext>` in markup, yet the tree builder can put nodes after it
    // (a table it was foster-parented out of); re-parsed, they turn into text. A limit of HTML
    // (see the README), so the re-parse properties leave such pages out.
    let reparsable = !has_plaintext(&tree);
    if reparsable {
        check_round_trip(&page_html, &page_text);
    }
    for algorithm in Algorithm::ALL {
        let mut kept = tree.clone();
        algorithm.run(&mut kept, None, Some(HOST));
        check_kept(&kept, &page_text, algorithm.name(), reparsable);
    }
    let memory = SiteMemory::new(Limits { hosts: 1, slots: 1024, window: 4 });
    for _ in 0..3 {
        memory.learn(HOST, &tree);
    }
    let mut kept = tree.clone();
    Algorithm::SiteRedundancy.run(&mut kept, Some(&memory), Some(HOST));
    check_kept(&kept, &page_text, "site-redundancy (learnt)", reparsable);

    check_declutter(&tree, &page_text, control, reparsable);
    check_reader(&tree);
});

/// Re-parsing and re-rendering the page's HTML that many times must reach a fixed point.
const ROUNDS: usize = 4;

/// The page's HTML re-parsed shows the same text, and re-rendering settles on a fixed point.
///
/// Not "the rendering re-parses to the same HTML": the parser builds trees that no markup
/// produces (a `<div>` foster-parented into an open `<p>` of a quirks-mode page, an `<a>`
/// inside an `<a>` left by the adoption agency), and serialising them is necessarily lossy;
/// browsers have the same limit. Each re-parse repairs some of that, so the HTML settles within
/// a few rounds. What must hold is that nothing visible changes on the way, and that a served
/// page does not keep changing when stage 2 runs over it again.
fn check_round_trip(page_html: &str, page_text: &str) {
    let mut html_now = page_html.to_string();
    for round in 1..=ROUNDS {
        let tree = Tree::parse(&html_now);
        let text_again = text::render(&tree);
        if text_again != page_text {
            panic!("round {round}: re-parsed HTML renders other text: {}", difference(page_text, &text_again));
        }
        let next = html::render(&tree);
        if next == html_now {
            return;
        }
        html_now = next;
    }
    let last = html::render(&Tree::parse(&html_now));
    panic!("HTML still changes after {ROUNDS} re-parses: {}", difference(&html_now, &last));
}

/// What an algorithm left keeps the page's text unaltered, and its HTML carries that text.
fn check_kept(kept: &Tree, page_text: &str, who: &str, reparsable: bool) {
    let kept_text = text::render(kept);
    if let Some(line) = kept_text_violation(&kept_text, page_text) {
        panic!("{who} altered kept text at line {line}:\nkept: {kept_text:?}\npage: {page_text:?}");
    }
    if !reparsable {
        return;
    }
    let kept_html = html::render(kept);
    let reparsed = text::render(&Tree::parse(&kept_html));
    if reparsed != kept_text {
        panic!("{who}: kept HTML renders other text:\nhtml: {kept_html:?}\ntext: {kept_text:?}\nreparsed: {reparsed:?}");
    }
}

fn check_declutter(tree: &Tree, page_text: &str, control: [u8; 2], reparsable: bool) {
    let preset = PresetName::ALL[usize::from(control[0]) % PresetName::ALL.len()];
    let site = (control[1] % 2 == 1).then_some(&*SITE_RULE);
    let ctx = Context { page_url: Some(PAGE_URL), ads: Some(&**ADS), site };
    let mut kept = tree.clone();
    let outcome = declutter::run(&mut kept, &preset.settings(), &ctx);
    check_kept(&kept, page_text, "declutter", reparsable);

    let section = retainer::html_section(&outcome.retained);
    let page = html::render(&kept);
    // `insert_note` finds the body by the first `</head>` and the first `<body` after it, and
    // the tag's end by counting quotes, so the same text in a comment, a script or an attribute
    // value, or a quote in an attribute name, misplaces the note (known; see the README). The
    // property is asserted where none of that can happen.
    let bare_body = kept.body().is_some_and(|b| kept.attrs(b).len() == 0);
    let unambiguous = reparsable
        && bare_body
        && page.matches("</head>").count() == 1 && page.matches("<body").count() == 1;
    let served = retainer::insert_html(&kept, page, &section);
    let served = reader::insert_note(served, "A note & <a test>");
    let reparsed = text::render(&Tree::parse(&served));
    if unambiguous && !reparsed.contains("A note & <a test>") {
        panic!("the note does not show:\npage: {served:?}\ntext: {reparsed:?}");
    }
    if reparsable && !outcome.retained.is_empty() && !reparsed.contains("Removed links") {
        panic!("the removed-links section does not show:\npage: {served:?}\ntext: {reparsed:?}");
    }
    let _ = retainer::text_section(&outcome.retained);
}

fn has_plaintext(tree: &Tree) -> bool {
    tree.descendants(tree.root())
        .any(|id| tree.element(id).is_some_and(|e| e.ns == Ns::Html && &*e.name == "plaintext"))
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
