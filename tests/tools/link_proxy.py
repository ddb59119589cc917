#!/usr/bin/python3
"""A far link in user space: a TCP proxy that delays every byte by a one-way latency, keeps order,
loses nothing, and may cap each direction's bytes a second. Not every kernel (or container) has
netem, and a test must not need root, so tests and benchmarks put this between a worker and its
broker.

    link_proxy.py --to HOST:PORT [--listen PORT] [--delay-ms MS] [--rate BYTES_PER_S]
                  [--buffer BYTES] [--port-file FILE]

--delay-ms is one way: a round trip through the proxy takes twice it. --rate models the link's
bandwidth in each direction: bytes leave at that rate, then travel --delay-ms. --buffer is what
the link holds beyond the bytes in flight (a router's queue, 64 KiB by default); when it is full
the proxy stops reading, so the sender's own socket queue fills as it would on a slow link.
--listen 0 (the default) binds a free port; --port-file gets the port once it listens.
"""
import argparse
import asyncio
import collections
import os
import sys
import time

CHUNK = 16384           # bytes read at a time: with --rate, a chunk of this size leaves at once


class Direction:
    """One way of one connection: what was read, when each piece is due on the other side."""

    def __init__(self, args):
        self.delay = args.delay_ms / 1000.0
        self.rate = args.rate
        self.limit = (args.rate * self.delay if args.rate else 0) + args.buffer
        self.queue = collections.deque()            # (due, bytes); None: the sender closed
        self.held = 0                               # bytes read and not yet written
        self.tx_free = 0.0                          # when the link is free to send the next byte
        self.more = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()

    def push(self, data):
        now = time.monotonic()
        if self.rate:
            self.tx_free = max(now, self.tx_free) + len(data) / self.rate
            due = self.tx_free + self.delay
        else:
            due = now + self.delay
        self.queue.append((due, data))
        self.held += len(data)
        if self.rate and self.held >= self.limit:
            self.room.clear()
        self.more.set()

    def close(self):
        self.queue.append((time.monotonic() + self.delay, None))
        self.more.set()

    async def pop(self):
        while not self.queue:
            self.more.clear()
            await self.more.wait()
        due, data = self.queue.popleft()
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        if data is not None:
            self.held -= len(data)
            if self.held < self.limit:
                self.room.set()
        return data


async def carry_in(reader, d):
    try:
        while True:
            await d.room.wait()
            data = await reader.read(CHUNK)
            if not data:
                break
            d.push(data)
    except (ConnectionError, OSError):
        pass
    d.close()


async def carry_out(writer, d):
    try:
        while True:
            data = await d.pop()
            if data is None:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    try:
        writer.close()
    except OSError:
        pass


async def serve(args, host, port, creader, cwriter):
    try:
        sreader, swriter = await asyncio.open_connection(host, port)
    except OSError:
        cwriter.close()
        return
    up, down = Direction(args), Direction(args)
    await asyncio.gather(carry_in(creader, up), carry_out(swriter, up),
                         carry_in(sreader, down), carry_out(cwriter, down))


async def main():
    ap = argparse.ArgumentParser(description="a TCP proxy with a one-way latency and a rate limit")
    ap.add_argument("--to", required=True, help="HOST:PORT to forward to")
    ap.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    ap.add_argument("--delay-ms", type=float, default=0, help="one-way latency, milliseconds")
    ap.add_argument("--rate", type=float, default=0, help="bytes a second each way (0: no limit)")
    ap.add_argument("--buffer", type=int, default=65536, help="bytes the link queues beyond those in flight")
    ap.add_argument("--port-file", help="write the port here once listening")
    args = ap.parse_args()
    if args.delay_ms < 0 or args.rate < 0 or args.buffer < CHUNK:
        ap.error("--delay-ms and --rate must be >= 0, --buffer at least %d" % CHUNK)
    host, _, port = args.to.rpartition(":")
    server = await asyncio.start_server(lambda r, w: serve(args, host, int(port), r, w), "127.0.0.1",
                                        args.listen)
    bound = server.sockets[0].getsockname()[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % bound)
        os.replace(args.port_file + ".tmp", args.port_file)
    print("link_proxy listen=%d to=%s delay_ms=%g rate=%g" % (bound, args.to, args.delay_ms, args.rate),
          flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
