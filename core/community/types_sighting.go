package community

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// The types of sighting (MISP's three): a report's resource was seen, the
// report is a false positive, the resource no longer does harm.
const (
	SightingSeen          = "seen"
	SightingFalsePositive = "false_positive"
	SightingExpired       = "expired"
)

// What became of a sighting a person reported (SightingStore.AddSightings).
const (
	SightingAdded    = "added"
	SightingNotFound = "not_found"
	SightingConflict = "conflict"
)

// MaxSightingBatch bounds the sightings stored in one transaction.
const MaxSightingBatch = 1000

// MaxDisputeVotes bounds the votes a dispute lists (the oldest first).
const MaxDisputeVotes = 1000

// SightingTypes are the types of sighting.
var SightingTypes = []string{SightingSeen, SightingFalsePositive, SightingExpired}

// The sources of the sightings the daemon adds by itself.
const (
	SightingSourceFirewall = "firewall"
	SightingSourceScan     = "scan"
)

// Bounds of a sighting.
const (
	MaxSightingSource = 100
	MaxSightingNote   = 2000
	MaxSightingCount  = 1_000_000
)

// Sighting is one sighting of a verified report: one a person reported,
// or the daemon's own count of a day (firewall blocks, scan findings:
// Auto, one per report, source and UTC day, whose Count grows).
type Sighting struct {
	ID       string
	ThreatID string
	Type     string
	Source   string
	// ObservedAt is when it was seen (for an automatic one, its day's
	// latest sighting).
	ObservedAt time.Time
	Count      int64
	Note       string
	// UserID is who reported it ("" for the daemon's own); UserName and
	// UserEmail are that user's public name and e-mail as they are now,
	// filled by ListSightings for the reviewers' list.
	UserID    string
	UserName  string
	UserEmail string
	Auto      bool
	CreatedAt time.Time
}

// SightingRequest is a sighting as a person sends it (POST /sightings).
type SightingRequest struct {
	Type, Source, Note string
	// ObservedAt is "" for now; Count 0 for 1.
	ObservedAt string
	Count      int64
}

// NewSighting validates a person's sighting of threatID, field by field.
func NewSighting(r SightingRequest, threatID, userID string, now time.Time) (Sighting, error) {
	// A time-ordered id (version 7): the sightings' primary key grows at
	// its end, not at a random page a sighting.
	s := Sighting{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: threatID, UserID: userID, CreatedAt: now.UTC(), ObservedAt: now.UTC(), Count: 1}
	switch r.Type {
	case SightingSeen, SightingFalsePositive, SightingExpired:
		s.Type = r.Type
	case "":
		return s, core.Invalid("type", "is required: one of %s", strings.Join(SightingTypes, ", "))
	default:
		return s, core.Invalid("type", "must be one of %s (got %q)", strings.Join(SightingTypes, ", "), r.Type)
	}
	s.Source = strings.TrimSpace(r.Source)
	if !utf8.ValidString(s.Source) || utf8.RuneCountInString(s.Source) > MaxSightingSource {
		return s, core.Invalid("source", "is at most %d characters of UTF-8", MaxSightingSource)
	}
	if s.Source == SightingSourceFirewall || s.Source == SightingSourceScan {
		return s, core.Invalid("source", "%q is the daemon's own source: name yours otherwise", s.Source)
	}
	if !utf8.ValidString(r.Note) || utf8.RuneCountInString(r.Note) > MaxSightingNote {
		return s, core.Invalid("note", "is at most %d characters of UTF-8", MaxSightingNote)
	}
	s.Note = r.Note
	if r.ObservedAt != "" {
		t, err := time.Parse(time.RFC3339, r.ObservedAt)
		if err != nil {
			return s, core.Invalid("observed_at", "must be an RFC 3339 time such as 2026-01-02T15:04:05Z (got %q)", r.ObservedAt)
		}
		if t.After(now.Add(time.Minute)) {
			return s, core.Invalid("observed_at", "is in the future (%s)", t.UTC().Format(time.RFC3339))
		}
		s.ObservedAt = t.UTC()
	}
	switch {
	case r.Count == 0:
	case r.Count < 1 || r.Count > MaxSightingCount:
		return s, core.Invalid("count", "must be between 1 and %d (got %d)", MaxSightingCount, r.Count)
	default:
		s.Count = r.Count
	}
	return s, nil
}

