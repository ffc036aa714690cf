//! The whole-document transform (`pipeline::process`) on arbitrary bytes in arbitrary charsets,
//! with the profiles of the documented default config.
//!
//! Input: a document (raw bytes: charset detection and transcoding are part of the target)
//! followed by 2 control bytes: the `Content-Type` header, and the profile and output form.
//!
//! Properties:
//! - nothing panics, whatever the bytes and the declared charset;
//! - no form ever fails: a page too deep for the tree is the stage-1 HTML page whatever form
//!   was asked, and the page says so ([`pith::pipeline::ServedForm`]);
//! - the page reports the charset detection chose and the content type of its form;
//! - the same input gives the same page (no state leaks between requests);
//! - a reading page either has exactly one `<h1>` or, on fallback, carries the fallback note.

#![no_main]

use std::sync::{Arc, LazyLock};

use libfuzzer_sys::fuzz_target;
use pith::config::Config;
use pith::dom::{Ns, Tree};
use pith::html::charset;
use pith::pipeline::{process, ServedForm, FALLBACK_NOTE};
use pith::profile::{Output, Profile, Reader};
use pith_fuzz::split_control;

const CONTENT_TYPES: &[Option<&str>] = &[
    None,
    Some("text/html"),
    Some("text/html; charset=utf-8"),
    Some("text/html; charset=windows-1252"),
    Some("text/html; charset=shift_jis"),
    Some("text/html; charset=utf-16le"),
    Some("text/html; charset=iso-2022-jp"),
    Some("text/html; charset=x-user-defined"),
    Some("text/html; charset=\"gb18030\""),
    Some("text/html; charset=no-such-charset"),
];

const PAGE_URL: &str = "https://www.fuzz.example/section/article.html";

/// The default config's rewriting profiles; the reader does not learn, so that one input's
/// result never depends on the inputs before it.
static PROFILES: LazyLock<Vec<Arc<Profile>>> = LazyLock::new(|| {
    let config = Config::embedded_default().expect("the documented default config validates");
    config
        .profiles
        .values()
        .filter(|p| !p.is_pass())
        .map(|p| {
            let mut p = Profile::clone(p);
            if let Some(reader) = p.reader.take() {
                p = p.with_reader(Reader { learn: false, ..Reader::clone(&reader) });
            }
            Arc::new(p)
        })
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let (doc, control) = split_control::<2>(data);
    let content_type = CONTENT_TYPES[usize::from(control[0]) % CONTENT_TYPES.len()];
    let profile = &PROFILES[usize::from(control[1] >> 1) % PROFILES.len()];
    let output = match (control[1] & 1, control[0] & 0x80) {
        (0, _) => Output::Html,
        (_, 0) => Output::Text,
        _ => Output::Content,
    };

    let page = match process(profile, doc, content_type, output, Some(PAGE_URL)) {
        Ok(page) => page,
        Err(err) => panic!("profile {} ({output:?}) failed: {err}", profile.name),
    };
    // The form asked for, or the stage-1 HTML page of a page too deep for the tree.
    let asked = match page.form {
        ServedForm::Asked(asked) | ServedForm::TooDeep { asked } => asked,
    };
    assert_eq!(asked, output, "profile {}: the form asked is the form reported", profile.name);
    let detected = charset::detect(content_type, doc);
    assert_eq!(page.charset, detected.encoding.name());
    assert_eq!(page.charset_source, detected.source);
    let want = match page.form.output() {
        Output::Html => "text/html; charset=utf-8",
        Output::Text | Output::Content => "text/plain; charset=utf-8",
    };
    assert_eq!(page.content_type, want);

    let again = process(profile, doc, content_type, output, Some(PAGE_URL)).expect("succeeded once");
    assert!(again.body == page.body, "profile {}: the same input gave another page", profile.name);

    if let (Some(reading), Output::Html) = (&page.reading, page.form.output()) {
        let body = String::from_utf8_lossy(&page.body);
        if reading.fallback.is_some() {
            assert!(body.contains(FALLBACK_NOTE), "the fallback page carries its note");
        } else {
            let tree = Tree::parse(&body);
            let h1s = tree
                .descendants(tree.root())
                .filter(|&id| tree.element(id).is_some_and(|e| e.ns == Ns::Html && &*e.name == "h1"))
                .count();
            assert_eq!(h1s, 1, "the reading page has one <h1>:\n{body}");
        }
    }
});
