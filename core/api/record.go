package api

import (
	"time"

	"github.com/threatd/threatd/core"
)

// record is a threat record as clients read it (spec §2.4 plus
// docs/api/records.md): every field present, absent values null, arrays never null. Existing
// OpenSourceMalware clients read these names.
type record struct {
	ID                 string     `json:"id"`
	Status             string     `json:"status"`
	ReportType         string     `json:"report_type"`
	ResourceIdentifier string     `json:"resource_identifier"`
	SeverityLevel      *string    `json:"severity_level"`
	Description        string     `json:"description"`
	ThreatDescription  string     `json:"threat_description"`
	PayloadDescription *string    `json:"payload_description"`
	PackageName        *string    `json:"package_name"`
	Registry           *string    `json:"registry"`
	Publisher          *string    `json:"publisher"`
	VersionInfo        *string    `json:"version_info"`
	EvidenceReferences *string    `json:"evidence_references"`
	OSVAdvisoryURL     *string    `json:"osv_advisory_url"`
	Tags               []string   `json:"tags"`
	Contributors       []string   `json:"contributors"`
	DownloadCount      *int64     `json:"download_count"`
	FirstSeen          *time.Time `json:"first_seen"`
	LastSeen           *time.Time `json:"last_seen"`
	CreatedAt          time.Time  `json:"created_at"`
	VerifiedAt         *time.Time `json:"verified_at"`
	VerifiedBy         *string    `json:"verified_by"`
	Revision           int        `json:"revision"`
	// ContactEmail is shown only to the submitter and reviewers.
	ContactEmail *string `json:"contact_email,omitempty"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// toRecord renders a report for viewer: the contact e-mail only for its
// submitter and for reviewers.
func toRecord(t core.Threat, viewer core.Principal) record {
	d := t.Details
	r := record{
		ID: t.ID, Status: string(t.Status), ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier,
		SeverityLevel: nullable(string(d.SeverityLevel)), Description: d.ThreatDescription, ThreatDescription: d.ThreatDescription,
		PayloadDescription: nullable(d.PayloadDescription), PackageName: nullable(d.PackageName), Registry: nullable(t.Registry),
		Publisher: nullable(d.Publisher), VersionInfo: nullable(d.VersionInfo), EvidenceReferences: nullable(d.EvidenceReferences),
		OSVAdvisoryURL: nullable(d.OSVAdvisoryURL), Tags: nonNilStrings(d.Tags), Contributors: nonNilStrings(d.Contributors),
		DownloadCount: d.DownloadCount, FirstSeen: d.FirstSeen, LastSeen: d.LastSeen, CreatedAt: t.CreatedAt,
		VerifiedAt: t.VerifiedAt, VerifiedBy: nullable(t.VerifiedBy), Revision: t.Revision,
	}
	if t.ShowsContactTo(viewer) {
		r.ContactEmail = &d.ContactEmail
	}
	return r
}
