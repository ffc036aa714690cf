//! What every bench shares: the development set's pages (`../shared/bench/scrapinghub`,
//! beside the repository), in a fixed order so runs compare.

#![allow(dead_code)] // each bench uses some of these

use std::path::{Path, PathBuf};

use pith::html::charset;

/// The development set's HTML files, sorted by name; empty when the set is absent.
pub fn page_paths() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/scrapinghub");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "html"))
        .collect();
    paths.sort();
    paths
}

/// The pages as served (raw bytes); `None` when the set is absent.
pub fn raw_pages() -> Option<Vec<Vec<u8>>> {
    let pages: Vec<Vec<u8>> = page_paths().iter().filter_map(|path| std::fs::read(path).ok()).collect();
    (!pages.is_empty()).then_some(pages)
}

/// The pages decoded to UTF-8 as the proxy would decode them; `None` when the set is absent.
pub fn utf8_pages() -> Option<Vec<String>> {
    let pages = raw_pages()?
        .into_iter()
        .map(|raw| {
            let detected = charset::detect(Some("text/html"), &raw);
            charset::to_utf8(&raw, detected.encoding).into_owned()
        })
        .collect();
    Some(pages)
}
