-- Ingestion: upstream provenance and "every version affected".
ALTER TABLE threats ADD COLUMN upstream_modified {{.TIMESTAMP}};
--bun:split
ALTER TABLE threats ADD COLUMN all_versions BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
CREATE UNIQUE INDEX threats_upstream_key ON threats (source, upstream_id) WHERE source IS NOT NULL AND upstream_id IS NOT NULL;
--bun:split
-- Leases: one daemon at a time runs a scheduled source.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at {{.TIMESTAMP}} NOT NULL
);
