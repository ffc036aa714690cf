#!/usr/bin/env bash
# Loads development pages through pith in headless Chromium and audits them as a person gets
# them: the headline and how far down it is, the width at phone size (412 px), `lang`, heading
# order, one h1, leftovers (dialogs, consent and newsletter prompts), a screen reader's path to
# the headline, pith's bar and an axe-core audit, for the declutter and the reading page, and
# the original with --original (tests/browser/check.mjs says what each count means).
#
# Usage: scripts/browser.sh [--sample N | --spread N] [--sets "scrapinghub readability"]
#                           [--wcxb N] [--original] [--shots] [--gate FILE] [--no-build] [--out DIR]
#   --sample N   the first N pages of each set (default: every page; about 20 minutes)
#   --spread N   N pages of each set spread evenly over it (a quicker sample while iterating)
#   --sets "…"   development sets under ../shared/bench (default: both)
#   --wcxb N     also N pages of ../shared/bench/wcxb, the same number of each page type,
#                spread evenly over the type (unpacked into a temporary folder)
#   --original   also audit each original page as the origin serves it (profile "original")
#   --shots      a screenshot of each page's first screen at 412 and 1280 px under OUT/shots
#   --gate FILE  fail (exit 1) when a count is over its ceiling in FILE (JSON, per profile)
#   --no-build   use the release binary already built
#   --pith PATH  use this pith binary (e.g. the debug build the test suite made); no build
#   --out DIR    results (default target/browser): pages.jsonl, summary.json, shots/
#
# Installs what it needs when missing: Debian's chromium (apt-get; needs root or sudo) and,
# from npm, the exact versions in tests/browser/package-lock.json (playwright-core, driving the
# system Chromium, never downloading a browser, and axe-core). Everything listens on 127.0.0.1;
# the page's requests to any other host are aborted in the browser; each page load is bounded
# (30 s), and pith is stopped at the end.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${PITH_SHARED:-$repo/../shared}
sample=0
spread=0
wcxb=0
original=()
sets="scrapinghub readability"
shots=()
gate=()
build=1
pith_arg=""
out=$repo/target/browser
while [ $# -gt 0 ]; do
    case "$1" in
        --sample) sample=$2; shift 2;;
        --spread) spread=$2; shift 2;;
        --wcxb) wcxb=$2; shift 2;;
        --original) original=(--original); shift;;
        --sets) sets=$2; shift 2;;
        --shots) shots=(--shots); shift;;
        --gate) gate=(--gate "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift 2;;
        --no-build) build=0; shift;;
        --pith) pith_arg=$2; build=0; shift 2;;
        --out) out=$2; shift 2;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
        *) echo "browser.sh: unknown argument $1 (see --help)" >&2; exit 64;;
    esac
done
for n in "$sample" "$spread" "$wcxb"; do
    [[ "$n" =~ ^[0-9]+$ ]] || { echo "browser.sh: --sample, --spread and --wcxb take a number" >&2; exit 64; }
done

# shellcheck source=scripts/browser-tools.sh
. "$repo/scripts/browser-tools.sh"
browser_packages browser.sh

folders=()
for s in $sets; do
    [ -d "$shared/bench/$s" ] || { echo "browser.sh: no development set at $shared/bench/$s" >&2; exit 1; }
    folders+=("$shared/bench/$s")
done

[ "$build" = 0 ] || (cd "$repo" && cargo build --release --locked --bin pith)
pith=${pith_arg:-${CARGO_TARGET_DIR:-$repo/target}/release/pith}
[ -x "$pith" ] || { echo "browser.sh: no $pith; run without --no-build" >&2; exit 1; }

run=$(mktemp -d "${TMPDIR:-/tmp}/pith-browser.XXXXXX")
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$run"' EXIT
# Port 0: the kernel picks free ports; pith logs each listener's address.
cat > "$run/pith.toml" <<TOML
[log]
level = "info"

[[listener]]
address = "127.0.0.1:0"
profile = "declutter"

[[listener]]
address = "127.0.0.1:0"
profile = "reader"

[cache]
enabled = false

# The built-in profiles, as a gateway whose readers read English would set them: a page too
# short for pith to tell its language (a few words) gets `lang="en"` (fallback_lang).
[profiles.declutter]
rules = "declutter"
output = "html"
preset = "automatic"
fallback_lang = "en"

[profiles.reader]
rules = "reader"
output = "html"
preset = "automatic"
algorithm = "pith"
fallback_lang = "en"
TOML
start_pith browser.sh "$pith" "$run/pith.toml" "$run/pith.log" 2
declutter=$(listener_address "$run/pith.log" declutter)
reader=$(listener_address "$run/pith.log" reader)
[ -n "$declutter" ] && [ -n "$reader" ] || { echo "browser.sh: pith did not say where it listens:" >&2; cat "$run/pith.log" >&2; exit 1; }

if [ "$wcxb" -gt 0 ]; then
    [ -f "$shared/bench/wcxb/truth.json" ] || { echo "browser.sh: no $shared/bench/wcxb" >&2; exit 1; }
    mkdir -p "$run/wcxb"
    python3 - "$shared/bench/wcxb" "$run/wcxb" "$wcxb" <<'PY'
import collections, gzip, json, math, sys
bench, dest, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
pages = json.load(open(f"{bench}/truth.json", encoding="utf-8"))["pages"]
by_type = collections.defaultdict(list)
for pid in sorted(pages):
    by_type[pages[pid].get("type", "")].append(pid)
each = math.ceil(n / len(by_type))
chosen = []
for t in sorted(by_type):
    ids = by_type[t]
    k = min(each, len(ids))
    chosen += [ids[(i * len(ids)) // k] for i in range(k)]
if len(chosen) > n:
    chosen = [chosen[(i * len(chosen)) // n] for i in range(n)]
for pid in chosen:
    with gzip.open(f"{bench}/html/{pid}.html.gz", "rb") as src, open(f"{dest}/{pid}.html", "wb") as out:
        out.write(src.read())
PY
    folders+=("$run/wcxb")
fi

mkdir -p "$out"
IFS=,; pages="${folders[*]}"; unset IFS
node "$repo/tests/browser/check.mjs" --pages "$pages" --proxy "declutter=$declutter,reader=$reader" \
    --out "$out" --sample "$sample" --spread "$spread" "${original[@]}" "${shots[@]}" "${gate[@]}"
# pith's own pages clicked through: choose reading mode on http://pith/, read an article, press
# "original" on the bar; axe-core on the control page and the bar (tests/browser/control.mjs).
node "$repo/tests/browser/control.mjs" --proxy "$declutter"
