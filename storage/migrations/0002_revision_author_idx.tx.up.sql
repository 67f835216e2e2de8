-- Revisions count toward their author's hourly limit.
CREATE INDEX threat_revisions_author_created_idx ON threat_revisions (author_id, created_at);
--bun:split
CREATE INDEX threat_revisions_state_idx ON threat_revisions (state, created_at);
