//! Fixture pages through the declutter pipeline: every `tests/fixtures/NAME.src.html` is run
//! through stage 1 and stage 2 (the built-in `declutter` profile, page URL
//! `https://news.example/section/page`) and compared with `NAME.expected.html`. Pages whose
//! name starts with `retain-` run with the removed-link retainer on; pages whose name starts
//! with `reader-` run through the built-in `reader` profile (reading mode) with the `crunch`
//! extractor, so that they test the reading page and its fallback, not an extractor that is
//! still being tuned.
//!
//! On a mismatch the test prints the first differing lines of every failing page. To accept new
//! output after a deliberate change, run with `PITH_BLESS=1` and review the diff of the
//! expected files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith::config::Config;
use pith::extract::Options;
use pith::extract::algorithm::Algorithm;
use pith::pipeline;
use pith::profile::{Output, Profile, Reader, Stage2};

const PAGE_URL: &str = "https://news.example/section/page";

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.to_string_lossy().ends_with(".src.html"))
        .collect();
    pages.sort();
    pages
}

fn profile_for(name: &str, declutter: &Profile) -> Profile {
    let mut profile = declutter.clone();
    if name.starts_with("retain-") {
        let sites = declutter
            .stage2
            .as_ref()
            .map(|s| Arc::clone(&s.sites))
            .unwrap_or_default();
        let options = Options {
            retain_links: Some(true),
            ..Options::default()
        };
        profile = profile.with_stage2(Stage2 { options, sites, ads: None, ..Stage2::default() });
    }
    profile
}

/// The first lines where `expected` and `actual` differ, with a little context.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let mut out = String::new();
    for i in first.saturating_sub(2)..(first + 6).min(e.len().max(a.len())) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => out.push_str(&format!("   {x}\n")),
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!(" - {x}\n"));
                }
                if let Some(y) = y {
                    out.push_str(&format!(" + {y}\n"));
                }
            }
        }
    }
    out
}

#[test]
fn fixture_pages_match_their_expected_output() {
    let config = Config::embedded_default().expect("the built-in config is valid");
    let declutter = Arc::clone(&config.profiles["declutter"]);
    let reader = Arc::clone(&config.profiles["reader"]);
    let bless = std::env::var_os("PITH_BLESS").is_some();
    let pages = fixtures();
    assert!(!pages.is_empty(), "no fixture pages found");
    let mut failures = Vec::new();
    for src in &pages {
        let file = src
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = file.trim_end_matches(".src.html").to_string();
        let input = std::fs::read(src).expect("read the fixture");
        let profile = match name.starts_with("reader-") {
            true => reader.as_ref().clone().with_reader(Reader {
                algorithm: Algorithm::Crunch,
                ..Reader::default()
            }),
            false => profile_for(&name, &declutter),
        };
        let page = pipeline::process(&profile, &input, None, Output::Html, Some(PAGE_URL))
            .expect("the pipeline runs");
        let actual = String::from_utf8(page.body).expect("UTF-8 output");
        let expected_path = src.with_file_name(format!("{name}.expected.html"));
        if bless {
            std::fs::write(&expected_path, &actual).expect("write the expected output");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{name} (removal: {:?}):\n{}",
                page.removal,
                diff(&expected, &actual)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixture pages differ:\n\n{}",
        failures.len(),
        pages.len(),
        failures.join("\n")
    );
}

/// A site rule that removes the article's paragraphs would leave the page without its prose:
/// the safety net serves the stage-1 page instead and says so, and the rule is picked by the
/// page URL's host.
#[test]
fn a_site_rule_that_takes_the_article_falls_back() {
    use pith::extract::sites::SiteRules;
    use pith::extract::PresetName;

    let dir = tempfile::tempdir().expect("temporary folder");
    std::fs::write(
        dir.path().join("news.rules"),
        "site news.example\nremove article p\n",
    )
    .expect("write the rule");
    let sites = Arc::new(SiteRules::parse_dir(dir.path()).expect("valid site rules"));
    let config = Config::embedded_default().expect("the built-in config is valid");
    let profile = config.profiles["text"]
        .as_ref()
        .clone()
        .with_stage2(Stage2 {
            options: Options::default(),
            sites,
            ads: None,
            ..Stage2::default()
        });
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/news-article.src.html");
    let input = std::fs::read(src).expect("read the fixture");

    let page = pipeline::process(&profile, &input, None, Output::Text, Some(PAGE_URL))
        .expect("the pipeline runs");
    let removal = page.removal.expect("stage 2 ran");
    let fallback = removal.fallback.expect("the safety net fired");
    assert_eq!(
        (fallback.from, fallback.to),
        (PresetName::Automatic, PresetName::None)
    );
    assert_eq!(fallback.to_string(), "none; automatic kept 0% of text");
    let text = String::from_utf8(page.body).expect("UTF-8 output");
    assert!(
        text.contains("The harbour bridge reopened") && text.contains("Sport"),
        "{text}"
    );

    // Another host: the rule does not apply and the removers run as usual.
    let page = pipeline::process(
        &profile,
        &input,
        None,
        Output::Text,
        Some("https://other.example/"),
    )
    .expect("the pipeline runs");
    assert_eq!(page.removal.and_then(|r| r.fallback), None);
    let text = String::from_utf8(page.body).expect("UTF-8 output");
    assert!(
        text.contains("The harbour bridge reopened") && !text.contains("Sport"),
        "{text}"
    );
}
