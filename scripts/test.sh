#!/usr/bin/env bash
# Runs pith's whole test suite on a fresh machine: everything it needs is built here (lynx,
# which one integration test runs, is installed with apt-get when missing).
# Usage: scripts/test.sh   (from anywhere in the repository)
# Installs Debian's squid first when missing (the ICAP tests put it in front of pith).
# Then 24 development pages in headless Chromium (scripts/browser.sh; installs Debian's
# chromium and the npm packages it pins when missing). Last, a smoke run of every fuzz target:
# `scripts/fuzz.sh --smoke --dev` (unoptimised, no sanitizer, 25 s per target; installs
# cargo-fuzz if missing). What it checks is in the
# header of scripts/fuzz.sh, its cost in fuzz/README.md ("Cost in CI"). A finding fails the suite.
# PITH_SKIP_FUZZ=1 leaves the fuzz smoke out (for a quick local run; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Frugal with disk: CI builds once from empty on a machine whose free space varies (a run has
# failed for lack of it). Incremental state and full debug info are gigabytes that one build
# never reads; line tables keep file:line in a failing test's backtrace. Set either variable
# to override.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
# Debian programs the integration tests drive, installed here when missing (needs root or
# sudo); a test without its program fails, saying so: Squid in front of pith's ICAP service
# (tests/icap/squid.rs), lynx reading the control page and the URL gateway (tests/control.rs,
# tests/gateway.rs).
missing=()
command -v squid >/dev/null 2>&1 || [ -x /usr/sbin/squid ] || missing+=(squid)
command -v lynx >/dev/null 2>&1 || missing+=(lynx)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "test.sh: installing ${missing[*]} with apt-get" >&2
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Two cores: one integration-test binary, built once.
# Benches are only type-checked here: run in test mode they walk every development page in a
# debug build, which takes minutes and measures nothing. Run them with `cargo bench`.
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --locked --lib --bins --tests --no-fail-fast
    cargo test --locked --doc
else
    cargo test --locked --lib --bins --tests --no-fail-fast
    cargo test --locked --doc
fi
cargo check --locked --benches
# Pages as a person gets them: the first 12 pages of each development set through the debug
# binary just built, in headless Chromium (installed here when missing), held to today's counts
# (tests/browser/gate-ci.json). The whole sets: scripts/browser.sh.
scripts/browser.sh --pith "${CARGO_TARGET_DIR:-target}/debug/pith" --sample 12 --gate tests/browser/gate-ci.json --out target/browser-ci
if [[ "${PITH_SKIP_FUZZ:-}" != 1 ]]; then
    scripts/fuzz.sh --smoke --dev
fi
