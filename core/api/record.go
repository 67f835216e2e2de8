package api

import (
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/record"
)

// changedRecord is a record of a changes-mode feed, with its change.
type changedRecord struct {
	record.Record
	Change feedChange `json:"change"`
}

// toRecord renders a report for viewer (core/record): the contact e-mail
// only for its submitter and for reviewers.
func toRecord(t core.Threat, viewer core.Principal) any { return record.Of(t, viewer) }

// toChangedRecord renders a report of a changes-mode feed with its change.
func toChangedRecord(t core.Threat, viewer core.Principal, ch feedChange) any {
	return changedRecord{Record: record.Of(t, viewer), Change: ch}
}

// nullable is a text as an answer shows it: null when empty.
func nullable(s string) *string { return record.Nullable(s) }
