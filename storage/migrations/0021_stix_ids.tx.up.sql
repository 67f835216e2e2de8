-- Derived STIX object ids (issue 37, docs/decisions/0021-derived-stix-ids.md).
-- A report stored from now on has STIX object ids derived from its own id
-- (core.STIXIDs): the report of an object is found by a range of the
-- threats primary key, and publishing it writes no stix_objects rows (a
-- quarter of an import's time at a million reports). A report published
-- before keeps the ids TAXII clients already hold: it is marked legacy, and
-- its ids stay listed in stix_objects. A report never published yet has
-- no listed ids, and takes derived ones.
ALTER TABLE threats ADD COLUMN legacy_stix_ids BOOLEAN NOT NULL DEFAULT TRUE;
--bun:split
UPDATE threats SET legacy_stix_ids = FALSE
WHERE NOT EXISTS (SELECT 1 FROM stix_objects AS o WHERE o.threat_id = threats.id);
