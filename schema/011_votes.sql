-- One vote (broker/verdict.c): every result a shard gets before it is decided is a row of checks,
-- quorum votes included (seq 0, 1, ... in arrival order), so a broker restart loses none of them.
-- digest: BLAKE2b-256 of what an enumerate payload or a solve solution says (common/wire/agree.h),
-- NULL for a count: votes are compared by it, never by a short non-cryptographic hash.
ALTER TABLE checks ADD COLUMN digest BLOB;
-- 1: the shard's stored result was a tail copy's (a second lease of a slow one), decided without
-- its holder: `nq audit` recounts these first, beside the disputed ones.
ALTER TABLE shards ADD COLUMN by_copy INTEGER NOT NULL DEFAULT 0;
-- shards.verify may be 3: a nodes dispute between two CPU counts, whose tie-break copy asks for the
-- CPU kernels' count (TASK.algo "cpu"); a fast GPU count's nodes never settle one.
