-- TAXII 2.1 (issue 15). A collection lists each report once, at its latest
-- published change: the index finds a report's later changes.
CREATE INDEX feed_events_threat_idx ON feed_events (threat_id, seq);
--bun:split
-- The ids of the STIX objects each published report may appear as (its
-- malware object, and an indicator and a relationship per indicator of
-- compromise: core.STIXObjectIDs), written when the report is published, so
-- that TAXII's object endpoints and match[id] find a report by the id of any
-- of its objects. Migration 0012 fills it for the reports published before.
CREATE TABLE stix_objects (
    object_id TEXT PRIMARY KEY,
    threat_id TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE
);
--bun:split
CREATE INDEX stix_objects_threat_idx ON stix_objects (threat_id);
