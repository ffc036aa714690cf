#!/usr/bin/env python3
"""Pieces of scripts/gates.sh: the loopback origin, the serial client and the budget check.

    gates.py origin --pages DIR --list FILE --port-file FILE
        Serves each page of FILE (names under DIR, *.html or *.html.gz) at /p/NAME on
        127.0.0.1 (a free port, written to --port-file), HTTP/1.1 with keep-alive:
        gzip (level 6, made at start) to a request whose Accept-Encoding names gzip, else
        identity; Content-Length, Last-Modified 30 days back and an ETag, so a shared cache
        keeps the page fresh for days by heuristic; `Vary: Accept-Encoding`.
    gates.py client --proxy HOST:PORT --origin HOST:PORT --list FILE [--gzip] [--rounds N]
                    [--expect-hit] [--expect-gzip]
        One connection, one request at a time: every page of FILE once per round through
        the proxy (absolute-URI request line), each response read whole and checked
        (200; X-Cache: HIT with --expect-hit; Content-Encoding: gzip with --expect-gzip).
        Prints the number of requests.
    gates.py check --budgets FILE --measured FILE [--inflate PCT]
        Compares measured figures (lines `KIND PATH VALUE`, per request) with the budgets;
        exit 1 when one is above its budget. A budget is a median plus a margin; a figure more
        than the margin below that median is reported with the budget to write instead. --inflate raises every figure by PCT percent
        first (what `gates.sh --inflate 3` uses to show that a 3% rise fails).
    gates.py self-test --budgets FILE
        Checks the comparison itself on the budget file: every figure at its budget passes,
        any one figure 3% above fails, 3% above the median of an instruction budget fails, one
        more than the margin below the median passes and says so, a figure without a budget
        fails.
    gates.py stats FILE...
        The noise study: per kind and path, median, min, max and spread ((max-min)/median)
        over the measured files given (one per run).
"""

import argparse
import email.utils
import gzip
import hashlib
import http.client
import http.server
import os
import statistics
import sys
import time
import tomllib

KINDS = ("instructions", "syscalls")


# ---------------------------------------------------------------------------------------------
# origin


def load_pages(folder, listing):
    pages = {}
    with open(listing, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()]
    for name in names:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                body = f.read()
        else:
            with gzip.open(path + ".gz", "rb") as f:
                body = f.read()
        pages["/p/" + name] = (body, gzip.compress(body, compresslevel=6, mtime=0))
    return pages


def run_origin(args):
    pages = load_pages(args.pages, args.list)
    modified = email.utils.formatdate(time.time() - 30 * 86400, usegmt=True)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            page = pages.get(self.path)
            if page is None:
                self.send_error(404)
                return
            accept = self.headers.get("Accept-Encoding", "").lower()
            zipped = "gzip" in accept
            body = page[1] if zipped else page[0]
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Last-Modified", modified)
            self.send_header("ETag", '"%s"' % hashlib.sha1(page[0]).hexdigest()[:16])
            self.send_header("Vary", "Accept-Encoding")
            if zipped:
                self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, args.port_file)
    server.serve_forever()


# ---------------------------------------------------------------------------------------------
# client


def run_client(args):
    host, port = args.proxy.rsplit(":", 1)
    with open(args.list, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()]
    conn = http.client.HTTPConnection(host, int(port), timeout=args.timeout)
    headers = {"Host": args.origin, "User-Agent": "pith-gates/1", "Accept": "text/html,*/*"}
    if args.gzip:
        headers["Accept-Encoding"] = "gzip"
    count = 0
    for _ in range(args.rounds):
        for name in names:
            url = "http://%s/p/%s" % (args.origin, name)
            conn.request("GET", url, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            problem = None
            if resp.status != 200:
                problem = "status %d" % resp.status
            elif args.expect_hit and resp.getheader("X-Cache", "") != "HIT":
                problem = "X-Cache %r, not HIT" % resp.getheader("X-Cache")
            elif args.expect_gzip and resp.getheader("Content-Encoding", "") != "gzip":
                problem = "Content-Encoding %r, not gzip" % resp.getheader("Content-Encoding")
            elif not body:
                problem = "empty body"
            if problem:
                sys.exit("gates.py client: %s: %s" % (url, problem))
            count += 1
    conn.close()
    print(count)


# ---------------------------------------------------------------------------------------------
# budgets


def read_budgets(path):
    """{kind: (default margin, {path: budget}, {path: margin})}. A path's entry is its budget,
    or `{ budget = N, margin = M }` for a path whose spread needs a margin of its own."""
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    budgets = {}
    for kind in KINDS:
        table = raw.get(kind, {})
        margin = float(table.get("margin", 0))
        figures, margins = {}, {}
        for key, value in table.items():
            if key == "margin":
                continue
            if isinstance(value, dict):
                figures[key] = float(value["budget"])
                margins[key] = float(value.get("margin", margin))
            else:
                figures[key] = float(value)
                margins[key] = margin
        budgets[kind] = (margin, figures, margins)
    return budgets


def read_measured(path):
    measured = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] in KINDS:
                measured[(parts[0], parts[1])] = float(parts[2])
    return measured


def show(value):
    """A figure as the budget file writes it: whole instructions, system calls to a tenth."""
    return "%.0f" % value if value >= 1000 else "%.2f" % value


