#!/usr/bin/env python3
"""Summary and verdict of one soak run (the run dir scripts/soak.sh fills).

Reads final.env, phases.tsv, load/*.out (one tools/loadgen line per load run), faults.jsonl and
samples.tsv; prints the load per phase, the faults per case (with the details of any that did
not go as expected), RSS/fds/CPU over time, and the verdict. Exit status 0 when every check of
the verdict passes, 1 otherwise.

    report.py RUN_DIR
"""

import collections
import json
import os
import re
import shlex
import statistics
import sys

RSS_TOLERANCE = 0.10   # second-half RSS median may exceed the first half's by this fraction
FD_SLACK = 2           # fds allowed above the baseline once the load has drained


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.rstrip("\n").partition("=")
            if sep:
                env[key] = " ".join(shlex.split(value)) if value else ""
    return env


def read_phases(run):
    phases = []
    path = os.path.join(run, "phases.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                phases.append({"name": parts[0], "cycle": int(parts[1]), "t0": float(parts[2]),
                               "t1": float(parts[3]), "specs": parts[4:]})
    return phases


def spec_key(spec):
    """"listener:conc:gzip:path:entry" -> ("listener", "entry")."""
    parts = spec.split(":") + ["", "", "", "", ""]
    return parts[0], parts[4] or "proxy"


def read_load(run, phase):
    """The load runs of one phase: parsed loadgen lines, or the error text in place of one."""
    runs = []
    for spec in phase["specs"]:
        listener, entry = spec_key(spec)
        path = os.path.join(run, "load", "%s.%d.%s.%s.out" % (phase["name"], phase["cycle"], listener, entry))
        text = open(path).read() if os.path.exists(path) else "(no output)"
        line = next((l for l in text.splitlines() if l.startswith("label=")), None)
        if line is None:
            runs.append({"listener": listener, "spec": spec, "failed": text.strip()[-300:]})
            continue
        kv = dict(item.split("=", 1) for item in line.split())
        errors = int(kv["err"]) + int(kv["err_read"]) + int(kv["status_err"])
        by_source = []
        for item in kv.get("by_source", "").split(","):
            if item:
                ip, reqs, errs = item.split(":")
                by_source.append((ip, int(reqs), int(errs)))
        runs.append({"listener": listener, "entry": entry, "spec": spec, "conc": kv["conc"], "gzip": kv["gzip"],
                     "page": kv["page"], "requests": int(kv["requests"]), "rps": float(kv["rps"]), "errors": errors,
                     "err": kv["err"], "err_read": kv["err_read"], "status_err": kv["status_err"],
                     "ka_closed": int(kv.get("ka_closed", "0")), "statuses": kv.get("statuses", "-"),
                     "by_source": by_source, "p50": float(kv["p50_ms"]), "p99": float(kv["p99_ms"]),
                     "phase": phase["name"]})
    return runs


def read_faults(run):
    path = os.path.join(run, "faults.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def read_samples(run):
    rows = []
    path = os.path.join(run, "samples.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 12:
                    continue
                num = lambda v: None if v == "NA" else float(v)
                rows.append({"t": float(p[0]), "rss": int(p[1]), "hwm": int(p[2]), "fds": int(p[3]),
                             "threads": int(p[4]), "ticks": int(p[5]), "load1": float(p[6]),
                             "cache_bytes": num(p[7]), "cache_entries": num(p[8]),
                             "evictions": num(p[9]), "hits": num(p[10]), "misses": num(p[11])})
    return rows


def mib(kb):
    return "%.1f" % (kb / 1024.0)


def table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)] if rows else [len(h) for h in header]
    line = lambda r: "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |"
    out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    return "\n".join(out + [line(r) for r in rows])


def phase_of(t, phases):
    for ph in phases:
        if ph["t0"] <= t < ph["t1"]:
            return "%s/%d" % (ph["name"], ph["cycle"])
    return "after" if phases and t >= phases[-1]["t1"] else "before"


