-- The firewall's policy (issue 54, docs/firewall.md): waivers, decisions
-- and the versions held in quarantine.
ALTER TABLE webhooks ADD COLUMN on_firewall_blocked BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
ALTER TABLE webhooks ADD COLUMN on_firewall_warned BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
CREATE TABLE firewall_waivers (
    id         TEXT PRIMARY KEY,
    ecosystem  TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    rule       TEXT NOT NULL,
    reason     TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at {{.TIMESTAMP}} NOT NULL,
    until      {{.TIMESTAMP}} NOT NULL
);
--bun:split
CREATE INDEX firewall_waivers_until_idx ON firewall_waivers (until);
--bun:split
-- One row per decision; seq is the list's cursor and, negated, the
-- webhook delivery's seq of its event (feed events have positive ones).
CREATE TABLE firewall_decisions (
    seq        {{.SERIAL_PK}},
    at         {{.TIMESTAMP}} NOT NULL,
    ecosystem  TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    purl       TEXT NOT NULL,
    rule       TEXT NOT NULL,
    action     TEXT NOT NULL,
    threat_ids TEXT NOT NULL,
    until      {{.TIMESTAMP}},
    user_email TEXT NOT NULL,
    client_ip  TEXT NOT NULL
);
--bun:split
CREATE INDEX firewall_decisions_at_idx ON firewall_decisions (at, seq);
--bun:split
CREATE TABLE firewall_held (
    ecosystem  TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    published  {{.TIMESTAMP}},
    first_seen {{.TIMESTAMP}} NOT NULL,
    until      {{.TIMESTAMP}} NOT NULL,
    PRIMARY KEY (ecosystem, name, version)
);
--bun:split
CREATE INDEX firewall_held_until_idx ON firewall_held (until, ecosystem, name, version);
