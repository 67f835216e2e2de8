-- Community signals (docs/api/sightings.md, docs/api/records.md).
--
-- When a report's sighting counts last changed: every daemon sharing the
-- database re-reads the counts changed since its last look. votes counts
-- the false-positive votes since the report's last review decision (the
-- submitter's own left out); disputed is set while they have put the
-- report back in review.
ALTER TABLE sighting_counts ADD COLUMN updated_at {{.TIMESTAMP}};
--bun:split
ALTER TABLE sighting_counts ADD COLUMN votes BIGINT NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE sighting_counts ADD COLUMN disputed BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
CREATE INDEX sighting_counts_updated_idx ON sighting_counts (updated_at);
--bun:split
-- A report's open dispute (since when), and when a reviewer last kept it
-- (votes count from the later of that and its verification).
ALTER TABLE threats ADD COLUMN disputed_at {{.TIMESTAMP}};
--bun:split
ALTER TABLE threats ADD COLUMN kept_at {{.TIMESTAMP}};
--bun:split
-- The disputed reports of the review queue, oldest dispute first.
CREATE INDEX threats_disputed_idx ON threats (disputed_at, id) WHERE disputed_at IS NOT NULL;
--bun:split
ALTER TABLE webhooks ADD COLUMN on_disputed BOOLEAN NOT NULL DEFAULT FALSE;
--bun:split
ALTER TABLE webhooks ADD COLUMN on_kept BOOLEAN NOT NULL DEFAULT FALSE;
