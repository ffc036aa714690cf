#!/usr/bin/env python3
"""Fault injector of the soak test: asks pith for every fault, over and over, until a deadline.

Each case is one request (curl, with --max-time) or one batch of raw connections (slowloris,
idle) sent to one of pith's listeners, and a check of its outcome: the status pith must answer,
or a clean abort of a response whose head was already sent (curl exit 18 or 56, never a
timeout and never a short body that ends as if whole). Origin-side faults come from
fault_origin.py; client-side faults (oversized heads, slowloris, CONNECT to a closed or
forbidden port) are made here. Every attempt is one JSON line in --out:

    {"t": start, "t_end": end, "case": name, "listener": name, "ok": bool, "why": text,
     "got": {status, connect_status, exit, size, secs, headers, body_head, stderr, ...}}

Several workers (--workers) run cases at once, round-robin over the list, so stalls overlap
with everything else. Nothing runs past --until (plus the longest case's own timeout).

    faults.py --listeners declutter=127.0.0.1:18121,reader=127.0.0.1:18122,pass=127.0.0.1:18123 \
              --origin 127.0.0.1:18131 --nginx 127.0.0.1:18080 --closed-port 18139 \
              --header-timeout 5 --body-idle 3 --response-timeout 5 --bomb-wire-len N \
              --until EPOCH --out faults.jsonl [--workers 3] [--list]
"""

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable

ABORT_EXITS = {18, 56}  # curl: partial file; failure receiving data (reset)

# --- outcomes -------------------------------------------------------------------------------


def curl(proxy, url, max_time, extra=(), workdir="/tmp", proxytunnel=False):
    """One request through `proxy`; returns what came back (status, exit, size, headers...)."""
    body_path = os.path.join(workdir, "body")
    head_path = os.path.join(workdir, "head")
    for p in (body_path, head_path):
        if os.path.exists(p):
            os.unlink(p)
    cmd = ["curl", "-s", "-S", "--max-time", str(max_time), "-x", "http://" + proxy,
           "-o", body_path, "-D", head_path,
           "-w", "%{http_code} %{http_connect} %{size_download} %{time_total}"]
    if proxytunnel:
        cmd.append("-p")
    cmd += list(extra) + [url]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=max_time + 10)
        exit_code, out, err = proc.returncode, proc.stdout.decode(), proc.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        exit_code, out, err = -1, "000 000 0 0", "curl did not stop by itself"
    fields = (out.split() + ["000", "000", "0", "0"])[:4]
    headers = parse_heads(head_path)
    body = b""
    if os.path.exists(body_path):
        with open(body_path, "rb") as f:
            body = f.read(4 << 20)
    return {"status": int(fields[0]), "connect_status": int(fields[1]), "exit": exit_code,
            "size": int(float(fields[2])), "secs": round(time.time() - t0, 3), "headers": headers,
            "body": body, "stderr": err.strip()[:300], "cmd": " ".join(c if len(c) < 200 else c[:60] + "...(%d bytes)" % len(c) for c in cmd)}


