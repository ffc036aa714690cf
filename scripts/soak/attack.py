#!/usr/bin/env python3
"""The soak test's attack phase: what a hostile LAN client does to a shared gateway, while
healthy clients (wrk, started by soak.sh) keep using it.

    - non-readers: clients that ask for an oversized page (the fault origin's /huge, 20 MiB,
      chunked, so the proxy must read it to learn its size) and never read a byte of the answer.
      Their receive buffers are made small, so the proxy's writes stall at once. When the proxy
      closes one, it is opened again: the pressure holds for the whole phase;
    - idle tunnels: CONNECTs to a silent sink (a port this script listens on), which then send
      nothing; each is watched until the proxy closes it;
    - big pages: clients that fetch 15 MiB pages over and over, one of dense markup (/dense15)
      and one of plain paragraphs (/text15) in turn, reading every answer whole, so that many
      of them are being buffered and rewritten at once.

Attackers connect from their own loopback addresses (127.0.0.2 up), so a per-client connection
cap applies to them and not to the healthy clients on 127.0.0.1. Connections are watched
without reading, so a non-reader never drains what the proxy sent: a tunnel by polling for a
hang-up; a non-reader by the state of the proxy's side of it in /proc/net/tcp (a FIN queued
behind data the client never reads never reaches it, but the proxy's socket leaves ESTABLISHED
when it closes the connection).

Writes one JSON object to --out with the counts and times, for report.py.

    attack.py --proxy 127.0.0.1:18121 --origin 127.0.0.1:18131 --sink-port 18132 --secs 60
              [--nonreaders 200] [--tunnels 20] [--big 16] --out attack.json
"""

import argparse
import asyncio
import ipaddress
import json
import select
import socket
import statistics
import sys
import time

NONREADER_ADDRS = ["127.0.0.%d" % i for i in range(2, 6)]   # 4 addresses, 50 clients each
BIG_ADDR = "127.0.0.10"
TUNNEL_ADDR = "127.0.0.11"
HANGUP = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0x2000)


def loopback(addr):
    host, _, port = addr.rpartition(":")
    if not ipaddress.ip_address(host).is_loopback:
        sys.exit("attack.py: only loopback addresses: %s" % addr)
    return host, int(port)


