-- Adaptive spot-checks (nq submit --verify-rate P): an accepted result is computed again by
-- another identity with probability about P; a disagreement goes to a third; the identity that
-- loses is flagged and every other result it delivered in the job is checked. See
-- broker/spotcheck.c for the rule and schema/README.md for the layout.

-- who: the identity (identities.id) that delivered the shard's stored result. An integer, so a
-- done shard grows by a byte or two, not by a 40-character key.
ALTER TABLE shards ADD COLUMN who INTEGER;
-- 0: nothing to check; 1: a check copy is wanted (the result counts meanwhile); 2: disputed
-- (the results disagree, the shard is out of the job's sums until a majority decides).
ALTER TABLE shards ADD COLUMN verify INTEGER NOT NULL DEFAULT 0;
-- Only shards under check are indexed: a restart finds them without a walk of the job.
CREATE INDEX shards_verify ON shards (job, verify) WHERE verify <> 0;

ALTER TABLE jobs ADD COLUMN verify_ppm INTEGER NOT NULL DEFAULT 0;   -- P in parts per million
ALTER TABLE jobs ADD COLUMN checks INTEGER NOT NULL DEFAULT 0;       -- check results compared
ALTER TABLE jobs ADD COLUMN disagreed INTEGER NOT NULL DEFAULT 0;    -- ... that disagreed

-- Who a worker is, as the broker authenticated it: its CURVE key, or its session when keys are
-- off. Its record across jobs decides how often its results are checked.
CREATE TABLE identities (
    id            INTEGER PRIMARY KEY,
    ident         TEXT NOT NULL UNIQUE,
    worker        TEXT NOT NULL,                  -- the worker id it last gave (a name, not proof)
    results       INTEGER NOT NULL DEFAULT 0,     -- results of its that were stored
    confirmed     INTEGER NOT NULL DEFAULT 0,     -- ... that an independent identity agreed with
    outvoted      INTEGER NOT NULL DEFAULT 0,     -- disputes it lost
    first_seen    REAL NOT NULL
);

-- Every check result, after the shard's first: seq 1 is the spot-check, 2 and 3 tie-breakers.
CREATE TABLE checks (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,
    seq           INTEGER NOT NULL,
    who           INTEGER NOT NULL,
    status        INTEGER NOT NULL,
    total         INTEGER NOT NULL,
    uniq          INTEGER NOT NULL,
    nodes         INTEGER NOT NULL,
    res13         INTEGER NOT NULL,
    res15         INTEGER NOT NULL,
    elapsed       REAL NOT NULL,
    agreed        INTEGER NOT NULL,               -- 1: equal to the shard's first result
    at            REAL NOT NULL,
    PRIMARY KEY (job, idx, seq)
) WITHOUT ROWID;

-- Identities that lost a dispute in a job, and how far the check of their other results in
-- that job has come (sweep: the next shard index to look at; shards_total when finished).
CREATE TABLE job_flagged (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    who           INTEGER NOT NULL,
    shard         INTEGER NOT NULL,               -- the dispute it lost
    sweep         INTEGER NOT NULL DEFAULT 0,
    at            REAL NOT NULL,
    PRIMARY KEY (job, who)
) WITHOUT ROWID;
