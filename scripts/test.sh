#!/usr/bin/env bash
# Runs pith's whole test suite on a fresh machine: everything it needs is built here.
# Usage: scripts/test.sh   (from anywhere in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
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
