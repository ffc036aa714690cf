//! The `pith` command: parses arguments, loads the config, starts logging, and hands over to
//! the library. Exit codes: 0 success, 1 a failure at run time (or some files failed to
//! extract), 64 a usage or config error (as sysexits' EX_USAGE).
//!
//! `pith serve` reloads its config file on SIGHUP ([`pith::net::ProxyHandle::reload`]); a file
//! that does not validate is logged and the running config stays in force.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use pith::config::Config;
use pith::pipeline::{self, Output};

const EX_USAGE: u8 = 64;

/// jemalloc, because it gives memory back once a burst is over: after 1,000 clients at once,
/// the system allocator kept 1 GB, mimalloc 360-470 MB, jemalloc with these options 46-52 MB
/// (README, "Memory"). The binary only: the library leaves the choice to its user.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`malloc_conf`, under the prefix this build of it
/// uses): a background thread returns pages unused for a second (`dirty_decay_ms`) straight
/// to the system (`muzzy_decay_ms:0`), so memory goes back while the proxy is idle too, not
/// only when it next allocates.
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &[u8; 60] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// pith: a forward HTTP(S) proxy that serves the pith of every page.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the proxy (the default when no command is given).
    Serve(ServeArgs),
    /// Run the page pipeline offline over files, as the proxy would.
    Extract(ExtractArgs),
    /// The local certificate authority for HTTPS interception.
    Ca(CaArgs),
    /// Validate a config file; errors name the file, line and key.
    CheckConfig {
        /// The file to check.
        file: PathBuf,
    },
}

#[derive(clap::Args, Default)]
struct ServeArgs {
    /// Config file; without it, the built-in default (the same as proxy.toml).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Listen on this address instead of the first listener's (e.g. 127.0.0.1:3128).
    #[arg(long, short)]
    listen: Option<std::net::SocketAddr>,
}

#[derive(clap::Args)]
struct ExtractArgs {
    /// Config file whose profiles and rules to use; without it, the built-in default.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Profile to apply.
    #[arg(long, short, default_value = "declutter")]
    profile: String,
    /// Output form; defaults to the profile's own.
    #[arg(long, short)]
    format: Option<Format>,
    /// Reading-mode extractor (pith, crunch, distribution, link-ratio, block-analysis,
    /// density, cetr, cetr-km, ccb, info-optics, site-redundancy); turns reading mode on for
    /// the profile. Default: the profile's (pith for `reader`).
    #[arg(long, short)]
    algorithm: Option<String>,
    /// Write each input NAME.html to DIR/NAME.txt (or .html) instead of standard output.
    #[arg(long, short)]
    out_dir: Option<PathBuf>,
    /// The page's address (absolute URL): links are resolved against it and site rules are
    /// chosen by its host, as the proxy does with the request URL.
    #[arg(long)]
    url: Option<String>,
    /// Input files; `-` (or none) reads standard input.
    files: Vec<PathBuf>,
}

