-- PLACEHOLDER: the store helper writes the real schema.
CREATE TABLE schema_version(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL);
