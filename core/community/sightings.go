package community

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ratelimit"
)

// SightingInput is a sighting as a person sends it (POST /sightings): its
// report by id, or by what the report names (as check-malicious asks),
// and the sighting. Nil is "not given".
type SightingInput struct {
	ThreatID, ReportType, ResourceIdentifier, Ecosystem, Version *string
	Type, Source, Note, ObservedAt                               string
	// Count is nil for 1; given, it is 1..MaxSightingCount.
	Count *int64
}

// NoReportError: what a sighting names is not a verified report (404).
type NoReportError struct{ ReportType, ResourceIdentifier string }

func (e *NoReportError) Error() string {
	return fmt.Sprintf("No verified report names %s %q", e.ReportType, e.ResourceIdentifier)
}

// Is makes errors.Is(err, core.ErrNotFound) true.
func (e *NoReportError) Is(target error) bool { return target == core.ErrNotFound }

// SightingLimitError: the user has sent the hour's sightings (429).
type SightingLimitError struct {
	Limit int
	// RetryAfter is when the window ends, in whole seconds (at least 1).
	RetryAfter int
}

func (e *SightingLimitError) Error() string {
	return fmt.Sprintf("Sighting limit exceeded: at most %d sightings an hour per user; try again later", e.Limit)
}

// Is makes errors.Is(err, core.ErrLimit) true.
func (e *SightingLimitError) Is(target error) bool { return target == core.ErrLimit }

// SightingsOptions configure the sightings' use case.
type SightingsOptions struct {
	Store BatchStore
	// Find resolves what a sighting names to the id of the latest
	// verified report that names it ("" for none): the daemon's index.
	Find func(ctx context.Context, q core.CheckQuery) (string, error)
	// DisputeVotes is community.dispute_votes (0: no dispute ever).
	DisputeVotes int
	// PerHour bounds each user's sightings an hour, by tier (0: no
	// limit); Limiter counts them (nil: this daemon alone, in memory).
	PerHour map[core.Tier]int
	Limiter ratelimit.Taker
	// Stored, when set, hears of each stored batch's reports before its
	// requests are answered (the daemon's view reads their counts again).
	Stored func(ctx context.Context, threatIDs []string)
}

// Sightings adds people's sightings (docs/api/sightings.md): the one use
// case, with its report resolution, its rules (the sighting's checks, the
// count, each user's hourly limit) and the group-commit writer.
type Sightings struct {
	o      SightingsOptions
	writer *Writer
}

// StartSightings starts the use case's writer until ctx ends.
func StartSightings(ctx context.Context, o SightingsOptions) *Sightings {
	if o.Limiter == nil {
		o.Limiter = ratelimit.New(time.Hour)
	}
	return &Sightings{o: o, writer: NewWriter(ctx, o.Store, o.DisputeVotes, o.Stored)}
}

// Add stores a sighting by who and returns it: core.FieldError for bad
// input, NoReportError when what it names is not a verified report (as
// core.ErrNotFound from storage for a report by id), SightingLimitError
// past the hour's limit, core.ErrConflict for a second vote.
func (s *Sightings) Add(ctx context.Context, who core.User, in SightingInput) (Sighting, error) {
	threatID, err := s.resolve(ctx, in)
	if err != nil {
		return Sighting{}, err
	}
	r := SightingRequest{Type: in.Type, Source: in.Source, Note: in.Note, ObservedAt: in.ObservedAt}
	if in.Count != nil {
		if *in.Count == 0 {
			return Sighting{}, core.Invalid("count", "must be between 1 and %d (got 0)", MaxSightingCount)
		}
		r.Count = *in.Count
	}
	sg, err := NewSighting(r, threatID, who.ID, time.Now())
	if err != nil {
		return Sighting{}, err
	}
	// Each user's sightings of the hour, votes included, whatever their
	// tokens: counted before storage, so refused votes count too.
	if limit := s.o.PerHour[who.Tier]; limit > 0 {
		if res := s.o.Limiter.Take(who.ID, limit, 1); !res.Allowed {
			return Sighting{}, &SightingLimitError{Limit: limit, RetryAfter: res.ResetSeconds()}
		}
	}
	if err := s.writer.Add(ctx, sg); err != nil {
		return Sighting{}, err
	}
	return sg, nil
}

// resolve is the id of the report a sighting is about.
func (s *Sightings) resolve(ctx context.Context, in SightingInput) (string, error) {
	threatID := ""
	if in.ThreatID != nil {
		threatID = strings.TrimSpace(*in.ThreatID)
	}
	switch {
	case threatID != "" && (in.ReportType != nil || in.ResourceIdentifier != nil):
		return "", core.Invalid("threat_id", "give threat_id, or report_type and resource_identifier, not both")
	case threatID != "":
		if _, err := uuid.Parse(threatID); err != nil {
			return "", core.Invalid("threat_id", "is not a report id (a UUID)")
		}
		return threatID, nil
	case in.ReportType == nil || in.ResourceIdentifier == nil:
		return "", core.Invalid("threat_id", "is required, or report_type and resource_identifier naming a verified report")
	}
	id, err := s.o.Find(ctx, core.CheckQuery{ReportType: core.ReportType(*in.ReportType), ResourceIdentifier: *in.ResourceIdentifier,
		Ecosystem: deref(in.Ecosystem), Version: deref(in.Version)})
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", &NoReportError{ReportType: *in.ReportType, ResourceIdentifier: *in.ResourceIdentifier}
	}
	return id, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
