#!/usr/bin/env python3
"""A delay line in user space, for scripts/slow-link.sh on a kernel without netem.

Without netem the kernel can limit a link's rate (tbf) but cannot delay its packets. This
relay gives the link its round trip instead: it listens where a service is reached (an
address on the host's end of the veth pair) and forwards each connection to the service's
real address, and for connections from the delayed network (the client's namespace) it

- holds each chunk of bytes, each way, for the one-way delay before passing it on, in order
  (a chunk is never passed before one read earlier in the same direction);
- holds the first byte from the client until one round trip after the connection was
  accepted, as TCP's handshake would (SYN out, SYN-ACK back, only then data).

So a request and its response on a fresh connection take two round trips, as on a real link,
and every exchange after them one: TLS handshakes, CONNECT, each HTTP request and response.
The rate stays with tbf, on the veth pair, after the relay in the direction of the client.

What it does not emulate: TCP's own timing on the long path. The client's TCP connection
ends at the relay one veth hop away, so the kernel sees a round trip of a millisecond: slow
start and the congestion window never hold the sender back for a round trip, and nothing is
lost or retransmitted (neither does netem without `loss`). On 256 kbit/s and 300 ms the
bandwidth-delay product is 9.6 KB, below Linux's initial window of ten segments (14.6 KB), so
a real sender there is not held back by slow start after its first window either; on a
faster or longer link the relay would be kinder than the real thing. Connections from any
other address (pith fetching from the origin on the host) pass through without delay.

Every queue is bounded: a direction holding QUEUE_LIMIT bytes stops reading until the far
side takes some.

Usage:
  delay-line.py relay --delay-ms MS --delayed CIDR LISTEN=TARGET [LISTEN=TARGET ...]
  delay-line.py echo LISTEN              a line echo service, for the self-check
  delay-line.py probe HOST:PORT          two exchanges with an echo service; prints the times
LISTEN and TARGET are IPv4 HOST:PORT. `relay` prints "ready" once it listens everywhere.
"""

import argparse
import asyncio
import collections
import ipaddress
import sys
import time

CHUNK = 65536
QUEUE_LIMIT = 4 << 20
PROBE_TIMEOUT_S = 30


def address(text):
    host, _, port = text.rpartition(':')
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f'{text!r} is not HOST:PORT')
    return host, int(port)


class Line:
    """One direction of one connection: chunks waiting for their time, oldest first."""

    def __init__(self):
        self.items = collections.deque()
        self.bytes = 0
        self.ready = asyncio.Event()
        self.room = asyncio.Event()


async def feed(reader, line, delay, not_before):
    """Reads chunks as they come and schedules each `delay` seconds on (never before `not_before`)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data = await reader.read(CHUNK)
        except (ConnectionError, OSError):
            data = b''
        line.items.append((max(loop.time(), not_before) + delay, data))
        line.bytes += len(data)
        line.ready.set()
        if not data:
            return
        while line.bytes > QUEUE_LIMIT:
            line.room.clear()
            await line.room.wait()


async def drain(writer, line):
    """Writes each chunk at its time; an empty chunk is the end of the stream."""
    loop = asyncio.get_running_loop()
    while True:
        while not line.items:
            line.ready.clear()
            await line.ready.wait()
        deadline, data = line.items.popleft()
        wait = deadline - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        if not data:
            if writer.can_write_eof():
                writer.write_eof()
            return
        writer.write(data)
        await writer.drain()
        line.bytes -= len(data)
        line.room.set()


async def relay(client_reader, client_writer, target, delay, delayed):
    loop = asyncio.get_running_loop()
    accepted = loop.time()
    peer = ipaddress.ip_address(client_writer.get_extra_info('peername')[0])
    one_way = delay if peer in delayed else 0.0
    try:
        server_reader, server_writer = await asyncio.open_connection(*target)
    except OSError:
        client_writer.close()
        return
    up, down = Line(), Line()
    tasks = [
        asyncio.create_task(feed(client_reader, up, one_way, accepted + 2 * one_way)),
        asyncio.create_task(drain(server_writer, up)),
        asyncio.create_task(feed(server_reader, down, one_way, accepted)),
        asyncio.create_task(drain(client_writer, down)),
    ]
    try:
        # Both directions ended, or one side failed: close both.
        done, _ = await asyncio.wait(tasks[1::2], return_when=asyncio.FIRST_EXCEPTION)
        for t in done:
            t.exception()
    except (ConnectionError, OSError):
        pass
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in (client_writer, server_writer):
            w.close()


async def run_relay(args):
    delayed = ipaddress.ip_network(args.delayed)
    servers = []
    for pair in args.pairs:
        listen, _, target = pair.partition('=')
        listen, target = address(listen), address(target)

        async def handle(r, w, target=target):
            await relay(r, w, target, args.delay_ms / 1000, delayed)

        servers.append(await asyncio.start_server(handle, *listen, backlog=256))
    print('ready', flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


async def run_echo(listen):
    async def handle(reader, writer):
        try:
            for _ in range(1000):
                line = await reader.readline()
                if not line:
                    break
                writer.write(line)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, *listen)
    print('ready', flush=True)
    await server.serve_forever()


async def run_probe(target):
    start = time.monotonic()
    reader, writer = await asyncio.open_connection(*target)
    times = []
    for word in (b'first\n', b'second\n'):
        begun = time.monotonic()
        writer.write(word)
        await writer.drain()
        if await reader.readline() != word:
            raise SystemExit('delay-line.py probe: the echo did not answer in kind')
        times.append(time.monotonic() - (start if word == b'first\n' else begun))
    writer.close()
    print(f'{times[0] * 1000:.0f} {times[1] * 1000:.0f}')


def main():
    parser = argparse.ArgumentParser(description='A delay line in user space (see the module doc).')
    sub = parser.add_subparsers(dest='command', required=True)
    r = sub.add_parser('relay')
    r.add_argument('--delay-ms', type=float, required=True)
    r.add_argument('--delayed', required=True)
    r.add_argument('pairs', nargs='+', metavar='LISTEN=TARGET')
    e = sub.add_parser('echo')
    e.add_argument('listen', type=address)
    p = sub.add_parser('probe')
    p.add_argument('target', type=address)
    args = parser.parse_args()
    try:
        if args.command == 'relay':
            if not 0 <= args.delay_ms <= 10_000:
                parser.error('--delay-ms is 0 to 10000')
            for pair in args.pairs:
                if '=' not in pair:
                    parser.error(f'{pair!r} is not LISTEN=TARGET')
            asyncio.run(run_relay(args))
        elif args.command == 'echo':
            asyncio.run(run_echo(args.listen))
        else:
            asyncio.run(asyncio.wait_for(run_probe(args.target), PROBE_TIMEOUT_S))
    except KeyboardInterrupt:
        pass
    except (OSError, ValueError, asyncio.TimeoutError) as e:
        sys.exit(f'delay-line.py {args.command}: {e}')


if __name__ == '__main__':
    main()
