-- Indexes for a million reports: every query that runs per request or per
-- import batch reads a bounded range of an index (EXPLAIN-checked by
-- storage/plans_test.go).

-- Newest verified first, ties by id (query-latest, the index load order):
-- replaces (status, verified_at), which left the id order to a sort.
DROP INDEX threats_status_verified_idx;
--bun:split
CREATE INDEX threats_status_verified_idx ON threats (status, verified_at, id);
--bun:split
-- query-latest per ecosystem or report type.
CREATE INDEX threats_registry_verified_idx ON threats (registry, status, verified_at, id);
--bun:split
CREATE INDEX threats_type_verified_idx ON threats (report_type, status, verified_at, id);
--bun:split
-- The new-user cap counts a submitter's reports by status.
CREATE INDEX threats_submitter_status_idx ON threats (submitter_id, status);
