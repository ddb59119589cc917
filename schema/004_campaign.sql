-- Campaign scale: a job's progress is kept in its own row, and a shard has a row
-- only once it matters (leased, done, failed, in conflict or cancelled).
--
-- Invariants, kept by broker/store/store.c in the same transaction as every change:
--   * shards_done/failed/conflict count the job's rows in those states.
--   * the sums are over its done rows, in 32-bit limbs so SQL never overflows (an exact
--     128-bit value is limb_hi * 2^32 + limb_lo, for up to 2^31 shards of 64-bit values):
--       total = total_hi * 2^32 + total_lo, the same for uniq and nodes;
--     res13_sum/res15_sum add each done row's residues (the whole job's total must then
--     agree mod 13 and mod 15: an O(1) cross-check of the aggregates), core_seconds its
--     elapsed.
--   * frontier: shards are handed out in a fixed order (a pure function of the job's
--     parameters, see common/kernel/shard.h); every shard at an order position below
--     the frontier has a row, none at or above it does. A pending shard at or above the
--     frontier is described by (n, depth, encoding) or (seed0, restarts, algo) alone.
-- `nq check JOB` recomputes every aggregate from the rows and says whether they agree.
ALTER TABLE jobs ADD COLUMN shards_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN shards_conflict INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN total_lo INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN total_hi INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN uniq_lo INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN uniq_hi INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN nodes_lo INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN nodes_hi INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN res13_sum INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN res15_sum INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN core_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN frontier INTEGER NOT NULL DEFAULT 0;

-- Jobs written before this migration have a row for every shard: their frontier is the end.
UPDATE jobs SET
    frontier = shards_total,
    shards_done = (SELECT count(*) FROM shards WHERE job = jobs.id AND state = 'done'),
    shards_failed = (SELECT count(*) FROM shards WHERE job = jobs.id AND state = 'failed'),
    shards_conflict = (SELECT count(*) FROM shards WHERE job = jobs.id AND state = 'conflict'),
    total_lo = (SELECT coalesce(sum(total & 4294967295), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    total_hi = (SELECT coalesce(sum((total >> 32) & 4294967295), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    uniq_lo = (SELECT coalesce(sum(uniq & 4294967295), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    uniq_hi = (SELECT coalesce(sum((uniq >> 32) & 4294967295), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    nodes_lo = (SELECT coalesce(sum(nodes & 4294967295), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    nodes_hi = (SELECT coalesce(sum((nodes >> 32) & 4294967295), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    res13_sum = (SELECT coalesce(sum(res13), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    res15_sum = (SELECT coalesce(sum(res15), 0) FROM shards WHERE job = jobs.id AND state = 'done'),
    core_seconds = (SELECT coalesce(sum(elapsed), 0) FROM shards WHERE job = jobs.id AND state = 'done');

-- Done rows are the bulk of a campaign and are only ever read by (job, idx): the state
-- index keeps just the rows the broker looks for by state.
DROP INDEX shards_by_state;
CREATE INDEX shards_open ON shards (job, state) WHERE state <> 'done';

-- Per job, who delivered how much: the per-worker share of `nq result` and the web view,
-- without a scan over the job's shards.
CREATE TABLE job_workers (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    worker        TEXT NOT NULL,
    shards        INTEGER NOT NULL DEFAULT 0,
    nodes         INTEGER NOT NULL DEFAULT 0,
    seconds       REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (job, worker)
) WITHOUT ROWID;
INSERT INTO job_workers (job, worker, shards, nodes, seconds)
    SELECT job, worker, count(*), 0, coalesce(sum(elapsed), 0) FROM shards
    WHERE state = 'done' AND worker IS NOT NULL GROUP BY job, worker;
