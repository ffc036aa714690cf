//! Log lines written while a test runs, for tests that check what pith logs (the access log,
//! refusals). `#[tokio::test]` runs every task of the test on its own thread, so a subscriber
//! set as that thread's default sees the proxy's lines and no other test's.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// The lines logged on this thread since [`Logs::capture`], until dropped.
pub struct Logs {
    lines: Arc<Mutex<Vec<u8>>>,
    _default: tracing::subscriber::DefaultGuard,
}

#[derive(Clone)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures lines that `filter` (an `EnvFilter` directive such as `pith=info`) lets through.
    pub fn capture(filter: &str) -> Logs {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(lines.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        Logs { lines, _default: tracing::subscriber::set_default(subscriber) }
    }

    /// Every line so far that contains all of `parts`.
    pub fn matching(&self, parts: &[&str]) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.lines.lock().expect("not poisoned")).into_owned();
        text.lines().filter(|l| parts.iter().all(|p| l.contains(p))).map(str::to_string).collect()
    }

    /// Waits (yielding, within the raw guard time) until a line contains all of `parts`.
    pub async fn wait_for(&self, parts: &[&str]) -> String {
        let found = tokio::time::timeout(super::raw::GUARD, async {
            loop {
                if let Some(line) = self.matching(parts).pop() {
                    return line;
                }
                tokio::task::yield_now().await;
            }
        })
        .await;
        let all = String::from_utf8_lossy(&self.lines.lock().expect("not poisoned")).into_owned();
        found.unwrap_or_else(|_| panic!("no log line with {parts:?}; logged:\n{all}"))
    }
}