def attack_checks(run, env, phases, samples, checks):
    """The attack phase: healthy clients' p99, pith's RSS against the rewrite budget, and what
    became of the non-readers, idle tunnels and big pages (attack.json)."""
    if int(env.get("attack_secs", "0") or 0) == 0:
        return
    path = os.path.join(run, "attack.json")
    attack = json.load(open(path)) if os.path.exists(path) else None
    print("## Attack phase\n")
    healthy = [r for ph in phases if ph["name"] == "attack" for r in read_load(run, ph)]
    limit_p99 = float(env.get("p99_ms", "100"))
    p99s = ["%s %s ms (%s errors)" % (r["listener"], r.get("p99", "-"), r.get("errors", "failed")) for r in healthy]
    p99_ok = bool(healthy) and all("failed" not in r and r["errors"] == 0 and r["p99"] <= limit_p99 for r in healthy)
    checks.append(("attack: healthy clients' p99 <= %.0f ms with 0 errors: %s" % (limit_p99, ", ".join(p99s) or "no load run"), p99_ok))

    budget = int(env.get("budget_bytes", "0")) // 1024
    limit_kb = budget + 64 * 1024
    peak_attack = env.get("rss_attack_peak_kb", "NA")
    peak_run = max([s["hwm"] for s in samples] + [s["rss"] for s in samples] + [0])
    peaks = [peak_run] + ([int(peak_attack)] if peak_attack != "NA" else [])
    window = [s for ph in phases if ph["name"] == "attack" for s in samples if ph["t0"] <= s["t"] < ph["t1"]]
    print("RSS: peak %s MiB during the attack phase (VmHWM), %s MiB over the whole run; at the end of the attack phase %s MiB; "
          "limit %s MiB (rewrite_memory_bytes %s MiB + 64 MiB)\n" % (
              mib(int(peak_attack)) if peak_attack != "NA" else "NA", mib(peak_run),
              mib(window[-1]["rss"]) if window else "NA", mib(limit_kb), mib(budget)))
    checks.append(("attack: RSS <= rewrite_memory_bytes + 64 MiB = %s MiB (peak %s MiB in the attack phase, %s MiB over the run)"
                   % (mib(limit_kb), mib(int(peak_attack)) if peak_attack != "NA" else "NA", mib(peak_run)),
                   peak_attack != "NA" and max(peaks) <= limit_kb))
    if attack is None:
        checks.append(("attack: attack.py reported (no attack.json)", False))
        return
    big = attack["big"]
    closed, still, oldest = attack["closed_by_proxy"], attack["still_open"], attack.get("oldest_open_secs", {})
    print(table(["attackers", "opened", "refused at connect", "closed by pith", "median / max s to close", "open at the end (oldest s)"], [
        ["%d non-readers of /huge (20 MiB)" % attack["nonreaders"], attack["opened"]["nonreader"], attack["refused"]["nonreader"],
         closed["nonreader"]["n"], "%s / %s" % (closed["nonreader"]["median"], closed["nonreader"]["max"]),
         "%d (%s)" % (still["nonreader"], oldest.get("nonreader"))],
        ["%d idle CONNECT tunnels" % attack["tunnels"], attack["opened"]["tunnel"], attack["refused"]["tunnel"],
         closed["tunnel"]["n"], "%s / %s" % (closed["tunnel"]["median"], closed["tunnel"]["max"]),
         "%d (%s)" % (still["tunnel"], oldest.get("tunnel"))]]))
    print("\nBig pages (%d clients, /dense15 and /text15 in turn): %d responses, %d whole, %d rewritten, %d passed over budget, "
          "%d passed otherwise; statuses %s; seconds per page median %s, max %s\n" % (
              attack["big_clients"], big["responses"], big["whole"], big["rewritten"], big["over_budget"], big["passed"],
              big["statuses"], big["secs"]["median"], big["secs"]["max"]))
    for e in big["errors"][:5]:
        print("  big page error: %s" % e)
    slow = big.get("origin_slow", 0)
    checks.append(("attack: every big page answered whole (%d of %d; %d rewritten, %d over budget; %d 504 for the origin's slowness)"
                   % (big["whole"], big["responses"] - slow, big["rewritten"], big["over_budget"], slow),
                   big["whole"] > 0 and big["whole"] == big["responses"] - slow and not big["errors"]))
    if env.get("conn_keys") != "1":
        print("The connection limits were off (this pith does not know them, or --conn-keys off): "
              "non-readers and idle tunnels are reported, not checked.\n")
        return
    write_s = int(env.get("write_timeout_ms", "0")) / 1000.0
    idle_s = int(env.get("tunnel_idle_ms", "0")) / 1000.0
    checks.append(("attack: idle tunnels closed by pith within tunnel_idle_timeout_ms + 5 s (%d closed, max %s s; %d still open)"
                   % (closed["tunnel"]["n"], closed["tunnel"]["max"], still["tunnel"]),
                   closed["tunnel"]["n"] > 0 and still["tunnel"] == 0 and (closed["tunnel"]["max"] or 0) <= idle_s + 5))
    checks.append(("attack: no non-reader held past client_write_timeout_ms + 5 s (%d closed by pith; oldest open at the end %s s)"
                   % (closed["nonreader"]["n"], oldest.get("nonreader")),
                   closed["nonreader"]["n"] > 0 and (oldest.get("nonreader") or 0) <= write_s + 5))


