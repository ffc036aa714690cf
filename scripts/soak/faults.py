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
import re
import subprocess
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable

ABORT_EXITS = {18, 56}  # curl: partial file; failure receiving data (reset)
# Over HTTP/2 (intercepted HTTPS), a stream pith resets after its head is curl's 92 (stream
# error) or 16 (HTTP/2 framing).
H2_ABORT_EXITS = {16, 92}
CA_FILE = None  # pith's CA, trusted for intercepted HTTPS (--pith-ca)

# --- outcomes -------------------------------------------------------------------------------


def gateway_url(listener, url):
    """The URL gateway's address for `url` on `listener` (`/read?url=...`)."""
    return "http://%s/read?url=%s" % (listener, urllib.parse.quote(url, safe=""))


def curl(proxy, url, max_time, extra=(), workdir="/tmp", proxytunnel=False, source=None, gateway=False):
    """One request through `proxy` (or, with `gateway`, to the URL gateway on `proxy`'s own
    address) from `source`; returns what came back (status, exit, size, headers...)."""
    body_path = os.path.join(workdir, "body")
    head_path = os.path.join(workdir, "head")
    for p in (body_path, head_path):
        if os.path.exists(p):
            os.unlink(p)
    cmd = ["curl", "-s", "-S", "--max-time", str(max_time), "-o", body_path, "-D", head_path,
           "-w", "%{http_code} %{http_connect} %{size_download} %{time_total}"]
    if gateway:
        url = gateway_url(proxy, url)
    else:
        cmd += ["-x", "http://" + proxy]
    if source:
        cmd += ["--interface", source]
    if url.startswith("https://") and CA_FILE:
        cmd += ["--cacert", CA_FILE]
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
        if got["status"] == 200 and got["exit"] in ABORT_EXITS | H2_ABORT_EXITS:
            return True, "200 aborted (curl %d)" % got["exit"]
        if got["status"] == 0 and got["exit"] in H2_ABORT_EXITS:
            # HTTP/2: the stream was reset before its HEADERS frame went out (h2 drops a
            # stream's queued frames when it is reset): a failed request, nothing served.
            return True, "stream reset before its head (curl %d)" % got["exit"]
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


async def hold_open(addr, n, drip, bound, source=None):
    """Opens n connections; with `drip`, sends a request head one byte per second (slowloris),
    else nothing. Returns per connection (how it ended, seconds after connect)."""
    host, port = addr.rsplit(":", 1)

    async def one(i):
        loop = asyncio.get_running_loop()
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                host, int(port), local_addr=(source, 0) if source else None), 5)
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

    def run(case, proxy, workdir, source=None):
        t0 = time.time()
        ends = asyncio.run(hold_open(proxy, n, drip, bound, source))
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

# --- ICAP, behind Squid ---------------------------------------------------------------------

ICAP_LOG = None  # Squid's icap_log (--icap-log): "time outcome status body-bytes ms url"
_counter = itertools.count()


def icap_answers(url, wait=4.0):
    """What pith answered Squid for `url` (unique per attempt): [(outcome, ICAP status)]."""
    deadline = time.time() + wait
    while True:
        found = []
        if ICAP_LOG and os.path.exists(ICAP_LOG):
            with open(ICAP_LOG, errors="replace") as f:
                for line in f:
                    p = line.split()
                    if len(p) >= 6 and p[5] == url:
                        found.append((p[1], p[2]))
        if found or time.time() >= deadline:
            return found
        time.sleep(0.2)


def via_squid(client_ok, what):
    """Runner and check for a fault through Squid and pith's ICAP service. `client_ok(got)`
    judges what Squid's client saw; pith's guarantee is checked from Squid's icap_log: each
    answer pith gave was a whole adapted response (ICAP 200, the transaction ended well), a 204,
    or a clean ICAP error (4xx/5xx) -- never a 200 whose adaptation broke off."""
    def run(case, proxy, workdir, source=None):
        url = "%s?attempt=%d.%d" % (case.url, os.getpid(), next(_counter))
        got = curl(proxy, url, case.max_time, case.extra, workdir, source=source)
        got["icap"] = icap_answers(url)
        return got

    def check(got):
        ok, why = client_ok(got)
        answers = got["icap"]
        broken = [a for a in answers if a[1] == "200" and a[0] != "ICAP_MOD"]
        # "-" (or 0): no answer from pith, the transaction ended by Squid first (its origin broke).
        unclean = [a for a in answers if not (a[1] in ("200", "204", "-", "0", "000") or a[1][:1] in ("4", "5"))]
        squid = "Squid %d (curl %d); pith answered %s" % (got["status"], got["exit"],
                                                          ", ".join("%s %s" % (s, o) for o, s in answers) or "nothing")
        if broken or unclean:
            return False, "pith's ICAP answer was not whole or clean: " + squid
        if not ok:
            return False, "%s: %s" % (why, squid)
        return True, "%s: %s" % (what, squid)
    return run, check


