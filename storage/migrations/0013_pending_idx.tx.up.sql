-- The review queue reads pending reports in (created_at, id) keyset pages
-- (Store.ListPending): a partial index holds only the pending ones, so a
-- page is a bounded range read however many reports are verified.
CREATE INDEX threats_pending_idx ON threats (created_at, id) WHERE status = 'pending';