def entry_points(runs):
    """Requests, errors and latency per entry point (listener and way in), over every phase but
    the attack phase (whose healthy p99 is checked apart)."""
    by = collections.OrderedDict()
    for r in runs:
        if r["phase"] != "attack":
            by.setdefault((r["listener"], r["entry"]), []).append(r)
    rows = []
    for (listener, entry), rs in by.items():
        rows.append([listener, entry, sum(r["requests"] for r in rs), sum(r["errors"] for r in rs),
                     sum(r["ka_closed"] for r in rs), "%.1f" % max(r["p50"] for r in rs), "%.1f" % max(r["p99"] for r in rs)])
    print("## Per entry point (worst p50 and p99 of its runs)\n")
    print(table(["listener", "entry", "requests", "errors", "ka closed", "p50 ms", "p99 ms"], rows))
    print()


def address_groups(runs, faults, run):
    """Requests and errors per group of client addresses: healthy clients per listener and
    entry point (each address's own count too), fault probes, attackers."""
    groups = collections.OrderedDict()
    for r in runs:
        key = "healthy %s %s" % (r["listener"], r["entry"])
        g = groups.setdefault(key, {"addrs": collections.Counter(), "reqs": 0, "errs": 0, "conc": 0})
        for ip, reqs, errs in r["by_source"]:
            g["addrs"][ip] += 1
            g["reqs"] += reqs
            g["errs"] += errs
        g["conc"] = max(g["conc"], -(-int(r["conc"]) // max(len(r["by_source"]), 1)))
    rows = [[k, ", ".join(sorted(g["addrs"])), g["conc"], g["reqs"], g["errs"]] for k, g in groups.items()]
    probes = collections.OrderedDict()
    for f in faults:
        p = probes.setdefault(f.get("source", "127.0.0.1"), [0, 0])
        p[0] += 1
        p[1] += 0 if f["ok"] else 1
    if probes:
        rows.append(["fault probes (tries / unexpected)", ", ".join(probes), 1,
                     sum(v[0] for v in probes.values()), sum(v[1] for v in probes.values())])
    path = os.path.join(run, "attack.json")
    if os.path.exists(path):
        a = json.load(open(path))
        rows.append(["attackers (connections opened / refused at connect)", "127.0.0.2-5, .10, .11", "-",
                     a["opened"]["nonreader"] + a["opened"]["tunnel"] + a["big"]["responses"],
                     a["refused"]["nonreader"] + a["refused"]["tunnel"]])
    print("## Per address group (conn/addr = most connections one address held at once; errors as above)\n")
    print(table(["group", "addresses", "conn/addr", "requests", "errors"], rows))
    bad = [(ip, k) for k, g in groups.items() for ip in g["addrs"] if any(
        ip == s and e for r in runs for s, _, e in r["by_source"])]
    if bad:
        print("\nHealthy addresses with errors: %s" % ", ".join("%s (%s)" % (ip, k) for ip, k in bad[:12]))
    print()


def main():
    run = sys.argv[1]
    env = read_env(os.path.join(run, "final.env"))
    phases = read_phases(run)
    faults = read_faults(run)
    samples = read_samples(run)
    start = float(env.get("start", "0"))
    checks = []

    print("# pith soak run\n")
    loads = [s["load1"] for s in samples]
    what = ("a warm-up and %s s of attacks" % env.get("attack_secs") if env.get("only_attacks") == "1"
            else "%s s of load and faults, then %s s of attacks" % (env.get("secs"), env.get("attack_secs", "0")))
    print("binary %s, %s, %s cores; machine load average (1 min) during the run: "
          "min %.2f, mean %.2f, max %.2f; at the end %s\n" % (
              env.get("bin"), what, env.get("nproc"), min(loads or [0]),
              sum(loads) / max(len(loads), 1), max(loads or [0]), env.get("load_end")))

    # --- load ------------------------------------------------------------------------------------
    rows, per_phase, load_errors, failed_runs, all_runs = [], [], 0, [], []
    for ph in phases:
        runs = read_load(run, ph)
        tried = [f for f in faults if ph["t0"] <= f["t"] < ph["t1"]]
        bad = sum(1 for f in tried if not f["ok"])
        reqs = errs = 0
        worst = 0.0
        for r in runs:
            if "failed" in r:
                failed_runs.append((ph["name"], ph["cycle"], r["listener"], r["failed"]))
                rows.append([ph["name"], ph["cycle"], "%s %s" % (r["listener"], r["entry"]), r["spec"], "FAILED", "", "", "", "", ""])
                continue
            reqs += r["requests"]
            errs += r["errors"]
            worst = max(worst, r["p99"])
            rows.append([ph["name"], ph["cycle"], "%s %s" % (r["listener"], r["entry"]),
                         "c=%s/%d addr gz=%s %s" % (r["conc"], len(r["by_source"]), r["gzip"], r["page"]),
                         r["requests"], "%.0f" % r["rps"], "%d (%s/%s/%s)" % (r["errors"], r["err"], r["err_read"], r["status_err"]),
                         r["ka_closed"], "%.1f" % r["p50"], "%.1f" % r["p99"]])
            all_runs.append(r)
        load_errors += errs
        window = [s for s in samples if ph["t0"] <= s["t"] < ph["t1"]]
        per_phase.append([ph["name"], ph["cycle"], "%.0f" % (ph["t1"] - ph["t0"]), reqs, errs, "%.1f" % worst,
                          "%d/%d/%d" % (len(tried), len(tried) - bad, bad),
                          mib(max((s["rss"] for s in window), default=0)),
                          max((s["fds"] for s in window), default=0)])
    print("## Load per run of the load driver (errors = connect+timeout / read / status >= 400; "
          "ka closed = kept-alive connections the server closed before a next request, which was sent again: not errors)\n")
    print(table(["phase", "cycle", "listener entry", "load", "requests", "req/s", "errors", "ka closed", "p50 ms", "p99 ms"], rows))
    print("\n## Per phase (faults: tried / as expected / unexpected, started in the phase)\n")
    print(table(["phase", "cycle", "secs", "requests", "errors", "worst p99 ms", "faults", "RSS max MiB", "fds max"], per_phase))
    total_reqs = sum(r[3] for r in per_phase)
    print("\nTotal: %d requests through pith, %d errors.\n" % (total_reqs, load_errors))
    entry_points(all_runs)
    address_groups(all_runs, faults, run)
    checks.append(("load held: every load run completed, 0 errors on every healthy address (%d requests, %d errors, %d failed runs)"
                   % (total_reqs, load_errors, len(failed_runs)), load_errors == 0 and not failed_runs and total_reqs > 0))

    # --- faults ----------------------------------------------------------------------------------
    by_case = collections.OrderedDict()
    for f in faults:
        by_case.setdefault((f["case"], f["listener"]), []).append(f)
    frows = []
    for (case, listener), fs in sorted(by_case.items()):
        good = [f for f in fs if f["ok"]]
        outcome = collections.Counter(f["why"] for f in good).most_common(1)
        secs = sorted(f["t_end"] - f["t"] for f in fs)
        frows.append([case, listener, len(fs), len(good), len(fs) - len(good),
                      outcome[0][0][:60] if outcome else "-", "%.1f" % secs[len(secs) // 2]])
    print("## Faults (each asked through pith; outcome = the most common expected one)\n")
    print(table(["fault", "listener", "tried", "as expected", "unexpected", "outcome", "median s"], frows))
    unexpected = [f for f in faults if not f["ok"]]
    print("\nTotal: %d faults tried, %d as expected, %d unexpected, %d kinds x listeners.\n"
          % (len(faults), len(faults) - len(unexpected), len(unexpected), len(by_case)))
    if unexpected:
        print("### Unexpected outcomes (up to 3 per fault)\n")
        shown = collections.Counter()
        for f in unexpected:
            key = (f["case"], f["listener"])
            shown[key] += 1
            if shown[key] > 3:
                continue
            print("- %s via %s at +%.0f s: %s" % (f["case"], f["listener"], f["t"] - start, f["why"]))
            print("  got: %s" % json.dumps(f["got"])[:1500])
        print()
    cases_path = os.path.join(run, "cases.txt")
    kinds = set()
    if os.path.exists(cases_path):
        with open(cases_path) as f:
            kinds = {tuple(l.split()[:2]) for l in f if l.strip()}
    missing = sorted(kinds - set(by_case))
    if missing:
        print("Never tried: %s\n" % ", ".join("%s via %s" % k for k in missing))
    expected_kinds = len(kinds)
    only_attacks = env.get("only_attacks") == "1" or env.get("self_test") == "1"
    if not only_attacks:
        checks.append(("faults survived: every fault handled as expected (%d tried, %d unexpected, %d/%d fault x listener kinds tried)"
                       % (len(faults), len(unexpected), len(by_case), expected_kinds),
                       not unexpected and expected_kinds > 0 and not missing))

    # --- RSS over time ---------------------------------------------------------------------------
    print("## pith over time (RSS = VmRSS; CPU = pith's share of one core since the previous sample)\n")
    srows, prev = [], None
    for s in samples:
        cpu = "" if prev is None else "%.0f" % (100.0 * (s["ticks"] - prev["ticks"]) / 100.0 / max(s["t"] - prev["t"], 0.001))
        srows.append(["%+.0f" % (s["t"] - start), phase_of(s["t"], phases), mib(s["rss"]), s["fds"], s["threads"], cpu,
                      "%.2f" % s["load1"], "-" if s["cache_bytes"] is None else "%.0f" % (s["cache_bytes"] / 1024),
                      "-" if s["cache_entries"] is None else "%.0f" % s["cache_entries"],
                      "-" if s["evictions"] is None else "%.0f" % s["evictions"]])
        prev = s
    print(table(["t s", "phase", "RSS MiB", "fds", "threads", "CPU %", "load1", "cache KiB", "entries", "evictions"], srows))
    print()

    halves = []
    for cycle in (1, 2):
        ph = [p for p in phases if p["cycle"] == cycle]
        if ph:
            t0, t1 = ph[0]["t0"], ph[-1]["t1"]
            halves.append([s["rss"] for s in samples if t0 <= s["t"] < t1])
    rss_line = "RSS start %s MiB (before load), " % mib(int(env.get("rss_base_kb", "0")))
    if len(halves) == 2 and halves[0] and halves[1]:
        # A leak raises the level RSS sits at, so each half's median is compared; the single
        # highest sample is where large pages happened to be in flight together, and moved 5-13%
        # between runs of one binary. The maxima are printed beside it.
        m1, m2 = statistics.median(halves[0]), statistics.median(halves[1])
        x1, x2 = max(halves[0]), max(halves[1])
        mid = halves[1][0]
        flat = m2 <= m1 * (1 + RSS_TOLERANCE)
        rss_line += "mid %s MiB (start of cycle 2), end %s MiB (after the drain); median over cycle 1 %s MiB, over cycle 2 %s MiB (%+.1f%%); max %s and %s MiB" % (
            mib(mid), mib(int(env["rss_end_kb"])) if env.get("rss_end_kb", "NA") != "NA" else "NA",
            mib(int(m1)), mib(int(m2)), 100.0 * (m2 - m1) / m1, mib(x1), mib(x2))
    else:
        flat = False
        rss_line += "not enough samples in both cycles"
    print(rss_line + "\n")
    if not only_attacks:
        checks.append(("RSS flat: median over the second half (cycle 2) within %d%% of the median over the first half (cycle 1), warm-up excluded"
                       % (RSS_TOLERANCE * 100), flat))

    attack_checks(run, env, phases, samples, checks)

    cache_max = float(env.get("cache_max_bytes", "0"))
    cache_seen = [s["cache_bytes"] for s in samples if s["cache_bytes"] is not None]
    evictions = max((s["evictions"] or 0 for s in samples), default=0)
    hits = max((s["hits"] or 0 for s in samples), default=0)
    misses = max((s["misses"] or 0 for s in samples), default=0)
    bounded = bool(cache_seen) and max(cache_seen) <= cache_max
    checks.append(("cache bounded: pith_cache_bytes <= max_bytes %d in every sample (max seen %d; %d evictions, %d hits, %d misses)"
                   % (cache_max, max(cache_seen or [0]), evictions, hits, misses), bounded))

    fds_base, fds_end = env.get("fds_base"), env.get("fds_end", "NA")
    fds_ok = fds_end != "NA" and int(fds_end) <= int(fds_base) + FD_SLACK
    checks.append(("fds back to baseline: %s after the load (baseline %s, allowed +%d; %s s to drain; max during the run %d)"
                   % (fds_end, fds_base, FD_SLACK, env.get("drain_secs"), max((s["fds"] for s in samples), default=0)), fds_ok))

    finals = {l: (env.get("final_" + l, "").split() + ["000", "0", "0"])[:3] for l in ("declutter", "reader", "pass")}
    serving = (env.get("alive") == "1" and all(v[0] == "200" and int(v[1]) > 0 for v in finals.values())
               and int(finals["declutter"][2]) > 0 and int(finals["reader"][2]) > 0)
    if env.get("alive") != "1":
        code = int(env.get("pith_exit") or 0)
        how = "killed by signal %d" % (code - 128) if code > 128 else "exit status %d" % code
        last = samples[-1]["t"] - start if samples else 0
        print("pith is gone: %s; its last sample was at %+.0f s.\n" % (how, last))
    checks.append(("still alive and serving %s: %s" % (env.get("final_page"), ", ".join(
        "%s %s (%s bytes%s)" % (l, v[0], v[1], ", x-pith" if v[2] != "0" else "") for l, v in finals.items())), serving))
    panics = int(env.get("panics", "0") or 0)
    checks.append(("no panic in pith's log (%d)" % panics, panics == 0))

    log_path = os.path.join(run, "pith.log")
    if os.path.exists(log_path):
        counts = collections.Counter()
        with open(log_path, errors="replace") as f:
            for line in f:
                m = re.match(r"^\S+\s+(ERROR|WARN|INFO|DEBUG|TRACE)\s+(.*?)(?:\s+[\w.]+=|$)", line.strip())
                if m:
                    counts[(m.group(1), m.group(2))] += 1
        if counts:
            print("## pith's log (lines by level and message)\n")
            print(table(["level", "message", "lines"], [[l, msg[:70], n] for (l, msg), n in counts.most_common(12)]))
            print()

    print("## Verdict\n")
    for text, ok in checks:
        print("- %s %s" % ("PASS" if ok else "FAIL", text))
    passed = all(ok for _, ok in checks)
    print("\nVERDICT: %s" % ("PASS" if passed else "FAIL"))
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
