//! Stage 2 on arbitrary pages: the tree, every extractor, the declutter removers and every
//! renderer.
//!
//! Input: a page (UTF-8, invalid bytes replaced) followed by 2 control bytes: the declutter
//! preset, and whether a site rule with `keep`/`remove` selectors applies.
//!
//! Properties:
//! - nothing panics, whatever the markup;
//! - the HTML renderer's output shows the same text once re-parsed, and re-parsing and
//!   re-rendering it settles on a fixed point within a few rounds (more on deeply nested pages),
//!   the text unchanged at each; where the parser left a link inside a link or a select inside
//!   a select, which no markup can express, re-parsing may only add text (hidden content
//!   coming into view), never lose or alter any;
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
use pith::dom::{Edge, Ns, Tree};
use pith::extract::algorithm::Algorithm;
use pith::extract::site_redundancy::{Limits, SiteMemory};
use pith::extract::sites::{SiteRule, SiteRules};
use pith::extract::{declutter, document_base, meta, Context, PresetName};
use pith::ads::AdFilter;
use pith::render::{html, reader, retained, text};
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
    let plaintext = has_plaintext(&tree);
    // A link inside a link, a select inside a select (see `has_unwritable_nesting`) cannot be
    // written as markup either: a re-parse closes the outer one and moves what followed, so
    // text the page hid (an `<audio>`'s fallback inside the outer link, options of the inner
    // select) can come into view. On such pages the round trip may add text but must keep all
    // the page's text in order, and still settle; the kept-text re-parse checks leave them out.
    let misnested = has_unwritable_nesting(&tree);
    let reparsable = !plaintext && !misnested;
    if !plaintext {
        let rounds = ROUNDS + max_depth(&tree) / 8;
        check_round_trip(&page_html, &page_text, misnested, rounds);
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

/// Re-parsing and re-rendering the page's HTML that many times must reach a fixed point, plus
/// one round per 8 levels of the page's nesting (see `check_round_trip`).
const ROUNDS: usize = 4;

/// The page's HTML re-parsed shows the same text, and re-rendering settles on a fixed point
/// within `rounds` re-parses.
///
/// Not "the rendering re-parses to the same HTML": the parser builds trees that no markup
/// produces (a `<div>` foster-parented into an open `<p>` of a quirks-mode page, an `<a>`
/// inside an `<a>` left by the adoption agency), and serialising them is necessarily lossy;
/// browsers have the same limit. Each re-parse repairs some of that, so the HTML settles within
/// a few rounds. What must hold is that nothing visible changes on the way, and that a served
/// page does not keep changing when stage 2 runs over it again.
///
/// Why the bound grows with depth: the adoption agency gives up after 8 iterations of its
/// outer loop, so a link left open over some 60 nested `<div>`s is pushed 8 of them deeper per
/// parse (a fuzzed page of 3 KB needed 5 re-parses). With `misnested` (a link inside a link,
/// a select inside a select), the re-parse that repairs the inner one may show text the page
/// hid (see the caller), so there the property is that the page's text all still shows,
/// unaltered and in order (`kept_text_violation` with the roles swapped), not that nothing
/// was added.
fn check_round_trip(page_html: &str, page_text: &str, misnested: bool, rounds: usize) {
    let mut html_now = page_html.to_string();
    for round in 1..=rounds {
        let tree = Tree::parse(&html_now);
        let text_again = text::render(&tree);
        if misnested {
            if let Some(line) = kept_text_violation(page_text, &text_again) {
                panic!("round {round}: re-parsed HTML lost or altered line {line} of the page's text:\npage: {page_text:?}\nnow:  {text_again:?}");
            }
        } else if text_again != page_text {
            panic!("round {round}: re-parsed HTML renders other text: {}", difference(page_text, &text_again));
        }
        let next = html::render(&tree);
        if next == html_now {
            return;
        }
        html_now = next;
    }
    let last = html::render(&Tree::parse(&html_now));
    panic!("HTML still changes after {rounds} re-parses: {}", difference(&html_now, &last));
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

    let section = retained::html_section(&kept, &outcome.retained, None);
    let page = html::render(&kept);
    // `insert_note` finds the body by the first `</head>` and the first `<body` after it, and
    // the tag's end by counting quotes, so the same text in a comment, a script or an attribute
    // value, or a quote in an attribute name, misplaces the note (known; see the README). The
    // property is asserted where none of that can happen.
    let bare_body = kept.body().is_some_and(|b| kept.attrs(b).len() == 0);
    let unambiguous = reparsable
        && bare_body
        && page.matches("</head>").count() == 1 && page.matches("<body").count() == 1;
    let served = retained::insert_html(&kept, page, &section);
    let served = reader::insert_note(served, "A note & <a test>");
    let reparsed = text::render(&Tree::parse(&served));
    if unambiguous && !reparsed.contains("A note & <a test>") {
        panic!("the note does not show:\npage: {served:?}\ntext: {reparsed:?}");
    }
    if reparsable && !outcome.retained.is_empty() && !reparsed.contains("Removed links") {
        panic!("the removed-links section does not show:\npage: {served:?}\ntext: {reparsed:?}");
    }
    let _ = retained::text_section(&outcome.retained);
}

fn has_plaintext(tree: &Tree) -> bool {
    tree.descendants(tree.root())
        .any(|id| tree.element(id).is_some_and(|e| e.ns == Ns::Html && &*e.name == "plaintext"))
}

/// Whether an HTML element that the parser closes when another of its kind starts (`<a>`,
/// `<nobr>`, `<select>`, `<button>`, `<form>`, `<p>`, a heading) has one of its kind above it
/// with no scope marker in between: a tree no markup produces. The tree builder leaves one
/// when the adoption agency stops after 8 rounds (a link open over more than 8 nested blocks
/// when the next `<a>` comes), or when it foster-parents an element out of a table into an
/// open one of its kind (a `<select>` in a table inside a `<select>`). An `<input>`,
/// `<keygen>` or `<textarea>` counts as a `<select>`'s kind: its start tag closes an open
/// select, yet a table inside the select can leave one there (`<select><table><input>`). Inside a cell, a
/// caption, an `<object>`, `<marquee>`, `<applet>` or `<template>` the element is a new
/// one, which markup can produce, and so is a `<p>` inside a table (counting such a page as
/// well-nested only keeps the strict checks on it).
fn has_unwritable_nesting(tree: &Tree) -> bool {
    fn kind(name: &str) -> Option<&str> {
        match name {
            "a" | "nobr" | "select" | "button" | "form" | "p" => Some(name),
            "input" | "keygen" | "textarea" => Some("select"),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => Some("heading"),
            _ => None,
        }
    }
    tree.descendants(tree.root()).any(|id| {
        let Some(own) = tree.element(id).filter(|e| e.ns == Ns::Html).and_then(|e| kind(&e.name))
        else {
            return false;
        };
        let mut up = tree.parent(id);
        while let Some(p) = up {
            if let Some(e) = tree.element(p).filter(|e| e.ns == Ns::Html) {
                if kind(&e.name) == Some(own) {
                    return true;
                }
                let marker = matches!(
                    &*e.name,
                    "td" | "th" | "caption" | "object" | "marquee" | "applet" | "template"
                );
                // A quirks-mode `<p>` holds a `<table>`, and a `<p>` there is a new one.
                if marker || (own == "p" && &*e.name == "table") {
                    return false;
                }
            }
            up = tree.parent(p);
        }
        false
    })
}

/// The deepest element nesting in the tree.
fn max_depth(tree: &Tree) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for edge in tree.traverse(tree.root()) {
        match edge {
            Edge::Open(_) => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Edge::Close(_) => depth = depth.saturating_sub(1),
        }
    }
    deepest
}

/// The reading page of the default extractor's result has one `<h1>`, the title.
fn check_reader(tree: &Tree) {
    let mut kept = tree.clone();
    let found = meta::extract(&kept, Some(PAGE_URL));
    Algorithm::Pith.run(&mut kept, None, Some(HOST));
    let base = document_base(&kept, Some(PAGE_URL));
    let page = reader::Page { meta: &found, base: base.as_deref(), original: Some(PAGE_URL), images: Default::default() };
    let out = reader::render(&mut kept, &page);
    let parsed = Tree::parse(&out);
    let h1s = parsed
        .descendants(parsed.root())
        .filter(|&id| parsed.element(id).is_some_and(|e| e.ns == Ns::Html && &*e.name == "h1"))
        .count();
    assert_eq!(h1s, 1, "the reading page has one <h1>:\n{out}");
}
