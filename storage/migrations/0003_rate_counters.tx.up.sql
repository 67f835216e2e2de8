-- Per-minute request counters shared by daemons (limits.store: storage).
CREATE TABLE rate_counters (
    win   BIGINT NOT NULL,
    key   TEXT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (win, key)
);
