-- Indicators stored with the content (issue 36): the daemon derives a
-- report's indicators when it writes its content (core.Derive) and storage
-- keeps them here, JSON; every reader reads them instead of extracting
-- them again. NULL until migration 0020 has derived them for a report
-- written before this column existed.
ALTER TABLE threat_details ADD COLUMN iocs TEXT;