def not_whole_stub(got):
    """A page the origin cut short must not reach the client as a whole 200."""
    if got["status"] == 200 and got["exit"] == 0:
        return False, "a page the origin cut short was served whole (%d bytes)" % got["size"]
    return True, "not served whole"


def squid_decides(got):
    """What Squid made of a fault pith cannot see: recorded, not judged (pith's answer is)."""
    return True, "Squid's choice"


def any_whole(got):
    """Whatever Squid chose, the client's answer is framed whole (curl exit 0)."""
    if got["exit"] != 0:
        return False, "the client's answer broke off (curl %d)" % got["exit"]
    return True, "answered whole"


# --- the control page -----------------------------------------------------------------------


def control_steps(steps):
    """Runner for a client using the control page through the proxy: `steps` is a list of
    (what, curl arguments, url, check of the result) run in order, the first failure ending
    it; a check may return a value (the page's token) for the next steps' arguments."""
    def run(case, proxy, workdir, source=None):
        t0 = time.time()
        done, token, failed = [], "", None
        for what, args, url, check in steps(case):
            got = curl(proxy, url, 20, tuple(a.replace("TOKEN", token) for a in args), workdir, source=source)
            ok, why = check(got)
            done.append("%s: %s" % (what, why))
            if not ok:
                failed = dict(got, steps=done)
                break
            if what == "page":
                token = why.split("token ", 1)[1]
        base = failed or {"status": 0, "connect_status": 0, "exit": 0, "size": 0, "headers": {}, "body": b"",
                          "stderr": "", "cmd": "control page, %d steps" % len(done)}
        return dict(base, secs=round(time.time() - t0, 3), steps=done, control_ok=failed is None)

    def check(got):
        return got["control_ok"], "; ".join(got["steps"]) if got["control_ok"] else got["steps"][-1]

    return run, check


def token_of(got):
    m = re.search(rb'name="token" value="([^"]+)"', got["body"])
    if got["status"] != 200 or not m:
        return False, "want 200 with a token, got status %d" % got["status"]
    return True, "200, token %s" % m.group(1).decode()


def asks_only(got):
    """/once without a valid signature: a page with one button posting to /once, no redirect."""
    if got["status"] != 200 or got["headers"].get("location") or b'action="/once"' not in got["body"]:
        return False, "want 200 asking with a form to /once and no redirect, got status %d, location %s" % (
            got["status"], got["headers"].get("location"))
    return True, "200, asks"


def redirect_to(url):
    def check(got):
        if got["status"] not in (302, 303) or got["headers"].get("location") != url:
            return False, "want a redirect to %s, got status %d, location %s" % (
                url, got["status"], got["headers"].get("location"))
        return True, "%d" % got["status"]
    return check


