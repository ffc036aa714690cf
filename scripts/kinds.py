#!/usr/bin/env python3
"""Page kinds and the "unsure" notice, measured on the three development sets.

    scripts/kinds.py OUT [--pith target/fast/pith] [--no-run] [--sets scrapinghub,readability,wcxb]

Per set, runs `pith extract --profile reader --format json --out-dir OUT/SET SET/*.html` (one
JSON object per page: its kind, confidence, the unsure flag and what it was decided from, and
the text, which is the `--format text` output), then scores each page's text with
../shared/bench/score.py's own per-page metric and prints:

- wcxb: the confusion matrix of the kind against the benchmark's own page type, and accuracy;
- per set: how many pages are flagged unsure among those scoring F1 < 0.3 (the target: at
  least half) and among those scoring F1 > 0.8 (at most 5%): for the shipped flag, counted on
  the reading pages alone, on all pages, and with the declutter fallback's own note counted
  as flagged; then for a grid of thresholds on the flag's inputs (`kept_prose / page_prose`,
  `page_prose`) on the reading pages.

Environment: BENCH (../shared/bench), WCXB_HTML (/tmp/pith-wcxb-html, unpacked as
scripts/score-sets.sh does).
"""
import argparse
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(os.environ.get("BENCH", ROOT.parent / "shared" / "bench"))
sys.path.insert(0, str(BENCH))
import score  # noqa: E402  (the benchmark's scorer: the same per-page metric)

KINDS = ["article", "documentation", "service", "forum", "collection", "listing", "product"]
LOW, HIGH = 0.3, 0.8


def run(pith, set_name, out):
    src = BENCH / set_name
    if set_name == "wcxb":
        src = Path(os.environ.get("WCXB_HTML", "/tmp/pith-wcxb-html"))
    pages = sorted(src.glob("*.html"))
    if not pages:
        sys.exit(f"kinds: no pages in {src} (unpack wcxb as scripts/score-sets.sh does)")
    dest = out / set_name
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.json"):
        old.unlink()
    cmd = [pith, "extract", "--profile", "reader", "--format", "json", "--out-dir", str(dest)]
    proc = subprocess.run(cmd + [str(p) for p in pages], stderr=subprocess.PIPE, text=True)
    print(f"{set_name}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ''}")


def load(set_name, out):
    truth = score.load_truth(BENCH / set_name)
    rows = {}
    for ident, item in truth["pages"].items():
        path = out / set_name / f"{ident}.json"
        page = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"text": ""}
        text = page.get("text") or ""
        if truth["metric"] == "words":
            f1 = score.page_word_scores(item["main_content"], text)[2]
        else:
            tp, fp, fn = score.page_shingle_counts(item["articleBody"], text)
            p = tp / (tp + fp) if tp + fp else 0.0
            r = tp / (tp + fn) if tp + fn else 0.0
            f1 = 2 * p * r / (p + r) if p + r else 0.0
        rows[ident] = (item.get("type"), page, f1)
    return rows


def confusion(rows):
    matrix = defaultdict(Counter)
    for truth_type, page, _ in rows.values():
        matrix[truth_type][page.get("type")] += 1
    right = sum(matrix[k][k] for k in KINDS)
    total = sum(sum(c.values()) for c in matrix.values())
    print(f"\nwcxb page kinds: {right}/{total} = {right / total:.3f} right")
    print("| truth \\ found | " + " | ".join(KINDS) + " | recall |")
    print("|---|" + "---:|" * (len(KINDS) + 1))
    for t in KINDS:
        n = sum(matrix[t].values())
        cells = " | ".join(str(matrix[t][k]) for k in KINDS)
        print(f"| {t} | {cells} | {matrix[t][t] / n if n else 0:.2f} |")
    found = Counter(page.get("type") for _, page, _ in rows.values())
    print("| precision | " + " | ".join(f"{matrix[k][k] / found[k]:.2f}" if found[k] else "-" for k in KINDS) + " | |")


def served(page):
    """Reading mode served a reading page (not the declutter page as its fallback)."""
    return not (page.get("reader") or "fallback").startswith("fallback")


def rates(rows, flag, keep=lambda page: True):
    low = [r for r in rows.values() if r[2] < LOW and keep(r[1])]
    high = [r for r in rows.values() if r[2] > HIGH and keep(r[1])]
    lf = sum(1 for r in low if flag(r[1]))
    hf = sum(1 for r in high if flag(r[1]))
    return lf, len(low), hf, len(high)


def fmt(lf, ln, hf, hn):
    a = lf / ln if ln else 0.0
    b = hf / hn if hn else 0.0
    ok = "ok" if (a >= 0.5 or not ln) and b <= 0.05 else "--"
    return f"{lf}/{ln} = {a:.2f}, {hf}/{hn} = {b:.3f} {ok}"


def share(page):
    page_prose = page.get("page_prose") or 0
    return (page.get("kept_prose") or 0) / page_prose if page_prose else 1.0


def calibrate(all_rows):
    notice = lambda p: bool(p.get("unsure"))  # noqa: E731
    told = lambda p: bool(p.get("unsure")) or not served(p)  # noqa: E731
    print("\nunsure (pages F1 < 0.3 flagged; pages F1 > 0.8 flagged), three ways of counting:")
    print("| set | reading pages only: notice | all pages: notice | all pages: notice or fallback note |")
    print("|---|---|---|---|")
    for name, rows in all_rows.items():
        print(f"| {name} | {fmt(*rates(rows, notice, served))} | {fmt(*rates(rows, notice))} | {fmt(*rates(rows, told))} |")
    print("\nthe share rule alone (the shipped flag adds: a product or collection kept >= 2500 prose chars),")
    print("reading pages only: unsure if kept_prose / page_prose < S and page_prose >= P")
    print("| S | P | " + " | ".join(all_rows) + " |")
    print("|" + "---|" * (2 + len(all_rows)))
    for s in (0.2, 0.3, 0.4, 0.5):
        for p in (300, 600, 1000):
            def flag(page, s=s, p=p):
                return (page.get("page_prose") or 0) >= p and share(page) < s
            cells = " | ".join(fmt(*rates(rows, flag, served)) for rows in all_rows.values())
            print(f"| {s} | {p} | {cells} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--pith", default=str(ROOT / "target" / "fast" / "pith"))
    ap.add_argument("--no-run", action="store_true", help="reuse OUT's JSON")
    ap.add_argument("--sets", default="scrapinghub,readability,wcxb")
    a = ap.parse_args()
    sets = a.sets.split(",")
    if not a.no_run:
        for s in sets:
            run(a.pith, s, a.out)
    all_rows = {s: load(s, a.out) for s in sets}
    if "wcxb" in all_rows:
        confusion(all_rows["wcxb"])
    calibrate(all_rows)


if __name__ == "__main__":
    main()
