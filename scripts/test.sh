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
# Then one optimised build (`cargo build --release`), shared by the speed gates
# (scripts/gates.sh: instructions and system calls per request against perf/budgets.toml), the
# short soak (scripts/soak.sh --ci, 90 s, and --self-test) and the Debian package
# (scripts/package.sh; installs cargo-deb when missing). PITH_SKIP_RELEASE=1 leaves those out.
# Every step's wall time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Each step's wall time, printed as it ends and again in a table at the end, so a CI run's time
# can be quoted by step.
steps=()
step() {
    local name=$1 t0=$SECONDS rc=0
    shift
    "$@" || rc=$?
    steps+=("$(printf '%-22s %5d s%s' "$name" $((SECONDS - t0)) "$([ "$rc" = 0 ] || echo " FAILED ($rc)")")")
    echo "test.sh: step '$name' took $((SECONDS - t0)) s$([ "$rc" = 0 ] || echo ", failed with exit $rc")" >&2
    return "$rc"
}
report_steps() {
    echo "test.sh: time by step:" >&2
    printf '  %s\n' "${steps[@]}" >&2
    echo "test.sh: total ${SECONDS} s" >&2
}
trap report_steps EXIT
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
# The development sets (../shared/bench, beside the repository; PITH_SHARED names another
# place) are not part of a clone. Without them the library tests that read them run on the WCXB
# pages vendored in tests/data/wcxb or are skipped, and the browser check is skipped: each says
# so in one line below. CI has them: under CI=true a missing set, or any test skipped, fails.
shared="${PITH_SHARED:-../shared}"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
mkdir -p "$target"
export PITH_SKIP_LOG="$target/skipped-tests.txt"
rm -f "$PITH_SKIP_LOG"
have_sets=1
[ -d "$shared/bench/scrapinghub" ] && [ -d "$shared/bench/readability" ] || have_sets=0
if [ "$have_sets" = 0 ] && [ "${CI:-}" = true ]; then
    echo "test.sh: CI=true but the development sets are not at $shared/bench: CI runs every test in full" >&2
    exit 1
fi
# Two cores: one integration-test binary, built once.
# Benches are only type-checked here: run in test mode they walk every development page in a
# debug build, which takes minutes and measures nothing. Run them with `cargo bench`.
if cargo nextest --version >/dev/null 2>&1; then
    step "debug tests" cargo nextest run --locked --lib --bins --tests --no-fail-fast
else
    step "debug tests" cargo test --locked --lib --bins --tests --no-fail-fast
fi
step "doc tests" cargo test --locked --doc
step "benches checked" cargo check --locked --benches
if [ -s "$PITH_SKIP_LOG" ]; then
    sed 's/^/test.sh: skipped: /' "$PITH_SKIP_LOG" >&2
    if [ "${CI:-}" = true ]; then
        echo "test.sh: CI=true and tests were skipped: CI runs every test in full" >&2
        exit 1
    fi
fi
# Pages as a person gets them: the first 12 pages of each development set through the debug
# binary just built, in headless Chromium (installed here when missing), held to today's counts
# (tests/browser/gate-ci.json: headline position, leftovers, one h1, a screen reader's path,
# pith's bar, axe). The whole sets: scripts/browser-full.sh (docs/page-in-browser.md).
if [ "$have_sets" = 1 ]; then
    step "browser" scripts/browser.sh --pith "$target/debug/pith" --sample 12 --gate tests/browser/gate-ci.json --out target/browser-ci
else
    echo "test.sh: skipped: the browser check (scripts/browser.sh --sample 12): it loads pages of the development sets, and $shared/bench is not beside this clone" >&2
fi
if [[ "${PITH_SKIP_FUZZ:-}" != 1 ]]; then
    step "fuzz smoke" scripts/fuzz.sh --smoke --dev
fi
# One optimised build (profile release: thin LTO), shared by the speed gates, the short soak
# and the package. PITH_SKIP_RELEASE=1 leaves all three out (a quick local run; CI runs them).
if [[ "${PITH_SKIP_RELEASE:-}" = 1 ]]; then
    echo "test.sh: skipped: the release build, speed gates, soak and package (PITH_SKIP_RELEASE=1)" >&2
    [ "${CI:-}" != true ] || { echo "test.sh: CI=true: CI runs them" >&2; exit 1; }
    exit 0
fi
step "release build" cargo build --release --locked --bin pith
release="$target/release/pith"
if [ "$have_sets" = 1 ]; then
    # Instructions and system calls per request on six paths, against perf/budgets.toml; first
    # the check that a 3% rise fails.
    step "gates self-test" scripts/gates.sh --self-test
    step "speed gates" scripts/gates.sh --binary "$release"
    # 90 s of load, faults and attacks through every way in; then the proof that the harness
    # fails when the per-client cap is below one healthy address's connections.
    step "soak (CI)" scripts/soak.sh --ci --bin "$release"
    step "soak self-test" scripts/soak.sh --self-test --bin "$release"
else
    echo "test.sh: skipped: the speed gates and the soak: they serve pages of the development sets, and $shared/bench is not beside this clone" >&2
fi
# The Debian package from the same binary, installed and checked where this runs as root (CI).
if ! cargo deb --version >/dev/null 2>&1; then
    step "cargo-deb install" cargo install cargo-deb --locked --quiet
fi
if [ "$(id -u)" -eq 0 ]; then
    step "package" scripts/package.sh --install
else
    step "package" scripts/package.sh
fi
