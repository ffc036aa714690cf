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
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use pith::config::Config;
use pith::pipeline;
use pith::profile::Output;

const EX_USAGE: u8 = 64;

/// jemalloc, because it gives memory back once a burst is over: after 1,000 clients at once,
/// the system allocator kept 1 GB, mimalloc 360-470 MB, jemalloc with these options 46-52 MB
/// (docs/benchmarks.md, "Memory"). The binary only: the library leaves the choice to its user.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts (`malloc_conf`, under the prefix this build of it
/// uses): a background thread returns pages unused for a quarter of a second (`dirty_decay_ms`)
/// straight to the system (`muzzy_decay_ms:0`), so memory goes back while the proxy is idle
/// too, not only when it next allocates; and pages freed by one large rewrite do not stay
/// resident beside the next one's, so resident memory stays near what the rewrite budget
/// counts.
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &[u8; 59] = b"background_thread:true,dirty_decay_ms:250,muzzy_decay_ms:0\0";

/// pith: a forward HTTP(S) proxy that serves the pith of every page.
///
/// Without a command, pith runs the proxy: `pith --listen ADDR` is `pith serve --listen ADDR`.
#[derive(Parser)]
#[command(
    name = "pith",
    version,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = "Without a command, pith runs the proxy: `pith --listen ADDR` is `pith serve --listen ADDR`."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// `serve`'s options, for `pith` without a command.
    #[command(flatten)]
    serve: ServeArgs,
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
    /// Print a shell completion script (e.g. `pith completions bash > /etc/bash_completion.d/pith`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output (`pith man | man -l -`), or write it and
    /// one page per command (pith-serve.1, …) to a folder.
    Man {
        /// Write pith.1 and every command's page here instead.
        #[arg(long)]
        dir: Option<PathBuf>,
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
    /// Output form; defaults to the profile's own. In reading mode `text` is the main content
    /// alone, as extraction benchmarks score it, and `listener` puts the title, byline and date
    /// lines first, as a listener of a text profile hears it.
    #[arg(long, short)]
    format: Option<Format>,
    /// The encoding of input files whose bytes do not say (e.g. gb2312, windows-1251, a WHATWG
    /// label), taken as the proxy takes a `Content-Type` charset: only a byte order mark in the
    /// file overrides it.
    #[arg(long)]
    charset: Option<String>,
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
    /// The page as HTML (reading mode: its reading page).
    Html,
    /// Plain text, one block per line; in reading mode the main content alone, the form the
    /// development sets' reference texts hold, so scores stay comparable across versions.
    Text,
    /// Plain text as a listener gets it from a profile with `output = "text"`: in reading mode
    /// the title, byline and date lines, then the content.
    Listener,
    /// One JSON object per page (one line each on standard output, NAME.json with
    /// `--out-dir`): `file`, `type` (the kind of page: article, documentation, service, forum,
    /// collection, listing, product), `confidence` (0 to 1), `items`, `title`, `language`,
    /// `unsure` (the reading page says it is not sure it kept the right part of the page), `reader` (how
    /// reading mode chose, as in `x-pith`), `page_prose` and `kept_prose` (what `unsure` is
    /// decided from), `signals` (what the type is decided from), and `text`, the `text` form.
    /// All but `file` and `text` are null without reading mode.
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Serve(cli.serve)) {
        Command::Serve(args) => serve(args),
        Command::Extract(args) => extract(args),
        Command::Ca(args) => ca(args),
        Command::CheckConfig { file } => check_config(&file),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "pith", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir: None } => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()).context("cannot write to standard output").map(|()| ExitCode::SUCCESS),
        Command::Man { dir: Some(dir) } => clap_mangen::generate_to(Cli::command(), &dir).with_context(|| format!("cannot write the manual pages to {}", dir.display())).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pith: {}", causes(e.chain(), ": "));
            ExitCode::FAILURE
        }
    }
}

fn load_config(path: Option<&Path>) -> Result<Config, pith::config::ConfigError> {
    load_listening(path, None)
}

/// The config with `--listen` applied before validation, so that the checks (the open-proxy
/// one above all) judge the address that will be bound.
fn load_listening(path: Option<&Path>, listen: Option<std::net::SocketAddr>) -> Result<Config, pith::config::ConfigError> {
    match path {
        Some(p) => Config::load_listening(p, listen),
        None => Config::from_toml_str_listening(pith::config::DEFAULT_TOML, pith::config::DEFAULT_ORIGIN, None, listen),
    }
}

