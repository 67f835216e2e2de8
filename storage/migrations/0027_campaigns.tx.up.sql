-- Campaigns (docs/campaigns.md): named groups of related verified reports,
-- made by reviewers.
CREATE TABLE campaigns (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL,
    tags        {{.JSON}} NOT NULL,
    created_at  {{.TIMESTAMP}} NOT NULL,
    updated_at  {{.TIMESTAMP}} NOT NULL,
    created_by  TEXT NOT NULL
);
--bun:split
CREATE INDEX campaigns_name_idx ON campaigns (name, id);
--bun:split
CREATE TABLE campaign_threats (
    campaign_id TEXT NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    threat_id   TEXT NOT NULL REFERENCES threats (id) ON DELETE CASCADE,
    added_at    {{.TIMESTAMP}} NOT NULL,
    PRIMARY KEY (campaign_id, threat_id)
);
--bun:split
-- A report's campaigns.
CREATE INDEX campaign_threats_threat_idx ON campaign_threats (threat_id);
