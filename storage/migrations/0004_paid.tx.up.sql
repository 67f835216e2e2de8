-- Service secrets shared by every daemon on the database (e.g. the key that
-- signs feed cursors), created on first use.
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    created_at {{.TIMESTAMP}} NOT NULL
);
--bun:split
-- Paid calls per token, endpoint and day (anti-harvesting accounting).
CREATE TABLE paid_usage (
    day      TEXT NOT NULL,
    token_id TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    calls    BIGINT NOT NULL,
    PRIMARY KEY (day, token_id, endpoint)
);
