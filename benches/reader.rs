//! Reading mode's speed beside the fastest good Rust extractor, in the same run: the default
//! extractor's whole reading path (`pipeline::process` with the built-in `reader` profile:
//! charset, stage 1, tree, metadata, extraction, the main-content check, rendering) against
//! dom_smoothie (a Readability.js port: parse, score, extract, text), each given the raw bytes
//! of every page of the development set in turn, on one thread. Throughput is pages per
//! second; the ratio of the two is the figure to report (the target is ≥ 3×).
//!
//! Run: `cargo bench --bench reader -- --warm-up-time 1 --measurement-time 10`

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pith::config::Config;
use pith::pipeline;
use pith::profile::{Output, Profile};

/// The development set's raw pages; `None` when the set is absent.
fn load_pages() -> Option<Vec<Vec<u8>>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/scrapinghub");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "html"))
        .collect();
    paths.sort();
    let pages: Vec<Vec<u8>> = paths.iter().filter_map(|path| std::fs::read(path).ok()).collect();
    (!pages.is_empty()).then_some(pages)
}

/// pith's reading path over every page, as `pith extract --profile reader` runs it.
fn pith_all(profile: &Profile, pages: &[Vec<u8>], output: Output) {
    for page in pages {
        match pipeline::process(profile, page, Some("text/html"), output, None) {
            Ok(page) => {
                black_box(page.body);
            }
            Err(e) => panic!("the reading path failed on a bench page: {e}"),
        }
    }
}

/// dom_smoothie over every page: the text of the article it extracts (an error, on a page it
/// finds no article in, counts as done).
fn dom_smoothie_all(pages: &[Vec<u8>]) {
    for page in pages {
        let html = String::from_utf8_lossy(page);
        if let Ok(mut readability) = dom_smoothie::Readability::new(html.as_ref(), None, None) {
            if let Ok(article) = readability.parse() {
                black_box(article.text_content);
            }
        }
    }
}

/// Pages per second of one pass of `run`, for the summary line.
fn pages_per_second(pages: usize, run: impl Fn()) -> f64 {
    let start = Instant::now();
    run();
    pages as f64 / start.elapsed().as_secs_f64().max(1e-9)
}

fn reader(c: &mut Criterion) {
    let Some(pages) = load_pages() else {
        eprintln!("skipping the reader bench: no pages in ../shared/bench/scrapinghub");
        return;
    };
    let config = match Config::embedded_default() {
        Ok(config) => config,
        Err(e) => panic!("the built-in config is invalid: {e}"),
    };
    let Some(profile) = config.profiles.get("reader").cloned() else {
        panic!("the built-in config has no reader profile");
    };
    let bytes: usize = pages.iter().map(Vec::len).sum();
    eprintln!("reader bench: {} pages, {:.1} MB", pages.len(), bytes as f64 / 1e6);

    let mut group = c.benchmark_group("reader-pages");
    group.throughput(Throughput::Elements(pages.len() as u64));
    // One iteration is the whole set, so few samples are needed.
    group.sample_size(10);
    group.bench_function("pith-text", |b| b.iter(|| pith_all(&profile, &pages, Output::Text)));
    group.bench_function("pith-html", |b| b.iter(|| pith_all(&profile, &pages, Output::Html)));
    group.bench_function("dom_smoothie", |b| b.iter(|| dom_smoothie_all(&pages)));
    group.finish();

    // One more pass of each, back to back, for a ratio taken in the same conditions.
    let pith = pages_per_second(pages.len(), || pith_all(&profile, &pages, Output::Text));
    let smoothie = pages_per_second(pages.len(), || dom_smoothie_all(&pages));
    eprintln!(
        "reader bench summary: pith {pith:.0} pages/s, dom_smoothie {smoothie:.0} pages/s, ratio {:.2}x",
        pith / smoothie.max(1e-9)
    );
}

criterion_group!(benches, reader);
criterion_main!(benches);
