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

// toRecord renders a report for viewer (core/record) with what the
// community says of it: the contact e-mail only for its submitter and for
// reviewers.
func (s *Server) toRecord(t core.Threat, viewer core.Principal) any {
	return record.Of(t, viewer, s.opts.Community.OfThreat(t))
}

// toChangedRecord renders a report of a changes-mode feed with its change.
func (s *Server) toChangedRecord(t core.Threat, viewer core.Principal, ch feedChange) any {
	return changedRecord{Record: record.Of(t, viewer, s.opts.Community.OfThreat(t)), Change: ch}
}

// nullable is a text as an answer shows it: null when empty.
func nullable(s string) *string { return record.Nullable(s) }
