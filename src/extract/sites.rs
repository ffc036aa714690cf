//! Per-site rules: which preset, thresholds, removers and selectors stage 2 uses on a host.
//!
//! Crunch mapped known sites to presets, because one set of thresholds cannot suit a news
//! article, a portal and a forum alike. pith keeps that as small rule files in `filters/sites/`,
//! one per site or group of sites, matched by host suffix. This module owns the file format,
//! parsing and validation (every bad line reported with its file and line), the embedded copies
//! of the shipped files, and the host lookup. Applying a rule (choosing the preset, overriding
//! thresholds, keeping and removing elements) is the orchestration's job in
//! [`crate::extract`]; the names a rule may use are defined here ([`PRESET_NAMES`],
//! [`SETTING_NAMES`], [`REMOVER_NAMES`]) so that the file format and its validation live in one
//! place.
//!
//! # Format
//!
//! One directive per line; blank lines and lines starting with `#` are ignored. As in stage 1's
//! rule files there are no comments at the end of a line, because `#` starts CSS ids.
//!
//! | directive | meaning |
//! |---|---|
//! | `site HOST...` | the hosts the file applies to, by suffix on label boundaries: `example.com` covers `www.example.com`, not `badexample.com`. Must come first; may repeat |
//! | `preset NAME` | a named preset ([`PRESET_NAMES`]) |
//! | `algorithm NAME` | the reading-mode extractor for the site ([`Algorithm`]'s names) |
//! | `set NAME VALUE` | overrides one threshold of the preset ([`SETTING_NAMES`]) |
//! | `on NAME` / `off NAME` | switches one remover on or off ([`REMOVER_NAMES`]) |
//! | `keep SELECTORS` | elements never removed, nor their ancestors |
//! | `remove SELECTORS` | elements always removed |
//!
//! Selectors are those of [`crate::dom::select`]. A host may be claimed by one file only; for a
//! host matched by several suffixes the longest wins. `filters/sites/README.md` documents the
//! format for users.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::dom::select::Selector;

use super::algorithm::Algorithm;

/// The shipped site files, embedded so that they apply without any file on disk. A test checks
/// that each parses and that no two claim the same host.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "hacker-news.rules",
        include_str!("../../filters/sites/hacker-news.rules"),
    ),
    (
        "rustdoc.rules",
        include_str!("../../filters/sites/rustdoc.rules"),
    ),
    (
        "wikipedia.rules",
        include_str!("../../filters/sites/wikipedia.rules"),
    ),
];

/// The presets a `preset` line may name: Crunch's named presets, plus `gentle`, the fallback
/// when the removers would leave too little of a page.
pub const PRESET_NAMES: &[&str] = &[
    "news",
    "news-home",
    "shopping",
    "government",
    "education",
    "text-heavy",
    "link-heavy",
    "automatic",
    "gentle",
];

/// The thresholds a `set` line may override, with the range of values that makes sense:
/// `link-ratio` is the link-list remover's links ÷ (non-link characters ÷ 5) above which a block
/// is navigation; `empty-min-chars` the characters of text that make a table or layout block
/// worth keeping; `min-kept-fraction` the share of the page's text the removers must leave, or
/// the gentler preset is used instead.
pub const SETTING_NAMES: &[(&str, f64, f64)] = &[
    ("link-ratio", 0.0, 1000.0),
    ("empty-min-chars", 0.0, 1_000_000.0),
    ("min-kept-fraction", 0.0, 1.0),
];

/// The removers an `on` / `off` line may switch.
pub const REMOVER_NAMES: &[&str] = &["ads", "link-lists", "empty-tables", "landmarks", "boilerplate", "retainer"];

/// The rules of one site file.
#[derive(Clone, Debug)]
pub struct SiteRule {
    /// Host suffixes the rule applies to, lower case, in file order.
    pub hosts: Vec<String>,
    /// The preset to start from, one of [`PRESET_NAMES`]; `None` leaves the profile's default.
    pub preset: Option<String>,
    /// The reading-mode extractor for the site; `None` leaves the profile's.
    pub algorithm: Option<Algorithm>,
    /// Threshold overrides, names from [`SETTING_NAMES`], in file order.
    pub overrides: Vec<(String, f64)>,
    /// Removers switched on (`true`) or off, names from [`REMOVER_NAMES`], in file order.
    pub switches: Vec<(String, bool)>,
    /// Elements never removed, nor their ancestors.
    pub keep: Vec<Selector>,
    /// Elements always removed.
    pub remove: Vec<Selector>,
    /// Where the rule came from (a file name), for logs and error messages.
    pub origin: String,
}

