-- Browsing by severity (issue 35): a copy of threat_details.severity_level
-- on the report's row, written with the details, so that /threats?severity=
-- and query-latest?severity= are a range of an index in verified order
-- rather than a walk of every verified report checking its details. The
-- index is partial: imported reports mostly have no severity.
ALTER TABLE threats ADD COLUMN severity_level TEXT;
--bun:split
UPDATE threats SET severity_level = (SELECT d.severity_level FROM threat_details AS d WHERE d.threat_id = threats.id)
WHERE id IN (SELECT threat_id FROM threat_details WHERE severity_level IS NOT NULL);
--bun:split
CREATE INDEX threats_severity_verified_idx ON threats (severity_level, status, verified_at, id) WHERE severity_level IS NOT NULL;
