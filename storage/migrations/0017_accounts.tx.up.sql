-- Account administration (issue 35, docs/web.md "Your account"): an
-- administrator disables an account (disabled_at), a user deletes their own
-- (deleted_at; the row stays, anonymised, because verified reports name it
-- as their submitter).
ALTER TABLE users ADD COLUMN disabled_at {{.TIMESTAMP}};
--bun:split
ALTER TABLE users ADD COLUMN deleted_at {{.TIMESTAMP}};
--bun:split
-- Deleting an account renames the user in the review events they acted in:
-- a partial index, since imports and the built-in reviewer have no actor.
CREATE INDEX review_events_actor_idx ON review_events (actor_id) WHERE actor_id IS NOT NULL;