/// All site rules in use, indexed by host suffix; built once at start-up and shared.
#[derive(Clone, Debug, Default)]
pub struct SiteRules {
    rules: Vec<SiteRule>,
    by_host: HashMap<String, usize>,
    fingerprint: u64,
}

/// Why site rules could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// A directory or file could not be read.
    #[error("cannot read site rules {}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// One or more lines are not valid; all of them are listed, over all files.
    #[error("{}", DisplayErrors(errors))]
    Invalid {
        /// Every bad line, by file and then line.
        errors: Vec<SiteLineError>,
    },
}

/// One bad line of a site file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteLineError {
    /// The file the line is in.
    pub origin: String,
    /// 1-based line number.
    pub line: usize,
    /// The line as written (trimmed).
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Formats errors as `origin:line: reason: `text``, one per line.
struct DisplayErrors<'a>(&'a [SiteLineError]);

impl fmt::Display for DisplayErrors<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}:{}: {}: `{}`", e.origin, e.line, e.reason, e.text)?;
        }
        Ok(())
    }
}

impl SiteRules {
    /// Reads every `*.rules` file of `dir` (in name order); errors name each bad line of every
    /// file, and hosts claimed by two files.
    pub fn parse_dir(dir: &Path) -> Result<SiteRules, SiteError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SiteError::Io { path, source }
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            if path.extension().is_some_and(|x| x == "rules") && path.is_file() {
                paths.push(path);
            }
        }
        paths.sort();
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            files.push((path.display().to_string(), text));
        }
        SiteRules::from_files(files.iter().map(|(o, t)| (o.as_str(), t.as_str())))
    }

    /// Parses one site file; `origin` is the file name used in errors.
    pub fn parse_str(text: &str, origin: &str) -> Result<SiteRule, SiteError> {
        let mut rule = SiteRule {
            hosts: Vec::new(),
            preset: None,
            algorithm: None,
            overrides: Vec::new(),
            switches: Vec::new(),
            keep: Vec::new(),
            remove: Vec::new(),
            origin: origin.to_string(),
        };
        let mut errors = Vec::new();
        let mut seen_site = false;
        let mut last_line = 0;
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            last_line = index + 1;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let result = if !seen_site && line.split_whitespace().next() != Some("site") {
                Err("the file must start with `site HOST...`, naming the hosts it is for".into())
            } else {
                seen_site = true;
                add_line(&mut rule, line)
            };
            if let Err(reason) = result {
                errors.push(SiteLineError {
                    origin: origin.to_string(),
                    line: index + 1,
                    text: line.to_string(),
                    reason,
                });
            }
        }
        // A file of comments only: nothing above said what is wrong with it.
        if !seen_site && errors.is_empty() {
            errors.push(SiteLineError {
                origin: origin.to_string(),
                line: last_line.max(1),
                text: String::new(),
                reason: "no `site HOST...` line: the rules would apply to no host".into(),
            });
        }
        match errors.is_empty() {
            true => Ok(rule),
            false => Err(SiteError::Invalid { errors }),
        }
    }

    /// The shipped site files ([`BUILTIN`]), parsed. The test suite checks that they parse, so
    /// none is ever dropped here.
    pub fn builtin() -> SiteRules {
        SiteRules::from_files(BUILTIN.iter().copied()).unwrap_or_default()
    }

    /// The rule for `host` (a host name, optionally with `:port`): the one whose host suffix is
    /// the longest to match on a label boundary, or `None`.
    pub fn for_host(&self, host: &str) -> Option<&SiteRule> {
        if self.by_host.is_empty() {
            return None;
        }
        let host = host.split_once(':').map_or(host, |(name, _)| name);
        crate::host::find_by_suffix(host, |suffix| self.by_host.get(suffix)).and_then(|&index| self.rules.get(index))
    }

    /// Every rule, in file-name order.
    pub fn rules(&self) -> &[SiteRule] {
        &self.rules
    }

    /// True when there are no site rules at all.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// A stable 64-bit hash of the rules in use (not of comments, layout or file names), so that
    /// cached pages can be keyed by the rules that produced them.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Parses `(origin, text)` files and indexes their hosts, reporting every error of every
    /// file and each host claimed twice.
    fn from_files<'a>(
        files: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<SiteRules, SiteError> {
        let mut set = SiteRules::default();
        let mut errors = Vec::new();
        let mut hash = Fnv1a::default();
        for (origin, text) in files {
            let rule = match SiteRules::parse_str(text, origin) {
                Ok(rule) => rule,
                Err(SiteError::Invalid { errors: more }) => {
                    errors.extend(more);
                    continue;
                }
                Err(other) => return Err(other),
            };
            for host in &rule.hosts {
                if let Some(&other) = set.by_host.get(host) {
                    errors.push(SiteLineError {
                        origin: origin.to_string(),
                        line: site_line(text, host),
                        text: host.clone(),
                        reason: format!("host also claimed by {}", set.rules[other].origin),
                    });
                } else {
                    set.by_host.insert(host.clone(), set.rules.len());
                }
            }
            hash_rule(&mut hash, &rule);
            set.rules.push(rule);
        }
        set.fingerprint = hash.0;
        match errors.is_empty() {
            true => Ok(set),
            false => Err(SiteError::Invalid { errors }),
        }
    }
}

