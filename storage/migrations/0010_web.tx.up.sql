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
