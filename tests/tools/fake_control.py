#!/usr/bin/env python3
"""A hostile control endpoint: speaks the CTL_REP frames of schema/protocol.md
(msgpack [version, 12, code, error, doc]) but fills the answer documents with what a
broken or malicious broker could send, to check that the nq client commands
refuse them with a clear error instead of crashing or looping.

usage: fake_control.py SCENARIO
Binds a free loopback port (no race with other tests for it), prints
"ready ENDPOINT", and serves requests until killed. Every reply is a
well-formed frame, so only the client's trust in the document is tested.
"""
import sys

import msgpack
import zmq

CTL_REQ, CTL_REP = 11, 12

# A result document that makes `nq result --out/--board` go on to ask for the solution.
SOLVE_RESULT = {"id": 1, "kind": "solve", "n": 8, "state": "done", "shards_done": 1, "shards_total": 1}
JOB = {"id": 1, "kind": "count", "n": 8, "state": "running", "shards_done": 1, "shards_total": 2}


def le32(values):
    return b"".join(int(v).to_bytes(4, "little") for v in values)


# scenario -> op -> document (ops not listed answer code 3 "unexpected op").
SCENARIOS = {
    # n * 4 wraps to 4 in 64 bits: the bin of 4 bytes "matches" (a crash the client once had).
    "solution-wrap": {"result": SOLVE_RESULT, "solution": {"n": 2**62 + 1, "cols": le32([0])}},
    "solution-huge-n": {"result": SOLVE_RESULT, "solution": {"n": 2**40, "cols": b""}},
    "solution-n-str": {"result": SOLVE_RESULT, "solution": {"n": "8", "cols": le32(range(8))}},
    "solution-short": {"result": SOLVE_RESULT, "solution": {"n": 8, "cols": le32(range(7))}},
    "solution-col-range": {"result": SOLVE_RESULT,
                           "solution": {"n": 8, "cols": le32([0, 4, 7, 5, 2, 6, 1, 4000000000])}},
    "solution-not-map": {"result": SOLVE_RESULT, "solution": [8, le32(range(8))]},
    # export: a page that says "more" but never moves on.
    "export-stuck": {"export": {"columns": ["idx"], "rows": [[1]], "next": 0}},
    "export-empty-more": {"export": {"columns": ["idx"], "rows": [], "next": 5}},
    "export-bad-rows": {"export": {"columns": ["a", "b"], "rows": [[1]], "next": None}},
    # submit without an id (or a string one): there is no job number to print.
    "submit-no-id": {"submit": {"job": 1}},
    "submit-str-id": {"submit": {"id": "1"}},
    # status/list/workers with every field of the wrong type: printed as "-", never a crash.
    "wrong-types": {
        "status": {"id": "x", "kind": 5, "n": [1], "state": {"a": 1}, "shards_done": "1", "shards_total": -3,
                   "rate": "fast", "created_at": 1e300, "eta": -1.0},
        "list": [{"id": b"\x00", "kind": None, "n": 2**64 - 1, "state": 7}, "not-a-job", 3],
        "workers": [{"id": 5, "host": [1, 2], "threads": "many", "last_seen": -1e308, "flagged": "yes"}, None],
    },
}


def main():
    docs = SCENARIOS[sys.argv[1]]
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:*")
    print("ready", sock.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
    while True:
        parts = sock.recv_multipart()
        try:
            ident, frame = parts
            req = msgpack.unpackb(frame, raw=False)
        except Exception:               # not an nq client (a stray peer on this port): ignore it
            continue
        if not (isinstance(req, list) and len(req) == 5 and req[1] == CTL_REQ):
            continue
        version, op = req[0], req[2]    # answer in the client's own protocol version
        if op in docs:
            rep = [version, CTL_REP, 0, "", docs[op]]
        else:
            rep = [version, CTL_REP, 3, "fake broker: unexpected op", None]
        sock.send_multipart([ident, msgpack.packb(rep, use_bin_type=True)])


if __name__ == "__main__":
    main()
