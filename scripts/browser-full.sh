#!/usr/bin/env bash
# The full browser run of docs/page-in-browser.md: every page of both development sets
# (scrapinghub, readability) and a spread sample of 200 wcxb pages (the same number of each of
# its seven page types), each as the origin serves it, de-cluttered and in reading mode, at
# 412 px in headless Chromium with axe-core (scripts/browser.sh; tests/browser/check.mjs says
# what each count means). About 45 minutes for the two pith profiles on an idle two-core
# machine, more with the originals; results in OUT (default target/browser-full): pages.jsonl,
# summary.json.
#
# Usage: scripts/browser-full.sh [--no-original] [any scripts/browser.sh option, e.g. --no-build,
#                                 --pith PATH, --out DIR, --gate FILE]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
original=(--original)
args=()
for a in "$@"; do
    if [ "$a" = --no-original ]; then original=(); else args+=("$a"); fi
done
exec "$repo/scripts/browser.sh" --wcxb 200 --out "$repo/target/browser-full" "${original[@]}" "${args[@]}"
