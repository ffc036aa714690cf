//! The `pith` binary offline: `extract` over several files (one of them failing) and
//! `check-config` on good and bad files.

use std::path::Path;
use std::process::{Command, Output};

fn pith(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pith")).args(args).env_remove("RUST_LOG").output().expect("run the pith binary")
}

fn os(s: &(impl AsRef<std::ffi::OsStr> + ?Sized)) -> &std::ffi::OsStr {
    s.as_ref()
}

fn lines_of(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{} should exist: {e}", path.display()));
    text.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect()
}

#[test]
fn extract_writes_text_per_file_and_reports_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let a = dir.path().join("a.html");
    let b = dir.path().join("b.html");
    let missing = dir.path().join("missing.html");
    std::fs::write(&a, "<html><body><h1>Alpha heading</h1><p>Alpha paragraph text.</p><script>evil()</script></body></html>").unwrap();
    // Non-UTF-8 input: the charset comes from the <meta> prescan, as in the proxy.
    let (b_bytes, _, _) = encoding_rs::WINDOWS_1251
        .encode("<html><head><meta charset=\"windows-1251\"></head><body><p>Бета абзац.</p><form><input value=\"x\"></form></body></html>");
    std::fs::write(&b, &b_bytes).unwrap();

    let output = pith(&[os("extract"), os("--profile"), os("declutter"), os("--format"), os("text"), os("--out-dir"), out.as_os_str(), a.as_os_str(), b.as_os_str(), missing.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);

    assert_eq!(output.status.code(), Some(1), "one file failed, so the run fails:\n{stderr}");
    assert!(stderr.contains("missing.html"), "the failing file is named:\n{stderr}");
    assert!(stderr.contains("3 files"), "the summary counts every file:\n{stderr}");
    assert!(stderr.contains("1 failures") || stderr.contains("1 failure"), "the summary counts the failure:\n{stderr}");

    let a_lines = lines_of(&out.join("a.txt"));
    assert_eq!(a_lines, ["Alpha heading", "Alpha paragraph text."], "a.txt");
    let b_lines = lines_of(&out.join("b.txt"));
    assert_eq!(b_lines, ["Бета абзац."], "b.txt");
    assert!(!out.join("missing.txt").exists());
}

