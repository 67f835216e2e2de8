package core

import (
	"context"
	"math"
	"time"
)

// CampaignRef names a campaign a report belongs to, as its record shows it
// (STIX also gets its description and times).
type CampaignRef struct {
	ID, Name, Description string
	CreatedAt, UpdatedAt  time.Time
}

// Community is what the community says of a verified report besides its
// content (docs/api/records.md, "Community signals"): its sightings, its
// confidence, its open dispute and its campaigns. It changes without the
// report changing, so the daemon keeps it apart (core/community) and adds
// it to a record as it answers.
type Community struct {
	Sightings SightingCounts
	// Confidence is 0..100 (Confidence).
	Confidence int
	// Disputed: false-positive votes have put the report back in the
	// review queue and no reviewer has decided yet.
	Disputed  bool
	Campaigns []CampaignRef
	// ChangedAt is when any of it last changed (zero: never since the
	// report was published); STIX objects that carry it are modified then.
	ChangedAt time.Time
}

// ConfidenceInput is what a report's confidence is worked out from.
type ConfidenceInput struct {
	// Seen is the seen sightings' weight (SightingCounts.Weight): each
	// sighting counts up to SeenWeightCap, the submitter's own not at all.
	Seen int64
	// Votes counts the false-positive votes counted since the report's
	// last review decision (the submitter's own excluded).
	Votes int
	// Disputed: a dispute is open.
	Disputed bool
	// Record is the submitter's track record, -20..20
	// (SubmitterRecord.Score); 0 for an imported report or a newcomer.
	Record int
}

// Confidence is how sure the service is that a verified report is right,
// 0..100 (docs/api/records.md, "Confidence"): 50 for a reviewer's
// verification, plus the submitter's record (-20..20), plus 10 per tenfold
// of seen sightings' weight (log10(1+weight)*10, at most 30: one sighting
// moves it by at most 10, three or more people's are needed for the
// most), less 10 per counted
// false-positive vote (at most 30) and 20 more while a dispute is open.
func Confidence(in ConfidenceInput) int {
	c := 50.0 + float64(max(-20, min(20, in.Record)))
	if in.Seen > 0 {
		c += min(30, 10*math.Log10(1+float64(in.Seen)))
	}
	c -= float64(min(30, 10*in.Votes))
	if in.Disputed {
		c -= 20
	}
	return int(math.Round(max(0, min(100, c))))
}

// Score is a submitter's track record as confidence counts it, -20..20:
// 20 × (verified − rejected) / (verified + rejected + 5), so that a
// newcomer starts near 0 and one report moves it little.
func (r SubmitterRecord) Score() int {
	if r.Verified < 0 || r.Rejected < 0 {
		return 0
	}
	return int(math.Round(20 * float64(r.Verified-r.Rejected) / float64(r.Verified+r.Rejected+5)))
}

// Communities say what the community says of reports (core/community's
// View in the daemon).
type Communities interface {
	OfThreat(t Threat) Community
}

// BaseCommunity is what is said of a report before anyone said anything:
// no sightings, the base confidence.
func BaseCommunity(t Threat) Community {
	return Community{Sightings: SightingCounts{ThreatID: t.ID}, Confidence: Confidence(ConfidenceInput{})}
}

// CommunityOf is src's word on t (BaseCommunity when src is nil).
func CommunityOf(src Communities, t Threat) Community {
	if src == nil {
		return BaseCommunity(t)
	}
	return src.OfThreat(t)
}

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
func VerifiedPoints(s Severity) int {
	switch s {
	case SeverityCritical:
		return 40
	case SeverityHigh:
		return 30
	case SeverityMedium:
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
	return time.Time{}, Invalid("period", "must be 30d, 365d or all (got %q)", period)
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

// Duplicate is a submission refused as a duplicate of ThreatID, counted
// on its submitter's record.
type Duplicate struct {
	UserID, ThreatID string
	At               time.Time
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
	UsersByName(ctx context.Context, name string) ([]User, error)
	// SubmitterRecordsAll returns every user with a report's record, for
	// the confidence of their reports (the daemon reads it once a minute).
	SubmitterRecordsAll(ctx context.Context) ([]SubmitterRecord, error)
}
