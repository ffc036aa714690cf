#!/usr/bin/env bash
# Scores every reading-mode algorithm on a development set and prints a markdown table.
#
#   scripts/score-algorithms.sh [SET_DIR]
#
# Builds `pith` once (release; PROFILE=fast for a quicker optimised build), then for each
# algorithm the binary knows runs
#   pith extract --profile reader --algorithm NAME --format text --out-dir OUT SET_DIR/*.html
# in one process, scores OUT with ../shared/bench/score.py (shingle F1, precision, recall) and
# reads pages/s from the extract summary (the whole path: read, charset, stage 1, tree,
# metadata, extraction, rendering, write; one thread). The last column counts the pages where
# the extractor left no clear main content and the declutter text was served instead: the
# scores are those of what reading mode serves, fallback included.
#
# Environment: PROFILE (release), CARGO_TARGET_DIR (target), SCORE (the scorer),
# KEEP=DIR to keep the outputs in DIR instead of a temporary folder, NO_BUILD=1 to use the
# binary already built.
set -euo pipefail

cd "$(dirname "$0")/.."
set_dir=${1:-../shared/bench/scrapinghub}
score=${SCORE:-../shared/bench/score.py}
profile=${PROFILE:-release}
target=${CARGO_TARGET_DIR:-target}

[ -d "$set_dir" ] || { echo "score-algorithms: no development set at $set_dir" >&2; exit 2; }
[ -f "$score" ] || { echo "score-algorithms: no scorer at $score" >&2; exit 2; }

# NO_BUILD=1 uses the binary already in the target folder.
[ -n "${NO_BUILD:-}" ] || cargo build --quiet --profile "$profile" --bin pith
pith="$target/$profile/pith"

if [ -n "${KEEP:-}" ]; then
    out=$KEEP
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

# The binary lists the algorithms it knows when given an unknown one.
# (It exits with a usage error, hence `|| true` under pipefail.)
algorithms=$({ "$pith" extract --profile reader --algorithm '?' </dev/null 2>&1 || true; } | sed -n 's/.*known: //p' | tr -d ',')
[ -n "$algorithms" ] || { echo "score-algorithms: could not list the algorithms" >&2; exit 1; }

echo "| algorithm | F1 | precision | recall | pages/s | fallbacks |"
echo "|---|---|---|---|---|---|"
for name in $algorithms; do
    rm -rf "${out:?}/$name"
    "$pith" extract --profile reader --algorithm "$name" --format text --out-dir "$out/$name" \
        "$set_dir"/*.html 2>"$out/$name.log" || true
    summary=$(grep '^pith: [0-9]* files' "$out/$name.log" | tail -n 1)
    pages_per_s=$(sed -n 's/.*(\([0-9.]*\) files\/s.*/\1/p' <<<"$summary")
    fallbacks=$(sed -n 's/.* \([0-9]*\) reading-mode fallbacks.*/\1/p' <<<"$summary")
    python3 "$score" --json --n-bootstrap 0 "$set_dir" "$out/$name" | python3 -c '
import json, sys
r = json.load(sys.stdin)
name, pps, fallbacks = sys.argv[1:4]
cells = [name] + ["%.3f" % r[k] for k in ("f1", "precision", "recall")] + [pps or "?", fallbacks or "?"]
print("| " + " | ".join(cells) + " |")
' "$name" "$pages_per_s" "$fallbacks"
done
