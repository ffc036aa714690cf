//! Charsets: pages in legacy encodings arrive as UTF-8 with the same text, and say so.

use crate::common::*;

const RUSSIAN: &str = "Съешь же ещё этих мягких французских булок, да выпей чаю.";
const JAPANESE: &str = "吾輩は猫である。名前はまだ無い。";

#[tokio::test]
async fn a_windows_1251_page_arrives_as_utf8() {
    let page = format!("<html><head><title>Проверка</title></head><body><p>{RUSSIAN}</p><script>x()</script></body></html>");
    let (bytes, _, lossy) = encoding_rs::WINDOWS_1251.encode(&page);
    assert!(!lossy);
    let bytes = bytes.into_owned();
    let origin = Origin::new().route("/ru", move |_| reply(&[("content-type", "text/html; charset=windows-1251")], bytes.clone())).run().await;
    let pith = Pith::start("").await;

    let resp = pith.client().get(origin.url("/ru")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("charset=windows-1251"), "x-pith: {summary}");
    let html = String::from_utf8(resp.bytes().await.unwrap().to_vec()).expect("the page is UTF-8");
    assert!(html.contains(RUSSIAN), "{html}");
    assert!(html.contains("Проверка"), "{html}");
    assert!(!html.contains("<script"), "{html}");
}

#[tokio::test]
async fn a_shift_jis_page_declared_in_meta_arrives_as_utf8() {
    let page = format!("<html><head><meta charset=\"Shift_JIS\"><title>日本語</title></head><body><p>{JAPANESE}</p></body></html>");
    let (bytes, _, lossy) = encoding_rs::SHIFT_JIS.encode(&page);
    assert!(!lossy);
    let bytes = bytes.into_owned();
    // No charset in the header: only the <meta> prescan can find it.
    let origin = Origin::new().route("/ja", move |_| reply(&[("content-type", "text/html")], bytes.clone())).run().await;
    let pith = Pith::start("").await;

    let resp = pith.client().get(origin.url("/ja")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("charset=Shift_JIS"), "x-pith: {summary}");
    let html = String::from_utf8(resp.bytes().await.unwrap().to_vec()).expect("the page is UTF-8");
    assert!(html.contains(JAPANESE), "{html}");
    assert!(html.contains("日本語"), "{html}");
    // A UTF-8 page that still declared Shift_JIS would be misread once saved to disk.
    assert!(!html.to_lowercase().contains("shift_jis"), "the <meta> must be re-declared as UTF-8: {html}");
}

#[tokio::test]
async fn a_gzipped_legacy_page_is_decoded_then_transcoded() {
    let page = format!("<html><body><p>{RUSSIAN}</p></body></html>");
    let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(&page);
    let body = crate::common::codec::gzip(&bytes);
    let origin = Origin::new()
        .route("/ru", move |_| reply(&[("content-type", "text/html; charset=windows-1251"), ("content-encoding", "gzip")], body.clone()))
        .run()
        .await;
    let pith = Pith::start("").await;
    let resp = pith.client().get(origin.url("/ru")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains(RUSSIAN));
}

const CHINESE: &str = "你好，世界。这是一个用简体中文写的测试页面。";

/// A gb2312 page whose `<meta>` comes after the first 1024 bytes (behind a long inline
/// script), served without a charset in the header.
fn late_gb2312_page() -> Vec<u8> {
    let page = format!(
        "<html><head><script>{}</script><meta http-equiv=\"Content-Type\" content=\"text/html; charset=gb2312\"><title>中文网页</title></head><body><p>{CHINESE}</p></body></html>",
        "var tracking = window.tracking || [];\n".repeat(40)
    );
    let (bytes, _, lossy) = encoding_rs::GBK.encode(&page);
    assert!(!lossy);
    assert!(page.find("<meta").unwrap() > 1024, "the prescan must miss the <meta>");
    bytes.into_owned()
}

#[tokio::test]
async fn a_gb2312_page_declared_after_1024_bytes_changes_the_encoding() {
    let bytes = late_gb2312_page();
    let origin = Origin::new().route("/zh", move |_| reply(&[("content-type", "text/html")], bytes.clone())).run().await;
    let pith = Pith::start("").await;

    let resp = pith.client().get(origin.url("/zh")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let summary = resp.headers()["x-pith"].to_str().unwrap().to_string();
    assert!(summary.contains("charset=GBK"), "x-pith: {summary}");
    let html = String::from_utf8(resp.bytes().await.unwrap().to_vec()).expect("the page is UTF-8");
    assert!(html.contains(CHINESE) && html.contains("中文网页"), "{html}");
    assert!(!html.to_lowercase().contains("gb2312"), "the <meta> must be re-declared as UTF-8: {html}");
}

#[test]
fn extract_changes_the_encoding_for_a_late_meta_too() {
    let bytes = late_gb2312_page();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("zh.html");
    std::fs::write(&file, &bytes).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(["extract", "--profile", "declutter", "--format", "text"])
        .arg(&file)
        .env_remove("RUST_LOG")
        .output()
        .expect("run the pith binary");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8(output.stdout).expect("UTF-8 output").trim(), CHINESE);
}

#[test]
fn extract_takes_the_charset_of_files_that_do_not_say() {
    let page = format!("<html><body><p>{RUSSIAN}</p></body></html>");
    let (bytes, _, _) = encoding_rs::WINDOWS_1251.encode(&page);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ru.html");
    std::fs::write(&file, &bytes).unwrap();
    let run = |charset: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pith"))
            .args(["extract", "--profile", "declutter", "--format", "text", "--charset", charset])
            .arg(&file)
            .env_remove("RUST_LOG")
            .output()
            .expect("run the pith binary")
    };
    let output = run("windows-1251");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8(output.stdout).expect("UTF-8 output").trim(), RUSSIAN);
    let output = run("no-such-charset");
    assert_eq!(output.status.code(), Some(64), "an unknown label is a usage error");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--charset"), "{}", String::from_utf8_lossy(&output.stderr));
}
