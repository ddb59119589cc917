"""Scripted hostile peers for the broker: plain pyzmq + msgpack speaking schema/protocol.md,
no nq code. Each scenario below is one attack; tests/integration/test_hostile_peers.sh and
test_final_answer.sh run them against a real `nq broker` and check what the broker did.

    python3 hostile.py SCENARIO WORKER_ENDPOINT [args...]

Every loop here is bounded in count and time, and every socket closes with linger 0.
"""
import json
import os
import sys
import time

import msgpack
import zmq

VERSION = 5
HELLO, WELCOME, CREDIT, TASK, HEARTBEAT, RESULT, SOLPART, ACK, CANCEL, BYE = range(1, 11)
RES_OK, RES_NOTFOUND, RES_ERROR = 0, 1, 2


class Peer:
    """One DEALER connection that speaks the worker side of the protocol."""

    def __init__(self, ctx, endpoint, worker_id, rid=None, nonce=None, credit=0, keys=None):
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        if rid is not None:
            self.sock.setsockopt(zmq.ROUTING_ID, rid)
        if keys:
            pub, sec, server = keys
            self.sock.curve_publickey, self.sock.curve_secretkey, self.sock.curve_serverkey = pub, sec, server
        self.sock.connect(endpoint)
        self.worker_id = worker_id
        self.nonce = nonce if nonce is not None else int.from_bytes(os.urandom(8), "little")
        self.tasks = []
        self.acks = 0
        self.sync = 0                   # the broker's last HEARTBEAT token, echoed in ours
        self.hello(credit)

    def send(self, mtype, *fields):
        self.sock.send(msgpack.packb([VERSION, mtype, *fields], use_bin_type=True))

    def hello(self, credit, nonce=None):
        if nonce is not None:
            self.nonce = nonce
        self.send(HELLO, self.worker_id, self.nonce, "hostile", 1, "hostile")
        self.send(CREDIT, credit)

    def heartbeat(self):
        self.send(HEARTBEAT, [[t["lease"], 0] for t in self.tasks], self.sync, [])   # no devices

    def pump(self, seconds, want_tasks=None, heartbeat=True, want_acks=None):
        """Reads for up to `seconds`, keeping TASKs; stops early once want_tasks are held, or
        want_acks ACKs counted (a loaded machine answers late: wait for it, not for a time)."""
        end = time.monotonic() + seconds
        last_hb = 0
        while time.monotonic() < end:
            if want_tasks is not None and len(self.tasks) >= want_tasks:
                return
            if want_acks is not None and self.acks >= want_acks:
                return
            if heartbeat and time.monotonic() - last_hb > 0.1:
                self.heartbeat()
                last_hb = time.monotonic()
            if not self.sock.poll(50):
                continue
            m = msgpack.unpackb(self.sock.recv(), raw=False)
            if m[1] == TASK:
                job, shard, lease, attempt, kind, n, spec, seed, algo, max_steps, proof = m[2:]
                self.tasks.append(dict(job=job, shard=shard, lease=lease, kind=kind, algo=algo, proof=proof))
            elif m[1] == ACK:
                self.acks += 1
            elif m[1] == HEARTBEAT:
                self.sync = m[3]

    def result(self, t, total=0, unique=0, status=RES_OK, payload=b"", proof=None, lease=None, nodes=1):
        self.send(RESULT, t["job"], t["shard"], t["lease"] if lease is None else lease, t["kind"], status,
                  total, unique, nodes, total % 13, total % 15, 1000, 0,
                  t["proof"] if proof is None else proof, payload, 0)

    def take_all(self, quiet=0.7, limit=10):
        """Reads TASKs until none came for `quiet` seconds (or `limit` seconds passed)."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            held = len(self.tasks)
            self.pump(quiet)
            if len(self.tasks) == held:
                return

    def save(self, path):
        with open(path, "w") as f:
            json.dump(dict(worker=self.worker_id, nonce=self.nonce, tasks=self.tasks), f)

    def close(self):
        self.sock.close(0)


def saved_peer(ctx, ep, path, keys=None, worker=None):
    """The session saved in `path` again (same worker id and nonce: the same identity without keys),
    with its leases; `worker` gives it another worker id instead."""
    with open(path) as f:
        st = json.load(f)
    p = Peer(ctx, ep, worker or st["worker"], nonce=st["nonce"], keys=keys)
    p.tasks = st["tasks"]
    return p


def quorum_bypass(ctx, ep):
    """A takes every shard; for each lease A and B (which never held it) send total=0. B even
    has A's lease and proof (a leak): it must still not count as a second voter."""
    a = Peer(ctx, ep, "hostile-a", credit=1000)
    b = Peer(ctx, ep, "hostile-b", credit=0)
    a.pump(3, want_tasks=10 ** 6)
    for t in a.tasks:
        a.result(t)
        b.result(t)
    a.pump(1)
    b.pump(1)
    print(f"quorum_bypass: A held {len(a.tasks)} leases, A acked {a.acks}, B acked {b.acks}")
    a.close()
    b.close()


