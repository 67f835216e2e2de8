// Package record is a threat report as every client reads it (spec §2.4
// and docs/api/records.md): the details of check-malicious, the elements
// of every list and feed, a webhook's data, a scan's details, the web's
// public JSON, the firewall's refusals. The API, the web site, the index
// spill, webhook deliveries and threatd scan all import it; one rule says
// who sees the contact e-mail (core.ContactVisibleTo).
package record

import (
	"encoding/json"
	"time"

	"github.com/threatd/threatd/core"
)

// Record is a threat record: every field present, absent values null,
// arrays never null; existing OpenSourceMalware clients read these names.
// It is written as its identity (head), every field of core.Details under
// its JSON name (details, generated from core/fields.txt), then its review
// state (tail): encoding/json writes embedded structs' fields in place, in
// that order.
type Record struct {
	head
	details
	tail
}

type head struct {
	ID                 string  `json:"id"`
	Status             string  `json:"status"`
	ReportType         string  `json:"report_type"`
	ResourceIdentifier string  `json:"resource_identifier"`
	Registry           *string `json:"registry"`
	// Description repeats threat_description under the name older clients read.
	Description string `json:"description"`
}

type tail struct {
	CreatedAt  time.Time  `json:"created_at"`
	VerifiedAt *time.Time `json:"verified_at"`
	VerifiedBy *string    `json:"verified_by"`
	Revision   int        `json:"revision"`
}

// Of is t's record as viewer may see it: the contact e-mail only for its
// submitter and for reviewers (core.Threat.VisibleTo).
func Of(t core.Threat, viewer core.Principal) Record {
	t = t.VisibleTo(viewer)
	return Record{
		head: head{
			ID: t.ID, Status: string(t.Status), ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier,
			Registry: Nullable(t.Registry), Description: t.Details.ThreatDescription,
		},
		details: newDetails(t.Details),
		tail:    tail{CreatedAt: t.CreatedAt, VerifiedAt: t.VerifiedAt, VerifiedBy: Nullable(t.VerifiedBy), Revision: t.Revision},
	}
}

// Public is t's record as anybody sees it (no contact e-mail): webhook
// deliveries, the web's public JSON, threatd scan without a server.
func Public(t core.Threat) Record { return Of(t, core.Principal{}) }

// PublicJSON is Public's JSON, as check-malicious writes it: what the
// index spill keeps for each verified report.
func PublicJSON(t core.Threat) ([]byte, error) { return json.Marshal(Public(t)) }

// Nullable is a text as a record shows it: null when empty.
func Nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nonNil is a list as a record shows it: [] when empty.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
