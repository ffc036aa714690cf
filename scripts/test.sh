#!/usr/bin/env bash
# Runs pith's whole test suite on a fresh machine: everything it needs is built here.
# Usage: scripts/test.sh   (from anywhere in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Two cores: one integration-test binary, built once.
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --locked --all-targets --no-fail-fast
    cargo test --locked --doc
else
    cargo test --locked --all-targets --no-fail-fast
fi