def rehello_burn(ctx, ep):
    """One connection, HELLO with a new nonce plus CREDIT 65536, six times."""
    p = Peer(ctx, ep, "hostile-restarter", credit=65536)
    held = 0
    for _ in range(6):
        p.pump(0.4, want_tasks=10 ** 6)
        held += len(p.tasks)
        p.tasks = []
        p.hello(65536, nonce=int.from_bytes(os.urandom(8), "little"))
    print(f"rehello_burn: leases taken over six sessions: {held}")
    p.close()


def error_results(ctx, ep):
    """Answers every TASK with an error result, for 6 s (an honest but broken worker)."""
    p = Peer(ctx, ep, "hostile-erring", credit=4)
    end = time.monotonic() + 6
    sent = 0
    while time.monotonic() < end:
        p.pump(0.1, want_tasks=1)
        for t in p.tasks:
            p.result(t, status=RES_ERROR, payload=b"kernel exploded\nts=x level=error event=store.commit_failed\x1b[2J")
            sent += 1
        p.tasks = []
    print(f"error_results: {sent} error results sent")
    p.close()


def quorum_voters(ctx, ep):
    """Quorum 2 with a silent, a duplicate and a late voter, all voting the same values.
    V1 takes shards and goes silent past the liveness window, then delivers late; V2 votes at
    once and sends each vote twice; V3 votes at once. Every honest schedule must end. (They all
    vote "no solution", which passes the broker's per-shard bounds whatever the shard.)"""
    v1 = Peer(ctx, ep, "voter-late", credit=8)
    v1.pump(2, want_tasks=8)
    late = v1.tasks
    time.sleep(1.5)                     # silent: past 200 ms x 3
    v2 = Peer(ctx, ep, "voter-dup", credit=8)
    v3 = Peer(ctx, ep, "voter-prompt", credit=8)
    end = time.monotonic() + 8
    while time.monotonic() < end:
        for v, dup in ((v2, True), (v3, False)):
            v.pump(0.05)
            for t in v.tasks:
                v.result(t)
                if dup:
                    v.result(t)
            v.tasks = []
        if late and time.monotonic() > end - 6:
            v1.hello(8)                 # it comes back with the same session
            for t in late:
                v1.result(t)
            late = []
        v1.pump(0.05)
    print(f"quorum_voters: acks late={v1.acks} dup={v2.acks} prompt={v3.acks}")
    for v in (v1, v2, v3):
        v.close()


def forge_flood(ctx, ep, count):
    """Forged RESULTs as fast as possible: invented leases and proofs."""
    p = Peer(ctx, ep, "hostile-forger", credit=0)
    t0 = time.monotonic()
    for i in range(int(count)):
        p.send(RESULT, 1, i % 64, int.from_bytes(os.urandom(8), "little"), 1, RES_OK, 0, 0, 1, 0, 0, 1, 0,
               int.from_bytes(os.urandom(8), "little"), b"", 0)
    p.pump(0.5, heartbeat=False)
    print(f"forge_flood: {count} forged results in {time.monotonic() - t0:.2f} s")
    p.close()