/// Applies one non-blank, non-comment line to `rule`; the error is the reason shown to the user.
fn add_line(rule: &mut SiteRule, line: &str) -> Result<(), String> {
    let (directive, rest) = match line.split_once(char::is_whitespace) {
        Some((d, r)) => (d, r.trim()),
        None => (line, ""),
    };
    match directive {
        "site" => add_hosts(rule, rest),
        "preset" => set_preset(rule, rest),
        "algorithm" => set_algorithm(rule, rest),
        "set" => add_override(rule, rest),
        "on" | "off" => add_switch(rule, rest, directive == "on"),
        "keep" => parse_selector(rest).map(|s| rule.keep.push(s)),
        "remove" => parse_selector(rest).map(|s| rule.remove.push(s)),
        other => Err(format!(
            "unknown directive `{other}` (expected site, preset, algorithm, set, on, off, keep or remove)"
        )),
    }
}

fn add_hosts(rule: &mut SiteRule, rest: &str) -> Result<(), String> {
    if rest.is_empty() {
        return Err("`site` needs at least one host name".into());
    }
    let hosts = rest
        .split_whitespace()
        .map(parse_host)
        .collect::<Result<Vec<_>, _>>()?;
    for host in hosts {
        if !rule.hosts.contains(&host) {
            rule.hosts.push(host);
        }
    }
    Ok(())
}

/// A host name as written in a rule: ASCII labels of letters, digits, `-` and `_`, lower-cased.
/// International names are written in their `xn--` form, as they travel in requests.
fn parse_host(word: &str) -> Result<String, String> {
    let host = word.to_ascii_lowercase();
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(format!(
            "`{word}` is not a host name (write `example.com`: no scheme, port, path or wildcard)"
        ));
    }
    Ok(host)
}

fn set_preset(rule: &mut SiteRule, rest: &str) -> Result<(), String> {
    if rule.preset.is_some() {
        return Err("a file names one preset only".into());
    }
    if !PRESET_NAMES.contains(&rest) {
        return Err(format!(
            "unknown preset `{rest}` (expected one of {})",
            PRESET_NAMES.join(", ")
        ));
    }
    rule.preset = Some(rest.to_string());
    Ok(())
}

fn set_algorithm(rule: &mut SiteRule, rest: &str) -> Result<(), String> {
    if rule.algorithm.is_some() {
        return Err("a file names one algorithm only".into());
    }
    rule.algorithm = Some(rest.parse::<Algorithm>().map_err(|e| e.to_string())?);
    Ok(())
}

