//! The code map's rules, read from the source: the `use` lines of every file under `src/`
//! (a file's `#[cfg(test)] mod tests` left out) checked against what ARCHITECTURE.md says each
//! folder must never import, and the import circles inside `src/net/` against the ones
//! ARCHITECTURE.md justifies. A module's imports of its own ancestors (`super::`) do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("src/ is readable").map(|e| e.expect("a directory entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/` (`net/accept/conn.rs` is `net::accept::conn`).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts.join("::")
}

/// The `use` declarations of a file's own code (its unit tests left out), one string each,
/// joined onto one line.
fn use_lines(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut uses = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim();
        if let Some(acc) = current.as_mut() {
            acc.push_str(trimmed);
        } else if trimmed.starts_with("use ") || trimmed.starts_with("pub use ") || trimmed.starts_with("pub(crate) use ") || trimmed.starts_with("pub(super) use ") {
            current = Some(trimmed.to_string());
        }
        if current.as_ref().is_some_and(|acc| acc.ends_with(';')) {
            uses.extend(current.take());
        }
    }
    uses
}

/// The paths a `use` declaration names, braces expanded (`a::{b, c::d}` is `a::b`, `a::c::d`).
fn expand(decl: &str) -> Vec<String> {
    let body = decl.trim_end_matches(';');
    let body = body.split_once("use ").map_or(body, |(_, b)| b);
    let mut out = Vec::new();
    expand_into("", body.trim(), &mut out);
    out
}

fn expand_into(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let prefix = join(prefix, head);
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_into(&prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_into(&prefix, &inner[start..], out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(join(prefix, path));
    }
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (_, true) => prefix.to_string(),
        _ => format!("{prefix}::{path}"),
    }
}

/// The source: module path to (file, the paths its `use` lines name, made absolute from the
/// crate root: `crate::`, `super::` and `self::` resolved; other crates' as written).
fn source() -> BTreeMap<String, (PathBuf, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&root).expect("under src/").to_path_buf();
        let module = module_of(&rel);
        let text = std::fs::read_to_string(&file).expect("a source file is readable");
        let mut paths = Vec::new();
        for decl in use_lines(&text) {
            for path in expand(&decl) {
                paths.push(absolute(&module, &path));
            }
        }
        modules.insert(module, (rel, paths));
    }
    modules
}

/// `path` as named from `module`, from the crate root when it is the crate's own.
fn absolute(module: &str, path: &str) -> String {
    let mut base: Vec<&str> = if module.is_empty() { Vec::new() } else { module.split("::").collect() };
    let mut rest: Vec<&str> = path.split("::").collect();
    match rest.first().copied() {
        Some("crate") => return format!("crate::{}", rest[1..].join("::")),
        Some("self") => {
            rest.remove(0);
        }
        Some("super") => {
            while rest.first() == Some(&"super") {
                rest.remove(0);
                base.pop();
            }
        }
        _ => return path.to_string(),
    }
    base.extend(rest);
    format!("crate::{}", base.join("::"))
}

/// The longest module of `modules` that `path` (from the crate root) names or is inside.
fn target<'a>(modules: &'a BTreeMap<String, (PathBuf, Vec<String>)>, path: &str) -> Option<&'a str> {
    let path = path.strip_prefix("crate::")?;
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().map(|n| parts[..n].join("::")).find_map(|m| modules.get_key_value(&m).map(|(k, _)| k.as_str()))
}

/// The import graph among the modules under `under` (module path prefix): an edge for each
/// `use` of another module there, ancestors left out.
fn graph(under: &str) -> BTreeMap<String, BTreeSet<String>> {
    let modules = source();
    let inside = |m: &str| m == under || m.starts_with(&format!("{under}::"));
    let mut edges = BTreeMap::new();
    for (module, (_, paths)) in modules.iter().filter(|(m, _)| inside(m)) {
        let to: BTreeSet<String> = paths
            .iter()
            .filter_map(|p| target(&modules, p))
            .filter(|t| inside(t) && *t != module && !module.starts_with(&format!("{t}::")))
            .map(str::to_string)
            .collect();
        edges.insert(module.clone(), to);
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    component.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

/// The circles ARCHITECTURE.md justifies: its lines `- circle: a <-> b: why`.
fn justified() -> Vec<BTreeSet<String>> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).expect("ARCHITECTURE.md at the root");
    doc.lines()
        .filter_map(|l| l.trim().strip_prefix("- circle: `"))
        .map(|l| l.split('`').next().unwrap_or("").split(" <-> ").map(|m| m.trim().to_string()).collect())
        .collect()
}

