#!/usr/bin/env bash
# Scores reading mode on all three development sets in one command, so every change is judged
# on all three (scrapinghub, readability, wcxb with its page types).
#
#   scripts/score-sets.sh [OUT_DIR]
#
# Builds `pith` once (PROFILE, default fast: an optimised build without LTO), unpacks the
# gzipped wcxb pages once into $WCXB_HTML (default /tmp/pith-wcxb-html), then per set runs
#   pith extract --profile reader --format text --out-dir OUT/SET SET/*.html
# and scores OUT/SET with ../shared/bench/score.py (wcxb: --types). Per-page scores go to
# OUT/SET.tsv, for finding the worst pages. Prints one line per set, then wcxb's types.
#
# Environment: PROFILE (fast), CARGO_TARGET_DIR (target), BENCH (../shared/bench),
# NO_BUILD=1 to use the binary already built, WCXB_HTML (where the pages are unpacked).
set -euo pipefail

cd "$(dirname "$0")/.."
bench=${BENCH:-../shared/bench}
score=$bench/score.py
profile=${PROFILE:-fast}
target=${CARGO_TARGET_DIR:-target}
out=${1:-/tmp/pith-score-sets}
wcxb_html=${WCXB_HTML:-/tmp/pith-wcxb-html}

[ -f "$score" ] || { echo "score-sets: no scorer at $score" >&2; exit 2; }
[ -n "${NO_BUILD:-}" ] || cargo build --quiet --profile "$profile" --bin pith
pith="$target/$profile/pith"

if [ "$(find "$wcxb_html" -name '*.html' 2>/dev/null | wc -l)" -ne \
     "$(find "$bench/wcxb/html" -name '*.html.gz' | wc -l)" ]; then
    mkdir -p "$wcxb_html"
    for f in "$bench"/wcxb/html/*.html.gz; do
        gunzip -c "$f" >"$wcxb_html/$(basename "$f" .gz)"
    done
fi

mkdir -p "$out"
for set in scrapinghub readability wcxb; do
    src=$bench/$set
    [ "$set" = wcxb ] && src=$wcxb_html
    rm -rf "${out:?}/$set"
    "$pith" extract --profile reader --format text --out-dir "$out/$set" "$src"/*.html \
        2>"$out/$set.log" || true
    summary=$(grep '^pith: [0-9]* files' "$out/$set.log" | tail -n 1)
    types=()
    [ "$set" = wcxb ] && types=(--types)
    result=$(python3 "$score" --n-bootstrap 0 --per-page "$out/$set.tsv" "${types[@]}" \
        "$bench/$set" "$out/$set")
    echo "$set: $(head -n 1 <<<"$result") | ${summary#pith: }"
    tail -n +2 <<<"$result"
done
