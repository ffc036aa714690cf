//! Config files as the binary sees them: `pith check-config` and `pith serve` refuse the same
//! files with the same file:line:key error and exit 64, so a file that passes the check is one
//! the server runs with. The open-proxy rule is judged on the address that will be bound,
//! `--listen` included.

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
