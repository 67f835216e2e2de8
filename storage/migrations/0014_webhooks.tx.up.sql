-- Push subscriptions (issue 34, docs/webhooks.md). Each published change
-- (feed_events) is queued for every subscription that wants it in the
-- transaction that publishes it (appendChanges): the queue is the outbox,
-- so no event is lost between the commit and its delivery.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    url             TEXT NOT NULL,
    secret          TEXT NOT NULL,
    on_verified     BOOLEAN NOT NULL,
    on_revised      BOOLEAN NOT NULL,
    on_withdrawn    BOOLEAN NOT NULL,
    ecosystem       TEXT,
    created_at      {{.TIMESTAMP}} NOT NULL,
    created_by      TEXT NOT NULL,
    failing_since   {{.TIMESTAMP}},
    last_success_at {{.TIMESTAMP}},
    disabled_at     {{.TIMESTAMP}},
    disabled_reason TEXT,
    expired         BIGINT NOT NULL DEFAULT 0
);
--bun:split
-- One row per subscription and published change: pending until a 2xx
-- answer (delivered), the end of its retry window (failed) or its expiry
-- from a disabled subscription's bounded queue (expired).
CREATE TABLE webhook_deliveries (
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    threat_id   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    event_at    {{.TIMESTAMP}} NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'expired')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     {{.TIMESTAMP}} NOT NULL,
    finished_at {{.TIMESTAMP}},
    PRIMARY KEY (webhook_id, seq)
);
--bun:split
-- The delivery worker reads the due ones; the queue gauges count them.
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_at) WHERE state = 'pending';
--bun:split
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, seq) WHERE state = 'pending';
--bun:split
-- Which pending deliveries still need a payload (TrimWebhooks).
CREATE INDEX webhook_deliveries_seq_idx ON webhook_deliveries (seq) WHERE state = 'pending';
--bun:split
-- The body of each published change as first sent, once for every
-- subscription: every retry, to any of them, sends the same bytes. Kept
-- while a delivery of it is pending.
CREATE TABLE webhook_payloads (
    seq     BIGINT PRIMARY KEY,
    payload TEXT NOT NULL
);
--bun:split
CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (finished_at) WHERE state <> 'pending';
--bun:split
CREATE TABLE webhook_attempts (
    id         {{.SERIAL_PK}},
    webhook_id TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    at         {{.TIMESTAMP}} NOT NULL,
    status     INTEGER NOT NULL,
    latency_us BIGINT NOT NULL,
    error      TEXT,
    state      TEXT NOT NULL,
    FOREIGN KEY (webhook_id, seq) REFERENCES webhook_deliveries (webhook_id, seq) ON DELETE CASCADE
);
--bun:split
CREATE INDEX webhook_attempts_webhook_idx ON webhook_attempts (webhook_id, id);
--bun:split
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (webhook_id, seq);
