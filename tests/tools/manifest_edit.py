#!/usr/bin/env python3
"""Forges manifests for tests/integration/test_audit*.sh, independently of nq's C code: edits
fields of one shard line and, on request, makes the rest of the file consistent with the edit
(the residues, the header's claimed sums, the root), so each of nq audit's checks can be shown
to catch what the ones before it were made blind to.

  manifest_edit.py root FILE                  prints the root of FILE's lines (hashlib.blake2b)
  manifest_edit.py edit IN OUT SHARD FIELD VALUE [FIELD VALUE ...] [--residues] [--header] [--reroot]
      FIELD: spec, total, unique, nodes, res13, res15, worker, confirmations, evidence, nodes_kind,
             by_copy
      --header: the header's total, unique and nodes follow the edit (nodes: of the lines of
                nodes_kind 0 alone)
"""
import sys
from hashlib import blake2b

FIELDS = ["idx", "spec", "total", "unique", "nodes", "res13", "res15", "worker", "confirmations", "evidence",
          "nodes_kind", "by_copy"]


def cpu_nodes(f):
    """A line's nodes as the header sums them: 0 for a line of the fast GPU kernel's own."""
    return int(f[4]) if f[10] == b"0" else 0


def h(b):
    return blake2b(b, digest_size=32).digest()


def root(lines):
    level = [h(b"\x00" + line) for line in lines]
    while len(level) > 1:
        nxt = [h(b"\x01" + level[i] + level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])      # the odd node is promoted
        level = nxt
    return level[0].hex()


def read(path):
    data = open(path, "rb").read()
    assert data.endswith(b"\n")
    lines = data[:-1].split(b"\n")
    return lines[:-1], lines[-1]       # header + shard lines, root line


def edit(args):
    flags = set(a for a in args if a.startswith("--"))
    args = [a for a in args if not a.startswith("--")]
    src, dst, shard = args[:3]
    pairs = list(zip(args[3::2], args[4::2]))
    lines, root_line = read(src)
    i = int(shard) + 1
    f = lines[i].split(b" ")
    old = {"total": int(f[2]), "unique": int(f[3]), "nodes": cpu_nodes(f)}
    for field, value in pairs:
        f[FIELDS.index(field)] = value.encode()
    if "--residues" in flags:
        t = int(f[2])
        f[5], f[6] = str(t % 13).encode(), str(t % 15).encode()
    lines[i] = b" ".join(f)
    if "--header" in flags:
        head = lines[0].split(b" ")
        for k, kv in enumerate(head):
            key, _, val = kv.partition(b"=")
            if key.decode() in old:
                now = cpu_nodes(f) if key == b"nodes" else int(f[FIELDS.index(key.decode())])
                new = int(val) - old[key.decode()] + now
                head[k] = key + b"=" + str(new).encode()
        lines[0] = b" ".join(head)
    if "--reroot" in flags:
        root_line = b"root " + root(lines).encode()
    open(dst, "wb").write(b"\n".join(lines + [root_line]) + b"\n")


if __name__ == "__main__":
    if sys.argv[1] == "root":
        print(root(read(sys.argv[2])[0]))
    else:
        edit(sys.argv[2:])
