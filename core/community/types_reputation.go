package community

import (
	"context"
	"time"

	"github.com/threatd/threatd/core"
)

// The kinds of reputation event (docs/community.md, "Reputation").
const (
	ReputationVerified  = "verified"
	ReputationRevision  = "revision"
	ReputationRejected  = "rejected"
	ReputationWithdrawn = "withdrawn"
	ReputationDuplicate = "duplicate"
)

// Points of the reputation events that do not depend on severity.
const (
	PointsRevision  = 5
	PointsRejected  = -10
	PointsWithdrawn = -10
)

// VerifiedPoints is what a verified report earns its submitter, by its
// severity: critical 40, high 30, medium 20, low or none 10.
func VerifiedPoints(s core.Severity) int {
	switch s {
	case core.SeverityCritical:
		return 40
	case core.SeverityHigh:
		return 30
	case core.SeverityMedium:
		return 20
	}
	return 10
}

// Reputation is a user's record: points and counts.
type Reputation struct {
	UserID, Name                string
	Points                      int64
	Verified, Rejected, Pending int64
	Duplicates                  int64
}

// Leaderboard periods.
const (
	Period30d  = "30d"
	Period365d = "365d"
	PeriodAll  = "all"
)

// PeriodStart is when a leaderboard period starts at now (zero for all).
func PeriodStart(period string, now time.Time) (time.Time, error) {
	switch period {
	case Period30d:
		return now.AddDate(0, 0, -30), nil
	case Period365d:
		return now.AddDate(0, 0, -365), nil
	case PeriodAll, "":
		return time.Time{}, nil
	}
	return time.Time{}, core.Invalid("period", "must be 30d, 365d or all (got %q)", period)
}

// LeaderboardQuery asks for the users with the most points earned since
// Since (zero: ever).
type LeaderboardQuery struct {
	Since time.Time
	Limit int
}

// LeaderboardEntry is one user of the leaderboard: points earned in the
// period and reports verified in it.
type LeaderboardEntry struct {
	UserID, Name string
	Points       int64
	Verified     int64
}

// ReputationEvent is one event that earned or cost a user points.
type ReputationEvent struct {
	Kind     string
	ThreatID string
	Points   int
	At       time.Time
}

// HistoryQuery asks for a user's latest reputation events.
type HistoryQuery struct {
	UserID string
	Limit  int
}

// MaxLeaderboard bounds a leaderboard.
const MaxLeaderboard = 100

// ReputationStore keeps reputation events and reads records from them.
type ReputationStore interface {
	// Reputations returns the records of these users (at most
	// MaxGetThreats), deleted accounts left out.
	Reputations(ctx context.Context, userIDs []string) ([]Reputation, error)
	// Leaderboard returns the users with the most points earned in the
	// period, most first (q.Limit 1..MaxLeaderboard), deleted and disabled
	// accounts left out, users with no points in it too.
	Leaderboard(ctx context.Context, q LeaderboardQuery) ([]LeaderboardEntry, error)
	// ReputationHistory returns a user's latest reputation events, newest
	// first (q.Limit 1..MaxPage).
	ReputationHistory(ctx context.Context, q HistoryQuery) ([]ReputationEvent, error)
	// UsersByName returns the active users with this public name (at
	// most 10), oldest first.
	UsersByName(ctx context.Context, name string) ([]core.User, error)
	// SubmitterRecordsAll returns every user with a report's record, for
	// the confidence of their reports (the daemon reads it once a minute).
	SubmitterRecordsAll(ctx context.Context) ([]core.SubmitterRecord, error)
}