/// Prints a config error with its whole cause chain, and returns EX_USAGE.
fn config_failure(err: &pith::config::ConfigError) -> ExitCode {
    eprintln!("pith: invalid config: {}", causes(std::iter::successors(Some(err as &dyn std::error::Error), |e| e.source()), "\n  "));
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
    let config = match load_listening(args.config.as_deref(), args.listen) {
        Ok(c) => c,
        Err(e) => return Ok(config_failure(&e)),
    };
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
        for addr in proxy.icap_addrs() {
            eprintln!("pith: ICAP service on icap://{addr}/respmod (an icap_service for Squid)");
        }
        proxy.run(shutdown_signal()).await;
        anyhow::Ok(ExitCode::SUCCESS)
    })
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
    let config = match Config::load_listening(path, source.listen) {
        Ok(c) => c,
        Err(e) => return tracing::error!("config reload rejected, the running config stays in force: {}", error_chain(&e)),
    };
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
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    causes(std::iter::successors(Some(err), |e| e.source()), ": ")
}

/// An error's chain, outermost first, joined by `sep`, each cause once: many errors already
/// end their own message with their cause's ("cannot listen on …: Address already in use"),
/// and a cause whose words are already written is not written again.
fn causes<'a>(chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>, sep: &str) -> String {
    let mut msg = String::new();
    for e in chain {
        let text = e.to_string();
        if msg.is_empty() {
            msg = text;
        } else if !msg.contains(&text) {
            msg.push_str(sep);
            msg.push_str(&text);
        }
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
    /// Reading mode read a copy only scripts would show (`<noscript>`, JSON-LD).
    hidden: usize,
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
        Some(Format::Text | Format::Json) => Output::Content,
        Some(Format::Listener) => Output::Text,
        None => profile.output,
    };
    // Given as a transport-layer charset is: the Content-Type the proxy would have seen.
    let content_type = args.charset.as_ref().map(|label| format!("text/html; charset={label}"));
    if let Some(ct) = content_type.as_deref().filter(|ct| pith::html::charset::from_content_type(ct).is_none()) {
        eprintln!("pith: --charset: unknown encoding {:?} ({ct})", args.charset.unwrap_or_default());
        return Ok(ExitCode::from(EX_USAGE));
    }
    if let Some(url) = &args.url {
        if let Err(why) = absolute_url(url) {
            eprintln!("pith: --url: {url:?} {why}");
            return Ok(ExitCode::from(EX_USAGE));
        }
    }
    let input = Input { content_type: content_type.as_deref(), url: args.url.as_deref() };
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let files = if args.files.is_empty() { vec![PathBuf::from("-")] } else { args.files };
    let progress = files.len() > 1 && std::io::stderr().is_terminal();
    let start = Instant::now();
    learn_sites(&profile, &files, input);
    let mut tally = Tally::default();
    for (i, file) in files.iter().enumerate() {
        if progress {
            eprint!("\r\x1b[K[{}/{}] {}", i + 1, files.len(), file.display());
        }
        tally.files += 1;
        let json = matches!(args.format, Some(Format::Json));
        match extract_one(file, &profile, output, json, args.out_dir.as_deref(), input) {
            Ok((n, fell_back, hidden)) => {
                tally.bytes += n;
                tally.fallbacks += usize::from(fell_back);
                tally.hidden += usize::from(hidden);
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
            Some(_) => format!(", {} reading-mode fallbacks, {} read from hidden copies", tally.fallbacks, tally.hidden),
            None => String::new(),
        }
    );
    Ok(if tally.failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `pith extract --format json`'s object for one page, on one line ([`Format::Json`]).
fn page_json(file: &Path, page: &pipeline::Page) -> Vec<u8> {
    let reading = page.reading.as_ref();
    let object = serde_json::json!({
        "file": file.display().to_string(),
        "type": reading.map(|r| r.kind.kind.name()),
        "confidence": reading.map(|r| (f64::from(r.kind.confidence) * 1000.0).round() / 1000.0),
        "items": reading.map(|r| r.kind.items),
        "title": reading.and_then(|r| r.meta.title.as_deref()),
        "language": reading.and_then(|r| r.meta.lang.as_deref()),
        "unsure": reading.map(|r| r.unsure),
        "reader": page.reading_summary().map(|s| s.split("; kind=").next().unwrap_or_default().trim_start_matches("reader=").to_string()),
        "page_prose": reading.map(|r| r.evidence.page_prose),
        "kept_prose": reading.map(|r| r.evidence.kept_prose),
        "signals": reading.map(|r| &r.signals),
        "text": String::from_utf8_lossy(&page.body),
    });
    let mut line = object.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Why `url` cannot be `extract --url`'s page address, if it cannot: the proxy only ever sees
/// absolute `http` and `https` addresses, and links resolve against nothing else.
fn absolute_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(u) => Err(format!("is not a web page's address: the scheme is {:?}; give an http:// or https:// URL, e.g. https://example.com/page", u.scheme())),
        Err(e) => Err(format!("is not an absolute URL ({e}); give the page's full address, e.g. https://example.com/page")),
    }
}

/// The profile with `--algorithm` applied: reading mode with that extractor. `pith extract`
/// learns from all its inputs before extracting ([`learn_sites`]), so pages are not learnt
/// again one by one.
fn reading_profile(profile: &pith::profile::Profile, algorithm: Option<&str>) -> Result<pith::profile::Profile, pith::extract::algorithm::UnknownAlgorithm> {
    let mut profile = profile.clone();
    let base = profile.reader.as_deref().cloned();
    let algorithm = match algorithm {
        Some(name) => Some(name.parse()?),
        None => base.as_ref().map(|r| r.algorithm),
    };
    if let Some(algorithm) = algorithm {
        let reader = pith::profile::Reader { algorithm, learn: false, ..base.unwrap_or_default() };
        if profile.stage2.is_none() {
            profile = profile.with_stage2(pith::profile::Stage2::default());
        }
        profile = profile.with_reader(reader);
    }
    Ok(profile)
}

/// What `pith extract` knows of every input besides its bytes, as the proxy knows it from the
/// response: the `Content-Type` (from `--charset`) and the page's address (`--url`).
#[derive(Clone, Copy)]
struct Input<'a> {
    content_type: Option<&'a str>,
    url: Option<&'a str>,
}

