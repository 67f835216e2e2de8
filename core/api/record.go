package api

import (
	"time"

	"github.com/threatd/threatd/core"
)

// A record is a threat record as clients read it (spec §2.4 plus
// docs/api/records.md): every field present, absent values null, arrays
// never null. Existing OpenSourceMalware clients read these names. It is
// written as its identity (recordHead), every field of core.Details under
// its JSON name (recordDetails, generated from core/fields.txt), then its
// review state (recordTail): encoding/json writes embedded structs' fields
// in place, in that order.
type record struct {
	recordHead
	recordDetails
	recordTail
}

// changedRecord is a record of a changes-mode feed, with its change.
type changedRecord struct {
	record
	Change feedChange `json:"change"`
}

type recordHead struct {
	ID                 string  `json:"id"`
	Status             string  `json:"status"`
	ReportType         string  `json:"report_type"`
	ResourceIdentifier string  `json:"resource_identifier"`
	Registry           *string `json:"registry"`
	// Description repeats threat_description under the name older clients read.
	Description string `json:"description"`
}

type recordTail struct {
	CreatedAt  time.Time  `json:"created_at"`
	VerifiedAt *time.Time `json:"verified_at"`
	VerifiedBy *string    `json:"verified_by"`
	Revision   int        `json:"revision"`
}

func nullable(s string) *string {
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

// toRecord renders a report for viewer: the contact e-mail only for its
// submitter and for reviewers (core.Threat.VisibleTo).
func toRecord(t core.Threat, viewer core.Principal) any {
	return newRecord(t, viewer)
}

// toChangedRecord renders a report of a changes-mode feed with its change.
func toChangedRecord(t core.Threat, viewer core.Principal, ch feedChange) any {
	return changedRecord{record: newRecord(t, viewer), Change: ch}
}

func newRecord(t core.Threat, viewer core.Principal) record {
	t = t.VisibleTo(viewer)
	return record{
		recordHead: recordHead{
			ID: t.ID, Status: string(t.Status), ReportType: string(t.ReportType), ResourceIdentifier: t.ResourceIdentifier,
			Registry: nullable(t.Registry), Description: t.Details.ThreatDescription,
		},
		recordDetails: newRecordDetails(t.Details),
		recordTail:    recordTail{CreatedAt: t.CreatedAt, VerifiedAt: t.VerifiedAt, VerifiedBy: nullable(t.VerifiedBy), Revision: t.Revision},
	}
}

// Record renders a report as check-malicious shows it to someone who is
// neither its submitter nor a reviewer (threatd scan without a server).
func Record(t core.Threat) any { return toRecord(t, core.Principal{}) }