def compare(budgets, measured):
    """Returns (failures, lowered, lines): figures above budget, figures more than the margin
    below it, and one line of text per figure."""
    failures, lowered, lines = [], [], []
    for (kind, path), value in sorted(measured.items()):
        _, figures, margins = budgets[kind]
        budget = figures.get(path)
        margin = margins.get(path, 0)
        if budget is None:
            failures.append((kind, path))
            lines.append("FAIL  %-12s %-10s %12s  no budget in the file" % (kind, path, show(value)))
            continue
        change = (value - budget) / budget
        if value > budget:
            verdict = "FAIL"
            failures.append((kind, path))
            note = "above its budget %s by %+.2f%%" % (show(budget), 100 * change)
        elif value < budget / (1 + margin) * (1 - margin):
            # More than the margin below the median the budget was set from.
            verdict = "LOWER"
            lowered.append((kind, path, value))
            note = "%.2f%% below its budget %s: lower the budget to %s" % (
                -100 * change, show(budget), show(value * (1 + margin)))
        else:
            verdict = "ok"
            note = "budget %s (%+.2f%%)" % (show(budget), 100 * change)
        lines.append("%-5s %-12s %-10s %12s  %s" % (verdict, kind, path, show(value), note))
    return failures, lowered, lines


def run_check(args):
    budgets = read_budgets(args.budgets)
    measured = read_measured(args.measured)
    if not measured:
        sys.exit("gates.py check: no figures in %s" % args.measured)
    if args.inflate:
        measured = {k: v * (1 + args.inflate / 100) for k, v in measured.items()}
        print("gates: every figure raised by %g%% (--inflate)" % args.inflate)
    failures, lowered, lines = compare(budgets, measured)
    print("\n".join(lines))
    if lowered:
        print("gates: %d figure(s) more than the margin below budget; put the new figures in %s"
              " in this change:" % (len(lowered), args.budgets))
        for kind, path, value in lowered:
            margin = budgets[kind][2][path]
            print("  [%s] %s = %s" % (kind, path, show(value * (1 + margin))))
    if failures:
        print("gates: FAILED: %s above budget. A change that costs more must raise the budget"
              " in %s and say why in its commit message." % (
                  ", ".join("%s/%s" % f for f in failures), args.budgets))
        return 1
    print("gates: all figures within budget")
    return 0


def run_self_test(args):
    budgets = read_budgets(args.budgets)
    at_budget = {(kind, path): value for kind in KINDS for path, value in budgets[kind][1].items()}
    assert at_budget, "no budgets to test"
    failures, lowered, _ = compare(budgets, at_budget)
    assert not failures and not lowered, "figures at their budget must pass quietly"
    for key in at_budget:
        risen = dict(at_budget)
        risen[key] = at_budget[key] * 1.03
        failures, _, _ = compare(budgets, risen)
        assert failures == [key], "a 3%% rise of %s/%s must fail, got %r" % (key + (failures,))
        fallen = dict(at_budget)
        margin = budgets[key[0]][2][key[1]]
        fallen[key] = at_budget[key] / (1 + margin) * (1 - margin - 0.01)
        failures, lowered, _ = compare(budgets, fallen)
        assert not failures and [k[:2] for k in lowered] == [key], "a fall past the margin must be reported"
    # The budget is the median plus the margin: a rise of 3% over the median must fail for
    # instructions, whose margin is below 3%.
    for path, budget in budgets["instructions"][1].items():
        median = budget / (1 + budgets["instructions"][2][path])
        failures, _, _ = compare(budgets, {("instructions", path): median * 1.03})
        assert failures, "3%% over the median of instructions/%s must fail" % path
    missing = dict(at_budget)
    missing[("instructions", "no-such-path")] = 1.0
    assert compare(budgets, missing)[0], "a figure without a budget must fail"
    print("gates self-test: %d figures; at budget pass, 3%% over budget fails, 3%% over the median"
          " of instructions fails, below the margin is reported" % len(at_budget))
    return 0


def run_stats(args):
    runs = [read_measured(p) for p in args.files]
    keys = sorted(set().union(*runs))
    print("| kind | path | runs | median | min | max | spread (max-min)/median |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for key in keys:
        values = [r[key] for r in runs if key in r]
        med = statistics.median(values)
        spread = (max(values) - min(values)) / med if med else 0
        print("| %s | %s | %d | %.1f | %.1f | %.1f | %.3f%% |" % (
            key[0], key[1], len(values), med, min(values), max(values), 100 * spread))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("origin")
    p.add_argument("--pages", required=True)
    p.add_argument("--list", required=True)
    p.add_argument("--port-file", required=True)
    p = sub.add_parser("client")
    p.add_argument("--proxy", required=True)
    p.add_argument("--origin", required=True)
    p.add_argument("--list", required=True)
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--expect-hit", action="store_true")
    p.add_argument("--expect-gzip", action="store_true")
    p = sub.add_parser("check")
    p.add_argument("--budgets", required=True)
    p.add_argument("--measured", required=True)
    p.add_argument("--inflate", type=float, default=0)
    p = sub.add_parser("self-test")
    p.add_argument("--budgets", required=True)
    p = sub.add_parser("stats")
    p.add_argument("files", nargs="+")
    args = parser.parse_args()
    for name in ("proxy", "origin"):
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.startswith("127."):
            sys.exit("gates.py: --%s must be on loopback (127.x.x.x)" % name)
    handler = {"origin": run_origin, "client": run_client, "check": run_check,
               "self-test": run_self_test, "stats": run_stats}[args.cmd]
    sys.exit(handler(args) or 0)


if __name__ == "__main__":
    main()
