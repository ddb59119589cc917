-- The last error a worker reported for one of the job's shards ("shard 3: <message>"), so
-- `nq status` can say why shards ended FAILED. One column in the job's row, not one per shard:
-- it costs nothing per shard at campaign scale.
ALTER TABLE jobs ADD COLUMN last_error TEXT;
