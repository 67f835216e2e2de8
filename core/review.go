package core

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Status is the review state of a threat report (spec §3; docs/api/submit.md, "Review").
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
	// DecisionKeep keeps a disputed report published and closes its
	// dispute (docs/api/sightings.md, "Disputes").
	DecisionKeep Decision = "keep"
)

// Transition returns the state that decision d leads to from s, or an error when
// the review state machine does not allow it:
//
//	pending  --verify--> verified
//	pending  --reject--> rejected   (note required)
//	verified --reject--> rejected   (withdrawn; note required)
//	verified --keep-->   verified   (a disputed one; note required)
func Transition(from Status, d Decision, note string) (Status, error) {
	switch {
	case from == StatusPending && d == DecisionVerify:
		return StatusVerified, nil
	case from == StatusVerified && d == DecisionKeep:
		if strings.TrimSpace(note) == "" {
			return "", Invalid("note", "a note is required to keep a disputed report: say why it stands")
		}
		return StatusVerified, nil
	case (from == StatusPending || from == StatusVerified) && d == DecisionReject:
		if strings.TrimSpace(note) == "" {
			return "", Invalid("note", "a note is required to reject a report")
		}
		return StatusRejected, nil
	}
	return "", &ConflictError{What: "review", Key: string(from), Message: fmt.Sprintf("cannot %s a %s report", d, from)}
}

// ActionDispute is the review event of a report that false-positive votes
// put back in review (its actor is SystemReviewer).
const ActionDispute = "dispute"

// SystemReviewer is the actor of reviews done without --as.
const SystemReviewer = "threatd"

// Review is one review decision as storage applies it.
type Review struct {
	ThreatID string
	// Version is the content version the reviewer read (docs/cli.md, content versions);
	// the decision is refused when the report is no longer at it. 0 skips
	// the check (decisions of the system, e.g. imports).
	Version   int
	Decision  Decision
	Note      string
	ActorID   string // "" for a system reviewer
	ActorName string
	At        time.Time
}

// ReviewEvent is one kept transition of a report: who, when, why.
type ReviewEvent struct {
	ID         string
	ThreatID   string
	RevisionID string
	Action     string // submit, verify, reject
	From, To   Status
	ActorID    string
	ActorName  string
	Note       string
	At         time.Time
}

// Decide applies a reviewer's decision. actor is nil for the built-in
// reviewer; otherwise it must have the reviewer or admin role.
func (r *Reports) Decide(ctx context.Context, threatID string, version int, d Decision, note string, actor *User) (Threat, error) {
	if _, err := uuid.Parse(threatID); err != nil {
		return Threat{}, Invalid("threat_id", "%q is not a UUID", threatID)
	}
	if d == DecisionReject && len(note) == 0 {
		return Threat{}, Invalid("note", "a note is required to reject a report")
	}
	if d == DecisionKeep && strings.TrimSpace(note) == "" {
		return Threat{}, Invalid("note", "a note is required to keep a disputed report: say why it stands")
	}
	if err := ValidateText("note", note, 2000); err != nil {
		return Threat{}, err
	}
	if version < 0 {
		return Threat{}, Invalid("version", "must be a positive number (got %d)", version)
	}
	rv := Review{ThreatID: threatID, Version: version, Decision: d, Note: note, ActorName: SystemReviewer, At: r.now().UTC().Truncate(time.Microsecond)}
	if actor != nil {
		if !actor.Role.CanReview() {
			return Threat{}, fmt.Errorf("%w: %s has the role %s; only reviewers and admins may review", ErrForbidden, actor.Email, actor.Role)
		}
		rv.ActorID, rv.ActorName = actor.ID, actor.Name
	}
	return r.store.ReviewThreat(ctx, rv)
}
