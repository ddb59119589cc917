#!/usr/bin/python3
"""Round-trip time of control requests on one connection, without process start.

    ctl_latency.py ENDPOINT COUNT OP[:JOB] ...   prints "OP median_ms p95_ms" per op
    ctl_latency.py ENDPOINT --until FILE [--every MS] OP[:JOB] ...
        asks the OPs in turn, one every MS milliseconds (10), until FILE exists;
        prints "OP median_ms p95_ms max_ms count" per op and "all max_ms count"

What the broker's loop spends on a request (the answer built from the store and
sent) plus loopback: the part of `nq status` that grows with a job's size. A
whole `nq status` process adds its own start (tens of ms on a busy VM). The
--until form watches the loop while something else runs: the longest answer
is the longest the loop stalled (a request that gets no answer in 30 s fails).
"""
import os
import sys
import time

import msgpack
import zmq

VERSION, CTL_REQ = 5, 11   # NQ_PROTO_VERSION, NQ_MSG_CTL_REQ (common/wire/proto.h)


def ask(sock, spec):
    op, _, job = spec.partition(":")
    t0 = time.perf_counter()
    sock.send(msgpack.packb([VERSION, CTL_REQ, op, int(job or 0), {}]))
    try:
        rep = msgpack.unpackb(sock.recv(), raw=False)
    except zmq.Again:
        sys.exit(f"{spec}: no answer in 30 s")
    if rep[2] != 0:
        sys.exit(f"{spec}: code {rep[2]}: {rep[3]}")
    return (time.perf_counter() - t0) * 1000


def summary(times):
    times = sorted(times)
    return f"{times[len(times) // 2]:.2f} {times[int(len(times) * 0.95)]:.2f}"


def watch(sock, until, every_ms, specs):
    times = {s: [] for s in specs}
    while True:
        for spec in specs:
            times[spec].append(ask(sock, spec))
            time.sleep(every_ms / 1000)
        if os.path.exists(until):
            break
    for spec in specs:
        print(f"{spec} {summary(times[spec])} {max(times[spec]):.2f} {len(times[spec])}")
    every = [t for s in specs for t in times[s]]
    print(f"all {max(every):.2f} {len(every)}")


def main():
    ep = sys.argv[1]
    sock = zmq.Context().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 30000)
    sock.connect(ep)
    if sys.argv[2] == "--until":
        until, rest = sys.argv[3], sys.argv[4:]
        every = 10.0
        if rest[:1] == ["--every"]:
            every, rest = float(rest[1]), rest[2:]
        watch(sock, until, every, rest)
        return
    count = int(sys.argv[2])
    for spec in sys.argv[3:]:
        print(f"{spec} {summary([ask(sock, spec) for _ in range(count)])}")


if __name__ == "__main__":
    main()
