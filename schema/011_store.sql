-- nq store, version 11: the whole schema of a new store, applied once at open (broker/store/store.c)
-- and recorded in schema_version. A later release adds numbered migrations after this file.
-- Integers are SQLite's signed 64-bit: unsigned 64-bit counts are stored as their two's-complement
-- bit pattern and read back as uint64_t. 128-bit job sums are kept in 32-bit limbs (below).

CREATE TABLE schema_version (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  REAL NOT NULL
);

-- Broker-wide settings that must survive restarts, e.g. the secret that authenticates lease ids
-- (so a result for a lease this broker never issued is refused, even after a restart).
CREATE TABLE meta (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL
);

-- A job is one row, and it holds its progress. Invariants, kept by broker/store/ in the same
-- transaction as every change (`nq check JOB` recomputes them from the rows):
--   * shards_done/failed/conflict count the job's rows in those states;
--   * the sums are over its done rows, in 32-bit limbs so SQL never overflows (an exact 128-bit
--     value is hi * 2^32 + lo, for up to 2^31 shards of 64-bit values); res13_sum/res15_sum add
--     each done row's residues (the job's total must agree mod 13 and mod 15: an O(1) cross-check);
--     core_seconds its elapsed;
--   * the lease order, from both ends: a job's never-leased shards are the order positions
--     [frontier, back); positions below frontier and at or above back have a row, none in between
--     does (NULL back: shards_total). A pending shard without a row is described by (n, depth,
--     encoding) or (seed0, restarts, algo) alone.
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
    shards_done   INTEGER NOT NULL DEFAULT 0,
    created_at    REAL NOT NULL,
    started_at    REAL,
    finished_at   REAL,
    -- the last error a worker reported for one of its shards ("shard 3: <message>"), for `nq status`
    last_error    TEXT,
    shards_failed INTEGER NOT NULL DEFAULT 0,
    shards_conflict INTEGER NOT NULL DEFAULT 0,
    total_lo      INTEGER NOT NULL DEFAULT 0,
    total_hi      INTEGER NOT NULL DEFAULT 0,
    uniq_lo       INTEGER NOT NULL DEFAULT 0,
    uniq_hi       INTEGER NOT NULL DEFAULT 0,
    -- the CPU kernels' nodes over its done shards of nodes_kind 0; the fast GPU kernel's apart
    nodes_lo      INTEGER NOT NULL DEFAULT 0,
    nodes_hi      INTEGER NOT NULL DEFAULT 0,
    res13_sum     INTEGER NOT NULL DEFAULT 0,
    res15_sum     INTEGER NOT NULL DEFAULT 0,
    core_seconds  REAL NOT NULL DEFAULT 0,
    frontier      INTEGER NOT NULL DEFAULT 0,
    verify_ppm    INTEGER NOT NULL DEFAULT 0,     -- spot-checks (--verify-rate P): P in parts per million
    checks        INTEGER NOT NULL DEFAULT 0,     -- check results compared
    disagreed     INTEGER NOT NULL DEFAULT 0,     -- ... that disagreed
    evidence      INTEGER NOT NULL DEFAULT 0,     -- rows of evidence, O(1) to show
    back          INTEGER,
    -- the version of the lease order its list was made with (common/kernel/shard.h NQ_ORDER_*);
    -- a job keeps it for life: its frontier and back are positions in it
    lease_order   INTEGER NOT NULL DEFAULT 2,
    fast_nodes_lo INTEGER NOT NULL DEFAULT 0,     -- the fast GPU kernel's nodes (nodes_kind 1) ...
    fast_nodes_hi INTEGER NOT NULL DEFAULT 0,
    fast_shards   INTEGER NOT NULL DEFAULT 0      -- ... over this many done shards (<= shards_done)
);

-- A shard has a row only once it matters: leased, done, failed, in conflict or cancelled.
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
    confirmations INTEGER NOT NULL DEFAULT 0,     -- later equal results, one per identity
    conflict_with TEXT,                           -- worker whose result disagreed
    done_at       REAL,
    -- the identity (identities.id) that delivered the stored result: an integer, so a done shard
    -- grows by a byte or two, not by a 40-character key
    who           INTEGER,
    -- NQ_VERIFY_*: 0 nothing to check; 1 a check copy is wanted (the result counts meanwhile);
    -- 2 disputed (out of the job's sums until a majority decides); 3 a nodes dispute between two
    -- CPU counts, whose tie-break asks for the CPU kernels' count
    verify        INTEGER NOT NULL DEFAULT 0,
    -- whose node count the result carries (RESULT.nodes_kind): 0 the CPU kernels' (and the GPU's
    -- parity kernel's), 1 the fast GPU kernel's own steps; nodes are compared only between kind 0
    nodes_kind    INTEGER NOT NULL DEFAULT 0 CHECK (nodes_kind BETWEEN 0 AND 1),
    -- 1: the stored result was a tail copy's, decided without its holder: `nq audit` recounts first
    by_copy       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, idx)
) WITHOUT ROWID;

