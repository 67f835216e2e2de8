-- The published changes (issue 12): one row each time a report becomes
-- visible here (verified by a reviewer or imported), is revised while
-- verified, or is withdrawn. Rows are appended last in their transaction
-- under the change-feed lock (decision 0002), and "at" is taken there as
-- the later of the clock and the last row's "at": (at, seq) order is
-- commit order, so a consumer resuming after a position never misses or
-- repeats a change.
CREATE TABLE feed_events (
    seq       {{.SERIAL_PK}},
    at        {{.TIMESTAMP}} NOT NULL,
    threat_id TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE,
    registry  TEXT,
    kind      TEXT NOT NULL CHECK (kind IN ('verified', 'revised', 'withdrawn')),
    version   INTEGER NOT NULL
);
--bun:split
CREATE INDEX feed_events_at_idx ON feed_events (at, seq);
--bun:split
CREATE INDEX feed_events_registry_idx ON feed_events (registry, at, seq);
--bun:split
-- The withdrawals the STIX exports publish as revoked objects: a partial
-- index, so that an import (a million 'verified' rows) does not pay for it.
CREATE INDEX feed_events_withdrawn_idx ON feed_events (at, seq) WHERE kind = 'withdrawn';
--bun:split
-- Reports verified before this version: published when verified (a
-- reviewer's) or when imported (created_at; verified_at is the upstream
-- publication time), in that order.
INSERT INTO feed_events (at, threat_id, registry, kind, version)
SELECT CASE WHEN verified_at > created_at THEN verified_at ELSE created_at END, id, registry, 'verified', version
FROM threats WHERE status = 'verified'
ORDER BY CASE WHEN verified_at > created_at THEN verified_at ELSE created_at END, id;
