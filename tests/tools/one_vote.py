"""Scripted peers for the scenarios of the one vote (docs/security.md), against a real
`nq broker`; tests/integration/test_one_vote.sh runs them beside real `nq worker`s.

    python3 one_vote.py SCENARIO WORKER_ENDPOINT REF_DB SECONDS

REF_DB is the store of an `nq run` of the same job (same N and depth): its shards' true counts,
which an honest peer sends and a liar bends. Built on hostile.py's Peer.
"""
import sqlite3
import sys
import time

import zmq

from hostile import CREDIT, HEARTBEAT, Peer, RESULT, RES_OK

NODES_CPU = 0


def truth(ref_db):
    """{shard index: (total, unique, nodes)} of the reference run's one job."""
    db = sqlite3.connect(f"file:{ref_db}?mode=ro", uri=True)
    rows = db.execute("SELECT idx, total, uniq, nodes FROM shards").fetchall()
    db.close()
    return {idx: (total, uniq, nodes) for idx, total, uniq, nodes in rows}


def answer(p, t, total, unique, nodes, nodes_kind=NODES_CPU, elapsed_us=1000):
    """A RESULT with the given counts; residues match the total, so only a second vote can tell."""
    p.send(RESULT, t["job"], t["shard"], t["lease"], t["kind"], RES_OK, total, unique, nodes, total % 13,
           total % 15, elapsed_us, 0, t["proof"], b"", nodes_kind)


def claim_speed(p, real, count=3):
    """Answers `count` leases truly, each claimed done in 1 ms: the broker's fastest worker by its
    own word. Returns the leases it answered."""
    done = []
    while len(done) < count:
        p.pump(10, want_tasks=1)
        if not p.tasks:
            break
        t = p.tasks.pop(0)
        answer(p, t, *real[t["shard"]])
        done.append(t)
    return done


def hoarder(ctx, ep, ref_db, seconds):
    """Issue 43's first scenario: claims speed on three true answers, then takes every lease it can
    and moves each one's progress by one node a heartbeat, never answering."""
    real = truth(ref_db)
    p = Peer(ctx, ep, "hoarder", credit=1)
    claim_speed(p, real)
    p.send(CREDIT, 2048)
    p.take_all(quiet=0.5, limit=5)
    step = [0]

    def heartbeat():
        step[0] += 1
        p.send(HEARTBEAT, [[t["lease"], step[0]] for t in p.tasks], p.sync, [])
    p.heartbeat = heartbeat
    p.pump(float(seconds))
    print(f"hoarder: held {len(p.tasks)} leases, progress crept to {step[0]} nodes")
    p.close()


SCENARIOS = {f.__name__: f for f in (hoarder,)}

if __name__ == "__main__":
    ctx = zmq.Context()
    try:
        SCENARIOS[sys.argv[1]](ctx, *sys.argv[2:])
    finally:
        ctx.destroy(linger=0)
