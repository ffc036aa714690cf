#!/usr/bin/env python3
"""A misbehaving HTTP origin for the soak test, on loopback only.

Every path is one fault; the proxy under test is asked for it and must give its client a clear
outcome. `/ok` is a well-behaved page, so the faults can be told apart from an origin that is
simply down.

    /ok                 a small HTML page, whole (the control)
    /reset/html|bin     Content-Length 5000, 54 bytes of body, then a TCP reset
    /short/html|bin     Content-Length 5000, 54 bytes of body, then a clean close (FIN)
    /stall-head         reads the request and never answers
    /stall-body/html|bin  sends the head (Content-Length 5000), then nothing, forever
    /badchunk/html|bin  chunked: one valid chunk, then a size line that is not hex
    /badgzip            Content-Encoding: gzip, a body that is not gzip
    /truncgzip          Content-Encoding: gzip, a whole page's gzip cut in half (framing exact)
    /bomb               Content-Encoding: gzip, a valid gzip stream that expands to --bomb-gib
                        GiB of zeros (~1 KB per MiB on the wire), made on the fly in bounded
                        memory; the CRC is combined, never computed over the expanded bytes
    /deep               an HTML page nested 100,000 <div> deep, with DEEP-MARKER at the bottom
    /attrs              an HTML page with one element carrying 10,000 attributes (ATTR-MARKER)
    /bighead            a response head with a 1 MiB header line
    /dense15            a 15 MiB HTML page of small elements (Content-Length), the costliest kind
                        of page to rewrite: for the attack phase's concurrent big pages
    /text15             a 15 MiB HTML page of plain paragraphs (Content-Length): as large, and
                        about a fifth of the cost to rewrite
    /huge               a 20 MiB HTML page, chunked (no length, so a proxy must read it to find
                        it is too large), for the attack phase's clients that never read
    /excess             Content-Length 15 followed by a whole second (smuggled) response; a
                        later request on the same connection is answered honestly

With --tls-port, the same paths are served over TLS too (for a proxy that intercepts HTTPS).

"Forever" is bounded: a held connection is closed after --max-hold seconds, or as soon as the
proxy closes its side. Only 127.0.0.0/8 addresses are accepted for --host.

    fault_origin.py serve --port 18131 [--host 127.0.0.1] [--bomb-gib 5] [--max-hold 120]
                          [--tls-port 18445 --tls-host 127.0.6.1 --cert PEM --key PEM]
    fault_origin.py bomb-info [--bomb-gib 5]    # wire length and trailer, for the checker
    fault_origin.py self-test                   # the bomb generator makes valid gzip
"""

import argparse
import asyncio
import gzip
import ipaddress
import socket
import ssl
import struct
import sys
import zlib

PAGE_START = b"<!DOCTYPE html><html><body><p>the first part of a page"
OK_PAGE = (b"<!DOCTYPE html><html><head><title>ok</title></head><body>"
           b"<p>OK-MARKER: a healthy page from the fault origin, long enough to be some content "
           b"that a reader would keep on the page as it is.</p></body></html>")
SEGMENT = 1 << 20  # zeros per repeated DEFLATE segment of the bomb
BOMB_GZIP_HEAD = bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])

# --- gzip bomb --------------------------------------------------------------------------------


def _gf2_times(mat, vec):
    total, i = 0, 0
    while vec:
        if vec & 1:
            total ^= mat[i]
        vec >>= 1
        i += 1
    return total


def _gf2_square(mat):
    return [_gf2_times(mat, mat[n]) for n in range(32)]


def crc32_combine(crc1, crc2, len2):
    """CRC-32 of A||B from crc(A), crc(B) and len(B), by zlib's GF(2) operator method."""
    if len2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]
    even = _gf2_square(odd)
    odd = _gf2_square(even)
    while True:
        even = _gf2_square(odd)
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def crc_of_repeats(crc, length, count):
    """CRC-32 of `count` copies of a block whose CRC is `crc` and length `length` (by doubling)."""
    result, result_len = 0, 0
    block, block_len = crc, length
    while count:
        if count & 1:
            result = crc32_combine(result, block, block_len) if result_len else block
            result_len += block_len
        count >>= 1
        if count:
            block = crc32_combine(block, block, block_len)
            block_len *= 2
    return result


class Bomb:
    """A gzip stream of `count` MiB of zeros: head, `count` identical segments, tail.

    Each segment is 1 MiB of zeros deflated from a fresh state and ended with a full flush, so
    it refers to nothing before it and can be repeated; the tail is a final empty fixed-Huffman
    block, then CRC-32 and ISIZE (mod 2^32)."""

    def __init__(self, count):
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        zeros = bytes(SEGMENT)
        self.segment = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
        self.count = count
        crc = crc_of_repeats(zlib.crc32(zeros), SEGMENT, count)
        self.tail = b"\x03\x00" + struct.pack("<II", crc, (count * SEGMENT) & 0xFFFFFFFF)
        self.wire_len = len(BOMB_GZIP_HEAD) + len(self.segment) * count + len(self.tail)
        self.decoded = count * SEGMENT

    def chunks(self, batch=64):
        yield BOMB_GZIP_HEAD
        left = self.count
        while left:
            n = min(batch, left)
            yield self.segment * n
            left -= n
        yield self.tail


