-- threatd schema v1. Types such as {{.TIMESTAMP}} are filled in per dialect by
-- storage/dialect.go, the one place where SQLite and PostgreSQL differ.

CREATE TABLE users (
    id                   TEXT PRIMARY KEY,
    email                TEXT NOT NULL,
    name                 TEXT NOT NULL,
    tier                 TEXT NOT NULL CHECK (tier IN ('free', 'paid')),
    role                 TEXT NOT NULL CHECK (role IN ('submitter', 'reviewer', 'admin')),
    submissions_per_hour INTEGER CHECK (submissions_per_hour >= 0),
    created_at           {{.TIMESTAMP}} NOT NULL,
    updated_at           {{.TIMESTAMP}} NOT NULL
);
--bun:split
CREATE UNIQUE INDEX users_email_key ON users (email);
--bun:split

CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id),
    name       TEXT NOT NULL DEFAULT '',
    hash       TEXT NOT NULL CHECK (length(hash) = 64),
    hint       TEXT NOT NULL DEFAULT '',
    created_at {{.TIMESTAMP}} NOT NULL,
    revoked_at {{.TIMESTAMP}}
);
--bun:split
CREATE UNIQUE INDEX api_tokens_hash_key ON api_tokens (hash);
--bun:split
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);
--bun:split

-- A threat report: its identity, duplicate key and review state.
CREATE TABLE threats (
    id                  TEXT PRIMARY KEY,
    report_type         TEXT NOT NULL CHECK (report_type IN ('package', 'repository', 'url', 'domain', 'ip', 'wallet', 'container')),
    resource_identifier TEXT NOT NULL,
    registry            TEXT,
    canonical_key       TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'rejected')),
    submitter_id        TEXT REFERENCES users (id),
    revision            INTEGER NOT NULL DEFAULT 0,
    source              TEXT,
    upstream_id         TEXT,
    created_at          {{.TIMESTAMP}} NOT NULL,
    updated_at          {{.TIMESTAMP}} NOT NULL,
    verified_at         {{.TIMESTAMP}},
    verified_by         TEXT
);
--bun:split
-- At most one live (pending or verified) report per canonical key.
CREATE UNIQUE INDEX threats_live_key ON threats (canonical_key) WHERE status IN ('pending', 'verified');
--bun:split
CREATE INDEX threats_submitter_created_idx ON threats (submitter_id, created_at);
--bun:split
CREATE INDEX threats_status_verified_idx ON threats (status, verified_at);
--bun:split

-- The descriptive fields of a report; created in the same transaction as the report.
CREATE TABLE threat_details (
    threat_id           TEXT PRIMARY KEY REFERENCES threats (id) ON DELETE CASCADE,
    threat_description  TEXT NOT NULL,
    payload_description TEXT,
    package_name        TEXT,
    publisher           TEXT,
    severity_level      TEXT CHECK (severity_level IN ('critical', 'high', 'medium', 'low')),
    evidence_references TEXT,
    contact_email       TEXT,
    tags                {{.JSON}} NOT NULL,
    version_info        TEXT,
    first_seen          {{.TIMESTAMP}},
    last_seen           {{.TIMESTAMP}},
    osv_advisory_url    TEXT,
    contributors        {{.JSON}} NOT NULL,
    download_count      BIGINT CHECK (download_count >= 0)
);
--bun:split
CREATE INDEX threat_details_publisher_idx ON threat_details (lower(publisher));
--bun:split

-- Every proposed change to a report, kept whatever its fate.
CREATE TABLE threat_revisions (
    id          TEXT PRIMARY KEY,
    threat_id   TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE,
    number      INTEGER NOT NULL CHECK (number > 0),
    author_id   TEXT REFERENCES users (id),
    author_name TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'applied')),
    changes     {{.JSON}} NOT NULL,
    note        TEXT,
    created_at  {{.TIMESTAMP}} NOT NULL,
    decided_at  {{.TIMESTAMP}},
    decided_by  TEXT
);
--bun:split
CREATE UNIQUE INDEX threat_revisions_number_key ON threat_revisions (threat_id, number);
--bun:split

-- Every review transition: who, when, why.
CREATE TABLE review_events (
    id          TEXT PRIMARY KEY,
    threat_id   TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE,
    revision_id TEXT REFERENCES threat_revisions (id),
    action      TEXT NOT NULL,
    from_status TEXT,
    to_status   TEXT,
    actor_id    TEXT REFERENCES users (id),
    actor_name  TEXT NOT NULL,
    note        TEXT,
    at          {{.TIMESTAMP}} NOT NULL
);
--bun:split
CREATE INDEX review_events_threat_idx ON review_events (threat_id, at);
--bun:split

-- The change feed: one row per committed change, seq in commit order.
CREATE TABLE changes (
    seq       {{.SERIAL_PK}},
    entity    TEXT NOT NULL CHECK (entity IN ('user', 'token', 'threat')),
    entity_id TEXT NOT NULL,
    op        TEXT NOT NULL,
    at        {{.TIMESTAMP}} NOT NULL
);
