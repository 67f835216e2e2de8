-- Revision patches are stored as core.Submission's JSON (issue 13): a list
-- cleared by the patch is the value [] itself (omitzero keeps it), not a
-- name in a separate "cleared" list. Rows written before are rewritten.
{{.CLEAR_TAGS}};
--bun:split
{{.CLEAR_CONTRIBUTORS}};
--bun:split
{{.DROP_CLEARED}};
