//! pith's parser and declutter pass beside lol_html's streaming rewrite and html5ever, on the
//! same pages: microseconds of CPU per page and MB/s of input, one thread, the best of N rounds.
//!
//! `cargo run --release --example parsers -- [--rounds N] FILE...` (pages as served, e.g. the 23
//! of `perf/gate-pages.txt` under `../shared/bench/scrapinghub`; each decoded as UTF-8, invalid
//! bytes replaced). Rows:
//!
//! - pith, the whole declutter page: `pipeline::process` with the built-in `declutter` profile,
//!   what the proxy runs per page (charset, the stage-1 rules applied while the tree is built,
//!   the removers with the ad lists, rendering).
//! - pith, tokenizer and tree builder: [`pith::dom::Tree::parse`] of the page as served.
//! - pith, stage 1 as a lol_html stream: [`pith::html::stage1::rewrite`], the built-in
//!   declutter rules as lol_html handlers (the streaming form; the proxy applies the same rules
//!   while it builds the tree).
//! - lol_html, streaming rewrite: script, style, noscript, iframe and svg elements removed; no
//!   tree, so nothing can be judged by its subtree.
//! - html5ever, tokenizer alone (0.40, a sink that drops every token).
//! - html5ever, tokenizer and tree builder: `dom_query::Document` (html5ever 0.36 underneath).

use std::time::{Duration, Instant};

use html5ever::tokenizer::{
    BufferQueue, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use pith::config::Config;
use pith::dom::Tree;
use pith::html::{stage1, RuleSet};
use pith::pipeline;
use pith::profile::Output;

struct Drop;

impl TokenSink for Drop {
    type Handle = ();
    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        std::hint::black_box(token);
        TokenSinkResult::Continue
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 5;
    if args.first().map(String::as_str) == Some("--rounds") && args.len() >= 2 {
        rounds = args[1].parse()?;
        args.drain(..2);
    }
    let pages: Vec<String> = args
        .iter()
        .map(|f| std::fs::read(f).map(|b| String::from_utf8_lossy(&b).into_owned()))
        .collect::<Result<_, _>>()?;
    if pages.is_empty() {
        return Err("give the pages as arguments".into());
    }
    let bytes: usize = pages.iter().map(String::len).sum();
    let rules = RuleSet::builtin("declutter").ok_or("the built-in declutter rules do not parse")?;
    let config = Config::embedded_default()?;
    let profile = config
        .profiles
        .get("declutter")
        .cloned()
        .ok_or("the built-in config has no declutter profile")?;
    println!(
        "{} pages, {} bytes, mean {} bytes; best of {rounds} rounds",
        pages.len(),
        bytes,
        bytes / pages.len()
    );
    println!("| what | µs per page | MB/s |");
    println!("|---|---:|---:|");
    let row = |name: &str, time: Duration| {
        println!(
            "| {name} | {:.0} | {:.0} |",
            time.as_secs_f64() * 1e6 / pages.len() as f64,
            bytes as f64 / time.as_secs_f64() / 1e6
        );
    };
    row(
        "pith, the whole declutter page (pipeline::process)",
        best(rounds, &pages, |p| {
            pipeline::process(
                &profile,
                p.as_bytes(),
                Some("text/html"),
                Output::Html,
                None,
            )
            .map_or(0, |page| page.body.len())
        }),
    );
    row(
        "pith, tokenizer and tree builder",
        best(rounds, &pages, |p| Tree::parse(p).len()),
    );
    row(
        "pith, stage 1 as a lol_html stream (the declutter rules)",
        best(rounds, &pages, |p| {
            stage1::rewrite(&rules, p).map_or(0, |(h, _)| h.len())
        }),
    );
    row(
        "lol_html, streaming rewrite (5 element kinds removed)",
        best(rounds, &pages, |p| {
            let settings = lol_html::Settings::new().append_element_content_handler(
                lol_html::element!("script, style, noscript, iframe, svg", |el| {
                    el.remove();
                    Ok(())
                }),
            );
            lol_html::rewrite_str(p, settings).map_or(0, |h| h.len())
        }),
    );
    row(
        "html5ever 0.40, tokenizer alone",
        best(rounds, &pages, |p| {
            let tokenizer = Tokenizer::new(Drop, TokenizerOpts::default());
            let queue = BufferQueue::default();
            queue.push_back(p.into());
            let _ = tokenizer.feed(&queue);
            tokenizer.end();
            p.len()
        }),
    );
    row(
        "html5ever 0.36, tokenizer and tree builder (dom_query)",
        best(rounds, &pages, |p| {
            std::hint::black_box(dom_query::Document::from(p));
            p.len()
        }),
    );
    Ok(())
}

/// The fastest round's time over all pages.
fn best(rounds: usize, pages: &[String], f: impl Fn(&str) -> usize) -> Duration {
    let mut fastest = Duration::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        let sum: usize = pages.iter().map(|p| f(p)).sum();
        std::hint::black_box(sum);
        fastest = fastest.min(start.elapsed());
    }
    fastest
}
