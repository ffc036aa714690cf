#!/usr/bin/env bash
# Runs pith's fuzz targets (fuzz/, see fuzz/README.md) from their committed seeds and fails on
# any crash, property violation, timeout or out-of-memory.
#
# Usage: scripts/fuzz.sh [--smoke] [--dev] [--secs N] [--keep-corpus] [TARGET...]
#   --smoke        a short run of each target (25 s), meant for CI
#   --dev          build and run unoptimised and without AddressSanitizer (`cargo fuzz --dev
#                  -s none`), with a 120 s per-input timeout instead of 30 s; see below
#   --secs N       seconds per target (default 180)
#   --keep-corpus  grow fuzz/corpus/TARGET (kept between runs) instead of a temporary corpus
#   TARGET...      some of: stage1 tree decode config pipeline head config_values icap
#                  control_form read_url (default: all,
#                  one after another)
#
# cargo-fuzz is installed if missing. The targets need nightly-only compiler flags; on a stable
# toolchain RUSTC_BOOTSTRAP=1 allows them, and only for this build (fuzz/ has its own target
# folder, fuzz/target, so the main build is untouched). A crashing input is saved under
# fuzz/artifacts/TARGET/; reproduce it with `RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET FILE`
# from fuzz/ (add `--dev -s none` for a finding of a --dev run).
#
# The default build is optimised with AddressSanitizer. CI (scripts/test.sh) runs
# `--smoke --dev`, whose build from empty takes minutes instead of over 20 (fuzz/README.md,
# "Cost in CI"). That smoke run checks every target's properties, panics (debug assertions and
# integer overflow checks included, which the optimised build leaves out), hangs and memory use,
# on the seeds and 25 s of mutants each. It does not check for memory errors in unsafe code or
# the C code of dependencies (no AddressSanitizer: measured, dropping it barely changed the
# build time but more than doubled the runs in 25 s), and it is not a search: longer runs with
# the sanitizer are for the default build, by hand.
# The 120 s timeout is for one-off set-up: unoptimised, `tree` and `pipeline` took over 30 s on
# their first input, which parses the built-in ad lists.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(stage1 tree decode config pipeline head config_values icap control_form read_url)
secs=180
keep=false
dev=false
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --smoke) secs=25 ;;
        --dev) dev=true ;;
        --secs)
            [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || { echo "--secs needs a number of seconds" >&2; exit 64; }
            secs="$2"
            shift
            ;;
        --keep-corpus) keep=true ;;
        -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 64 ;;
        *)
            [[ " ${ALL_TARGETS[*]} " == *" $1 "* ]] || { echo "unknown target $1; known: ${ALL_TARGETS[*]}" >&2; exit 64; }
            targets+=("$1")
            ;;
    esac
    shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cd fuzz
# The same flags for build and run, or `cargo fuzz run` builds again.
if $dev; then
    build_flags=(--dev -s none)
    timeout=120
else
    build_flags=()
    timeout=30
fi
echo "== building ${targets[*]}${build_flags[*]:+ (${build_flags[*]})}"
for target in "${targets[@]}"; do
    cargo fuzz build "${build_flags[@]}" "$target"
done

workdir="$(mktemp -d)"
trap 'rm -rf "$workdir"' EXIT
failed=0
summary=()
for target in "${targets[@]}"; do
    if $keep; then
        corpus="corpus/$target"
    else
        corpus="$workdir/corpus-$target"
    fi
    mkdir -p "$corpus" "artifacts/$target"
    cp seeds/"$target"/* "$corpus"/
    log="$workdir/$target.log"
    echo "== fuzzing $target for ${secs}s"
    # -timeout: one input taking this long is a hang; -rss_limit_mb: the machine is shared.
    touch "$workdir/start-$target"
    status=0
    cargo fuzz run "${build_flags[@]}" "$target" "$corpus" -- \
        -max_total_time="$secs" -timeout="$timeout" -rss_limit_mb=2048 -print_final_stats=1 \
        >"$log" 2>&1 || status=$?
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    files="$(find "$corpus" -type f | wc -l | tr -d ' ')"
    kib="$(find "$corpus" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s / 1024 }')"
    if [[ $status -eq 0 ]]; then
        result=ok
    else
        result="FAILED (exit $status)"
        failed=1
        echo "---- $target: the failure (full log: fuzz/artifacts/$target/last-run.log)"
        grep -m 1 -A 8 -E 'panicked at|ERROR: (libFuzzer|AddressSanitizer)' "$log" | cut -c 1-2000 || tail -n 20 "$log"
        # Listed before the log is copied there, which is not an input.
        find "artifacts/$target" -type f -newer "$workdir/start-$target" | sed 's|^|crash input: fuzz/|'
        cp "$log" "artifacts/$target/last-run.log"
    fi
    line="$(printf '%-9s %6ss %12s runs %6s inputs %7s KiB  %s' "$target" "$secs" "${runs:-?}" "$files" "$kib" "$result")"
    echo "$line"
    summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
