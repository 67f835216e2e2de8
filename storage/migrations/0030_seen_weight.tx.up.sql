-- The seen sightings as confidence counts them (core.SightingCounts.Weight):
-- each sighting's count up to 9 (core.SeenWeightCap), the report's
-- submitter's own left out, so that one sighting of count 1,000,000, or a
-- submitter seeing their own report, cannot raise its confidence.
ALTER TABLE sighting_counts ADD COLUMN weight BIGINT NOT NULL DEFAULT 0;
--bun:split
UPDATE sighting_counts SET weight = COALESCE((
  SELECT SUM(CASE WHEN sg.count > 9 THEN 9 ELSE sg.count END)
  FROM sightings AS sg JOIN threats AS t ON t.id = sg.threat_id
  WHERE sg.threat_id = sighting_counts.threat_id AND sg.type = 'seen'
    AND (sg.user_id IS NULL OR t.submitter_id IS NULL OR sg.user_id <> t.submitter_id)
), 0);
