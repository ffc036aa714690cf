//! The `pith` binary as an operator runs it: `check-config`, and `serve` in a child process
//! whose log (standard error) the test reads line by line.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};

use super::raw::GUARD;

/// Runs the `pith` binary with `args` to completion, logging at its config's level.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pith")).args(args).env_remove("RUST_LOG").output().expect("run the pith binary")
}

/// `pith check-config FILE` and `pith serve --config FILE EXTRA...`, both expected to refuse
/// the file: returns their exit codes and standard error. A `serve` that starts instead is
/// killed after [`GUARD`] and reported as exit code `None`, so the test fails, not hangs.
pub fn refused(config: &Path, extra: &[&str]) -> [(Option<i32>, String); 2] {
    let file = config.to_str().expect("a UTF-8 path");
    let check = run(&["check-config", file]);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(["serve", "--config", file])
        .args(extra)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the pith binary");
    let deadline = std::time::Instant::now() + GUARD;
    // A child process has no awaitable exit here; polling it is the only way to bound the wait.
    while serve.try_wait().expect("the child's status").is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = serve.kill();
    let served = serve.wait_with_output().expect("the child's output");
    [
        (check.status.code(), String::from_utf8_lossy(&check.stderr).into_owned()),
        (served.status.code(), String::from_utf8_lossy(&served.stderr).into_owned()),
    ]
}

/// A running `pith serve`; killed when dropped.
pub struct Served {
    child: Child,
    lines: Receiver<String>,
    /// Every line read so far.
    pub log: Vec<String>,
    /// The addresses it said it listens on.
    pub addrs: Vec<SocketAddr>,
}

impl Served {
    /// Starts `pith serve --config FILE EXTRA...` and waits until it says where it listens.
    pub fn start(config: &Path, extra: &[&str]) -> Served {
        Served::command(&["serve".as_ref(), "--config".as_ref(), config.as_os_str()], extra)
    }

    /// Starts `pith ARGS... EXTRA...` (a command line that serves) and waits until it says
    /// where it listens.
    pub fn command(args: &[&std::ffi::OsStr], extra: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pith"))
            .args(args)
            .args(extra)
            .env_remove("RUST_LOG")
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the pith binary");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut served = Served { child, lines, log: Vec::new(), addrs: Vec::new() };
        served.wait_for("proxy on http://");
        served.addrs = served
            .log
            .iter()
            .filter_map(|l| l.split("proxy on http://").nth(1))
            .filter_map(|rest| rest.split('/').next()?.parse().ok())
            .collect();
        served
    }

    /// Reads log lines until one contains `needle`; returns it. Panics after [`GUARD`].
    pub fn wait_for(&mut self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + GUARD;
        loop {
            if let Some(line) = self.log.iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.log.push(line),
                Err(_) => panic!("no log line with {needle:?} in time; the log:\n{}", self.log.join("\n")),
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