def bad_ids(ctx, ep):
    """HELLOs whose worker id would forge log fields, or is not UTF-8; prints how many were welcomed."""
    frames = [msgpack.packb([VERSION, HELLO, wid, 1, "h", 1, "b"])
              for wid in ("w9 event=auth.refused key=FORGED level=error", 'a"b', "ok-id")]
    frames.insert(1, bytes([0x97, VERSION]) + b"\x01\xa2\xff\xfe\x01\xa1h\x01\xa1b")   # worker id bytes ff fe
    welcomed = 0
    for f in frames:
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(ep)
        s.send(f)
        if s.poll(500):
            welcomed += msgpack.unpackb(s.recv(), raw=False)[1] == WELCOME
        s.close(0)
    print(f"bad_ids: welcomed {welcomed} of {len(frames)}")


def hello_flood(ctx, ep, count):
    """Many HELLOs with fresh worker ids on fresh connections, each closed at once."""
    peers = [Peer(ctx, ep, f"flood-{i}", credit=0) for i in range(int(count))]
    time.sleep(1)                       # their HELLOs arrive; then they vanish without BYE
    for p in peers:
        p.close()
    print(f"hello_flood: {count} sessions")


def load_keys(path):
    """(public, secret) Z85 from an `nq keygen` NAME.key file."""
    kv = dict(line.split(" = ", 1) for line in open(path).read().splitlines() if " = " in line)
    return kv["public"].encode(), kv["secret"].encode()


def takeover(ctx, ep, server_pub_file, victim_key, attacker_key):
    """Session takeover on a keyed broker. The victim (key V) holds leases on routing id R.
    The attacker (key A, also allowed) claims the victim's worker id on a connection of its
    own; then connects with the victim's routing id R (as if it had learnt it), delivers
    results for the victim's leases (lease and proof leaked to it) and re-HELLOs."""
    server = open(server_pub_file).read().strip().encode()
    vpub, vsec = load_keys(victim_key)
    apub, asec = load_keys(attacker_key)
    victim = Peer(ctx, ep, "victim-w", rid=b"victim-session", credit=2, keys=(vpub, vsec, server))
    victim.pump(10, want_tasks=2)
    att2 = Peer(ctx, ep, "victim-w", credit=64, keys=(apub, asec, server))   # the name, own connection
    for _ in range(10):
        att2.pump(0.05)
        victim.pump(0.05)               # the victim stays alive meanwhile
    att = Peer(ctx, ep, "victim-w", rid=b"victim-session", credit=64, keys=(apub, asec, server))
    time.sleep(0.2)                     # the CURVE handshake, then the routing id changes hands
    for t in victim.tasks:
        att.result(t)                   # the victim's leases and proofs, leaked
    att.hello(64, nonce=12345)          # "I restarted": would drop the victim's leases
    att.pump(1)
    print(f"takeover: victim held {len(victim.tasks)}, attacker got {len(att.tasks) + len(att2.tasks)} tasks "
          f"and {att.acks + att2.acks} acks")
    for p in (victim, att, att2):
        p.close()


def export_rows0(ctx, ep, job):
    """A raw export request with rows=0 on the control endpoint; prints the reply's code."""
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(ep)
    s.send(msgpack.packb([VERSION, 11, "export", int(job), {"rows": 0}]))
    code = msgpack.unpackb(s.recv(), raw=False)[2] if s.poll(3000) else "none"
    print(f"export_rows0: code {code}")
    s.close(0)