#[derive(clap::Args)]
struct CaArgs {
    #[command(subcommand)]
    action: CaAction,
    /// Config file whose `intercept.ca_dir` names the CA folder; without it, the built-in
    /// default (`certs/` in the working directory).
    #[arg(long, short, global = true)]
    config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum CaAction {
    /// Create the CA unless it exists; say where its certificate is and how to trust it.
    Init,
    /// Print the path of the CA certificate (exit 1 when it does not exist yet).
    Path,
    /// Print the CA certificate (PEM) to standard output. Never the key.
    Export,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Html,
    Text,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Serve(ServeArgs::default())) {
        Command::Serve(args) => serve(args),
        Command::Extract(args) => extract(args),
        Command::Ca(args) => ca(args),
        Command::CheckConfig { file } => check_config(&file),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pith: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn load_config(path: Option<&Path>) -> Result<Config, pith::config::ConfigError> {
    match path {
        Some(p) => Config::load(p),
        None => Config::embedded_default(),
    }
}

/// Prints a config error with its whole cause chain, and returns EX_USAGE.
fn config_failure(err: &pith::config::ConfigError) -> ExitCode {
    let mut msg = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        msg.push_str(&format!("\n  {s}"));
        source = s.source();
    }
    eprintln!("pith: invalid config: {msg}");
    ExitCode::from(EX_USAGE)
}

fn check_config(file: &Path) -> anyhow::Result<ExitCode> {
    match Config::load(file) {
        Ok(c) => {
            println!("{}: ok ({} listener(s), profiles: {})", file.display(), c.listeners.len(), c.profiles.keys().cloned().collect::<Vec<_>>().join(", "));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(config_failure(&e)),
    }
}

fn ca(args: CaArgs) -> anyhow::Result<ExitCode> {
    let config = match load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return Ok(config_failure(&e)),
    };
    let dir = &config.intercept.ca_dir;
    match args.action {
        CaAction::Init => {
            let (ca, created) = pith::tls::Authority::load_or_create(dir)?;
            println!("{} {}", if created { "created" } else { "exists:" }, ca.cert_path().display());
            eprintln!("{}", pith::tls::trust_hint(ca.cert_path()));
        }
        CaAction::Path => {
            let path = pith::tls::Authority::cert_path_in(dir);
            println!("{}", path.display());
            if !path.exists() {
                eprintln!("pith: no CA yet; `pith ca init` creates it");
                return Ok(ExitCode::FAILURE);
            }
        }
        CaAction::Export => {
            let ca = pith::tls::Authority::load(dir)?;
            std::io::stdout().write_all(ca.cert_pem().as_bytes()).context("cannot write to standard output")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The log filter the binary can change while it runs (on a reload's new `log.level`);
/// `None` when `RUST_LOG` chose the filter, which then stays.
type LogHandle = Option<tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, tracing_subscriber::Registry>>;

fn level_filter(level: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::new(format!("{level},hyper=warn,rustls=warn"))
}

fn init_logging(level: &str) -> LogHandle {
    use tracing_subscriber::prelude::*;
    let from_env = tracing_subscriber::EnvFilter::try_from_default_env().ok();
    let fixed = from_env.is_some();
    let (filter, handle) = tracing_subscriber::reload::Layer::new(from_env.unwrap_or_else(|| level_filter(level)));
    let output = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal()).with_target(false);
    tracing_subscriber::registry().with(filter).with(output).init();
    (!fixed).then_some(handle)
}

/// Where the running config came from, so SIGHUP can read it again the same way.
struct Source {
    /// `--config`; `None` for the built-in default.
    path: Option<PathBuf>,
    /// `--listen`, which overrides the first listener's address in every reading.
    listen: Option<std::net::SocketAddr>,
    log: LogHandle,
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = match load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return Ok(config_failure(&e)),
    };
    override_listen(&mut config, args.listen);
    let log = init_logging(&config.log_level);
    let source = Source { path: args.config, listen: args.listen, log };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let proxy = pith::net::Proxy::bind(config).await?;
        // Installed before the proxy says it is up, so a SIGHUP from then on reloads instead
        // of ending the process.
        watch_hangups(proxy.handle(), source)?;
        for addr in proxy.local_addrs() {
            eprintln!("pith: proxy on http://{addr}/ (point your browser's HTTP proxy here)");
        }
        proxy.run(shutdown_signal()).await;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

fn override_listen(config: &mut Config, listen: Option<std::net::SocketAddr>) {
    if let (Some(addr), Some(first)) = (listen, config.listeners.first_mut()) {
        first.address = addr;
    }
}

/// Reloads the config on every SIGHUP, on a task of its own.
#[cfg(unix)]
fn watch_hangups(handle: pith::net::ProxyHandle, source: Source) -> anyhow::Result<()> {
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).context("cannot watch for SIGHUP")?;
    let source = std::sync::Arc::new(source);
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let (handle, source) = (handle.clone(), source.clone());
            // Reading rule files and ad lists, or creating a CA, blocks: not on the runtime.
            if let Err(e) = tokio::task::spawn_blocking(move || reload(&handle, &source)).await {
                tracing::error!(error = %e, "the config reload failed; the running config stays in force");
            }
        }
    });
    Ok(())
}

#[cfg(not(unix))]
fn watch_hangups(_handle: pith::net::ProxyHandle, _source: Source) -> anyhow::Result<()> {
    Ok(())
}

/// Reads the config file again and puts it in force; a file that does not validate is
/// logged with its file:line:key error and changes nothing.
fn reload(handle: &pith::net::ProxyHandle, source: &Source) {
    let Some(path) = &source.path else {
        tracing::info!("SIGHUP: pith runs the built-in default config (no --config); nothing to reload, nothing changed");
        return;
    };
    tracing::info!(config = %path.display(), "SIGHUP: reloading the config");
    let mut config = match Config::load(path) {
        Ok(c) => c,
        Err(e) => return tracing::error!("config reload rejected, the running config stays in force: {}", error_chain(&e)),
    };
    override_listen(&mut config, source.listen);
    let level = config.log_level.clone();
    if let Err(e) = handle.reload(config) {
        return tracing::error!("config reload rejected, the running config stays in force: {}", error_chain(&e));
    }
    match &source.log {
        Some(log) => {
            if let Err(e) = log.reload(level_filter(&level)) {
                tracing::warn!(error = %e, "log.level could not be changed");
            }
        }
        None => tracing::info!("RUST_LOG is set: it keeps choosing what is logged, whatever log.level says"),
    }
}

/// An error and its causes on one line.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut msg = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Totals shown at the end of an extract run.
#[derive(Default)]
struct Tally {
    files: usize,
    bytes: u64,
    failures: usize,
    /// Reading mode served the declutter page instead.
    fallbacks: usize,
}

