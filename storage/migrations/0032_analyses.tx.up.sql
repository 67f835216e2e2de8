-- Package analysis (docs/analysis.md): one row per version queued, its
-- lease while a daemon analyses it (holder, lease_until: the webhook
-- outbox's pattern), then its result; report_id is the pending report a
-- suspicious verdict made.
CREATE TABLE analyses (
    ecosystem    TEXT NOT NULL,
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    state        TEXT NOT NULL,
    queued_at    {{.TIMESTAMP}} NOT NULL,
    requested_by TEXT NOT NULL DEFAULT '',
    attempts     INTEGER NOT NULL DEFAULT 0,
    holder       TEXT,
    lease_until  {{.TIMESTAMP}},
    digest       TEXT NOT NULL DEFAULT '',
    verdict      TEXT NOT NULL DEFAULT '',
    result       TEXT,
    analyzed_at  {{.TIMESTAMP}},
    report_id    TEXT,
    PRIMARY KEY (ecosystem, name, version)
);
--bun:split
-- The queue: unfinished analyses in the order they were queued.
CREATE INDEX analyses_queue_idx ON analyses (queued_at) WHERE state <> 'done';
--bun:split
CREATE INDEX analyses_report_idx ON analyses (report_id) WHERE report_id IS NOT NULL;