def other_versions(ctx, wep, cep):
    """A HELLO and a control request in the protocol versions around ours (4 and 6): prints what
    came back for each, as `VERSION TYPE [error]`, or `none`."""
    for v in (VERSION - 1, VERSION + 1):
        for ep, frame in ((wep, [v, HELLO, f"old-{v}", 1, "h", 1, "b"]), (cep, [v, 11, "list", 0, {}])):
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(ep)
            s.send(msgpack.packb(frame))
            if s.poll(5000):
                m = msgpack.unpackb(s.recv(), raw=False)
                who = "worker" if ep == wep else "client"
                print(f"{who} v{v}: {m[0]} {m[1]} {m[3] if m[1] == 12 else ''}")
            else:
                print(f"{'worker' if ep == wep else 'client'} v{v}: none")
            s.close(0)


def drop_tasks(ctx, ep, seconds):
    """Takes TASKs and drops them, as if each were lost on the wire, for `seconds`. Its heartbeats
    are honest: they list nothing and echo the broker's last token. Prints how many it dropped."""
    p = Peer(ctx, ep, "hostile-dropper", credit=4)
    end = time.monotonic() + float(seconds)
    dropped = 0
    while time.monotonic() < end:
        p.pump(0.1)
        dropped += len(p.tasks)
        p.tasks = []
    p.send(CREDIT, 0)                   # no more work; a second of heartbeats gives back the last
    p.pump(1.0)
    dropped += len(p.tasks)
    print(f"drop_tasks: {dropped} dropped")
    p.close()


def grab_and_bye(ctx, ep, path):
    """Takes every lease it can, keeps them (and its session) in `path`, then leaves with BYE: its
    leases go back at once, and honest workers may finish the job."""
    p = Peer(ctx, ep, "hostile-rewriter", credit=1000)
    p.take_all()
    p.save(path)
    p.send(BYE)
    time.sleep(0.3)
    print(f"grab_and_bye: {len(p.tasks)} leases")
    p.close()


def lie_first(ctx, ep, path):
    """Takes every lease it can and answers each at once with total 0 (residues consistent), then
    stays, heartbeating, for a while; keeps its session and leases in `path` for resend_saved."""
    p = Peer(ctx, ep, "hostile-liar", credit=1000)
    p.take_all()
    for t in p.tasks:
        p.result(t, total=0)
    p.save(path)
    p.pump(1.5)
    print(f"lie_first: {len(p.tasks)} results of 0, {p.acks} acked")
    p.close()


def peer_keys(server_pub_file, key_file):
    """CURVE keys for a Peer from an `nq keygen` key file and the broker's .pub; None without them."""
    if not key_file:
        return None
    server = open(server_pub_file).read().strip().encode()
    return (*load_keys(key_file), server)


def error_rounds(ctx, ep, rounds, path, server_pub_file="", key_file=""):
    """`rounds` fresh connections (of one CURVE key when given, else each its own session) each take
    one lease and report an error on it; the first one's session and lease are saved in `path`, for
    a late result later. Prints the shard each round was given ("-": none)."""
    keys = peer_keys(server_pub_file, key_file)
    got = []
    for r in range(int(rounds)):
        p = Peer(ctx, ep, f"hostile-erring-{r}", credit=1, keys=keys)
        p.pump(2, want_tasks=1)
        for t in p.tasks:
            p.result(t, status=RES_ERROR, payload=b"it failed here")
        p.pump(0.3)
        got.append(",".join(str(t["shard"]) for t in p.tasks) or "-")
        if r == 0:
            p.save(path)
        p.close()
    print(f"error_rounds: {rounds} rounds, shards {' '.join(got)}")


def impossible(ctx, ep):
    """Results that pass the residues but that no count of their shard can give: the largest
    total, a unique count above the total, and nodes below the total; one lease each."""
    p = Peer(ctx, ep, "hostile-impossible", credit=3)
    p.pump(3, want_tasks=3)
    lies = [dict(total=2 ** 64 - 1, nodes=2 ** 64 - 1), dict(total=8, unique=9, nodes=10 ** 6),
            dict(total=8000, unique=1000, nodes=2)]
    for t, lie in zip(p.tasks, lies):
        p.result(t, **lie)
    p.pump(1)
    print(f"impossible: {min(len(p.tasks), 3)} results sent, {p.acks} acked")
    p.close()