fn extract(args: ExtractArgs) -> anyhow::Result<ExitCode> {
    let config = match load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(e) => return Ok(config_failure(&e)),
    };
    let Some(profile) = config.profiles.get(&args.profile).cloned() else {
        eprintln!("pith: unknown profile {:?}; defined: {}", args.profile, config.profiles.keys().cloned().collect::<Vec<_>>().join(", "));
        return Ok(ExitCode::from(EX_USAGE));
    };
    let profile = match reading_profile(&profile, args.algorithm.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pith: --algorithm: {e}");
            return Ok(ExitCode::from(EX_USAGE));
        }
    };
    let output = match args.format {
        Some(Format::Html) => Output::Html,
        Some(Format::Text) => Output::Text,
        None => profile.output,
    };
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let files = if args.files.is_empty() { vec![PathBuf::from("-")] } else { args.files };
    let progress = files.len() > 1 && std::io::stderr().is_terminal();
    let start = Instant::now();
    learn_sites(&profile, &files, args.url.as_deref());
    let mut tally = Tally::default();
    for (i, file) in files.iter().enumerate() {
        if progress {
            eprint!("\r\x1b[K[{}/{}] {}", i + 1, files.len(), file.display());
        }
        tally.files += 1;
        match extract_one(file, &profile, output, args.out_dir.as_deref(), args.url.as_deref()) {
            Ok((n, fell_back)) => {
                tally.bytes += n;
                tally.fallbacks += usize::from(fell_back);
            }
            Err(e) => {
                tally.failures += 1;
                eprintln!("{}pith: {}: {e:#}", if progress { "\r\x1b[K" } else { "" }, file.display());
            }
        }
    }
    if progress {
        eprint!("\r\x1b[K");
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "pith: {} files, {:.1} MB, {:.2} s ({:.0} files/s, {:.1} MB/s), {} failures{}",
        tally.files,
        tally.bytes as f64 / 1e6,
        secs,
        tally.files as f64 / secs.max(1e-9),
        tally.bytes as f64 / 1e6 / secs.max(1e-9),
        tally.failures,
        match profile.reader {
            Some(_) => format!(", {} reading-mode fallbacks", tally.fallbacks),
            None => String::new(),
        }
    );
    Ok(if tally.failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The profile with `--algorithm` applied: reading mode with that extractor. `pith extract`
/// learns from all its inputs before extracting ([`learn_sites`]), so pages are not learnt
/// again one by one.
fn reading_profile(profile: &pipeline::Profile, algorithm: Option<&str>) -> Result<pipeline::Profile, pith::extract::algorithm::UnknownAlgorithm> {
    let mut profile = profile.clone();
    let base = profile.reader.as_deref().cloned();
    let algorithm = match algorithm {
        Some(name) => Some(name.parse()?),
        None => base.as_ref().map(|r| r.algorithm),
    };
    if let Some(algorithm) = algorithm {
        let reader = pipeline::Reader { algorithm, learn: false, ..base.unwrap_or_default() };
        if profile.stage2.is_none() {
            profile = profile.with_stage2(pipeline::Stage2::default());
        }
        profile = profile.with_reader(reader);
    }
    Ok(profile)
}

/// For the site-redundancy extractor: learns every input page under its host (`--url`'s, else
/// the page's canonical address), so each page is judged against all the others of its site.
fn learn_sites(profile: &pipeline::Profile, files: &[PathBuf], url: Option<&str>) {
    let uses_memory = profile.reader.as_ref().is_some_and(|r| r.algorithm == pith::extract::algorithm::Algorithm::SiteRedundancy)
        || profile.stage2.as_ref().is_some_and(|s| s.sites.rules().iter().any(|r| r.algorithm == Some(pith::extract::algorithm::Algorithm::SiteRedundancy)));
    if !uses_memory {
        return;
    }
    for file in files.iter().filter(|f| *f != Path::new("-")) {
        if let Ok(input) = std::fs::read(file) {
            // A page that cannot be learnt is still extracted (and its error reported) below.
            let _ = pipeline::learn(profile, &input, None, url);
        }
    }
}

/// Runs one input through the pipeline; returns the input size and whether reading mode fell
/// back to the declutter page.
fn extract_one(file: &Path, profile: &pipeline::Profile, output: Output, out_dir: Option<&Path>, url: Option<&str>) -> anyhow::Result<(u64, bool)> {
    let input = if file == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("cannot read standard input")?;
        buf
    } else {
        std::fs::read(file).context("cannot read the file")?
    };
    let page = pipeline::process(profile, &input, None, output, url)?;
    let fell_back = page.reading.as_ref().is_some_and(|r| r.fallback.is_some());
    match out_dir {
        None => std::io::stdout().write_all(&page.body).context("cannot write to standard output")?,
        Some(dir) => {
            let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "stdin".into());
            let ext = if output == Output::Text { "txt" } else { "html" };
            let path = dir.join(format!("{stem}.{ext}"));
            std::fs::write(&path, &page.body).with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok((input.len() as u64, fell_back))
}
