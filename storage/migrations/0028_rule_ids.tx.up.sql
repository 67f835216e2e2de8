-- Suricata rule numbers (docs/blocklists.md, "Suricata rules"): each
-- indicator keeps the number it was first given, on every daemon of the
-- database; rev moves when what its rules are made from (basis: the report
-- named, and its version) changes.
CREATE TABLE rule_ids (
    number    {{.SERIAL_PK}},
    indicator TEXT NOT NULL UNIQUE,
    rev       INTEGER NOT NULL,
    basis     TEXT NOT NULL
);