def bad_solution(ctx, ep, n):
    """Takes one solve task and answers it with a permutation of `n` rows that clashes (rows 0 and 1
    on one diagonal), sent in SOLPARTs like a real one, then resends the RESULT while the broker is
    still checking it: refused once, never stored."""
    n = int(n)
    p = Peer(ctx, ep, "hostile-solver", credit=1)
    p.pump(5, want_tasks=1)
    if not p.tasks:
        print("bad_solution: no task")
        return
    t = p.tasks[0]
    cols = list(range(n))               # the identity: every row on one diagonal
    data = b"".join(c.to_bytes(4, "little") for c in cols)
    chunk = 4 << 20
    for off in range(0, len(data), chunk):
        p.send(SOLPART, t["job"], t["shard"], t["lease"], off // 4, data[off:off + chunk], t["proof"])
    for _ in range(2):
        p.send(RESULT, t["job"], t["shard"], t["lease"], t["kind"], RES_OK, 1, 0, 1, 1, 1, 1000, n,
               t["proof"], b"", 0)
    p.pump(3)
    print(f"bad_solution: {n} rows sent, {p.acks} acked")
    p.close()


def resend_after_ack(ctx, ep, n):
    """Not hostile: an honest worker whose resend crossed its ACK. Takes one solve task of `n` rows
    (n even, n % 6 == 0: the classic construction solves it), sends the solution in SOLPARTs and
    its RESULT, waits for the ACK, then sends the RESULT once more without the parts (the broker
    dropped the resend's parts while it checked the first copy). Prints the ACKs it got."""
    n = int(n)
    p = Peer(ctx, ep, "resender", credit=1)
    p.pump(5, want_tasks=1)
    if not p.tasks:
        print("resend_after_ack: no task")
        return
    t = p.tasks[0]
    cols = list(range(1, n, 2)) + list(range(0, n, 2))   # rows 0..n/2-1 on odd columns, then even
    data = b"".join(c.to_bytes(4, "little") for c in cols)
    chunk = 4 << 20
    for off in range(0, len(data), chunk):
        p.send(SOLPART, t["job"], t["shard"], t["lease"], off // 4, data[off:off + chunk], t["proof"])
    result = (RESULT, t["job"], t["shard"], t["lease"], t["kind"], RES_OK, 1, 0, 1, 1, 1, 1000, n, t["proof"],
              b"", 0)
    p.send(*result)
    p.pump(60, want_acks=1)
    p.send(*result)
    p.pump(30, want_acks=2)
    print(f"resend_after_ack: {p.acks} acked")
    p.close()


def resend_saved(ctx, ep, path, total=0, server_pub_file="", key_file=""):
    """Comes back as the session saved in `path` and sends `total` for each of its leases, with
    their proofs: a former holder rewriting what it once held."""
    p = saved_peer(ctx, ep, path, keys=peer_keys(server_pub_file, key_file))
    time.sleep(0.2)
    for t in p.tasks:
        p.result(t, total=int(total))
    p.pump(2, heartbeat=False)
    print(f"resend_saved: {len(p.tasks)} results of {total} sent, {p.acks} acked")
    p.close()


def one_key_many_ids(ctx, ep, server_pub_file, key_file, path, ids):
    """One CURVE key: the first worker id takes every lease and sends a made-up total; then `ids` - 1
    more connections of the same key, each under a new worker id, send the same results again."""
    server = open(server_pub_file).read().strip().encode()
    keys = (*load_keys(key_file), server)
    first = Peer(ctx, ep, "liar-1", credit=1000, keys=keys)
    first.take_all()
    for t in first.tasks:
        first.result(t, total=0)        # "no solution": within what any shard's count can give
    first.save(path)
    first.pump(1)
    acks = first.acks
    first.close()
    for i in range(2, int(ids) + 1):
        p = saved_peer(ctx, ep, path, keys=keys, worker=f"liar-{i}")
        time.sleep(0.2)
        for t in p.tasks:
            p.result(t, total=0)
        p.pump(1, heartbeat=False)
        acks += p.acks
        p.close()
    print(f"one_key_many_ids: {len(first.tasks)} leases, {ids} worker ids, {acks} acks")


def hoard(ctx, ep, seconds, moving="0"):
    """Takes every lease it can (it says threads=1 and asks credit 2,048) and heartbeats each with
    progress 0 for `seconds`: holds work it never does. With moving=1 the first lease's progress
    moves on every heartbeat, as if one shard were being worked on."""
    p = Peer(ctx, ep, "hostile-hoarder", credit=2048)
    p.take_all(quiet=0.5, limit=3)
    taken = len(p.tasks)
    if moving == "1" and p.tasks:
        first, step = p.tasks[0]["lease"], [0]

        def heartbeat():
            step[0] += 1
            p.send(HEARTBEAT, [[t["lease"], step[0] if t["lease"] == first else 0] for t in p.tasks], p.sync,
                   [])
        p.heartbeat = heartbeat
    p.pump(float(seconds))
    print(f"hoard: took {taken}, heartbeat them at 0 for {seconds} s" + (" (one moving)" if moving == "1" else ""))
    p.close()


def burn_rounds(ctx, ep, server_pub_file, key_file, rounds):
    """One CURVE key, `rounds` times: a fresh connection takes everything and goes silent."""
    server = open(server_pub_file).read().strip().encode()
    keys = (*load_keys(key_file), server)
    total = 0
    for r in range(int(rounds)):
        p = Peer(ctx, ep, f"burner-{r}", credit=1000, keys=keys)
        p.take_all(quiet=0.5, limit=3)
        total += len(p.tasks)
        p.close()                       # silent: no BYE, no heartbeats
        time.sleep(1.5)                 # past the broker's liveness window (200 ms x 3)
    print(f"burn_rounds: {rounds} rounds, {total} leases taken")


def outlive_restart(ctx, ep, flag):
    """Takes every lease and waits, silent, until `flag` exists: meanwhile the broker is killed,
    restarted on the same port and the job finished by others. Its socket reconnects by itself;
    it sends 0 for each lease without a HELLO (an unknown peer to the new broker), then HELLOs as
    the same session and sends them again."""
    p = Peer(ctx, ep, "restart-survivor", credit=1000)
    p.take_all()
    end = time.monotonic() + 120
    while not os.path.exists(flag) and time.monotonic() < end:
        time.sleep(0.1)
    for t in p.tasks:
        p.result(t, total=0)
    p.pump(1.5, heartbeat=False)
    before = p.acks
    p.hello(0)
    time.sleep(0.3)
    for t in p.tasks:
        p.result(t, total=0)
    p.pump(60, heartbeat=False, want_acks=before + len(p.tasks))
    print(f"outlive_restart: {len(p.tasks)} leases, {before} acked without HELLO, {p.acks - before} after it")
    p.close()


def cross_job(ctx, ep, other_job):
    """Takes leases of the running job and sends 0 for each under another job's id (a done one),
    lease and proof otherwise as given."""
    p = Peer(ctx, ep, "cross-job", credit=1000)
    p.take_all(quiet=0.5, limit=3)
    for t in p.tasks:
        p.result(dict(t, job=int(other_job)), total=0)
    p.pump(1.5)
    print(f"cross_job: {len(p.tasks)} leases sent as job {other_job}, {p.acks} acked")
    p.close()


SCENARIOS = {f.__name__: f for f in (grab_and_bye, lie_first, resend_saved, one_key_many_ids, hoard,
                                     outlive_restart, cross_job, error_rounds, impossible, bad_solution,
                                     burn_rounds, quorum_bypass, rehello_burn, error_results, quorum_voters, forge_flood,
                                     bad_ids, hello_flood, export_rows0, takeover, drop_tasks, other_versions,
                                     resend_after_ack)}

if __name__ == "__main__":
    ctx = zmq.Context()
    try:
        SCENARIOS[sys.argv[1]](ctx, *sys.argv[2:])
    finally:
        ctx.destroy(linger=0)
