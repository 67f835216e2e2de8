-- Exposure (docs/exposure.md): the projects' inventories (their latest
-- scan), and the exposures found: a ledger row or an inventory of a
-- version a report refuses, once per report and row (row_key: the
-- ledger row's token, address and day, or the project).
CREATE TABLE inventories (
    project    TEXT PRIMARY KEY,
    user_email TEXT NOT NULL,
    token_id   TEXT NOT NULL,
    scanned_at {{.TIMESTAMP}} NOT NULL
);
--bun:split
CREATE TABLE inventory_items (
    project   TEXT NOT NULL,
    ecosystem TEXT NOT NULL,
    name      TEXT NOT NULL,
    version   TEXT NOT NULL,
    purl      TEXT NOT NULL,
    PRIMARY KEY (project, ecosystem, name, version)
);
--bun:split
CREATE INDEX inventory_items_package_idx ON inventory_items (ecosystem, name, version);
--bun:split
CREATE TABLE exposures (
    id         {{.SERIAL_PK}},
    threat_id  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    ecosystem  TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    purl       TEXT NOT NULL,
    user_email TEXT NOT NULL,
    token_id   TEXT NOT NULL,
    client_ip  TEXT NOT NULL,
    project    TEXT NOT NULL,
    first_at   {{.TIMESTAMP}} NOT NULL,
    last_at    {{.TIMESTAMP}} NOT NULL,
    count      BIGINT NOT NULL,
    found_at   {{.TIMESTAMP}} NOT NULL,
    row_key    TEXT NOT NULL
);
--bun:split
CREATE UNIQUE INDEX exposures_once_idx ON exposures (threat_id, kind, ecosystem, name, version, row_key);
--bun:split
CREATE INDEX exposures_user_idx ON exposures (user_email, id);
--bun:split
CREATE INDEX exposures_token_idx ON exposures (token_id);
--bun:split
CREATE INDEX inventories_token_idx ON inventories (token_id);
