-- How far a subscriber of the change feed that must miss nothing (the
-- exposure detector, docs/exposure.md) has looked, whichever daemon
-- looked: a daemon that starts reads the changes from there.
CREATE TABLE feed_marks (
    name TEXT PRIMARY KEY,
    at   {{.TIMESTAMP}} NOT NULL
);
