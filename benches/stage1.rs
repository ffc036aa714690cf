//! Stage-1 throughput over real pages: the development set, decoded to UTF-8, fed to
//! [`Rewriter`] in fixed 1 KiB chunks (as a network body arrives), with the `declutter` rules
//! and with no rules at all (the pass-through baseline: lol_html parsing plus the charset
//! handlers). Throughput is bytes of input per second.
//!
//! Run: `cargo bench --bench stage1 -- --warm-up-time 1 --measurement-time 3`

mod common;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pith::html::{Rewriter, RuleSet};

/// Chunk size of the feed, as in lol_html's own benches.
const CHUNK: usize = 1024;

/// The development set's pages, decoded as the proxy would; `None` when the set is absent.
fn load_pages() -> Option<Vec<Vec<u8>>> {
    Some(common::utf8_pages()?.into_iter().map(String::into_bytes).collect())
}

/// One pass over every page, in 1 KiB chunks, draining output as it comes.
fn rewrite_all(rules: &RuleSet, pages: &[Vec<u8>]) {
    for page in pages {
        let mut rewriter = Rewriter::new(rules);
        for chunk in page.chunks(CHUNK) {
            if let Err(e) = rewriter.write(chunk) {
                panic!("stage 1 failed on a bench page: {e}");
            }
            black_box(rewriter.take_output());
        }
        match rewriter.end() {
            Ok(rest) => {
                black_box(rest);
            }
            Err(e) => panic!("stage 1 failed on a bench page: {e}"),
        }
    }
}

fn stage1(c: &mut Criterion) {
    let Some(pages) = load_pages() else {
        eprintln!("skipping the stage1 bench: no pages in ../shared/bench/scrapinghub");
        return;
    };
    let Some(declutter) = RuleSet::builtin("declutter") else {
        panic!("the built-in declutter rules do not parse");
    };
    let bytes: usize = pages.iter().map(Vec::len).sum();
    eprintln!(
        "stage1 bench: {} pages, {:.1} MB, {CHUNK}-byte chunks",
        pages.len(),
        bytes as f64 / 1e6
    );

    let mut group = c.benchmark_group("stage1");
    group.throughput(Throughput::Bytes(bytes as u64));
    // One iteration is the whole set (tens of MB), so few samples are needed.
    group.sample_size(10);
    group.bench_function("declutter", |b| b.iter(|| rewrite_all(&declutter, &pages)));
    group.bench_function("pass-through", |b| {
        b.iter(|| rewrite_all(&RuleSet::empty(), &pages))
    });
    group.finish();
}

criterion_group!(benches, stage1);
criterion_main!(benches);