def parse_heads(path):
    """The last response head curl wrote (a CONNECT's own head comes first)."""
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    if not blocks:
        return {}
    headers = {}
    for line in blocks[-1].split("\n")[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers


def status_is(code, marker=None):
    """The response is `code`, whole (curl exit 0), and holds `marker` when given."""
    def check(got):
        if got["status"] != code or got["exit"] != 0:
            return False, "want %d whole, got status %d, curl exit %d" % (code, got["status"], got["exit"])
        if marker and marker.encode() not in got["body"]:
            return False, "status %d but the body lacks %r" % (code, marker)
        return True, "%d" % code
    return check


def aborted(allow_502=False):
    """A streamed response whose head (200) went out and whose body was then cut off by pith:
    the client sees the transfer fail (curl 18/56), not a timeout and not a clean end. With
    allow_502, a 502 is as good (the origin's reset can discard its head before pith reads it)."""
    def check(got):
        if allow_502 and got["status"] == 502 and got["exit"] == 0:
            return True, "502"
        if got["status"] == 200 and got["exit"] in ABORT_EXITS:
            return True, "200 aborted (curl %d)" % got["exit"]
        return False, "want 200 then an aborted body, got status %d, curl exit %d, %d bytes" % (
            got["status"], got["exit"], got["size"])
    return check


def whole_page(marker=None):
    """A hostile page served whole: 200, curl exit 0, Content-Length equal to what came, and
    the marker text kept (when given)."""
    def check(got):
        length = got["headers"].get("content-length")
        if got["status"] != 200 or got["exit"] != 0:
            return False, "want 200 whole, got status %d, curl exit %d" % (got["status"], got["exit"])
        if length is not None and int(length) != got["size"]:
            return False, "Content-Length %s but %d bytes came" % (length, got["size"])
        if marker and marker.encode() not in got["body"]:
            return False, "the page lost %r (x-pith-fallback: %s)" % (marker, got["headers"].get("x-pith-fallback"))
        return True, "200 whole, %d bytes%s" % (got["size"], ", fallback" if "x-pith-fallback" in got["headers"] else "")
    return check


def passed_through(wire_len):
    """A response pith must neither decode nor rewrite: 200, exactly the origin's bytes, the
    origin's Content-Encoding kept, no x-pith header."""
    def check(got):
        h = got["headers"]
        if got["status"] != 200 or got["exit"] != 0:
            return False, "want 200 whole, got status %d, curl exit %d, %d bytes" % (got["status"], got["exit"], got["size"])
        if got["size"] != wire_len:
            return False, "want the origin's %d bytes, got %d" % (wire_len, got["size"])
        if h.get("content-encoding") != "gzip" or "x-pith" in h:
            return False, "rewritten or re-encoded: content-encoding=%s x-pith=%s" % (h.get("content-encoding"), h.get("x-pith"))
        return True, "200 passed through, %d bytes" % got["size"]
    return check


def not_smuggled(got):
    if got["status"] != 200 or got["exit"] != 0:
        return False, "want 200, got status %d, curl exit %d" % (got["status"], got["exit"])
    if b"SMUGGLED" in got["body"] or b"promised" not in got["body"]:
        return False, "the body is not exactly the promised bytes: %r" % got["body"][:120]
    return True, "200, %d promised bytes only" % got["size"]


def connect_refused(code):
    def check(got):
        if got["connect_status"] != code:
            return False, "want CONNECT answered %d, got %d (curl exit %d)" % (code, got["connect_status"], got["exit"])
        return True, "CONNECT %d" % code
    return check

# --- raw-connection faults ------------------------------------------------------------------


async def hold_open(addr, n, drip, bound):
    """Opens n connections; with `drip`, sends a request head one byte per second (slowloris),
    else nothing. Returns per connection (how it ended, seconds after connect)."""
    host, port = addr.rsplit(":", 1)

    async def one(i):
        loop = asyncio.get_running_loop()
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 5)
        except (OSError, asyncio.TimeoutError) as e:
            return ("connect-failed:%s" % type(e).__name__, 0.0)
        t0 = loop.time()
        try:
            if drip:
                writer.write(b"GET http://127.0.0.1:18080/tiny.html HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow-%d: " % i)
                await writer.drain()
            while loop.time() - t0 < bound:
                try:
                    data = await asyncio.wait_for(reader.read(4096), 1.0)
                except asyncio.TimeoutError:
                    if drip:
                        writer.write(b"a")
                        await writer.drain()
                    continue
                if not data:
                    return ("closed", loop.time() - t0)
                return ("answered:" + data.split(b"\r\n", 1)[0].decode("latin-1")[:40], loop.time() - t0)
            return ("still-open", loop.time() - t0)
        except ConnectionError:
            return ("reset", loop.time() - t0)
        finally:
            writer.close()

    return await asyncio.gather(*(one(i) for i in range(n)))


