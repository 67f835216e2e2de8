-- A report's content version (docs/cli.md): 1 as submitted, +1 at each
-- change applied to it (an owner's edit of a pending report, an approved or
-- imported revision). Review decisions name the version they were made on.
ALTER TABLE threats ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
--bun:split
UPDATE threats SET version = 1 + (SELECT count(*) FROM threat_revisions AS r
    WHERE r.threat_id = threats.id AND r.state IN ('applied', 'approved'))
WHERE revision > 0;
