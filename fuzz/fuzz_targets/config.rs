//! The `proxy.toml` parser and validator on arbitrary text.
//!
//! Input: the config text (UTF-8, invalid bytes replaced). No control bytes.
//!
//! Properties:
//! - arbitrary text never panics;
//! - every error names a line that exists in the input (1 up to the number of lines, counting
//!   the empty line after a final newline, where an editor puts the cursor) and a column within
//!   that line (one past its end at most), and its message starts with `fuzz.toml:LINE:`;
//! - text that is not TOML syntax is refused (syntax only: the typed reader accepts an integer
//!   above i64::MAX for a `u64` key, which TOML's own value type cannot hold);
//! - the documented default (`proxy.toml`, also a seed) validates, checked once at start-up.

#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;
use pith::config::{Config, ConfigError, DEFAULT_TOML};

const ORIGIN: &str = "fuzz.toml";

static DEFAULT_VALIDATES: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    DEFAULT_VALIDATES.call_once(|| {
        if let Err(err) = Config::from_toml_str(DEFAULT_TOML, ORIGIN, None) {
            panic!("the documented default config is refused: {err}");
        }
    });
    let text = String::from_utf8_lossy(data);
    let Err(err) = Config::from_toml_str(&text, ORIGIN, None) else {
        assert!(toml::de::DeTable::parse(&text).is_ok(), "a config that is not TOML validated");
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let (line, column) = match &err {
        ConfigError::Invalid { line, column, key, .. } => {
            assert!(!key.is_empty(), "an error names its key: {err}");
            (*line, Some(*column))
        }
        ConfigError::Sites { line, .. } | ConfigError::Rules { line, .. } => (*line, None),
        ConfigError::Io { .. } => panic!("from_toml_str reads no config file: {err}"),
    };
    assert!(
        (1..=lines.len()).contains(&line),
        "error names line {line} of a {}-line input: {err}",
        lines.len()
    );
    if let Some(column) = column {
        let width = lines[line - 1].chars().count();
        assert!(
            (1..=width + 1).contains(&column),
            "error names column {column} of a {width}-character line: {err}"
        );
    }
    let message = err.to_string();
    assert!(message.starts_with(&format!("{ORIGIN}:{line}:")), "unlocated message: {message}");
});