#[test]
fn extract_reads_standard_input_and_writes_html() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(["extract", "--format", "html"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the pith binary");
    child.stdin.take().unwrap().write_all(crate::common::CLUTTERED.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    crate::common::assert_decluttered(&String::from_utf8(output.stdout).expect("UTF-8 output"));
}

#[test]
fn check_config_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[listener]]\naddress = \"127.0.0.1:0\"\n\n[upstream]\nconect_timeout_ms = 5\n").unwrap();
    let output = pith(&[os("check-config"), bad.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "a bad config is a usage error:\n{stderr}");
    assert!(stderr.contains("bad.toml:5"), "file and line:\n{stderr}");
    assert!(stderr.contains("upstream.conect_timeout_ms"), "the key:\n{stderr}");

    let bad_value = dir.path().join("value.toml");
    std::fs::write(&bad_value, "[[listener]]\naddress = \"127.0.0.1:0\"\nallow = [\"not-a-network\"]\n").unwrap();
    let output = pith(&[os("check-config"), bad_value.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("value.toml:3") && stderr.contains("listener.allow"), "{stderr}");
}

#[test]
fn check_config_accepts_the_shipped_proxy_toml() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("proxy.toml");
    let output = pith(&[os("check-config"), shipped.as_os_str()]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn extract_reads_a_post_only_scripts_would_show_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("post.html");
    let post = "<article><p>Spring tides come twice a month, at new and full moon, when the sun and the moon pull in line and the range between high and low water is at its widest.</p><p>Neap tides fall between them, with the sun and the moon at right angles, and the range at its narrowest.</p></article>";
    std::fs::write(&page, format!("<html><head><title>Spring tides</title></head><body><h1>The Coastal Blog</h1><p>Notes from the harbour wall.</p><noscript>{post}</noscript></body></html>")).unwrap();

    let output = pith(&[os("extract"), os("--profile"), os("reader"), os("--format"), os("text"), page.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("0 reading-mode fallbacks, 1 read from hidden copies"), "{stderr}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("Spring tides come twice a month") && text.contains("Neap tides") && !text.contains("harbour wall"), "{text}");
}

#[test]
fn extract_prints_the_content_alone_as_text_and_the_title_lines_as_listener() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tides.html");
    let body = "<p>Spring tides come twice a month, at new and full moon, when the sun and the moon pull in line and the range between high and low water is at its widest.</p><p>Neap tides fall between them, with the sun and the moon at right angles, and the range at its narrowest of the month.</p><p>Harbour masters print both in their tables, for the boats that need the water.</p>";
    std::fs::write(&page, format!("<html><head><title>Spring tides</title></head><body><article><h1>Spring tides</h1>{body}</article></body></html>")).unwrap();
    let run = |format: &str| {
        let output = pith(&[os("extract"), os("--profile"), os("reader"), os("--format"), os(format), page.as_os_str()]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let content = run("text");
    assert!(content.starts_with("Spring tides come twice a month"), "the content alone, for scoring: {content}");
    let listener = run("listener");
    assert!(listener.starts_with("Spring tides\n") && listener.contains("Spring tides come twice a month"), "the title line first: {listener}");
}

/// A page nested deeper than the tree holds is decided once, by the pipeline: the proxy and
/// `pith extract` serve the same bytes for it (the stage-1 HTML page), in every profile and every
/// `--format`, where `extract --format text` used to fail on a page the proxy served.
#[tokio::test]
async fn extract_and_the_proxy_agree_on_a_page_too_deep_for_the_tree() {
    use crate::common::origin::{reply, Origin};
    const DEPTH: usize = 10_000;
    let mut page = b"<!DOCTYPE html><html><head><title>deep</title></head><body><script>evil()</script>".to_vec();
    page.extend(b"<div>".repeat(DEPTH));
    page.extend_from_slice(b"<p>DEEP-MARKER text at the bottom of the well.</p>");
    page.extend(b"</div>".repeat(DEPTH));
    page.extend_from_slice(b"<p>After the well, more text that stays.</p></body></html>");
    const READERS: &str = "[profiles.reader]\nrules = \"reader\"\noutput = \"html\"\nalgorithm = \"pith\"\n\n[profiles.reader-text]\nrules = \"reader\"\noutput = \"text\"\nalgorithm = \"pith\"\n";
    let dir = tempfile::tempdir().unwrap();
    let (file, config) = (dir.path().join("deep.html"), dir.path().join("pith.toml"));
    std::fs::write(&file, &page).unwrap();
    std::fs::write(&config, format!("[[listener]]\naddress = \"127.0.0.1:0\"\n{}\n{READERS}", crate::common::PROFILES)).unwrap();
    let served = page.clone();
    let origin = Origin::new().route("/deep", move |_| reply(&[("content-type", "text/html")], served.clone())).run().await;
    let url = origin.url("/deep");
    for profile in ["declutter", "text", "reader", "reader-text"] {
        // Without choices, so without the control bar: that line is the proxy's alone.
        let proxy = crate::common::Pith::start(&format!("profile = \"{profile}\"\n{READERS}\n[control]\nchoices = false\n")).await;
        let resp = proxy.client().get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{profile}");
        assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8", "{profile}: the stage-1 HTML page");
        let proxied = resp.bytes().await.unwrap();
        assert!(String::from_utf8_lossy(&proxied).contains("DEEP-MARKER"), "{profile}");
        for format in [None, Some("html"), Some("text"), Some("listener")] {
            let mut args = vec![os("extract"), os("--config"), config.as_os_str(), os("--profile"), os(profile), os("--url"), os(&url)];
            if let Some(format) = format {
                args.extend([os("--format"), os(format)]);
            }
            args.push(file.as_os_str());
            let output = pith(&args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{profile}/{format:?}: {stderr}");
            assert!(output.stdout == proxied, "{profile}/{format:?}: extract and the proxy differ:\n{}\n---\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&proxied));
        }
    }
}

/// `--url` is the page's address: anything but an absolute http(s) URL is refused, with exit 64
/// and words that say what to give.
#[test]
fn extract_refuses_a_url_that_is_not_absolute() {
    for (url, needle) in [("notaurl", "is not an absolute URL"), ("/page.html", "is not an absolute URL"), ("file:///etc/passwd", "is not a web page's address")] {
        let out = pith(&[os("extract"), os("--url"), os(url), os("-")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{url}: {stderr}");
        assert!(stderr.contains(&format!("pith: --url: {url:?} {needle}")) && stderr.contains("https://example.com/page"), "{url}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing extracted for {url}");
    }
}

/// `--format json`: one object per page with its kind, title, language, confidence, the unsure
/// flag and the text, which is the `text` form's exactly.
#[test]
fn extract_json_gives_the_kind_and_the_text_form() {
    let dir = tempfile::tempdir().unwrap();
    let forum = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reader-forum.src.html");
    let replies = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reader-thread-replies.src.html");
    let output = pith(&[os("extract"), os("--profile"), os("reader"), os("--format"), os("json"), forum.as_os_str(), replies.as_os_str()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let pages: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("one JSON object a line")).collect();
    assert_eq!(pages.len(), 2, "{stdout}");
    let (thread, one_post) = (&pages[0], &pages[1]);
    assert_eq!(thread["type"], "forum", "{thread}");
    assert_eq!(thread["items"], 5, "{thread}");
    assert_eq!(thread["title"], "Combi boiler clicking every few minutes");
    assert_eq!(thread["language"], "en");
    assert_eq!(thread["unsure"], false, "every post kept: {thread}");
    assert!(thread["confidence"].as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)), "{thread}");
    assert_eq!((one_post["type"].as_str(), one_post["unsure"].as_bool()), (Some("forum"), Some(true)), "one post of five kept: {one_post}");
    // The text is the `text` form's, the notice nowhere in it.
    for (page, file) in [(thread, &forum), (one_post, &replies)] {
        let text = pith(&[os("extract"), os("--profile"), os("reader"), os("--format"), os("text"), file.as_os_str()]);
        assert_eq!(page["text"].as_str(), Some(String::from_utf8_lossy(&text.stdout).as_ref()));
        assert!(!page["text"].as_str().unwrap_or_default().contains("Reading mode is not sure"), "{page}");
    }
    let out = dir.path().join("out");
    let output = pith(&[os("extract"), os("--profile"), os("reader"), os("--format"), os("json"), os("--out-dir"), out.as_os_str(), forum.as_os_str()]);
    assert!(output.status.success());
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("reader-forum.src.json")).unwrap()).unwrap();
    assert_eq!(written["type"], "forum");
}
