-- Who failed a shard: an attempt is charged once per shard and identity, so a shard ends FAILED
-- only when max_attempts distinct identities have lost it or reported an error on it. One key
-- that errs from five fresh connections once failed a shard at the default --max-attempts 5.
-- A retry forgets the job's rows with its attempts.
CREATE TABLE failures (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    idx           INTEGER NOT NULL,
    who           INTEGER NOT NULL,               -- identities.id of the holder charged
    PRIMARY KEY (job, idx, who)
) WITHOUT ROWID;
