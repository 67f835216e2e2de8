package core

import (
	"fmt"
	"strings"
)

// Status is the review state of a threat report (spec §3, CONTRACT.md §8).
type Status string

// The states of a threat report.
const (
	StatusPending  Status = "pending"
	StatusVerified Status = "verified"
	StatusRejected Status = "rejected"
)

// ParseStatus validates a status name.
func ParseStatus(s string) (Status, error) {
	switch st := Status(strings.ToLower(strings.TrimSpace(s))); st {
	case StatusPending, StatusVerified, StatusRejected:
		return st, nil
	}
	return "", Invalid("status", "must be one of pending, verified, rejected (got %q)", s)
}

// Live reports whether a report in this state counts for duplicate detection.
func (s Status) Live() bool { return s == StatusPending || s == StatusVerified }

// Decision is a reviewer's action on a report.
type Decision string

// The review decisions.
const (
	DecisionVerify Decision = "verify"
	DecisionReject Decision = "reject"
)

// Transition returns the state that decision d leads to from s, or an error when
// the review state machine does not allow it:
//
//	pending  --verify--> verified
//	pending  --reject--> rejected   (note required)
//	verified --reject--> rejected   (withdrawn; note required)
func Transition(from Status, d Decision, note string) (Status, error) {
	switch {
	case from == StatusPending && d == DecisionVerify:
		return StatusVerified, nil
	case (from == StatusPending || from == StatusVerified) && d == DecisionReject:
		if strings.TrimSpace(note) == "" {
			return "", Invalid("note", "a note is required to reject a report")
		}
		return StatusRejected, nil
	}
	return "", &ConflictError{What: "review", Key: string(from), Message: fmt.Sprintf("cannot %s a %s report", d, from)}
}
