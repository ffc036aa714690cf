//! Stage-2 throughput over real pages: the development set, decoded and filtered by stage 1 once
//! (as the proxy hands it over), then tree build + the `declutter` removers (automatic preset,
//! with the shipped ad lists, as the profile runs them) + rendering, as HTML and as text; and,
//! to show where the time goes, the same without the ad remover and parse + render alone.
//! Throughput is bytes of stage-1 output per second, and pages per second in a second group.
//!
//! Run: `cargo bench --bench stage2 -- --warm-up-time 1 --measurement-time 5`

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pith::dom::Tree;
use pith::extract::{declutter, Context, PresetName};
use pith::ads::AdFilter;
use pith::html::{stage1, RuleSet};
use pith::render;

/// The development set's pages after stage 1; `None` when the set is absent.
fn load_pages() -> Option<Vec<String>> {
    let Some(rules) = RuleSet::builtin("declutter") else {
        panic!("the built-in declutter rules do not parse");
    };
    let pages = common::utf8_pages()?
        .iter()
        .map(|utf8| match stage1::rewrite(&rules, utf8) {
            Ok((html, _)) => html,
            Err(e) => panic!("stage 1 failed on a bench page: {e}"),
        })
        .collect();
    Some(pages)
}

/// Stage 2 over every page: parse, declutter, render.
fn declutter_all(pages: &[String], ads: Option<&AdFilter>, text: bool) {
    let settings = PresetName::Automatic.settings();
    let ctx = Context {
        ads,
        ..Context::default()
    };
    for page in pages {
        let mut tree = Tree::parse(page);
        let outcome = declutter::run(&mut tree, &settings, &ctx);
        if text {
            black_box(render::text::render(&tree));
        } else {
            let html = render::html::render(&tree);
            black_box(render::retained::insert_html(
                &tree,
                html,
                &render::retained::html_section(&tree, &outcome.retained, None),
            ));
        }
    }
}

/// Parse and render only, without removers: the part of the cost that is not stage 2's own.
fn parse_render_all(pages: &[String]) {
    for page in pages {
        let tree = Tree::parse(page);
        black_box(render::html::render(&tree));
    }
}

fn stage2(c: &mut Criterion) {
    let Some(pages) = load_pages() else {
        eprintln!("skipping the stage2 bench: no pages in ../shared/bench/scrapinghub");
        return;
    };
    let bytes: usize = pages.iter().map(String::len).sum();
    eprintln!(
        "stage2 bench: {} pages, {:.1} MB of stage-1 output",
        pages.len(),
        bytes as f64 / 1e6
    );

    let filter = AdFilter::builtin();
    let ads = Some(&*filter);

    let mut group = c.benchmark_group("stage2-bytes");
    group.throughput(Throughput::Bytes(bytes as u64));
    // One iteration is the whole set, so few samples are needed.
    group.sample_size(10);
    group.bench_function("declutter-html", |b| {
        b.iter(|| declutter_all(&pages, ads, false))
    });
    group.bench_function("declutter-text", |b| {
        b.iter(|| declutter_all(&pages, ads, true))
    });
    group.bench_function("declutter-html-no-ads", |b| {
        b.iter(|| declutter_all(&pages, None, false))
    });
    group.bench_function("parse-render-only", |b| b.iter(|| parse_render_all(&pages)));
    group.finish();

    let mut group = c.benchmark_group("stage2-pages");
    group.throughput(Throughput::Elements(pages.len() as u64));
    group.sample_size(10);
    group.bench_function("declutter-html", |b| {
        b.iter(|| declutter_all(&pages, ads, false))
    });
    group.finish();
}

criterion_group!(benches, stage2);
criterion_main!(benches);
