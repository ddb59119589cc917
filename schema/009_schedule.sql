-- The scheduler's lease order, from both ends. A job's never-leased shards are the order positions
-- [frontier, back): the biggest go from the front to fast workers, the smallest from the back to
-- slow ones, so a slow machine never starts a job's largest shards. Positions below frontier and
-- at or above back have a row; none in between does. NULL back: the job's end (shards_total).
ALTER TABLE jobs ADD COLUMN back INTEGER;
-- The version of the lease order a job's list was made with (common/kernel/shard.h NQ_ORDER_*):
-- 1 roots by their size, as every job before this migration; 2 shards by an estimate of their
-- nodes. A job keeps its order for life: its frontier and back are positions in it.
ALTER TABLE jobs ADD COLUMN lease_order INTEGER NOT NULL DEFAULT 1;