def open_socket(source, proxy, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(proxy)
    return s


def server_states(port):
    """{(client ip, client port): TCP state} of the sockets on the proxy's side of `port`."""
    states = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if int(local.split(":")[1], 16) != port:
                continue
            ip_hex, port_hex = remote.split(":")
            ip = socket.inet_ntoa(bytes.fromhex(ip_hex)[::-1])
            states[(ip, int(port_hex, 16))] = state
    return states


ESTABLISHED = "01"


class Watched:
    """A connection held open and watched for the proxy closing it."""

    def __init__(self, kind, sock):
        self.kind, self.sock, self.opened = kind, sock, time.monotonic()
        self.local = sock.getsockname()


class Attack:
    def __init__(self, args):
        self.args = args
        self.proxy = loopback(args.proxy)
        self.origin = args.origin
        self.deadline = time.monotonic() + args.secs
        self.watched = []
        self.owed = 0   # non-readers closed by the proxy and not yet opened again
        self.closed = {"nonreader": [], "tunnel": []}   # seconds from open to the proxy's close
        self.opened = {"nonreader": 0, "tunnel": 0}
        self.refused = {"nonreader": 0, "tunnel": 0}
        self.big = {"responses": 0, "whole": 0, "rewritten": 0, "over_budget": 0, "passed": 0,
                    "statuses": {}, "errors": [], "secs": []}

    # --- non-readers and tunnels ---------------------------------------------------------------

    def open_nonreader(self, i):
        try:
            s = open_socket(NONREADER_ADDRS[i % len(NONREADER_ADDRS)], self.proxy, rcvbuf=4096)
            s.sendall(("GET http://%s/huge HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: identity\r\n\r\n"
                       % (self.origin, self.origin)).encode())
        except OSError:
            self.refused["nonreader"] += 1
            return
        self.opened["nonreader"] += 1
        self.watched.append(Watched("nonreader", s))

    def open_tunnel(self):
        target = "127.0.0.1:%d" % self.args.sink_port
        try:
            s = open_socket(TUNNEL_ADDR, self.proxy)
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 8192:
                data = s.recv(1024)
                if not data:
                    break
                head += data
            if not head.startswith(b"HTTP/1.1 200"):
                raise OSError("CONNECT answered %r" % head[:40])
        except OSError:
            self.refused["tunnel"] += 1
            return
        self.opened["tunnel"] += 1
        self.watched.append(Watched("tunnel", s))

    async def watch(self):
        """Every 0.2 s: which held connections has the proxy closed? Non-readers are opened again."""
        while time.monotonic() < self.deadline:
            poller = select.poll()
            by_fd = {}
            for w in self.watched:
                poller.register(w.sock.fileno(), HANGUP)
                by_fd[w.sock.fileno()] = w
            gone = set()
            for fd, events in poller.poll(0):
                if events & HANGUP:
                    gone.add(by_fd[fd])
            states = server_states(self.proxy[1])
            for w in self.watched:
                if w.kind == "nonreader" and states.get(w.local) != ESTABLISHED:
                    gone.add(w)
            for w in gone:
                self.closed[w.kind].append(round(time.monotonic() - w.opened, 2))
                self.watched.remove(w)
                w.sock.close()
                if w.kind == "nonreader":
                    self.owed += 1
            # Opened again, 50 a tick at most: refused clients do not turn into a flood.
            for _ in range(min(self.owed, 50)):
                self.owed -= 1
                self.open_nonreader(self.opened["nonreader"])
            await asyncio.sleep(0.2)

    # --- big pages ------------------------------------------------------------------------------

    async def big_client(self, n):
        host, port = self.proxy
        while time.monotonic() < self.deadline:
            n += 1
            page = "dense15" if n % 2 else "text15"
            t0 = time.monotonic()
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port, local_addr=(BIG_ADDR, 0)), timeout=10)
            except (OSError, asyncio.TimeoutError) as e:
                self.big["errors"].append("connect: %s" % e)
                await asyncio.sleep(0.5)
                continue
            try:
                writer.write(("GET http://%s/%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                              "Accept-Encoding: identity\r\n\r\n" % (self.origin, page, self.origin)).encode())
                await writer.drain()
                data = await asyncio.wait_for(reader.read(-1), timeout=120)
                self.big_response(data, time.monotonic() - t0)
            except (OSError, asyncio.TimeoutError) as e:
                self.big["errors"].append("%s: %s" % (type(e).__name__, e))
            finally:
                writer.close()

    def big_response(self, data, secs):
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else "none"
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.big["responses"] += 1
        self.big["statuses"][status] = self.big["statuses"].get(status, 0) + 1
        self.big["secs"].append(round(secs, 2))
        if status == "504":
            # The fault origin (one Python thread) was too slow to start its answer: pith's
            # response timeout, not a page of pith's going wrong. Counted, not an error.
            self.big["origin_slow"] = self.big.get("origin_slow", 0) + 1
            return
        length = headers.get("content-length")
        if status == "200" and length is not None and int(length) == len(body):
            self.big["whole"] += 1
        elif len(self.big["errors"]) < 20:
            self.big["errors"].append("status %s, content-length %s, %d bytes" % (status, length, len(body)))
        x_pith = headers.get("x-pith", "")
        if "over-budget" in x_pith:
            self.big["over_budget"] += 1
        elif x_pith:
            self.big["rewritten"] += 1
        else:
            self.big["passed"] += 1

    # --- the sink the tunnels reach -------------------------------------------------------------

    async def sink(self, reader, writer):
        try:
            await asyncio.wait_for(reader.read(-1), timeout=self.args.secs + 30)
        except (OSError, asyncio.TimeoutError):
            pass
        finally:
            writer.close()

    async def run(self):
        server = await asyncio.start_server(self.sink, "127.0.0.1", self.args.sink_port, backlog=256)
        for i in range(self.args.nonreaders):
            self.open_nonreader(i)
        for _ in range(self.args.tunnels):
            self.open_tunnel()
        tasks = [asyncio.ensure_future(self.big_client(i)) for i in range(self.args.big)]
        await self.watch()
        # Big pages still in flight finish (bounded by their own timeout).
        await asyncio.wait(tasks, timeout=120)
        for t in tasks:
            t.cancel()
        still = {"nonreader": 0, "tunnel": 0}
        self.oldest = {"nonreader": 0.0, "tunnel": 0.0}
        now = time.monotonic()
        for w in self.watched:
            still[w.kind] += 1
            self.oldest[w.kind] = round(max(self.oldest[w.kind], now - w.opened), 2)
            w.sock.close()
        server.close()
        return still

    def summary(self, still):
        def stats(xs):
            return {"n": len(xs), "median": statistics.median(xs) if xs else None,
                    "max": max(xs) if xs else None}
        big = dict(self.big)
        big["secs"] = stats(self.big["secs"])
        return {"secs": self.args.secs, "nonreaders": self.args.nonreaders, "tunnels": self.args.tunnels,
                "big_clients": self.args.big, "opened": self.opened, "refused": self.refused,
                "closed_by_proxy": {k: stats(v) for k, v in self.closed.items()},
                "still_open": still, "oldest_open_secs": self.oldest, "big": big}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--proxy", required=True)
    p.add_argument("--origin", required=True)
    p.add_argument("--sink-port", type=int, required=True)
    p.add_argument("--secs", type=float, default=60)
    p.add_argument("--nonreaders", type=int, default=200)
    p.add_argument("--tunnels", type=int, default=20)
    p.add_argument("--big", type=int, default=16)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    loopback(args.origin)
    attack = Attack(args)
    still = asyncio.run(attack.run())
    with open(args.out, "w") as f:
        json.dump(attack.summary(still), f)


if __name__ == "__main__":
    main()