def served_in(profile, marker):
    """A page served whole in `profile` (x-pith names it; `pass` sends none)."""
    def check(got):
        x = got["headers"].get("x-pith", "")
        if got["status"] != 200 or got["exit"] != 0 or marker.encode() not in got["body"]:
            return False, "want 200 with %r, got status %d, curl exit %d" % (marker, got["status"], got["exit"])
        if (profile == "pass" and x) or (profile != "pass" and not x.startswith("profile=%s" % profile)):
            return False, "want it served in %s, x-pith: %r" % (profile, x)
        return True, "200 in %s" % profile
    return check


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
    gateway: bool = False                # through the URL gateway on the listener's address


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
    # The URL gateway (/read?url=) on the declutter and reader listeners: the page faults, with
    # the proxy's outcomes; a page the profile cannot rewrite (the gzip bomb, larger than
    # max_rewrite_bytes decoded) is refused, never passed through.
    for l in page:
        g = l + "/gateway"
        out += [
            Case("control-ok", g, status_is(200, "OK-MARKER"), "/ok", gateway=True),
            Case("reset-page", g, status_is(502), "/reset/html", gateway=True),
            Case("short-page", g, status_is(502), "/short/html", gateway=True),
            Case("stall-body-page", g, status_is(504), "/stall-body/html", max_time=a.body_idle + 15, gateway=True),
            Case("badchunk-page", g, status_is(502), "/badchunk/html", gateway=True),
            Case("badgzip-page", g, status_is(502), "/badgzip", gateway=True),
            Case("truncgzip-page", g, status_is(502), "/truncgzip", gateway=True),
            Case("deep-page", g, whole_page("DEEP-MARKER" if l == "declutter" else None), "/deep", max_time=60, gateway=True),
            Case("attrs-page", g, whole_page("ATTR-MARKER" if l == "declutter" else None), "/attrs", max_time=60, gateway=True),
            Case("stall-head", g, status_is(504), "/stall-head", max_time=a.response_timeout + 15, gateway=True),
            Case("bighead-response", g, status_is(502), "/bighead", gateway=True),
            Case("gzip-bomb", g, status_is(502), "/bomb", max_time=120, gateway=True),
        ]
    # Intercepted HTTPS: the fault origin over TLS, through a CONNECT pith answers with its own
    # certificate; the same outcomes as over plain HTTP.
    if a.tls_origin:
        for l in page:
            h = l + "/https"
            out += [
                Case("control-ok", h, status_is(200, "OK-MARKER"), "/ok"),
                Case("reset-page", h, status_is(502), "/reset/html"),
                Case("short-page", h, status_is(502), "/short/html"),
                Case("stall-body-page", h, status_is(504), "/stall-body/html", max_time=a.body_idle + 15),
                Case("badchunk-page", h, status_is(502), "/badchunk/html"),
                Case("badgzip-page", h, status_is(502), "/badgzip"),
                Case("truncgzip-page", h, status_is(502), "/truncgzip"),
                Case("deep-page", h, whole_page("DEEP-MARKER" if l == "declutter" else None), "/deep", max_time=60),
                Case("stall-head", h, status_is(504), "/stall-head", max_time=a.response_timeout + 15),
                Case("bighead-response", h, status_is(502), "/bighead"),
                Case("gzip-bomb", h, passed_through(a.bomb_wire_len), "/bomb", max_time=120),
            ]
        for l in ("declutter", "pass"):
            h = l + "/https"
            out += [
                Case("reset-stream", h, aborted(allow_502=True), "/reset/bin"),
                Case("short-stream", h, aborted(), "/short/bin"),
                Case("stall-body-stream", h, aborted(), "/stall-body/bin", max_time=a.body_idle + 15),
                Case("badchunk-stream", h, aborted(), "/badchunk/bin"),
            ]
    # Squid in front of pith's ICAP service (profile declutter): Squid talks to the origins and
    # decides what its client sees; pith must answer Squid whole, 204, or with a clean error.
    if a.squid:
        sq = "squid"
        for name, path, client_ok, what in [
            ("control-ok", "/ok", status_is(200, "OK-MARKER"), "200"),
            ("reset-page", "/reset/html", not_whole_stub, "cut short"),
            ("short-page", "/short/html", not_whole_stub, "cut short"),
            # Squid 5.7 ends the encapsulated body cleanly at the bad chunk size, with no length
            # left to tell pith the page is short, and serves the rewritten stub whole: its
            # own choice, recorded (Squid's status is in the outcome).
            ("badchunk-page", "/badchunk/html", squid_decides, "recorded"),
            ("badgzip-page", "/badgzip", any_whole, "whole"),
            ("truncgzip-page", "/truncgzip", any_whole, "whole"),
            ("deep-page", "/deep", whole_page("DEEP-MARKER"), "200 whole"),
            ("attrs-page", "/attrs", whole_page("ATTR-MARKER"), "200 whole"),
            ("gzip-bomb", "/bomb", any_whole, "whole"),
            ("stall-body-page", "/stall-body/html", not_whole_stub, "cut short"),
        ]:
            run, check = via_squid(client_ok, what)
            out.append(Case(name, sq, check, path, run=run, max_time=60 if "bomb" not in path else 120))
    # Clients using the control page while the load runs: a profile chosen and undone, and a
    # page served once in another profile.
    ok_url = "http://%s/ok" % o
    choose_run, choose_check = control_steps(lambda case: [
        ("page", (), "http://pith/", token_of),
        ("choose reader", ("-H", "Origin: http://pith", "--data", "profile=reader&token=TOKEN"), "http://pith/choose",
         redirect_to("/")),
        ("served", (), ok_url, served_in("reader", "OK-MARKER")),
        ("choose default", ("-H", "Origin: http://pith", "--data", "profile=&token=TOKEN"), "http://pith/choose",
         redirect_to("/")),
        ("served", (), ok_url, served_in("declutter", "OK-MARKER")),
    ])
    # /once without the bar's signature only asks (no redirect, nothing noted); the page's one
    # button posts the choice with the client's token, as a person's tap would.
    once_url = urllib.parse.quote(ok_url, safe="")
    once_run, once_check = control_steps(lambda case: [
        ("unsigned once", (), "http://pith/once?profile=pass&url=" + once_url, asks_only),
        ("served after the question", (), ok_url, served_in("declutter", "OK-MARKER")),
        ("page", (), "http://pith/", token_of),
        ("once", ("-H", "Origin: http://pith", "--data", "profile=pass&url=%s&token=TOKEN" % once_url),
         "http://pith/once", redirect_to(ok_url)),
        ("served once", (), ok_url, served_in("pass", "OK-MARKER")),
        ("served after", (), ok_url, served_in("declutter", "OK-MARKER")),
    ])
    out += [
        Case("control-choose", "declutter", choose_check, run=choose_run),
        Case("control-once", "declutter", once_check, run=once_run),
    ]
    # Interleaved by way in (listener, gateway, HTTPS, Squid), so that any stretch of the
    # round-robin covers them all alike.
    by_way = {}
    for c in out:
        by_way.setdefault(c.listener, []).append(c)
    out = [c for row in itertools.zip_longest(*by_way.values()) for c in row if c is not None]
    for c in out:
        if c.path and c.listener.endswith("/https"):
            c.url = "https://%s%s" % (a.tls_origin, c.path)
        elif c.path:
            c.url = "http://%s%s" % (o, c.path)
        if c.then and c.then.path:
            c.then.url = "http://%s%s" % (o, c.then.path)
    return out