# --- pages --------------------------------------------------------------------------------------


def deep_page(depth=100_000):
    return (b"<!DOCTYPE html><html><head><title>deep</title></head><body>" + b"<div>" * depth
            + b"<p>DEEP-MARKER text at the bottom of the well.</p>" + b"</div>" * depth
            + b"<p>After the well, more text that stays.</p></body></html>")


def attrs_page(count=10_000):
    attrs = b"".join(b' data-a%d="v%d"' % (i, i) for i in range(count))
    return (b"<!DOCTYPE html><html><head><title>attrs</title></head><body><div" + attrs
            + b"><p>ATTR-MARKER text inside the crowded element, long enough to be content.</p>"
            + b"</div></body></html>")


DENSE_UNIT = b'<div class="c"><p>Lorem <a href="/a">x</a> ipsum <b>dolor</b></p><span>y</span></div>\n'
TEXT_UNIT = (b"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
             b"incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam.</p>\n")


def big_page(unit, size=15 << 20):
    start = b"<!DOCTYPE html><html><head><title>dense</title></head><body>"
    return start + unit * ((size - len(start) - 14) // len(unit)) + b"</body></html>"


def head(status, content_type, *lines):
    text = "HTTP/1.1 %s\r\nContent-Type: %s\r\n" % (status, content_type)
    return (text + "".join(line + "\r\n" for line in lines) + "\r\n").encode()


CONTENT_TYPES = {"html": "text/html; charset=utf-8", "bin": "application/octet-stream"}

# --- server ---------------------------------------------------------------------------------


class Origin:
    def __init__(self, bomb_gib, max_hold):
        self.bomb = Bomb(bomb_gib * 1024)
        self.max_hold = max_hold
        self.deep = deep_page()
        self.attrs = attrs_page()
        self.dense = big_page(DENSE_UNIT)
        self.text = big_page(TEXT_UNIT)
        self.huge_chunk = b"<p>" + b"h" * (1 << 16) + b"</p>\n"
        page = (b"<!DOCTYPE html><html><body>" + b"<p>a page that will be cut short</p>" * 200
                + b"</body></html>")
        whole = gzip.compress(page, mtime=0)
        self.truncgzip = whole[: len(whole) // 2]

    async def handle(self, reader, writer):
        try:
            await self.serve(reader, writer)
        except (ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def read_head(self, reader):
        data = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        target = parts[1] if len(parts) > 1 else "/"
        if "://" in target:  # absolute-form: keep the path
            target = "/" + target.split("://", 1)[1].partition("/")[2]
        return target.split("?", 1)[0]

    async def hold(self, reader):
        """Keeps the connection open until the peer closes it or max_hold passes."""
        try:
            await asyncio.wait_for(reader.read(), timeout=self.max_hold)
        except (asyncio.TimeoutError, ConnectionError):
            pass

    async def send(self, writer, *parts):
        for part in parts:
            writer.write(part)
        await writer.drain()

    async def serve(self, reader, writer):
        path = await self.read_head(reader)
        name, _, kind = path.strip("/").partition("/")
        ctype = CONTENT_TYPES.get(kind or "html", CONTENT_TYPES["html"])
        if name == "ok":
            await self.send(writer, head("200 OK", ctype, "Content-Length: %d" % len(OK_PAGE),
                                         "Connection: close"), OK_PAGE)
        elif name == "reset":
            await self.send(writer, head("200 OK", ctype, "Content-Length: 5000"), PAGE_START)
            await asyncio.sleep(1.0)  # let the proxy read the head before the reset discards it
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        elif name == "short":
            await self.send(writer, head("200 OK", ctype, "Content-Length: 5000"), PAGE_START)
            await asyncio.sleep(0.2)
        elif name == "stall-head":
            await self.hold(reader)
        elif name == "stall-body":
            await self.send(writer, head("200 OK", ctype, "Content-Length: 5000"))
            await self.hold(reader)
        elif name == "badchunk":
            first = b"%x\r\n%s\r\n" % (len(PAGE_START), PAGE_START)
            await self.send(writer, head("200 OK", ctype, "Transfer-Encoding: chunked"), first,
                            b"ZZ-not-hex\r\nmore\r\n0\r\n\r\n")
            await self.hold(reader)
        elif name == "badgzip":
            body = b"this is not gzip at all, not even close"
            await self.send(writer, head("200 OK", ctype, "Content-Encoding: gzip",
                                         "Content-Length: %d" % len(body), "Connection: close"), body)
        elif name == "truncgzip":
            body = self.truncgzip
            await self.send(writer, head("200 OK", ctype, "Content-Encoding: gzip",
                                         "Content-Length: %d" % len(body), "Connection: close"), body)
        elif name == "bomb":
            await self.send(writer, head("200 OK", ctype, "Content-Encoding: gzip",
                                         "Content-Length: %d" % self.bomb.wire_len, "Connection: close"))
            for chunk in self.bomb.chunks():
                writer.write(chunk)
                await writer.drain()
        elif name in ("deep", "attrs"):
            body = self.deep if name == "deep" else self.attrs
            await self.send(writer, head("200 OK", ctype, "Content-Length: %d" % len(body),
                                         "Connection: close"), body)
        elif name in ("dense15", "text15"):
            body = self.dense if name == "dense15" else self.text
            await self.send(writer, head("200 OK", ctype, "Content-Length: %d" % len(body),
                                         "Connection: close"), body)
        elif name == "huge":
            await self.send(writer, head("200 OK", ctype, "Transfer-Encoding: chunked", "Connection: close"),
                            b"%x\r\n<!DOCTYPE html><html><body>\r\n" % len(b"<!DOCTYPE html><html><body>"))
            frame = b"%x\r\n%s\r\n" % (len(self.huge_chunk), self.huge_chunk)
            for _ in range((20 << 20) // len(self.huge_chunk)):
                writer.write(frame)
                await writer.drain()
            await self.send(writer, b"0\r\n\r\n")
        elif name == "bighead":
            await self.send(writer, head("200 OK", ctype, "X-Huge: " + "h" * (1 << 20),
                                         "Content-Length: %d" % len(OK_PAGE)), OK_PAGE)
        elif name == "excess":
            smuggled = (b"<p>promised</p>HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                        b"Content-Length: 21\r\n\r\n<p>SMUGGLED PAGE</p>\n")
            await self.send(writer, head("200 OK", ctype, "Content-Length: 15"), smuggled)
            # Should the proxy ever send a second request on this connection, answer honestly.
            await self.read_head(reader)
            honest = b"<p>honest</p>\n"
            await self.send(writer, head("200 OK", ctype, "Content-Length: %d" % len(honest),
                                         "Connection: close"), honest)
        else:
            body = b"no such fault\n"
            await self.send(writer, head("404 Not Found", "text/plain", "Content-Length: %d" % len(body),
                                         "Connection: close"), body)


async def serve(args):
    origin = Origin(args.bomb_gib, args.max_hold)
    server = await asyncio.start_server(origin.handle, args.host, args.port, backlog=512)
    print("fault_origin: listening on http://%s:%d (bomb %d GiB -> %d bytes on the wire)"
          % (args.host, args.port, args.bomb_gib, origin.bomb.wire_len), flush=True)
    servers = [server]
    if args.tls_port:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(args.cert, args.key)
        servers.append(await asyncio.start_server(origin.handle, args.tls_host, args.tls_port, ssl=ctx, backlog=512))
        print("fault_origin: and on https://%s:%d" % (args.tls_host, args.tls_port), flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def self_test():
    for count in (1, 3, 7):
        bomb = Bomb(count)
        data = b"".join(bomb.chunks(batch=2))
        out = gzip.decompress(data)  # checks CRC-32 and ISIZE
        assert len(out) == count * SEGMENT and out.count(0) == len(out), count
        assert len(data) == bomb.wire_len
    assert crc_of_repeats(zlib.crc32(b"abc"), 3, 5) == zlib.crc32(b"abc" * 5)
    big = Bomb(5 * 1024)
    assert big.wire_len < big.decoded // 500, big.wire_len
    print("fault_origin: self-test ok (5 GiB bomb = %d bytes on the wire)" % big.wire_len)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--bomb-gib", type=int, default=5)
    s.add_argument("--max-hold", type=float, default=120.0)
    s.add_argument("--tls-host", default="127.0.0.1", help="the same faults over TLS on this address")
    s.add_argument("--tls-port", type=int, default=0, help="(0: no TLS)")
    s.add_argument("--cert", help="PEM certificate chain for TLS")
    s.add_argument("--key", help="PEM key for TLS")
    b = sub.add_parser("bomb-info")
    b.add_argument("--bomb-gib", type=int, default=5)
    sub.add_parser("self-test")
    args = parser.parse_args()
    if args.cmd == "self-test":
        self_test()
    elif args.cmd == "bomb-info":
        bomb = Bomb(args.bomb_gib * 1024)
        print("wire_len=%d decoded=%d tail=%s" % (bomb.wire_len, bomb.decoded, bomb.tail.hex()))
    else:
        if not ipaddress.ip_address(args.host).is_loopback or not ipaddress.ip_address(args.tls_host).is_loopback:
            sys.exit("fault_origin: --host and --tls-host must be loopback addresses")
        try:
            asyncio.run(serve(args))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
