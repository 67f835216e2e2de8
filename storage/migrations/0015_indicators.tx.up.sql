-- The indicators of compromise of each published report (core.ExtractIOCs,
-- at medium confidence or more), by a hash of their type and normalised
-- value: the web site's search and check-malicious?match=indicators find
-- the verified reports that name an address, a domain, a URL or a wallet
-- as an indicator. Written when a report is published or revised;
-- migration 0016 fills it for the reports published before.
CREATE TABLE threat_indicators (
    key TEXT NOT NULL,
    threat_id TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE,
    PRIMARY KEY (key, threat_id)
);
--bun:split
CREATE INDEX threat_indicators_threat_idx ON threat_indicators (threat_id);
--bun:split
-- The package-name prefix search reads a range of canonical keys of
-- verified reports, in byte order whatever the database's collation.
CREATE INDEX threats_verified_key_idx ON threats (canonical_key {{.BYTE_ORDER}}) WHERE status = 'verified';
