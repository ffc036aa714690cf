//! Config files as the binary sees them: `pith check-config` and `pith serve` refuse the same
//! files with the same file:line:key error and exit 64, so a file that passes the check is one
//! the server runs with. The open-proxy rule is judged on the address that will be bound,
//! `--listen` included. And docs/config.md documents exactly the keys the
//! parser accepts, as the raw config structs themselves report them.

use std::path::PathBuf;

use crate::common::binary::{refused, Served};

/// `text` written to a `proxy.toml` in a fresh folder.
fn config_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("proxy.toml");
    std::fs::write(&path, text).expect("write the config");
    (dir, path)
}

/// Both commands refuse the file with exit 64 and an error holding every one of `needles`.
fn assert_refused(text: &str, extra: &[&str], needles: &[&str]) {
    let (_dir, path) = config_file(text);
    for (i, (code, stderr)) in refused(&path, extra).into_iter().enumerate() {
        let command = ["check-config", "serve"][i];
        if command == "check-config" && !extra.is_empty() {
            continue;
        }
        assert_eq!(code, Some(64), "{command} exits 64 for:\n{text}\n{stderr}");
        for needle in needles {
            assert!(stderr.contains(needle), "{command}: {needle:?} missing from:\n{stderr}");
        }
        assert!(stderr.contains(&format!("{}:", path.display())), "{command} names the file:\n{stderr}");
    }
}

/// A free port on every address, for a `--listen` the test expects to be refused before binding.
fn some_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn listen_on_all_addresses_is_judged_after_the_override() {
    let text = "[[listener]]\naddress = \"127.0.0.1:0\"\nallow = [\"0.0.0.0/0\", \"::/0\"]\n";
    let (_dir, path) = config_file(text);
    let check = crate::common::binary::run(&["check-config", path.to_str().unwrap()]);
    assert!(check.status.success(), "on loopback, allowing everyone is harmless: {}", String::from_utf8_lossy(&check.stderr));
    let listen = format!("0.0.0.0:{}", some_port());
    assert_refused(text, &["--listen", &listen], &["proxy.toml:3:", "listener.allow", "(from --listen)", "open proxy"]);
}

#[test]
fn an_allow_list_covering_everyone_in_pieces_is_an_open_proxy() {
    assert_refused("[[listener]]\naddress = \"0.0.0.0:0\"\nallow = [\"0.0.0.0/1\", \"128.0.0.0/1\"]\n", &[], &["proxy.toml:3:", "listener.allow", "open proxy"]);
    assert_refused("[[listener]]\naddress = \"[::]:0\"\nallow = [\"::/1\", \"8000::/1\"]\n", &[], &["proxy.toml:3:", "open proxy"]);
}

#[test]
fn an_empty_password_is_refused() {
    assert_refused(
        "[[listener]]\naddress = \"0.0.0.0:0\"\nallow = [\"0.0.0.0/0\"]\nauth = { user = \"u\", password = \"\" }\n",
        &[],
        &["proxy.toml:4:", "listener.auth.password"],
    );
    assert_refused("[[listener]]\naddress = \"127.0.0.1:0\"\nauth = { user = \"\", password = \"\" }\n", &[], &["proxy.toml:3:", "listener.auth.user"]);
}

#[test]
fn a_file_without_a_listener_serves_on_the_documented_address_or_listen() {
    let (_dir, path) = config_file("[log]\nlevel = \"info\"\n");
    let check = crate::common::binary::run(&["check-config", path.to_str().unwrap()]);
    assert!(check.status.success(), "every key is optional: {}", String::from_utf8_lossy(&check.stderr));
    assert!(String::from_utf8_lossy(&check.stdout).contains("1 listener"), "{}", String::from_utf8_lossy(&check.stdout));
    let served = Served::start(&path, &["--listen", "127.0.0.1:0"]);
    assert_eq!(served.addrs.len(), 1);
    assert!(served.addrs[0].ip().is_loopback() && served.addrs[0].port() != 0, "{:?}", served.addrs);
}