def held_connections(n, drip, header_timeout):
    """Runner for slowloris/idle: each connection must be ended by pith (closed, reset, or a
    4xx answer) after at least half the header timeout and within it plus 4 s."""
    bound = header_timeout + 4

    def run(case, proxy, workdir):
        t0 = time.time()
        ends = asyncio.run(hold_open(proxy, n, drip, bound))
        kinds = {}
        for kind, _ in ends:
            kinds[kind] = kinds.get(kind, 0) + 1
        secs = [round(s, 2) for _, s in ends]
        return {"status": 0, "connect_status": 0, "exit": 0, "size": 0, "secs": round(time.time() - t0, 3),
                "headers": {}, "body": b"", "stderr": "", "ends": kinds,
                "end_secs": [min(secs), max(secs)], "cmd": "%d raw connections to %s, drip=%s" % (n, proxy, drip)}

    def check(got):
        bad = {k: v for k, v in got["ends"].items()
               if not (k in ("closed", "reset") or k.startswith("answered:HTTP/1.1 4"))}
        lo, hi = got["end_secs"]
        if bad:
            return False, "connections ended as %s" % got["ends"]
        if lo < header_timeout / 2 or hi > bound:
            return False, "ended after %.1f-%.1f s, want %.1f-%.1f s" % (lo, hi, header_timeout / 2, bound)
        return True, "%d closed by pith after %.1f-%.1f s" % (n, lo, hi)

    return run, check

# --- the cases ------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    listener: str
    check: Callable
    path: str = ""                       # on the fault origin
    url: str = ""                        # instead of path
    extra: tuple = ()
    max_time: float = 30.0
    proxytunnel: bool = False
    run: Callable = None                 # instead of curl
    then: "Case" = None                  # a second request checked after the first


def cases(a):
    page = ("declutter", "reader")
    alls = ("declutter", "reader", "pass")
    o = a.origin
    out = []
    for l in alls:
        out.append(Case("control-ok", l, status_is(200, "OK-MARKER"), "/ok"))
    for l in page:
        out += [
            Case("reset-page", l, status_is(502), "/reset/html"),
            Case("short-page", l, status_is(502), "/short/html"),
            Case("stall-body-page", l, status_is(504), "/stall-body/html", max_time=a.body_idle + 15),
            Case("badchunk-page", l, status_is(502), "/badchunk/html"),
            Case("badgzip-page", l, status_is(502), "/badgzip"),
            Case("truncgzip-page", l, status_is(502), "/truncgzip"),
            Case("deep-page", l, whole_page("DEEP-MARKER" if l == "declutter" else None), "/deep", max_time=60),
            Case("attrs-page", l, whole_page("ATTR-MARKER" if l == "declutter" else None), "/attrs", max_time=60),
        ]
    for l in ("declutter", "pass"):
        out += [
            Case("reset-stream", l, aborted(allow_502=True), "/reset/bin"),
            Case("short-stream", l, aborted(), "/short/bin"),
            Case("stall-body-stream", l, aborted(), "/stall-body/bin", max_time=a.body_idle + 15),
            Case("badchunk-stream", l, aborted(), "/badchunk/bin"),
            Case("excess-bytes", l, not_smuggled, "/excess", then=Case("after-excess", l, status_is(200, "OK-MARKER"), "/ok")),
        ]
    out += [
        Case("reset-page", "pass", aborted(allow_502=True), "/reset/html"),
        Case("short-page", "pass", aborted(), "/short/html"),
        Case("badgzip-page", "pass", status_is(200), "/badgzip"),
    ]
    for l in alls:
        out += [
            Case("stall-head", l, status_is(504), "/stall-head", max_time=a.response_timeout + 15),
            Case("bighead-response", l, status_is(502), "/bighead"),
            Case("gzip-bomb", l, passed_through(a.bomb_wire_len), "/bomb", max_time=120),
            Case("header-too-big", l, status_is(431), url="http://%s/tiny.html" % a.nginx,
                 extra=("-H", "X-Big: " + "b" * 70000)),
            Case("too-many-headers", l, status_is(431), url="http://%s/tiny.html" % a.nginx,
                 extra=tuple(itertools.chain.from_iterable(("-H", "X-H%d: v" % i) for i in range(150)))),
        ]
    slow_run, slow_check = held_connections(16, True, a.header_timeout)
    idle_run, idle_check = held_connections(16, False, a.header_timeout)
    out += [
        Case("gzip-bomb-gzip-client", "declutter", passed_through(a.bomb_wire_len), "/bomb",
             extra=("-H", "Accept-Encoding: gzip, br"), max_time=120),
        Case("slowloris", "declutter", slow_check, run=slow_run),
        Case("slowloris", "pass", slow_check, run=slow_run),
        Case("idle-connections", "reader", idle_check, run=idle_run),
        Case("connect-closed-port", "pass", connect_refused(502), url="http://127.0.0.1:%d/" % a.closed_port,
             proxytunnel=True, max_time=15),
        Case("connect-closed-port", "declutter", connect_refused(502), url="http://127.0.0.1:%d/" % a.closed_port,
             proxytunnel=True, max_time=15),
        Case("connect-forbidden-port", "pass", connect_refused(403), url="http://127.0.0.1:25/",
             proxytunnel=True, max_time=15),
    ]
    for c in out:
        if c.path:
            c.url = "http://%s%s" % (o, c.path)
        if c.then and c.then.path:
            c.then.url = "http://%s%s" % (o, c.then.path)
    return out


