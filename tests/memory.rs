//! What rewriting a page really costs in memory, against what the rewrite memory budget
//! reserves for it ([`pith::net::exchange::budget::process_cost`]).
//!
//! A binary of its own because it counts every allocation of the process with a global
//! allocator: the live bytes and their peak. One test, so nothing else allocates meanwhile.
//! Each page shape (dense markup, plain text, a script-heavy article) goes through each
//! path (the tree of declutter and reader, the stage-1 streaming rewriter); the peak above
//! what was live before (the input itself) must stay under the budget's estimate, and not
//! fall far below it, or the budget would turn away pages it could afford.
//!
//! `cargo test --test memory -- --nocapture` prints the measured bytes per input byte and
//! per `<`, the figures the estimate is built on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use pith::config::Config;
use pith::net::exchange::budget::{self, Path};
use pith::pipeline;
use pith::profile::Profile;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                // A moving realloc holds both blocks for a moment.
                PEAK.fetch_max(now + layout.size(), Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Peak bytes allocated above what was live before, while `profile` rewrites `doc`.
fn peak_of(profile: &Profile, doc: &[u8]) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let page = pipeline::process(profile, doc, Some("text/html; charset=utf-8"), profile.output, Some("http://example.test/a")).expect("the page rewrites");
    let peak = PEAK.load(Ordering::Relaxed) - before;
    drop(page);
    peak
}

fn repeat(head: &str, unit: &str, bytes: usize) -> Vec<u8> {
    let mut doc = String::with_capacity(bytes + 256);
    doc.push_str(head);
    while doc.len() < bytes {
        doc.push_str(unit);
    }
    doc.push_str("</body></html>");
    doc.into_bytes()
}

#[test]
fn the_budget_estimate_covers_what_rewriting_a_page_allocates() {
    let config = Config::from_toml_str(
        "[profiles.light]\nrules = \"declutter\"\npreset = \"none\"\n[[listener]]\naddress = \"127.0.0.1:1\"\n",
        "memory.toml",
        None,
    )
    .expect("config");
    let head = "<!doctype html><html><head><title>A page</title></head><body>";
    let pages = [
        ("dense markup", repeat(head, "<div class=\"c\"><p>Lorem <a href=\"/a\">x</a> ipsum <b>dolor</b></p><span>y</span></div>\n", 1 << 20)),
        ("plain text", repeat(head, "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.</p>\n", 1 << 20)),
        ("scripts and nav", repeat(head, "<script>var a = [1,2,3].map(function (x) { return x * 2 < 5; });</script><nav><ul><li><a href=\"/1\">One</a></li><li><a href=\"/2\">Two</a></li></ul></nav><article><h2>Title</h2><p>Some text of an article, <em>with</em> a <a href=\"/l\">link</a>.</p></article>\n", 1 << 20)),
        ("small article", repeat(head, "<p>Lorem ipsum dolor sit amet, <a href=\"/x\">consectetur</a> adipiscing elit.</p>\n", 16 << 10)),
    ];
    // Warm up: the ad lists and other lazily built tables are allocated once per process.
    for name in ["declutter", "reader", "text", "light"] {
        peak_of(&config.profiles[name], b"<!doctype html><title>t</title><p>warm up</p>");
    }
    let mut failures = Vec::new();
    for (shape, doc) in &pages {
        let tags = budget::count_tags(doc);
        for name in ["declutter", "reader", "text", "light"] {
            let profile = &config.profiles[name];
            let path = Path::of(profile);
            let peak = peak_of(profile, doc);
            let estimate = budget::process_cost(path, doc.len() as u64, tags);
            eprintln!(
                "{shape:>16} {name:>9} ({path:?}): {} bytes, {tags} '<'; peak {peak} = {:.2} per byte; estimate {estimate} ({:.2}x the peak)",
                doc.len(),
                peak as f64 / doc.len() as f64,
                estimate as f64 / peak as f64
            );
            if (peak as u64) > estimate {
                failures.push(format!("{shape} through {name}: peak {peak} over the estimate {estimate}"));
            }
            if estimate > 8 * peak as u64 + (256 << 10) {
                failures.push(format!("{shape} through {name}: the estimate {estimate} is more than 8 times the peak {peak}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
