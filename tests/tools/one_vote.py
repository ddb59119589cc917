"""Scripted peers for the scenarios of the one vote (docs/security.md), against a real
`nq broker`; tests/integration/test_one_vote.sh runs them beside real `nq worker`s.

    python3 one_vote.py SCENARIO WORKER_ENDPOINT REF_DB SECONDS [args...]

REF_DB is the store of an `nq run` of the same job (same N and depth): its shards' true counts,
which an honest peer sends and a liar bends. Built on hostile.py's Peer. Each peer prints a line
(flushed) for every answer a test may want to count: `lie ...`, `cpu ...`.
"""
import sqlite3
import sys
import time

import zmq

from hostile import CREDIT, HEARTBEAT, Peer, RESULT, RES_OK

NODES_CPU, NODES_GPU_FAST = 0, 1      # RESULT.nodes_kind: the CPU kernels', the fast GPU kernel's own
TASK_CPU = "cpu"                        # TASK.algo of a count: the CPU kernels' nodes are wanted


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


def serve(p, seconds, reply):
    """Answers every TASK at once with reply(t), for `seconds`."""
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        p.pump(0.05)
        tasks, p.tasks = p.tasks, []
        for t in tasks:
            reply(t)
    p.close()


def copy_liar(ctx, ep, ref_db, seconds, held):
    """Issue 43's second scenario: answers every lease truly and at once (so the broker measures it
    fast), except copies of the honest holder's leases (the shards in `held`, comma-separated: what
    the holder had leased before this peer joined, so any TASK for one is a tail copy). Each copy it
    answers at once with a wrong total, residues consistent and nodes tagged as the fast GPU
    kernel's, which nothing bounds: 0, or 8 where 0 is the truth."""
    real = truth(ref_db)
    copies = {int(s) for s in held.split(",") if s}
    p = Peer(ctx, ep, "copy-liar", credit=4)

    def reply(t):
        total, unique, nodes = real[t["shard"]]
        if t["shard"] not in copies:
            answer(p, t, total, unique, nodes)
            return
        lie = 8 if total == 0 else 0
        answer(p, t, lie, 1 if lie else 0, nodes, NODES_GPU_FAST)
        print(f"lie shard={t['shard']} total={lie} true={total}", flush=True)
    serve(p, seconds, reply)


def nodes_liar(ctx, ep, ref_db, seconds):
    """Issue 43's third scenario, the liar: true counts at once, nodes + 1 as the CPU kernels'."""
    real = truth(ref_db)
    p = Peer(ctx, ep, "nodes-liar", credit=4)

    def reply(t):
        total, unique, nodes = real[t["shard"]]
        answer(p, t, total, unique, nodes + 1)
        print(f"lie shard={t['shard']} nodes={nodes + 1} true={nodes}", flush=True)
    serve(p, seconds, reply)


def fast_gpu(ctx, ep, ref_db, seconds):
    """Issue 43's third scenario, the honest fast-GPU worker: true counts at once, nodes of the fast
    GPU kernel's own; but a TASK whose algo asks for the CPU kernels' count (a nodes dispute between
    two CPU counts) gets the true CPU node count, as a GPU worker counts it on a CPU thread. Its own
    nodes are the liar's (true + 1): a broker that compared nodes across kinds would pair them."""
    real = truth(ref_db)
    p = Peer(ctx, ep, "fast-gpu", credit=4)

    def reply(t):
        total, unique, nodes = real[t["shard"]]
        if t["algo"] == TASK_CPU:
            answer(p, t, total, unique, nodes, NODES_CPU)
            print(f"cpu shard={t['shard']} nodes={nodes}", flush=True)
        else:
            answer(p, t, total, unique, nodes + 1, NODES_GPU_FAST)
    serve(p, seconds, reply)


SCENARIOS = {f.__name__: f for f in (hoarder, copy_liar, nodes_liar, fast_gpu)}

if __name__ == "__main__":
    ctx = zmq.Context()
    try:
        SCENARIOS[sys.argv[1]](ctx, *sys.argv[2:])
    finally:
        ctx.destroy(linger=0)