fn add_override(rule: &mut SiteRule, rest: &str) -> Result<(), String> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [name, value] = words[..] else {
        return Err("`set` takes a setting name and a number".into());
    };
    let Some(&(_, min, max)) = SETTING_NAMES.iter().find(|(n, ..)| *n == name) else {
        let names: Vec<&str> = SETTING_NAMES.iter().map(|(n, ..)| *n).collect();
        return Err(format!(
            "unknown setting `{name}` (expected one of {})",
            names.join(", ")
        ));
    };
    let value: f64 = value
        .parse()
        .ok()
        .filter(|v: &f64| (min..=max).contains(v))
        .ok_or_else(|| format!("`{name}` takes a number from {min} to {max}"))?;
    if rule.overrides.iter().any(|(n, _)| n == name) {
        return Err(format!("`{name}` is already set in this file"));
    }
    rule.overrides.push((name.to_string(), value));
    Ok(())
}

fn add_switch(rule: &mut SiteRule, rest: &str, on: bool) -> Result<(), String> {
    if !REMOVER_NAMES.contains(&rest) {
        return Err(format!(
            "unknown remover `{rest}` (expected one of {})",
            REMOVER_NAMES.join(", ")
        ));
    }
    if rule.switches.iter().any(|(n, _)| n == rest) {
        return Err(format!("`{rest}` is already switched in this file"));
    }
    rule.switches.push((rest.to_string(), on));
    Ok(())
}

fn parse_selector(text: &str) -> Result<Selector, String> {
    if text.is_empty() {
        return Err("missing CSS selector".into());
    }
    Selector::parse(text).map_err(|e| format!("bad CSS selector ({})", e.kind))
}

/// The line of the `site` directive that names `host`, for conflict errors (1 if not found).
fn site_line(text: &str, host: &str) -> usize {
    text.lines()
        .position(|line| {
            let mut words = line.split_whitespace();
            words.next() == Some("site") && words.any(|w| w.eq_ignore_ascii_case(host))
        })
        .map_or(1, |index| index + 1)
}

/// Feeds the canonical content of a rule into the fingerprint.
fn hash_rule(hash: &mut Fnv1a, rule: &SiteRule) {
    hash.write_str(&format!("site {}\n", rule.hosts.join(" ")));
    if let Some(preset) = &rule.preset {
        hash.write_str(&format!("preset {preset}\n"));
    }
    if let Some(algorithm) = rule.algorithm {
        hash.write_str(&format!("algorithm {algorithm}\n"));
    }
    for (name, value) in &rule.overrides {
        hash.write_str(&format!("set {name} {value}\n"));
    }
    for (name, on) in &rule.switches {
        hash.write_str(&format!("{} {name}\n", if *on { "on" } else { "off" }));
    }
    for (word, selectors) in [("keep", &rule.keep), ("remove", &rule.remove)] {
        for selector in selectors {
            hash.write_str(&format!("{word} {}\n", selector.text()));
        }
    }
    hash.write_str("\n");
}

