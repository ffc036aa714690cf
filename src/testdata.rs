//! Pages for the library's tests: the development sets in `../shared/bench`, beside the
//! repository, where CI has them; in a clone without them, the WCXB pages vendored in
//! `tests/data/wcxb` (CC-BY-4.0, attributed there), or nothing.
//!
//! A test that cannot read the set it was written for says so in one line on standard error
//! and, when `PITH_SKIP_LOG` names a file, in that file too (`scripts/test.sh` prints it after
//! the run). Under `CI=true` a missing set is a failure instead: CI has `../shared`, and a test
//! there that checked less than it says would pass unnoticed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// `../shared/bench/NAME` (`$PITH_SHARED/bench/NAME` when that is set), when it is there.
pub fn dev_set(name: &str) -> Option<PathBuf> {
    let shared = std::env::var_os("PITH_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
        PathBuf::from,
    );
    let dir = shared.join("bench").join(name);
    dir.is_dir().then_some(dir)
}

/// Records that the running test did less than it was written for: `what` it left out and
/// `instead`, what it did. Panics under `CI=true`.
pub fn skipped(what: &str, instead: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let line = format!("{test}: needs {what}, missing here (no ../shared beside this clone); {instead}");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and {line}: CI must run every test in full");
    }
    eprintln!("skipped: {line}");
    if let Some(log) = std::env::var_os("PITH_SKIP_LOG") {
        // One write per line on a file opened for appending: lines of tests running at once
        // do not interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}

/// The vendored WCXB pages (`tests/data/wcxb/*.html.gz`), decoded, with their paths, in name
/// order.
pub fn vendored_pages() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/wcxb");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}: the vendored pages are part of the repository",
                dir.display()
            )
        })
        .map(|e| e.expect("a readable folder").path())
        .filter(|p| p.to_string_lossy().ends_with(".html.gz"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 10,
        "{}: only {} pages",
        dir.display(),
        paths.len()
    );
    paths
        .into_iter()
        .map(|p| {
            let gz = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let mut html = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut html)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, String::from_utf8_lossy(&html).into_owned())
        })
        .collect()
}
