-- The web site (issue 14): a password for web log-in, server-side sessions
-- shared by every daemon on the database, and when each API token was last
-- used.
ALTER TABLE users ADD COLUMN password_hash TEXT;
--bun:split
ALTER TABLE api_tokens ADD COLUMN last_used_at {{.TIMESTAMP}};
--bun:split
-- id_hash is the hex SHA-256 of the session cookie's value: a copy of the
-- table does not let anyone log in.
CREATE TABLE web_sessions (
    id_hash    TEXT PRIMARY KEY CHECK (length(id_hash) = 64),
    user_id    TEXT NOT NULL REFERENCES users (id),
    created_at {{.TIMESTAMP}} NOT NULL,
    expires_at {{.TIMESTAMP}} NOT NULL
);
--bun:split
CREATE INDEX web_sessions_user_idx ON web_sessions (user_id, expires_at);
--bun:split
-- My submissions pages through a user's reports newest first, with the id
-- as the tie-breaker: the index carries it, so a page is a bounded read in
-- index order (the hourly limit's count uses the same index).
DROP INDEX threats_submitter_created_idx;
--bun:split
CREATE INDEX threats_submitter_created_idx ON threats (submitter_id, created_at, id);
