-- A decided shard never changes and a done job never goes back (docs/architecture.md, the first invariant).
-- What arrives after the decision is compared, never voted: an equal result from another
-- identity confirms, a differing one is evidence against its sender, kept here.

-- A result that disagreed with its shard's decided result: one row per shard and identity (a
-- sender that repeats itself is one piece of evidence, and a flood cannot grow the table past
-- the leases it was given).
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
    PRIMARY KEY (job, idx, who)
) WITHOUT ROWID;
ALTER TABLE jobs ADD COLUMN evidence INTEGER NOT NULL DEFAULT 0;   -- rows of evidence, O(1) to show

-- Who confirmed a shard: confirmations count distinct identities, so one key under five worker
-- ids, or one session resending, confirms nothing.
CREATE TABLE confirmations (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,
    who           INTEGER NOT NULL,
    PRIMARY KEY (job, idx, who)
) WITHOUT ROWID;
