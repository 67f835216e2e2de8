package core

import "time"

// Derive works out the facts derived from a report's content and sets them
// on t: its indicators of compromise (Threat.IOCs, ExtractIOCs). It is the
// one step that does: it runs in the daemon wherever content is written
// (Reports.Submit, Reports.Modify and Reports.DecideRevision on the merged
// content, Ingest for each imported record), and storage stores what it
// gives. What is published is what was derived, so a report's indicators
// are worked out once per content version, not per read.
func Derive(t Threat) Threat {
	t.IOCs = ExtractIOCs(t)
	return t
}

// Merged is the content a change makes of cur (ApplyPatch), with its
// derived facts (Derive): what Reports.Modify and Reports.DecideRevision
// send storage with the version of cur.
func Merged(cur Threat, patch Patch, at time.Time) (Threat, error) {
	t, err := ApplyPatch(cur, patch, at)
	if err != nil {
		return Threat{}, err
	}
	return Derive(t), nil
}

// NewExportRecord is the record an exporter receives for a report: the
// report, its stored indicators and what the community says of it. Every
// export path (TAXII, the export endpoints, the OSV API, `threatd export`)
// builds its records here.
func NewExportRecord(t Threat, c Community) ExportRecord {
	return ExportRecord{Threat: t, IOCs: t.IOCs, Community: c}
}

// SummaryOf is what the in-memory index keeps of a verified report: the one
// definition of it. Storage's EachVerifiedSummary reads the same facts
// from their columns for the start-up load (the contract suite checks that
// it agrees with SummaryOf for every report); the index applies a change
// with SummaryOf. The version list is kept only when the report does not
// affect every version.
func SummaryOf(t Threat) Summary {
	s := Summary{ID: t.ID, CanonicalKey: t.CanonicalKey, ReportType: t.ReportType, Registry: t.Registry, AllVersions: t.AllVersions}
	if t.VerifiedAt != nil {
		s.VerifiedAt = t.VerifiedAt.UTC()
	}
	if !t.AllVersions {
		s.VersionInfo = t.Details.VersionInfo
	}
	return s
}
