-- nq store, version 1. Applied once at open (see broker/store.c), recorded in schema_version.
-- Integers are SQLite's signed 64-bit: unsigned 64-bit counts are stored as their
-- two's-complement bit pattern and read back as uint64_t. 128-bit job totals are
-- never stored: they are summed from the shards (exact, and cannot drift).

CREATE TABLE schema_version (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  REAL NOT NULL
);

CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('count', 'solve', 'enumerate')),
    n             INTEGER NOT NULL CHECK (n >= 1),
    state         TEXT NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'running', 'done', 'failed', 'cancelled')),
    priority      INTEGER NOT NULL DEFAULT 0,
    depth         INTEGER NOT NULL DEFAULT 0,     -- count/enumerate: shard depth
    encoding      INTEGER NOT NULL DEFAULT 0,     -- count/enumerate: shard encoding version
    algo          TEXT NOT NULL DEFAULT '',       -- solve: method(s), comma-separated for a study
    seed0         INTEGER NOT NULL DEFAULT 0,
    restarts      INTEGER NOT NULL DEFAULT 0,
    solutions     INTEGER NOT NULL DEFAULT 0,     -- solve: stop after K distinct; 0 = every seed (study)
    max_steps     INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 3,
    quorum        INTEGER NOT NULL DEFAULT 1,
    shards_total  INTEGER NOT NULL,
    shards_done   INTEGER NOT NULL DEFAULT 0,     -- kept in step by the store on every result
    created_at    REAL NOT NULL,
    started_at    REAL,
    finished_at   REAL
);

CREATE TABLE shards (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,               -- (job, idx) always names the same subproblem
    spec          BLOB,                           -- count/enumerate: encoded descriptor
    seed          INTEGER,                        -- solve
    algo          TEXT,                           -- solve: method of this seed
    cost          REAL NOT NULL DEFAULT 0,        -- relative cost estimate: larger first
    state         TEXT NOT NULL DEFAULT 'pending'
                  -- ORs, not IN (...): SQLite 3.40 builds a temporary b-tree per row for an IN list
                  CHECK (state = 'pending' OR state = 'leased' OR state = 'done' OR state = 'failed'
                         OR state = 'conflict' OR state = 'cancelled'),
    attempts      INTEGER NOT NULL DEFAULT 0,
    lease         INTEGER,
    worker        TEXT,                           -- who holds the lease / who delivered
    leased_at     REAL,
    status        INTEGER,                        -- result status (NQ_RES_*): solve found/not found
    total         INTEGER,                        -- count: weighted total; enumerate: solutions
    uniq          INTEGER,                        -- count: unique contribution
    nodes         INTEGER,                        -- count: nodes; solve: steps
    res13         INTEGER,
    res15         INTEGER,
    elapsed       REAL,                           -- seconds on the worker
    confirmations INTEGER NOT NULL DEFAULT 0,     -- later equal results
    conflict_with TEXT,                           -- worker whose result disagreed
    done_at       REAL,
    PRIMARY KEY (job, idx)
) WITHOUT ROWID;

CREATE INDEX shards_by_state ON shards (job, state);

CREATE TABLE workers (
    id            TEXT PRIMARY KEY,
    host          TEXT NOT NULL,
    pubkey        TEXT,                           -- CURVE public key (Z85) that authenticated it
    threads       INTEGER NOT NULL DEFAULT 0,
    first_seen    REAL NOT NULL,
    last_seen     REAL NOT NULL,
    shards_done   INTEGER NOT NULL DEFAULT 0,
    nodes         INTEGER NOT NULL DEFAULT 0,
    seconds       REAL NOT NULL DEFAULT 0,
    conflicts     INTEGER NOT NULL DEFAULT 0,     -- results outvoted or disagreeing
    flagged       INTEGER NOT NULL DEFAULT 0
);

-- solve: one row per distinct verified solution. Small permutations inline,
-- large ones in a file beside the DB named by the content hash.
CREATE TABLE solutions (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    hash          TEXT NOT NULL,                  -- hex digest of the permutation
    shard         INTEGER NOT NULL,
    seed          INTEGER NOT NULL,
    n             INTEGER NOT NULL,
    cols          BLOB,                           -- uint32 little-endian, when small
    path          TEXT,                           -- file name beside the DB, when large
    found_at      REAL NOT NULL,
    PRIMARY KEY (job, hash)
);

-- enumerate: the solutions of one shard, packed (4 bits per column), in canonical order.
CREATE TABLE enum_solutions (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    shard         INTEGER NOT NULL,
    count         INTEGER NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (job, shard)
) WITHOUT ROWID;