// SeenCount is what the daemon saw of one report from one source: Count
// more sightings, the latest at At (its UTC day is the row it adds to).
type SeenCount struct {
	ThreatID, Source string
	Count            int64
	At               time.Time
}

// SeenWeightCap is the most one seen sighting (a person's, whatever its
// count, or the daemon's row of a report, source and day) counts toward
// its report's confidence: 9, which moves confidence by at most 10
// (Confidence: 10 × log10(1 + 9)).
const SeenWeightCap = 9

// SeenWeight is what a seen sighting of count counts toward confidence.
func SeenWeight(count int64) int64 { return max(0, min(count, SeenWeightCap)) }

// SightingCountsQuery asks for one page of reports' counts: every
// report's in threat id order (Since zero; After the last id of the
// previous page), or those changed at Since or later in order of change
// (UpdatedAt, then threat id; the next page starts after the last row's
// UpdatedAt as Since and its id as After).
type SightingCountsQuery struct {
	Since time.Time
	// After is the last threat id of the previous page ("" for the first).
	After string
	Limit int
}

// SightingBatch is people's sightings stored in one transaction.
type SightingBatch struct {
	Sightings []Sighting
	// DisputeVotes is community.dispute_votes: the counted false-positive
	// votes that put a verified report back in review (0: never).
	DisputeVotes int
}

// DisputeQuery is one keyset page of the disputed reports, oldest dispute
// first.
type DisputeQuery struct {
	AfterDisputedAt time.Time
	AfterID         string // "" = from the oldest
	Limit           int
}

// SightingQuery asks for one page of a report's sightings, newest first.
type SightingQuery struct {
	ThreatID string
	// Cursor is where the last page ended ("" for the first).
	Cursor string
	Limit  int
}

// SightingList is a page of sightings.
type SightingList struct {
	Sightings []Sighting
	// Next is the cursor of the next page ("" when this is the last).
	Next string
}

// Cursor is where a page that ends at s goes on.
func (s Sighting) Cursor() string {
	return s.ObservedAt.UTC().Format(time.RFC3339Nano) + "\x00" + s.ID
}

// SightingStore keeps sightings and their counts per report.
type SightingStore interface {
	// AddSightings stores people's sightings in one transaction and
	// says what became of each, in order: SightingAdded, SightingNotFound
	// (the report is not verified) or SightingConflict (a second
	// false_positive from the same user on the same report). A
	// false-positive vote counts toward a dispute unless its user
	// submitted the report, from the report's last decision on (the later
	// of VerifiedAt and KeptAt); the vote that brings the count to
	// b.DisputeVotes puts the report in dispute (Threat.DisputedAt), with a
	// review event "dispute" and a published change ChangeDisputed.
	AddSightings(ctx context.Context, b SightingBatch) ([]string, error)
	// ListDisputed returns one keyset page of the reports in dispute,
	// oldest dispute first, with their number.
	ListDisputed(ctx context.Context, q DisputeQuery) (core.ThreatList, error)
	// DisputeVotes returns the false-positive votes counted toward a
	// report's dispute now, oldest first, at most MaxDisputeVotes.
	DisputeVotes(ctx context.Context, threatID string) ([]Sighting, error)
	// AddSeen adds the daemon's own seen sightings: per report, source
	// and UTC day one row, whose count grows. Reports that are no longer
	// verified are skipped.
	AddSeen(ctx context.Context, seen []SeenCount) error
	// ListSightings returns one page of a report's sightings, newest
	// first (q.Limit 1..MaxPage), each with its reporter's public name and
	// e-mail.
	ListSightings(ctx context.Context, q SightingQuery) (SightingList, error)
	// CountSightings returns the counts of the reports that have any.
	CountSightings(ctx context.Context, threatIDs []string) ([]core.SightingCounts, error)
	// SightingCountsPage returns one page of counts (q.Limit 1..MaxPage):
	// all of them, or those changed since q.Since (SightingCountsQuery).
	SightingCountsPage(ctx context.Context, q SightingCountsQuery) ([]core.SightingCounts, error)
}
