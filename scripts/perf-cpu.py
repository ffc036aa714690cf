#!/usr/bin/env python3
"""Requests per CPU-second of each proxy, from the raw lines of scripts/perf.sh.

usage: perf-cpu.py RESULTS_FILE

For each proxy, page, protocol, gzip and concurrency: the median over reps of
req/s ÷ (cpu_pct ÷ 100), where cpu_pct is the CPU share of the proxy's own process tree during
that run (utime+stime, 100 = one core; `direct` counts nginx). Beside it the medians of req/s,
CPU %, p50 and p99. A figure per CPU-second moves far less with the machine's other load than
req/s or a ratio to `direct` does, so pith and the peers compare on it.
"""
import statistics
import sys
from collections import defaultdict


def parse(path):
    runs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            kv = {}
            for tok in line.split():
                if "=" in tok:
                    k, v = tok.split("=", 1)
                    kv.setdefault(k, v)
            if "rps" in kv and "FAILED" not in line and " verify " not in f" {line} ":
                runs.append(kv)
    return runs


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, nd=0):
    return "NA" if x is None else f"{x:,.{nd}f}"


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    runs = parse(sys.argv[1])
    groups = defaultdict(list)
    order = []
    for r in runs:
        g = (r["label"], r.get("page", "all"), "https" if r.get("tls") else "http", r.get("gzip", "0"), r.get("conc", "0"))
        if g not in groups:
            order.append(g)
        groups[g].append(r)
    print("Requests per CPU-second of the proxy's own process tree (median over reps of req/s ÷ CPU share):")
    print()
    print("| proxy | page | proto | gzip | conc | reps | req/s | proxy CPU % | req per CPU-second | p50 ms | p99 ms |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for g in sorted(order, key=lambda g: (g[1] != "all", g[1], g[2], g[3], int(g[4] or 0), order.index(g))):
        rs = groups[g]
        per_cpu = []
        for r in rs:
            rps, cpu = num(r.get("rps")), num(r.get("cpu_pct"))
            if rps is not None and cpu:
                per_cpu.append(rps / (cpu / 100))
        print("| %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |" % (
            g[0], g[1], g[2], g[3], g[4], len(rs), fmt(med(num(r["rps"]) for r in rs)),
            fmt(med(num(r.get("cpu_pct")) for r in rs)), fmt(med(per_cpu)),
            fmt(med(num(r.get("p50_ms")) for r in rs), 2), fmt(med(num(r.get("p99_ms")) for r in rs), 2)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