/// 64-bit FNV-1a: small and stable across builds, which is all a cache-key fingerprint needs.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn write_str(&mut self, text: &str) {
        for &b in text.as_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> SiteRule {
        SiteRules::parse_str(text, "test.rules").unwrap_or_else(|e| panic!("{e}"))
    }

    fn errors(result: Result<impl fmt::Debug, SiteError>) -> Vec<SiteLineError> {
        match result {
            Err(SiteError::Invalid { errors }) => errors,
            other => panic!("expected line errors, got {other:?}"),
        }
    }

    fn rules(files: &[(&str, &str)]) -> SiteRules {
        SiteRules::from_files(files.iter().copied()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `rejects!(name: "file text" => "part of the reason";)`: one bad line, named.
    macro_rules! rejects {
        ($($name:ident: $text:expr => $reason:expr;)*) => {$(
            #[test]
            fn $name() {
                let found = errors(SiteRules::parse_str($text, "x.rules"));
                assert_eq!(found.len(), 1, "{found:?}");
                assert!(found[0].reason.contains($reason), "reason was {:?}", found[0].reason);
            }
        )*};
    }

    rejects! {
        no_site_line: "# only a comment\n" => "no `site HOST...` line";
        directive_before_site: "preset news\nsite a.com" => "must start with `site";
        site_without_host: "site" => "at least one host";
        host_with_scheme: "site https://a.com" => "not a host name";
        host_with_wildcard: "site *.a.com" => "not a host name";
        host_with_port: "site a.com:8080" => "not a host name";
        host_with_empty_label: "site a..com" => "not a host name";
        unknown_directive: "site a.com\nhide .x" => "unknown directive `hide`";
        unknown_preset: "site a.com\npreset newspaper" => "unknown preset `newspaper`";
        two_presets: "site a.com\npreset news\npreset shopping" => "one preset only";
        unknown_setting: "site a.com\nset ratio 1" => "unknown setting `ratio`";
        setting_not_a_number: "site a.com\nset link-ratio high" => "takes a number";
        setting_out_of_range: "site a.com\nset min-kept-fraction 2" => "from 0 to 1";
        setting_nan: "site a.com\nset link-ratio NaN" => "takes a number";
        setting_without_value: "site a.com\nset link-ratio" => "a setting name and a number";
        setting_twice: "site a.com\nset link-ratio 1\nset link-ratio 2" => "already set";
        unknown_remover: "site a.com\noff popups" => "unknown remover `popups`";
        unknown_algorithm: "site a.com\nalgorithm readability" => "unknown algorithm \"readability\"; known: crunch";
        two_algorithms: "site a.com\nalgorithm pith\nalgorithm cetr" => "one algorithm only";
        switched_twice: "site a.com\non ads\noff ads" => "already switched";
        keep_without_selector: "site a.com\nkeep" => "missing CSS selector";
        unsupported_selector: "site a.com\nremove div:has(.ad)" => "`:has()` is not supported";
    }

    #[test]
    fn an_algorithm_line_names_the_extractor() {
        let rule = parse("site a.com\nalgorithm site-redundancy\n");
        assert_eq!(rule.algorithm, Some(Algorithm::SiteRedundancy));
        assert_eq!(parse("site a.com\n").algorithm, None);
        let (with, without) = (rules(&[("a", "site a.com\nalgorithm cetr\n")]), rules(&[("a", "site a.com\n")]));
        assert_ne!(with.fingerprint(), without.fingerprint());
    }

    #[test]
    fn a_full_file_parses() {
        let rule = parse(
            "# comment\n\nsite Example.com news.example.org\nsite example.net\npreset news\n\
             set link-ratio 0.4\nset empty-min-chars 12\noff ads\non retainer\n\
             keep article, .post-body\nremove .newsletter-signup, #cookie-banner\n  remove aside\n",
        );
        assert_eq!(
            rule.hosts,
            ["example.com", "news.example.org", "example.net"]
        );
        assert_eq!(rule.preset.as_deref(), Some("news"));
        assert_eq!(
            rule.overrides,
            [
                ("link-ratio".to_string(), 0.4),
                ("empty-min-chars".to_string(), 12.0)
            ]
        );
        assert_eq!(
            rule.switches,
            [("ads".to_string(), false), ("retainer".to_string(), true)]
        );
        let texts = |s: &[Selector]| s.iter().map(|s| s.text().to_string()).collect::<Vec<_>>();
        assert_eq!(texts(&rule.keep), ["article, .post-body"]);
        assert_eq!(
            texts(&rule.remove),
            [".newsletter-signup, #cookie-banner", "aside"]
        );
        assert_eq!(rule.origin, "test.rules");
    }

    #[test]
    fn every_bad_line_is_reported_with_its_line() {
        let found = errors(SiteRules::parse_str(
            "site a.com\npreset nope\n# fine\nkeep main\nset x 1\nremove a >",
            "bad.rules",
        ));
        let lines: Vec<usize> = found.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 5, 6]);
        let shown = SiteError::Invalid { errors: found }.to_string();
        let first = shown.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("bad.rules:2: unknown preset `nope`")
                && first.ends_with("`preset nope`"),
            "{shown}"
        );
    }

    #[test]
    fn hosts_match_by_suffix_on_label_boundaries_longest_first() {
        let set = rules(&[
            ("a.rules", "site example.com\npreset news"),
            ("b.rules", "site news.example.com\npreset news-home"),
        ]);
        let origin = |host: &str| set.for_host(host).map(|r| r.origin.as_str());
        assert_eq!(origin("example.com"), Some("a.rules"));
        assert_eq!(origin("www.example.com"), Some("a.rules"));
        assert_eq!(origin("WWW.Example.COM."), Some("a.rules"));
        assert_eq!(origin("example.com:8443"), Some("a.rules"));
        assert_eq!(origin("news.example.com"), Some("b.rules"));
        assert_eq!(origin("a.b.news.example.com"), Some("b.rules"));
        assert_eq!(origin("badexample.com"), None);
        assert_eq!(origin("example.com.evil.net"), None);
        assert_eq!(origin("com"), None);
        assert_eq!(origin(""), None);
    }

    #[test]
    fn a_host_claimed_twice_is_an_error_naming_both_files() {
        let found = errors(SiteRules::from_files(
            [
                ("a.rules", "site example.com"),
                ("b.rules", "# b\nsite other.org\nsite EXAMPLE.com"),
            ]
            .into_iter(),
        ));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].origin.as_str(), found[0].line), ("b.rules", 3));
        assert!(found[0].reason.contains("a.rules"), "{:?}", found[0].reason);
    }

    #[test]
    fn fingerprint_follows_rules_not_layout() {
        let a = rules(&[("a.rules", "site a.com\npreset news\nkeep main")]);
        let spaced = rules(&[(
            "z.rules",
            "# note\n\n  site   a.com\npreset   news\n\nkeep main  ",
        )]);
        let other = rules(&[("a.rules", "site a.com\npreset news\nkeep article")]);
        assert_eq!(a.fingerprint(), spaced.fingerprint());
        assert_ne!(a.fingerprint(), other.fingerprint());
        assert_ne!(a.fingerprint(), SiteRules::default().fingerprint());
    }

    #[test]
    fn parse_dir_reads_rules_files_and_reports_all_errors() {
        let dir = tempfile::tempdir().expect("a temporary directory can be created");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("the directory is writable")
        };
        write("good.rules", "site good.example\noff ads");
        write("notes.txt", "not a rules file");
        let set = SiteRules::parse_dir(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rules().len(), 1);
        assert!(set.for_host("www.good.example").is_some());

        write("bad1.rules", "site b.example\npreset x");
        write("bad2.rules", "keep main");
        let found = errors(SiteRules::parse_dir(dir.path()));
        let names: Vec<_> = found
            .iter()
            .map(|e| {
                (
                    e.origin.rsplit('/').next().unwrap_or_default().to_string(),
                    e.line,
                )
            })
            .collect();
        assert_eq!(
            names,
            [("bad1.rules".to_string(), 2), ("bad2.rules".to_string(), 1)]
        );

        let missing = dir.path().join("missing");
        match SiteRules::parse_dir(&missing) {
            Err(SiteError::Io { path, .. }) => assert_eq!(path, missing),
            other => panic!("expected an Io error, got {other:?}"),
        }
    }

    #[test]
    fn builtin_files_parse_and_apply() {
        for &(name, text) in BUILTIN {
            if let Err(e) = SiteRules::parse_str(text, name) {
                panic!("{e}");
            }
        }
        SiteRules::from_files(BUILTIN.iter().copied()).unwrap_or_else(|e| panic!("{e}"));
        let set = SiteRules::builtin();
        assert_eq!(set.rules().len(), BUILTIN.len());
        let origin = |host: &str| set.for_host(host).map(|r| r.origin.as_str());
        assert_eq!(origin("en.wikipedia.org"), Some("wikipedia.rules"));
        assert_eq!(origin("en.m.wikipedia.org"), Some("wikipedia.rules"));
        assert_eq!(origin("news.ycombinator.com"), Some("hacker-news.rules"));
        assert_eq!(origin("ycombinator.com"), None);
        assert_eq!(origin("docs.rs"), Some("rustdoc.rules"));
        assert_eq!(origin("www.example.com"), None);
        assert_eq!(set.fingerprint(), SiteRules::builtin().fingerprint());
    }

    #[test]
    fn builtin_list_names_every_shipped_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("filters/sites");
        let on_disk = SiteRules::parse_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(on_disk.fingerprint(), SiteRules::builtin().fingerprint());
    }

    #[test]
    fn keep_selectors_match_on_a_page() {
        let rule = parse("site a.com\nkeep article, .post-body");
        let tree = crate::dom::Tree::parse(
            "<div class=post-body>x</div><article>y</article><p class=post>z</p>",
        );
        let kept: Vec<_> = rule
            .keep
            .iter()
            .flat_map(|s| crate::dom::select::select_all(&tree, tree.root(), s))
            .filter_map(|id| tree.tag(id))
            .collect();
        assert_eq!(kept, ["div", "article"]);
    }
}