-- Done rows are the bulk of a campaign and are only ever read by (job, idx): the indexes keep just
-- the rows the broker looks for by state, and the shards under check (a restart finds them
-- without a walk of the job).
CREATE INDEX shards_open ON shards (job, state) WHERE state <> 'done';
CREATE INDEX shards_verify ON shards (job, verify) WHERE verify <> 0;

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

-- Per job, who delivered how much: the per-worker share of `nq result` and the web view, without
-- a scan over the job's shards.
CREATE TABLE job_workers (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    worker        TEXT NOT NULL,
    shards        INTEGER NOT NULL DEFAULT 0,
    nodes         INTEGER NOT NULL DEFAULT 0,
    seconds       REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (job, worker)
) WITHOUT ROWID;

-- solve: one row per distinct verified solution. Small permutations inline, large ones in a file
-- beside the DB named by the content hash.
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

-- `nq export JOB --manifest FILE` writes every subtotal of a done count job with a hash tree over
-- them (common/kernel/manifest.h); its root is kept here, so that `nq result` prints it beside the
-- count. One row per job: a later export replaces it.
CREATE TABLE manifests (
    job           INTEGER PRIMARY KEY REFERENCES jobs(id),
    root          TEXT NOT NULL,                  -- 64 lowercase hex digits: BLAKE2b-256
    shards        INTEGER NOT NULL,               -- leaves besides the header line
    created_at    REAL NOT NULL
);

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

-- The one vote (broker/verdict.c): every result a shard gets before it is decided is a row here,
-- quorum votes (seq 0, 1, ... in arrival order) and spot-checks (seq 1 the check, 2 and 3
-- tie-breakers) alike, so a broker restart loses none of them.
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
    nodes_kind    INTEGER NOT NULL DEFAULT 0 CHECK (nodes_kind BETWEEN 0 AND 1),
    -- BLAKE2b-256 of what an enumerate payload or a solve solution says (common/wire/agree.h), NULL
    -- for a count: votes are compared by it, never by a short non-cryptographic hash
    digest        BLOB,
    PRIMARY KEY (job, idx, seq)
) WITHOUT ROWID;

-- Identities that lost a dispute in a job, and how far the check of their other results in that
-- job has come (sweep: the next shard index to look at; shards_total when finished).
CREATE TABLE job_flagged (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    who           INTEGER NOT NULL,
    shard         INTEGER NOT NULL,               -- the dispute it lost
    sweep         INTEGER NOT NULL DEFAULT 0,
    at            REAL NOT NULL,
    PRIMARY KEY (job, who)
) WITHOUT ROWID;

-- A decided shard never changes and a done job never goes back. What arrives after the decision
-- is compared, never voted: an equal result from another identity confirms, a differing one is
-- evidence against its sender, one row per shard and identity (a sender that repeats itself is one
-- piece of evidence, and a flood cannot grow the table past the leases it was given).
CREATE TABLE evidence (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,
    who           INTEGER NOT NULL,               -- identities.id of the sender (0: not known)
    worker        TEXT NOT NULL,                  -- the worker id it gave (a name, not proof)
    status        INTEGER NOT NULL,
    total         INTEGER NOT NULL,
    uniq          INTEGER NOT NULL,
    nodes         INTEGER NOT NULL,
    res13         INTEGER NOT NULL,
    res15         INTEGER NOT NULL,
    at            REAL NOT NULL,
    nodes_kind    INTEGER NOT NULL DEFAULT 0 CHECK (nodes_kind BETWEEN 0 AND 1),
    PRIMARY KEY (job, idx, who)
) WITHOUT ROWID;

-- Who confirmed a shard: confirmations count distinct identities, so one key under five worker
-- ids, or one session resending, confirms nothing.
CREATE TABLE confirmations (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,
    who           INTEGER NOT NULL,
    PRIMARY KEY (job, idx, who)
) WITHOUT ROWID;

-- Who failed a shard: an attempt is charged once per shard and identity, so a shard ends FAILED
-- only when max_attempts distinct identities have lost it or reported an error on it. A retry
-- forgets the job's rows with its attempts.
CREATE TABLE failures (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,
    who           INTEGER NOT NULL,               -- identities.id of the holder charged
    PRIMARY KEY (job, idx, who)
) WITHOUT ROWID;

-- A job's progress over its whole life, for the web view's chart: the share of its estimated work
-- done (0..1, from the shard cost estimates) against time, sampled by the broker every few seconds
-- while it runs, in the group commit. At most a few hundred rows a job (broker/store/
-- store_progress.c thins them as the job grows older), so a campaign of months reads the same.
CREATE TABLE job_progress (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    t             REAL NOT NULL,                  -- unix seconds
    done          REAL NOT NULL CHECK (done BETWEEN 0 AND 1),
    PRIMARY KEY (job, t)
) WITHOUT ROWID;
