-- exposure.found (docs/exposure.md): subscriptions that name it, and the
-- one event of each report, numbered apart from the feed's and the
-- firewall's (its deliveries' seq is -(2^40 + id)).
ALTER TABLE webhooks ADD COLUMN on_exposure_found BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
CREATE TABLE exposure_events (
    id        {{.SERIAL_PK}},
    threat_id TEXT NOT NULL UNIQUE,
    at        {{.TIMESTAMP}} NOT NULL
);