/// For the site-redundancy extractor: learns every input page under its host (`--url`'s, else
/// the page's canonical address), so each page is judged against all the others of its site.
fn learn_sites(profile: &pith::profile::Profile, files: &[PathBuf], input: Input<'_>) {
    let uses_memory = profile.reader.as_ref().is_some_and(|r| r.algorithm == pith::extract::algorithm::Algorithm::SiteRedundancy)
        || profile.stage2.as_ref().is_some_and(|s| s.sites.rules().iter().any(|r| r.algorithm == Some(pith::extract::algorithm::Algorithm::SiteRedundancy)));
    if !uses_memory {
        return;
    }
    for file in files.iter().filter(|f| *f != Path::new("-")) {
        if let Ok(bytes) = std::fs::read(file) {
            // A page that cannot be learnt is still extracted (and its error reported) below.
            let _ = pipeline::learn(profile, &bytes, input.content_type, input.url);
        }
    }
}

/// Runs one input through the pipeline; returns the input size and whether reading mode fell
/// back to the declutter page, and whether it read a hidden copy of the page.
fn extract_one(file: &Path, profile: &pith::profile::Profile, output: Output, json: bool, out_dir: Option<&Path>, given: Input<'_>) -> anyhow::Result<(u64, bool, bool)> {
    let input = if file == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("cannot read standard input")?;
        buf
    } else {
        std::fs::read(file).context("cannot read the file")?
    };
    // The form written is the pipeline's decision, as in the proxy: a page too deep for the
    // tree is the stage-1 HTML page whatever form was asked.
    let page = pipeline::process(profile, &input, given.content_type, output, given.url)?;
    if page.form.is_fallback() {
        eprintln!("pith: {}: too deep for the tree; wrote the stage-1 HTML page, not text", file.display());
    }
    let fell_back = page.reading.as_ref().is_some_and(|r| r.fallback.is_some());
    let hidden = page.reading.as_ref().is_some_and(|r| r.hidden.is_some());
    let body = if json { page_json(file, &page) } else { page.body };
    match out_dir {
        None => std::io::stdout().write_all(&body).context("cannot write to standard output")?,
        Some(dir) => {
            let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "stdin".into());
            let ext = match page.form.output() {
                _ if json => "json",
                Output::Html => "html",
                Output::Text | Output::Content => "txt",
            };
            let path = dir.join(format!("{stem}.{ext}"));
            std::fs::write(&path, &body).with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok((input.len() as u64, fell_back, hidden))
}
