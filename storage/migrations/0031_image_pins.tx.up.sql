-- The digests a reported image's tag resolved to, and its index's platform
-- manifests (docs/firewall.md, "Container images"): refused for as long as
-- the report stands, wherever the tag moves afterwards, on every daemon of
-- the database.
CREATE TABLE image_pins (
    threat_id  TEXT NOT NULL,
    digest     TEXT NOT NULL,
    pinned_at  {{.TIMESTAMP}} NOT NULL,
    PRIMARY KEY (threat_id, digest)
);