#[test]
fn no_import_circle_in_net_but_those_architecture_md_justifies() {
    let found = circles(&graph("net"));
    let allowed = justified();
    let unjustified: Vec<_> = found.iter().filter(|c| !allowed.contains(c)).collect();
    assert!(unjustified.is_empty(), "import circles in src/net/ that ARCHITECTURE.md does not justify: {unjustified:?}");
    let stale: Vec<_> = allowed.iter().filter(|c| !found.contains(c)).collect();
    assert!(stale.is_empty(), "ARCHITECTURE.md justifies circles that are gone; remove their lines: {stale:?}");
}

/// The reader of `use` lines sees braces, `self`, `super` and renames.
#[test]
fn use_lines_are_read_whole() {
    let text = "use a::b;\nuse super::{c, d::{e, f as g}};\npub use self::h;\n#[cfg(test)]\nmod tests {\n    use crate::z;\n}\n";
    let paths: Vec<String> = use_lines(text).iter().flat_map(|d| expand(d)).map(|p| absolute("net::x::y", &p)).collect();
    assert_eq!(paths, ["a::b", "crate::net::x::c", "crate::net::x::d::e", "crate::net::x::d::f", "crate::net::x::y::h"]);
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["a"]), ("c", &["a"])].iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect();
    assert_eq!(circles(&graph), vec![["a", "b"].iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()]);
}

/// What each folder must never import (ARCHITECTURE.md, "Code map"): a module under `folder`
/// names none of `never` in its `use` lines.
fn never_imports(folder: &str, never: &[&str]) {
    let bad: Vec<String> = source()
        .into_iter()
        .filter(|(_, (file, _))| file.starts_with(folder) || file == Path::new(&format!("{folder}.rs")))
        .flat_map(|(_, (file, paths))| paths.into_iter().map(move |p| (file.clone(), p)))
        .filter(|(_, p)| never.iter().any(|n| p == n || p.starts_with(&format!("{n}::"))))
        .map(|(file, p)| format!("{}: {p}", file.display()))
        .collect();
    assert!(bad.is_empty(), "src/{folder}/ must not import {never:?}: {bad:#?}");
}

/// HTTP, async I/O and the proxy's own network, cache and state.
const IO_AND_HTTP: &[&str] = &["http", "hyper", "hyper_util", "http_body", "http_body_util", "tokio", "tokio_rustls", "reqwest", "crate::net", "crate::cache", "crate::state"];

#[test]
fn extract_knows_nothing_of_http_io_or_lol_html() {
    never_imports("extract", &[IO_AND_HTTP, &["lol_html", "rustls", "crate::config", "crate::tls", "crate::pipeline"]].concat());
}

#[test]
fn body_knows_nothing_of_http() {
    never_imports("body", &[IO_AND_HTTP, &["crate::config", "crate::html", "crate::dom", "crate::extract", "crate::pipeline"]].concat());
}

#[test]
fn html_and_dom_know_nothing_of_tokio_or_the_network() {
    never_imports("html", &[IO_AND_HTTP, &["crate::config", "crate::pipeline"]].concat());
    never_imports("dom", &[IO_AND_HTTP, &["lol_html", "crate::config", "crate::extract", "crate::pipeline"]].concat());
}

#[test]
fn profile_config_and_cache_do_not_import_the_pipeline_or_net() {
    never_imports("profile.rs", &["crate::pipeline", "crate::net", "crate::config", "crate::cache"]);
    never_imports("config", &["crate::pipeline", "crate::net", "crate::cache"]);
    never_imports("cache", &["crate::pipeline", "crate::net"]);
}

#[test]
fn nothing_below_net_imports_net() {
    for folder in ["addr.rs", "ads.rs", "body", "cache", "config", "dom", "extract", "host.rs", "html", "icap", "images", "pipeline.rs", "profile.rs", "render", "state.rs", "tls"] {
        never_imports(folder, &["crate::net"]);
    }
}

#[test]
fn the_observer_and_choices_know_no_page() {
    never_imports("net/observe.rs", &["crate::net::own", "crate::net::exchange", "crate::net::accept"]);
    never_imports("net/choices.rs", &["crate::net::own", "crate::net::exchange", "crate::net::accept"]);
    never_imports("net/exchange/bodies.rs", &["crate::net::own", "crate::net::choices"]);
}