/// Plain `pith` is `pith serve`, options included: `pith --listen ADDR` serves there.
#[test]
fn pith_without_a_command_takes_serves_options() {
    let (_dir, path) = config_file("[log]\nlevel = \"info\"\n");
    let served = Served::command(&["--config".as_ref(), path.as_os_str(), "--listen".as_ref(), "127.0.0.1:0".as_ref()], &[]);
    assert_eq!(served.addrs.len(), 1);
    assert!(served.addrs[0].ip().is_loopback() && served.addrs[0].port() != 0, "{:?}", served.addrs);
    let help = crate::common::binary::run(&["--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--listen") && help.contains("pith --listen ADDR"), "{help}");
    let both = crate::common::binary::run(&["--listen", "127.0.0.1:0", "check-config", "x.toml"]);
    assert_eq!(both.status.code(), Some(2), "serve's options before another command are a usage error");
}

/// A cause is printed once: "cannot listen on …: Address already in use (os error 98)", not
/// the cause again after it.
#[test]
fn a_bind_failure_names_its_cause_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (_dir, path) = config_file(&format!("[[listener]]\naddress = \"{}\"\n", taken.local_addr().unwrap()));
    let out = crate::common::binary::run(&["serve", "--config", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    assert_eq!(stderr.matches("already in use").count(), 1, "the cause once:\n{stderr}");
}

/// `[listener]` where `[[listener]]` is meant: the error names the header's line and says to
/// write two brackets, from both commands.
#[test]
fn a_single_bracket_listener_is_refused_with_a_hint() {
    assert_refused("[log]\nlevel = \"info\"\n[listener]\naddress = \"127.0.0.1:0\"\n", &[], &["proxy.toml:3:1:", "key `listener`", "write `[[listener]]`"]);
}

/// Values `check-config` passed while `serve` could not run with them (a panic with exit 101,
/// every request timing out, a second bind failing, a rule folder silently ignored): both now
/// refuse them, naming file, line and key.
#[test]
fn values_the_server_cannot_run_with_are_refused_by_both_commands() {
    let l = "[[listener]]\naddress = \"127.0.0.1:0\"\n";
    let cases = [
        (format!("[limits]\nmax_connections = 18446744073709551615\n{l}"), "proxy.toml:2:", "limits.max_connections"),
        (format!("[limits]\nheader_read_timeout_ms = 0\n{l}"), "proxy.toml:2:", "limits.header_read_timeout_ms"),
        (format!("[upstream]\nconnect_timeout_ms = 0\n{l}"), "proxy.toml:2:", "upstream.connect_timeout_ms"),
        (format!("[upstream]\nresponse_timeout_ms = 0\n{l}"), "proxy.toml:2:", "upstream.response_timeout_ms"),
        (format!("[upstream]\nbody_idle_timeout_ms = 0\n{l}"), "proxy.toml:2:", "upstream.body_idle_timeout_ms"),
        ("[[listener]]\naddress = \"127.0.0.1:18080\"\n[[listener]]\naddress = \"127.0.0.1:18080\"\n".to_string(), "proxy.toml:4:", "listener.address"),
        (format!("[filters]\ndir = \"nope\"\n{l}"), "proxy.toml:2:", "filters.dir"),
    ];
    for (text, line, key) in &cases {
        assert_refused(text, &[], &[line, key]);
    }
}

/// How a table of keys is reached in `proxy.toml`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    /// `[key]`.
    Table,
    /// `[[key]]`.
    Array,
    /// `[key.NAME]`: one of a table of tables named by the user (`[profiles.NAME]`).
    Map,
}

/// The dotted names of the table at `path`, `NAME` standing for a user-chosen one.
fn names(path: &[(String, Shape)]) -> Vec<&str> {
    let mut names = Vec::new();
    for (key, shape) in path {
        names.push(key.as_str());
        if *shape == Shape::Map {
            names.push("NAME");
        }
    }
    names
}

/// The keys the table at `path` accepts, as serde's derive knows them: a
/// `deny_unknown_fields` struct refuses an unknown key with "unknown field `zz_not_a_key`,
/// expected one of `a`, `b`". `None` when what is at `path` is not a struct of keys.
fn keys_at(path: &[(String, Shape)]) -> Option<Vec<String>> {
    let mut text = String::new();
    for (i, (_, shape)) in path.iter().enumerate() {
        let header = names(&path[..=i]).join(".");
        match shape {
            // Tables inside an array's element need the element opened first.
            Shape::Array => text.push_str(&format!("[[{header}]]\n")),
            Shape::Table | Shape::Map if i + 1 == path.len() => text.push_str(&format!("[{header}]\n")),
            Shape::Table | Shape::Map => {}
        }
    }
    text.push_str("zz_not_a_key = 0\n");
    let err = toml::from_str::<pith::config::RawConfig>(&text).expect_err("an unknown key is refused");
    let expected = err.message().strip_prefix("unknown field `zz_not_a_key`, ")?.to_string();
    Some(expected.split('`').skip(1).step_by(2).map(str::to_string).collect())
}

