-- A report's exposures newest first, a page at a time (GET /exposure?
-- threat_id=, the exposure.found event's first 1,000): read in id order
-- from the report's entries, never sorted (a report of a popular version
-- may have millions).
CREATE INDEX exposures_threat_idx ON exposures (threat_id, id);
