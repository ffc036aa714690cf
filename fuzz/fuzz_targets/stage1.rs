//! Stage 1, the streaming lol_html rewrite, on arbitrary pages.
//!
//! Input: a page (read as UTF-8, invalid bytes replaced, as the charset step leaves it) followed
//! by 4 control bytes: the rule set, then the cut positions of the chunked runs.
//!
//! Properties:
//! - the output is valid UTF-8, even when chunks split characters;
//! - chunking-invariant: the page fed whole, in two chunks and in four (cut anywhere, empty
//!   chunks included), and byte by byte when short, gives byte-identical output and the same
//!   statistics;
//! - `rewrite` (the whole-page form) gives the same page as the streaming `Rewriter`;
//! - with no rules and no `<meta` in the page, the output is the input, byte for byte;
//! - under a tiny memory limit the rewriter bails out instead of failing, and nothing is lost:
//!   the output is still valid UTF-8 and, with no rules, still the input.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use pith::html::{rewrite, RuleSet, Rewriter, Stage1Stats};
use pith_fuzz::{chunks, contains_ignore_case, cuts, split_control};

/// Every kind of rule, so that each handler runs on fuzzed markup.
const EVERY_RULE: &str = "\
remove script, style, iframe, .ad, #banner, div[data-ad], a[href^=\"http\" i]
unwrap font, center, span:not(.keep)
strip-attr on* style
strip-attr class id in div, p
strip-url javascript vbscript data
remove-hidden
remove-comments
";

static RULES: LazyLock<Vec<RuleSet>> = LazyLock::new(|| {
    let mut sets = vec![RuleSet::empty()];
    sets.extend(["declutter", "reader"].map(|name| {
        RuleSet::builtin(name).expect("the built-in rule files parse")
    }));
    sets.push(RuleSet::parse_str(EVERY_RULE, "fuzz.rules").expect("the fuzz rule file parses"));
    sets
});

/// lol_html's memory limit for the bail-out run: small enough that a few hundred bytes of
/// unfinished tag exceed it.
const TINY_MEMORY: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let (body, control) = split_control::<4>(data);
    let page = String::from_utf8_lossy(body);
    let bytes = page.as_bytes();
    let rules = &RULES[usize::from(control[0]) % RULES.len()];

    let (whole, stats) = run(Rewriter::new(rules), bytes, &[]);
    let text = std::str::from_utf8(&whole).expect("stage-1 output is UTF-8");
    assert!(!stats.bailed_out, "no bail-out under the default memory limit");

    let (rewritten, whole_stats) = rewrite(rules, &page).expect("rewrite succeeds");
    assert_eq!(rewritten, text, "rewrite and Rewriter agree");
    assert_eq!(whole_stats, stats);

    let mut splits = vec![cuts(bytes.len(), &control[1..2]), cuts(bytes.len(), &control[1..4])];
    if bytes.len() <= 256 {
        splits.push((1..bytes.len()).collect());
    }
    for at in &splits {
        let (out, chunked_stats) = run(Rewriter::new(rules), bytes, at);
        if out != whole {
            panic!(
                "chunking changed the output (cuts {at:?}):\nwhole:   {:?}\nchunked: {:?}",
                String::from_utf8_lossy(&whole),
                String::from_utf8_lossy(&out)
            );
        }
        assert_eq!(chunked_stats, stats, "chunking changed the statistics (cuts {at:?})");
    }

    let untouched = rules.is_empty() && !contains_ignore_case(bytes, b"<meta");
    if untouched {
        assert!(whole == bytes, "no rules: the page passes unchanged");
    }

    let (small, _) = run(Rewriter::with_memory_limit(rules, TINY_MEMORY), bytes, &splits[1]);
    std::str::from_utf8(&small).expect("bailed-out output is UTF-8");
    if untouched {
        assert!(small == bytes, "no rules: a bail-out loses nothing");
    }
});

/// Feeds `page` cut at `at`, collecting the output as a streaming caller does.
fn run(mut rewriter: Rewriter, page: &[u8], at: &[usize]) -> (Vec<u8>, Stage1Stats) {
    let mut out = Vec::new();
    for chunk in chunks(page, at) {
        rewriter.write(chunk).expect("a write never fails on UTF-8 input");
        out.extend(rewriter.take_output());
    }
    let (rest, stats) = rewriter.end().expect("end never fails on UTF-8 input");
    out.extend(rest);
    (out, stats)
}
