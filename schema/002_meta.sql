-- Broker-wide settings that must survive restarts, e.g. the secret that
-- authenticates lease ids (so a result for a lease this broker never issued
-- is refused, even after a restart).
CREATE TABLE meta (
    key         TEXT PRIMARY KEY,
    value       TEXT NOT NULL
);
