-- Reputation (docs/community.md): every event that earns or costs a user
-- points, as it happens; a profile, an account and the leaderboard sum
-- them (the last over a period). kind: verified (the submitter, by
-- severity), revision (an approved revision's proposer, 5), rejected (a
-- rejected pending report, -10), withdrawn (a withdrawal after a dispute,
-- -10), duplicate (a submission refused as a duplicate, 0, counted).
CREATE TABLE reputation_events (
    id        TEXT PRIMARY KEY,
    user_id   TEXT NOT NULL,
    threat_id TEXT,
    kind      TEXT NOT NULL CHECK (kind IN ('verified', 'revision', 'rejected', 'withdrawn', 'duplicate')),
    points    INTEGER NOT NULL,
    at        {{.TIMESTAMP}} NOT NULL
);
--bun:split
CREATE INDEX reputation_events_user_idx ON reputation_events (user_id, at);
--bun:split
CREATE INDEX reputation_events_at_idx ON reputation_events (at);
--bun:split
-- Profiles by public name.
CREATE INDEX users_name_idx ON users (name);
--bun:split
-- The points earned before this version: each community report verified
-- or rejected while pending, each approved revision.
INSERT INTO reputation_events (id, user_id, threat_id, kind, points, at)
SELECT 'verified:' || id, submitter_id, id, 'verified',
       CASE severity_level WHEN 'critical' THEN 40 WHEN 'high' THEN 30 WHEN 'medium' THEN 20 ELSE 10 END, verified_at
FROM threats WHERE submitter_id IS NOT NULL AND verified_at IS NOT NULL AND source IS NULL;
--bun:split
INSERT INTO reputation_events (id, user_id, threat_id, kind, points, at)
SELECT 'rejected:' || id, submitter_id, id, 'rejected', -10, updated_at
FROM threats WHERE submitter_id IS NOT NULL AND status = 'rejected' AND verified_at IS NULL AND source IS NULL;
--bun:split
INSERT INTO reputation_events (id, user_id, threat_id, kind, points, at)
SELECT 'revision:' || id, author_id, threat_id, 'revision', 5, decided_at
FROM threat_revisions WHERE author_id IS NOT NULL AND state = 'approved' AND decided_at IS NOT NULL;
