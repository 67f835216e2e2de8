-- The firewall's ledger (docs/exposure.md): the artifacts served, one row
-- per version, token, client address and UTC day, counted.
CREATE TABLE firewall_ledger (
    ecosystem  TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    TEXT NOT NULL,
    purl       TEXT NOT NULL,
    user_email TEXT NOT NULL,
    token_id   TEXT NOT NULL,
    client_ip  TEXT NOT NULL,
    day        {{.TIMESTAMP}} NOT NULL,
    first_at   {{.TIMESTAMP}} NOT NULL,
    last_at    {{.TIMESTAMP}} NOT NULL,
    count      BIGINT NOT NULL,
    PRIMARY KEY (ecosystem, name, version, token_id, client_ip, day)
);
--bun:split
CREATE INDEX firewall_ledger_day_idx ON firewall_ledger (day);
--bun:split
CREATE INDEX firewall_ledger_token_idx ON firewall_ledger (token_id);
