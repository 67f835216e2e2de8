package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Limits are the submission limits of docs/configuration.md and docs/api/submit.md.
type Limits struct {
	SubmissionsPerHour     int // free users; 0 = none
	SubmissionsPerHourPaid int // paid users; 0 = none
	NewUserMaxUnverified   int
	NewUserVerifiedToLift  int
}

// SubmitPolicy is what storage enforces, atomically, when it creates a
// report: the new-user cap, then the hourly limit, then the duplicate key.
type SubmitPolicy struct {
	MaxUnverified  int // 0 = no cap
	VerifiedToLift int
	HourlyLimit    int // 0 = no hourly limit
	Now            time.Time
}

// NewUserCapError is the 403 of spec §7: the caller has too many pending
// reports and too few verified ones.
type NewUserCapError struct {
	Verified, Unverified          int
	MaxUnverified, VerifiedToLift int
}

// Error explains the cap with the configured numbers.
func (e *NewUserCapError) Error() string {
	return fmt.Sprintf("New user limit reached: you may have at most %d unverified reports until %d of your reports are verified", e.MaxUnverified, e.VerifiedToLift)
}

// Is makes errors.Is(err, ErrForbidden) true.
func (e *NewUserCapError) Is(target error) bool { return target == ErrForbidden }

// HourlyLimitError is the hourly submission limit's 429.
type HourlyLimitError struct {
	Limit int
	// RetryAfter is when the oldest submission in the window leaves it.
	RetryAfter time.Duration
}

// Error is the exact text of docs/api/submit.md ("Errors").
func (e *HourlyLimitError) Error() string {
	return fmt.Sprintf("Submission limit exceeded: the maximum is %d submissions per hour", e.Limit)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *HourlyLimitError) Is(target error) bool { return target == ErrLimit }

// The storage steps of a submission whose failure spec §7 names.
const (
	StepLookup        = "lookup"         // the duplicate look-up
	StepInsertThreat  = "insert_threat"  // inserting the report
	StepInsertDetails = "insert_details" // inserting its details (the report is rolled back)
)

// StepError is a storage failure in a named step of a submission.
type StepError struct {
	Step string
	Err  error
}

// Error returns the underlying (database) message.
func (e *StepError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *StepError) Unwrap() error { return e.Err }

// Reports is the use-case layer for threat reports.
type Reports struct {
	store  ReportStore
	limits Limits
	now    func() time.Time
}

// NewReports returns the report use cases.
func NewReports(store ReportStore, limits Limits) *Reports {
	return &Reports{store: store, limits: limits, now: time.Now}
}

// HourlyLimit is the hourly submission limit that applies to u: their own
// (set by an administrator), else their tier's; 0 means none.
func (r *Reports) HourlyLimit(u User) int {
	if u.SubmissionsPerHour != nil {
		return *u.SubmissionsPerHour
	}
	if u.Tier == TierPaid {
		return r.limits.SubmissionsPerHourPaid
	}
	return r.limits.SubmissionsPerHour
}

// Submit validates a submission and stores it as a pending report, enforcing
// (in this order, atomically) the new-user cap, the hourly limit and the
// duplicate key.
func (r *Reports) Submit(ctx context.Context, p Principal, s Submission) (Threat, error) {
	t, now, err := r.pending(s, p.User.ID)
	if err != nil {
		return Threat{}, err
	}
	err = r.store.CreateThreat(ctx, SubmittedThreat{Threat: t, Policy: SubmitPolicy{
		MaxUnverified:  r.limits.NewUserMaxUnverified,
		VerifiedToLift: r.limits.NewUserVerifiedToLift,
		HourlyLimit:    r.HourlyLimit(p.User),
		Now:            now,
	}})
	var dup *ConflictError
	if errors.As(err, &dup) && dup.What == "threat" && dup.Meta["id"] != "" {
		// A duplicate earns nothing and is counted on the submitter's
		// record (docs/community.md); the 409 stands whatever happens here.
		if rerr := r.store.RecordDuplicate(ctx, Duplicate{UserID: p.User.ID, ThreatID: dup.Meta["id"], At: now}); rerr != nil {
			return Threat{}, fmt.Errorf("%w (and counting it failed: %v)", err, rerr)
		}
	}
	if err != nil {
		return Threat{}, err
	}
	return t, nil
}

// SubmitAutomatic stores a report made by threatd itself (package
// analysis) as a pending report of the source user u: no new-user cap and
// no hourly limit, which are for people. A live report of the same package
// is the *ConflictError of Submit.
func (r *Reports) SubmitAutomatic(ctx context.Context, u User, s Submission) (Threat, error) {
	t, now, err := r.pending(s, u.ID)
	if err != nil {
		return Threat{}, err
	}
	if err := r.store.CreateThreat(ctx, SubmittedThreat{Threat: t, Policy: SubmitPolicy{Now: now}}); err != nil {
		return Threat{}, err
	}
	return t, nil
}

// pending is a submission as the new pending report of submitter, made now.
func (r *Reports) pending(s Submission, submitter string) (Threat, time.Time, error) {
	now := r.now().UTC().Truncate(time.Microsecond)
	t, err := NewThreat(s, now)
	if err != nil {
		return Threat{}, now, err
	}
	// Time-ordered ids (UUIDv7): new rows append to the primary-key index
	// instead of landing at random pages of it.
	t.ID = uuid.Must(uuid.NewV7()).String()
	t.Status = StatusPending
	t.SubmitterID = submitter
	t.CreatedAt, t.UpdatedAt = now, now
	t.Version = 1
	return Derive(t), now, nil
}
