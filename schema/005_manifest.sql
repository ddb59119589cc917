-- Manifests: `nq export JOB --manifest FILE` writes every subtotal of a done count
-- job with a hash tree over them (common/kernel/manifest.h); its root is kept here, so that
-- `nq result` prints it beside the count and anyone can publish the two together.
-- One row per job: a later export replaces it (its root differs only when the rows changed,
-- e.g. a late confirming result raised a shard's confirmations).
CREATE TABLE manifests (
    job           INTEGER PRIMARY KEY REFERENCES jobs(id),
    root          TEXT NOT NULL,                  -- 64 lowercase hex digits: BLAKE2b-256
    shards        INTEGER NOT NULL,               -- leaves besides the header line
    created_at    REAL NOT NULL
);