/// Every key of `proxy.toml`, dotted, `NAME` for a user-named table (`listener.address`,
/// `listener.auth.user`, `profiles.NAME.rules`), found by asking the raw config structs
/// ([`keys_at`]) table by table: a key added to the code is found without a list to update.
fn config_keys() -> Vec<String> {
    fn walk(path: &mut Vec<(String, Shape)>, out: &mut Vec<String>) {
        for key in keys_at(path).expect("a table of keys") {
            let mut dotted = names(path);
            dotted.push(&key);
            out.push(dotted.join("."));
            let inner = [Shape::Table, Shape::Array, Shape::Map].into_iter().find(|&shape| {
                path.push((key.clone(), shape));
                let is_table = keys_at(path).is_some();
                path.pop();
                is_table
            });
            if let Some(shape) = inner {
                path.push((key, shape));
                walk(path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(&mut Vec::new(), &mut out);
    out
}

/// The configuration reference's table (`docs/config.md`): each row's documented keys (every
/// backquoted name in the first cell, as in "`intercept.never` / `intercept.always`"), its
/// default cell and the row's text.
fn reference_rows() -> Vec<(Vec<String>, String, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/config.md");
    let reference = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rows: Vec<(Vec<String>, String, String)> = reference
        .lines()
        .skip_while(|line| line.trim() != "| key | default | meaning |")
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let mut cells = line.split(" | ");
            let first = cells.next().unwrap_or("");
            let keys = first.split('`').skip(1).step_by(2).map(str::to_string).collect();
            (keys, cells.next().unwrap_or("").to_string(), line.to_string())
        })
        .collect();
    assert!(rows.len() > 10, "docs/config.md's table (| key | default | meaning |) has {} rows", rows.len());
    rows
}

/// docs/config.md documents every key the config parser accepts, and no other. A table
/// documented in one row (`listener.auth`) names its own keys in that row (`user = `).
#[test]
fn the_config_reference_documents_every_key_and_no_other() {
    let keys = config_keys();
    assert!(keys.iter().any(|k| k == "profiles.NAME.rules"), "keys found: {keys:?}");
    let rows = reference_rows();
    let documented: Vec<&String> = rows.iter().flat_map(|(keys, _, _)| keys).collect();
    let mut missing = Vec::new();
    for key in &keys {
        if documented.contains(&key) {
            continue;
        }
        let parent_row = rows.iter().find(|(names, _, _)| {
            names.iter().any(|name| key.strip_prefix(name.as_str()).is_some_and(|rest| rest.starts_with('.')))
        });
        let leaf = key.rsplit('.').next().unwrap_or(key);
        let in_parent_row = parent_row.is_some_and(|(_, _, row)| row.contains(&format!("{leaf} = ")));
        // A table's own key is documented by its keys' rows (`[log]` by `log.level`).
        let is_table = documented.iter().any(|d| d.strip_prefix(key.as_str()).is_some_and(|rest| rest.starts_with('.')));
        if !in_parent_row && !is_table {
            missing.push(key.clone());
        }
    }
    let unknown: Vec<&String> = documented.into_iter().filter(|d| !keys.contains(d)).collect();
    assert!(missing.is_empty() && unknown.is_empty(), "docs/config.md's table: undocumented keys {missing:?}, rows for keys that do not exist {unknown:?}");
}

/// `Debug` of the raw config with every span written as `_`: two readings compare equal when
/// their values are, wherever in the file those were written.
fn raw_values(text: &str) -> String {
    let raw: pith::config::RawConfig = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let debug = format!("{raw:?}");
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug.as_str();
    while let Some(at) = rest.find("span: ") {
        out.push_str(&rest[..at + 6]);
        rest = rest[at + 6..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        out.push('_');
    }
    out.push_str(rest);
    out
}

/// Every default docs/config.md gives as a value (a backquoted TOML value in the default cell,
/// for a key of a plain table such as `[limits]`) is the parser's: writing the documented
/// default into a file reads the same as leaving the key out. Keys of `[[listener]]`,
/// `[[icap]]` and `[profiles.NAME]`, whose defaults depend on the table, and defaults written
/// in words ("none", "the preset's") are not compared; `log.level`, `limits.*`, `upstream.*`,
/// `cache.*`, `intercept.*` and `filters.*` are.
#[test]
fn the_config_reference_gives_the_parsers_defaults() {
    let empty = raw_values("");
    let (mut checked, mut wrong) = (Vec::new(), Vec::new());
    for (keys, default, _) in reference_rows() {
        let defaults: Vec<&str> = default.split('`').skip(1).step_by(2).collect();
        for (i, key) in keys.iter().enumerate() {
            let Some((table, leaf)) = key.split_once('.') else { continue };
            // `[control]`'s keys are options whose unset meaning the validator gives.
            if leaf.contains('.') || ["listener", "icap", "profiles", "control", "state"].contains(&table) {
                continue;
            }
            // "`limits.client_rate` / `limits.client_burst`" pairs its defaults in order.
            let Some(value) = defaults.get(if keys.len() == defaults.len() { i } else { 0 }) else { continue };
            let text = format!("[{table}]\n{leaf} = {value}\n");
            if toml::from_str::<pith::config::RawConfig>(&text).is_err() {
                continue;
            }
            checked.push(key.clone());
            if raw_values(&text) != empty {
                wrong.push(format!("{key}: documented {value}"));
            }
        }
    }
    assert!(checked.len() >= 35, "only {} defaults compared: {checked:?}", checked.len());
    for key in ["limits.rewrite_memory_wait_ms", "log.level", "upstream.connect_ports", "cache.max_bytes"] {
        assert!(checked.iter().any(|c| c == key), "{key} not compared: {checked:?}");
    }
    assert!(wrong.is_empty(), "docs/config.md gives defaults the parser does not have: {wrong:#?}");
}

/// Every ```toml block of README.md (its quick starts: one machine, a LAN gateway,
/// interception, the URL gateway, behind Squid) and the packaged /etc/pith/proxy.toml pass
/// `pith check-config`, each as a file of its own in a folder of its own.
#[test]
fn the_readme_quick_starts_and_the_packaged_config_pass_check_config() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut blocks = Vec::new();
    let mut lines = readme.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.trim() == "```toml" {
            let block: Vec<&str> = lines.by_ref().map(|(_, l)| l).take_while(|l| l.trim() != "```").collect();
            blocks.push((format!("README.md:{}", n + 1), block.join("\n") + "\n"));
        }
    }
    assert!(blocks.len() >= 5, "README.md has {} toml blocks; the quick starts are five", blocks.len());
    for (needle, what) in [("[intercept]\nenabled = true", "interception"), ("[[icap]]", "Squid"), ("gateway_profiles", "the URL gateway"), ("0.0.0.0:8080", "a LAN gateway")] {
        assert!(blocks.iter().any(|(_, b)| b.contains(needle)), "no quick start for {what}");
    }
    let packaged = std::fs::read_to_string(root.join("packaging/proxy.toml")).expect("packaging/proxy.toml");
    blocks.push(("packaging/proxy.toml".to_string(), packaged));
    for (origin, text) in &blocks {
        let (_dir, path) = config_file(text);
        let out = crate::common::binary::run(&["check-config", path.to_str().unwrap()]);
        assert!(out.status.success(), "{origin}: check-config refused it:\n{}\n{text}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The package's man page and completions come from the command-line definitions: every
/// command is in each of them.
#[test]
fn completions_and_the_man_page_name_every_command() {
    for args in [&["man"][..], &["completions", "bash"], &["completions", "zsh"], &["completions", "fish"]] {
        let out = crate::common::binary::run(args);
        assert!(out.status.success(), "pith {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        // roff writes a hyphen as `\-`.
        let text = text.replace("\\-", "-");
        for command in ["serve", "extract", "check-config", "completions"] {
            assert!(text.contains(command), "pith {args:?} lacks {command}:\n{text}");
        }
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let man = crate::common::binary::run(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(man.status.success(), "{}", String::from_utf8_lossy(&man.stderr));
    let mut pages: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    pages.sort();
    for page in ["pith.1", "pith-serve.1", "pith-check-config.1", "pith-ca-init.1", "pith-completions.1"] {
        assert!(pages.iter().any(|p| p == page), "{page} missing from {pages:?}");
    }
    let bad = crate::common::binary::run(&["completions", "cmd.exe"]);
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is a usage error");
}
