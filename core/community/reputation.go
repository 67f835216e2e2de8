package community

import (
	"time"

	"github.com/threatd/threatd/core"
)

// The reputation and dispute rules (docs/reputation.md, docs/api/sightings.md,
// "Disputes"), as pure functions: storage applies them inside its
// transactions, so that every storage plugin keeps the same score.

// Earned is what a review decision earns or costs a report's submitter.
type Earned struct {
	// Key names the event (its kind and report): it is counted once.
	Key, Kind string
	Points    int
}

// ReviewPoints is what a review decision on the report threatID, of
// severity, moving it from one state to another, earns or costs its
// submitter (ok false: nothing): a verification by severity, a rejection
// while pending, a withdrawal of a disputed report.
func ReviewPoints(threatID string, severity core.Severity, from, to core.Status, wasDisputed bool) (e Earned, ok bool) {
	switch {
	case from == core.StatusPending && to == core.StatusVerified:
		return Earned{Key: "verified:" + threatID, Kind: ReputationVerified, Points: VerifiedPoints(severity)}, true
	case from == core.StatusPending && to == core.StatusRejected:
		return Earned{Key: "rejected:" + threatID, Kind: ReputationRejected, Points: PointsRejected}, true
	case from == core.StatusVerified && to == core.StatusRejected && wasDisputed:
		return Earned{Key: "withdrawn:" + threatID, Kind: ReputationWithdrawn, Points: PointsWithdrawn}, true
	}
	return Earned{}, false
}

// VoteSince is when a report's false-positive votes start to count: its
// last review decision (the later of its verification and its last keep).
func VoteSince(verifiedAt, keptAt *time.Time) time.Time {
	var since time.Time
	if verifiedAt != nil {
		since = *verifiedAt
	}
	if keptAt != nil && keptAt.After(since) {
		since = *keptAt
	}
	return since.UTC()
}

// VotersNeedRecord says whether only voters with a verified report of their
// own count: once a reviewer has kept the report, so that fresh accounts
// cannot reopen a kept dispute again and again.
func VotersNeedRecord(keptAt *time.Time) bool { return keptAt != nil }

// OpensDispute says whether votes counted votes put a report in dispute:
// at threshold or more (0: never), when it is not in dispute already.
func OpensDispute(votes int64, threshold int, disputed bool) bool {
	return threshold > 0 && votes >= int64(threshold) && !disputed
}
