#!/usr/bin/python3
"""Round-trip time of control requests on one connection, without process start.

    ctl_latency.py ENDPOINT COUNT OP[:JOB] ...   prints "OP median_ms p95_ms" per op

What the broker's loop spends on a request (the answer built from the store and
sent) plus loopback: the part of `nq status` that grows with a job's size. A
whole `nq status` process adds its own start (tens of ms on a busy VM).
"""
import sys
import time

import msgpack
import zmq

VERSION, CTL_REQ = 2, 11


def main():
    ep, count = sys.argv[1], int(sys.argv[2])
    sock = zmq.Context().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 10000)
    sock.connect(ep)
    for spec in sys.argv[3:]:
        op, _, job = spec.partition(":")
        times = []
        for _ in range(count):
            t0 = time.perf_counter()
            sock.send(msgpack.packb([VERSION, CTL_REQ, op, int(job or 0), {}]))
            rep = msgpack.unpackb(sock.recv(), raw=False)
            times.append((time.perf_counter() - t0) * 1000)
            if rep[2] != 0:
                sys.exit(f"{op}: code {rep[2]}: {rep[3]}")
        times.sort()
        print(f"{spec} {times[len(times) // 2]:.2f} {times[int(len(times) * 0.95)]:.2f}")


if __name__ == "__main__":
    main()