def attempt(case, listeners, workdir):
    proxy = listeners[case.listener]
    if case.run:
        got = case.run(case, proxy, workdir)
    else:
        got = curl(proxy, case.url, case.max_time, case.extra, workdir, case.proxytunnel)
    ok, why = case.check(got)
    if ok and case.then:
        got2 = curl(proxy, case.then.url, case.then.max_time, (), workdir)
        ok, why2 = case.then.check(got2)
        why = "%s; then %s" % (why, why2)
        if not ok:
            got = dict(got2, first=why)
    return ok, why, got


def record(got, ok):
    """What goes into the log: everything but the body, of which only the start (when the
    outcome was not the expected one)."""
    rec = {k: v for k, v in got.items() if k != "body"}
    if not ok:
        rec["body_head"] = got.get("body", b"")[:300].decode("utf-8", errors="replace")
    else:
        rec.pop("stderr", None)
        rec["headers"] = {k: v for k, v in got.get("headers", {}).items()
                          if k in ("content-length", "content-encoding", "x-pith-fallback", "x-cache")}
    return rec


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listeners", required=True)
    p.add_argument("--origin", required=True)
    p.add_argument("--nginx", default="127.0.0.1:18080")
    p.add_argument("--closed-port", type=int, required=True)
    p.add_argument("--header-timeout", type=float, default=5)
    p.add_argument("--body-idle", type=float, default=3)
    p.add_argument("--response-timeout", type=float, default=5)
    p.add_argument("--bomb-wire-len", type=int, required=True)
    p.add_argument("--until", type=float, default=0)
    p.add_argument("--out", default="/dev/stdout")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.add_argument("--once", action="store_true", help="run every case once, then exit")
    a = p.parse_args()
    listeners = dict(kv.split("=", 1) for kv in a.listeners.split(","))
    for addr in list(listeners.values()) + [a.origin, a.nginx]:
        if not addr.startswith("127."):
            raise SystemExit("faults.py: %s is not a loopback address" % addr)
    all_cases = cases(a)
    if a.list:
        for c in all_cases:
            print(c.name, c.listener, c.url or "(raw connections)")
        return
    lock = threading.Lock()
    order = iter(all_cases) if a.once else itertools.cycle(all_cases)
    out = open(a.out, "a", buffering=1)

    def worker():
        with tempfile.TemporaryDirectory(prefix="pith-soak-fault-") as workdir:
            while a.once or time.time() < a.until:
                with lock:
                    case = next(order, None)
                if case is None:
                    return
                t0 = time.time()
                ok, why, got = attempt(case, listeners, workdir)
                line = json.dumps({"t": round(t0, 3), "t_end": round(time.time(), 3), "case": case.name,
                                   "listener": case.listener, "ok": ok, "why": why, "got": record(got, ok)})
                with lock:
                    out.write(line + "\n")

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(a.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