def attempt(case, listeners, workdir, source=None):
    proxy = listeners[case.listener.split("/")[0]]
    if case.run:
        got = case.run(case, proxy, workdir, source)
    else:
        got = curl(proxy, case.url, case.max_time, case.extra, workdir, case.proxytunnel, source, case.gateway)
    ok, why = case.check(got)
    if ok and case.then:
        got2 = curl(proxy, case.then.url, case.then.max_time, (), workdir, source=source, gateway=case.then.gateway)
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
    p.add_argument("--sources", default="127.0.9",
                   help="worker N (from 1) sends from the address SOURCES.N, an address group of its own")
    p.add_argument("--tls-origin", default="", help="the fault origin over TLS, reached through intercepted HTTPS")
    p.add_argument("--pith-ca", default="", help="pith's CA certificate, trusted for intercepted HTTPS")
    p.add_argument("--squid", default="", help="Squid, in front of pith's ICAP service")
    p.add_argument("--icap-log", default="", help="Squid's icap_log")
    p.add_argument("--only", default="", help="run only the cases whose name or listener contains this")
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.add_argument("--once", action="store_true", help="run every case once, then exit")
    a = p.parse_args()
    global CA_FILE, ICAP_LOG
    CA_FILE = a.pith_ca or None
    ICAP_LOG = a.icap_log or None
    listeners = dict(kv.split("=", 1) for kv in a.listeners.split(","))
    if a.squid:
        listeners["squid"] = a.squid
    for addr in list(listeners.values()) + [a.origin, a.nginx]:
        if not addr.startswith("127."):
            raise SystemExit("faults.py: %s is not a loopback address" % addr)
    all_cases = [c for c in cases(a) if a.only in c.name or a.only in c.listener]
    if a.list:
        for c in all_cases:
            print(c.name, c.listener, c.url or "(raw connections)")
        return
    lock = threading.Lock()
    order = iter(all_cases) if a.once else itertools.cycle(all_cases)
    out = open(a.out, "a", buffering=1)

    def worker(n):
        source = "%s.%d" % (a.sources, n + 1)
        with tempfile.TemporaryDirectory(prefix="pith-soak-fault-") as workdir:
            while a.once or time.time() < a.until:
                with lock:
                    case = next(order, None)
                if case is None:
                    return
                t0 = time.time()
                ok, why, got = attempt(case, listeners, workdir, source)
                line = json.dumps({"t": round(t0, 3), "t_end": round(time.time(), 3), "case": case.name,
                                   "listener": case.listener, "source": source, "ok": ok, "why": why,
                                   "got": record(got, ok)})
                with lock:
                    out.write(line + "\n")

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(a.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
