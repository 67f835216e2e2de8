-- Community signals (docs/sightings.md): sightings of verified reports,
-- and their counts per report, kept with each change so that a record
-- reads them in one look-up.
CREATE TABLE sightings (
    id          TEXT PRIMARY KEY,
    threat_id   TEXT NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('seen', 'false_positive', 'expired')),
    source      TEXT NOT NULL,
    observed_at {{.TIMESTAMP}} NOT NULL,
    count       BIGINT NOT NULL,
    note        TEXT NOT NULL,
    user_id     TEXT,
    auto_day    TEXT,
    created_at  {{.TIMESTAMP}} NOT NULL
);
--bun:split
-- A report's sightings, newest first (the paged list).
CREATE INDEX sightings_threat_observed_idx ON sightings (threat_id, observed_at, id);
--bun:split
-- The daemon's own: one row per report, source and UTC day.
CREATE UNIQUE INDEX sightings_auto_idx ON sightings (threat_id, source, auto_day) WHERE auto_day IS NOT NULL;
--bun:split
-- One false-positive vote per user and report.
CREATE UNIQUE INDEX sightings_vote_idx ON sightings (threat_id, user_id) WHERE type = 'false_positive' AND user_id IS NOT NULL;
--bun:split
CREATE TABLE sighting_counts (
    threat_id      TEXT PRIMARY KEY,
    seen           BIGINT NOT NULL,
    false_positive BIGINT NOT NULL,
    expired        BIGINT NOT NULL,
    last_seen      {{.TIMESTAMP}}
);
