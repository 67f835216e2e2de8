package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// errLiveKeyTaken signals, out of a rolled-back transaction, that the live
// duplicate key was taken by a concurrent transaction.
var errLiveKeyTaken = errors.New("live key taken")

// CreateThreat stores a pending report and its details in one transaction,
// checking the new-user cap, the hourly limit and the duplicate key first.
func (s *Store) CreateThreat(ctx context.Context, n core.SubmittedThreat) error {
	t, p := n.Threat, n.Policy
	tr, dr := toThreatRow(t)
	// The submitter's public name, for the review event: read before the
	// write, which then holds the writer turn for less.
	actorName := s.userName(ctx, s.db, t.SubmitterID)
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		if err := lockUser(ctx, s.dialect, tx.Tx, t.SubmitterID); err != nil {
			return &core.StepError{Step: core.StepLookup, Err: err}
		}
		if err := s.checkSubmitLimits(ctx, tx, t.SubmitterID, p); err != nil {
			return err
		}
		if err := s.fault(core.StepLookup); err != nil {
			return err
		}
		// A live report with the same key: on SQLite the insert below finds
		// it, through the unique index threats_live_key (a failed statement
		// leaves the transaction usable), and the look-up is made only then.
		// On PostgreSQL a failed statement aborts the transaction, so the
		// look-up comes first.
		if s.dialect == Postgres {
			if existing, err := liveByKey(ctx, tx, t.CanonicalKey); err != nil {
				return &core.StepError{Step: core.StepLookup, Err: err}
			} else if existing != nil {
				return duplicate(*existing)
			}
		}
		if err := s.fault(core.StepInsertThreat); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&tr).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return errLiveKeyTaken
			}
			return &core.StepError{Step: core.StepInsertThreat, Err: err}
		}
		if err := s.fault(core.StepInsertDetails); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&dr).Exec(ctx); err != nil {
			return &core.StepError{Step: core.StepInsertDetails, Err: err}
		}
		to := string(core.StatusPending)
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: t.ID, Action: "submit", ToStatus: &to, ActorID: str(t.SubmitterID), ActorName: actorName, At: t.CreatedAt}
		if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
			return &core.StepError{Step: core.StepInsertThreat, Err: err}
		}
		tx.record(core.EntityThreat, t.ID, "create", t.CreatedAt)
		return nil
	})
	if errors.Is(err, errLiveKeyTaken) {
		// A live report holds the key (on PostgreSQL: a concurrent submission
		// won the unique index); report it as the 409.
		existing, lerr := liveByKey(ctx, s.db, t.CanonicalKey)
		if lerr != nil {
			return &core.StepError{Step: core.StepLookup, Err: lerr}
		}
		if existing == nil {
			return &core.StepError{Step: core.StepInsertThreat, Err: errors.New("duplicate key, but the conflicting report is gone: retry")}
		}
		return duplicate(*existing)
	}
	return err
}

// checkSubmitLimits applies the new-user cap, then the hourly limit.
func (s *Store) checkSubmitLimits(ctx context.Context, tx *txn, userID string, p core.SubmitPolicy) error {
	if p.MaxUnverified > 0 {
		// Each count stops at the number that decides the rule, so that a
		// prolific submitter's check reads a bounded range of
		// threats_submitter_status_idx.
		var pending, verified int
		err := tx.NewRaw(`SELECT
			(SELECT count(*) FROM (SELECT 1 FROM threats WHERE submitter_id = ? AND status = 'pending' LIMIT ?) AS p),
			(SELECT count(*) FROM (SELECT 1 FROM threats WHERE submitter_id = ? AND status = 'verified' LIMIT ?) AS v)`,
			userID, p.MaxUnverified, userID, max(p.VerifiedToLift, 1)).Scan(ctx, &pending, &verified)
		if err != nil {
			return &core.StepError{Step: core.StepLookup, Err: err}
		}
		if pending >= p.MaxUnverified && verified < p.VerifiedToLift {
			// Refused: report the exact number of pending reports.
			if err := tx.NewRaw(`SELECT count(*) FROM threats WHERE submitter_id = ? AND status = 'pending'`, userID).Scan(ctx, &pending); err != nil {
				return &core.StepError{Step: core.StepLookup, Err: err}
			}
			return &core.NewUserCapError{Verified: verified, Unverified: pending, MaxUnverified: p.MaxUnverified, VerifiedToLift: p.VerifiedToLift}
		}
	}
	if p.HourlyLimit > 0 {
		since := p.Now.Add(-time.Hour)
		// Reports created and revisions proposed by the user both count.
		var recent []time.Time
		err := tx.NewRaw(`SELECT created_at FROM (
				SELECT created_at FROM threats WHERE submitter_id = ? AND created_at > ?
				UNION ALL
				SELECT created_at FROM threat_revisions WHERE author_id = ? AND created_at > ?
			) AS recent ORDER BY created_at ASC LIMIT ?`, userID, since, userID, since, p.HourlyLimit).Scan(ctx, &recent)
		if err != nil {
			return &core.StepError{Step: core.StepLookup, Err: err}
		}
		if len(recent) >= p.HourlyLimit {
			// The oldest of the window leaves it first.
			retry := recent[0].Add(time.Hour).Sub(p.Now)
			return &core.HourlyLimitError{Limit: p.HourlyLimit, RetryAfter: max(retry, time.Second)}
		}
	}
	return nil
}

// liveByKey returns the pending or verified report with this key, or nil.
func liveByKey(ctx context.Context, db bunDB, key string) (*core.Threat, error) {
	var row threatRow
	err := db.NewSelect().Model(&row).Relation("Details").
		Where("threat_row.canonical_key = ?", key).
		Where("threat_row.status IN (?, ?)", string(core.StatusPending), string(core.StatusVerified)).
		Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t := row.domain()
	return &t, nil
}

func duplicate(existing core.Threat) error {
	return &core.ConflictError{What: "threat", Key: existing.CanonicalKey, Meta: map[string]string{
		"id": existing.ID, "status": string(existing.Status), "report_type": string(existing.ReportType),
		"package_name": existing.DuplicateIdentifier(), "registry": existing.Registry,
	}}
}

// userName returns a user's public name for review events ("" if unknown).
func (s *Store) userName(ctx context.Context, db bunDB, id string) string {
	if id == "" {
		return ""
	}
	var name string
	_ = db.NewSelect().Table("users").Column("name").Where("id = ?", id).Scan(ctx, &name)
	return name
}

// ListPending returns one keyset page of pending reports, oldest first,
// and how many are pending.
func (s *Store) ListPending(ctx context.Context, q core.PendingQuery) (core.ThreatList, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return core.ThreatList{}, err
	}
	total, err := s.db.NewSelect().Model((*threatRow)(nil)).Where("status = ?", string(core.StatusPending)).Count(ctx)
	if err != nil {
		return core.ThreatList{}, err
	}
	var rows []threatRow
	sel := s.db.NewSelect().Model(&rows)
	if s.dialect == SQLite {
		// The partial index of pending reports gives the page in order
		// with no sort; SQLite's planner, going by statistics gathered
		// when few reports were pending, would rather read every pending
		// report through the status index and sort them for each page.
		sel = sel.ModelTableExpr(`"threats" AS "threat_row" INDEXED BY threats_pending_idx`)
	}
	sel = sel.Relation("Details").Where("threat_row.status = ?", string(core.StatusPending))
	if q.AfterID != "" {
		sel = sel.Where("(threat_row.created_at > ? OR (threat_row.created_at = ? AND threat_row.id > ?))",
			q.AfterCreatedAt.UTC(), q.AfterCreatedAt.UTC(), q.AfterID)
	}
	if err := sel.Order("threat_row.created_at ASC", "threat_row.id ASC").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return core.ThreatList{}, err
	}
	out := make([]core.Threat, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return core.ThreatList{Threats: out, Total: int(total)}, nil
}

// ReviewThreat applies a review decision and keeps it as an event.
func (s *Store) ReviewThreat(ctx context.Context, r core.Review) (core.Threat, error) {
	var row threatRow
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		q := lockRow(s.dialect, tx.NewSelect().Model(&row).Relation("Details").Where("threat_row.id = ?", r.ThreatID), "threat_row")
		if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
			return core.NotFound("threat", r.ThreatID)
		} else if err != nil {
			return err
		}
		if r.Version > 0 && row.Version != r.Version {
			// The reviewer decided on text that has changed since.
			return &core.VersionError{ThreatID: row.ID, Asked: r.Version, Current: row.Version}
		}
		from := core.Status(row.Status)
		to, err := core.Transition(from, r.Decision, r.Note)
		if err != nil {
			return err
		}
		if r.Decision == core.DecisionKeep {
			return s.keep(ctx, tx, &row, r)
		}
		wasDisputed := row.DisputedAt != nil
		if wasDisputed {
			// A withdrawal decides the dispute.
			if err := closeDispute(ctx, tx, &row, r.At); err != nil {
				return err
			}
		}
		row.Status, row.UpdatedAt = string(to), r.At
		cols := []string{"status", "updated_at"}
		if to == core.StatusVerified {
			row.VerifiedAt, row.VerifiedBy = &r.At, &r.ActorName
			cols = append(cols, "verified_at", "verified_by")
		}
		if _, err := tx.NewUpdate().Model(&row).Column(cols...).WherePK().Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return &core.ConflictError{What: "threat", Key: row.CanonicalKey}
			}
			return err
		}
		fs, ts := string(from), string(to)
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, Action: string(r.Decision), FromStatus: &fs, ToStatus: &ts,
			ActorID: str(r.ActorID), ActorName: r.ActorName, Note: str(r.Note), At: r.At}
		if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
			return err
		}
		if err := reviewPoints(ctx, tx, row, from, to, wasDisputed, r.At); err != nil {
			return err
		}
		tx.record(core.EntityThreat, row.ID, string(r.Decision), r.At)
		switch {
		case to == core.StatusVerified:
			tx.publish(&row, core.ChangeVerified)
		case from == core.StatusVerified && to == core.StatusRejected:
			tx.publish(&row, core.ChangeWithdrawn)
		}
		return nil
	})
	if err != nil {
		return core.Threat{}, err
	}
	return row.domain(), nil
}

// keep keeps a disputed report (within tx): the dispute closes, its votes
// count again from now; the content and the verification stay.
func (s *Store) keep(ctx context.Context, tx *txn, row *threatRow, r core.Review) error {
	if row.DisputedAt == nil {
		return &core.ConflictError{What: "review", Key: string(core.StatusVerified),
			Message: "this report is not disputed: only a report that false-positive votes put back in review can be kept"}
	}
	if err := closeDispute(ctx, tx, row, r.At); err != nil {
		return err
	}
	row.KeptAt = &r.At
	if _, err := tx.NewUpdate().Model(row).Column("kept_at").WherePK().Exec(ctx); err != nil {
		return err
	}
	st := string(core.StatusVerified)
	ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, Action: string(core.DecisionKeep), FromStatus: &st, ToStatus: &st,
		ActorID: str(r.ActorID), ActorName: r.ActorName, Note: str(r.Note), At: r.At}
	if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
		return err
	}
	tx.record(core.EntityThreat, row.ID, string(core.DecisionKeep), r.At)
	tx.publish(row, core.ChangeKept)
	return nil
}

// ReviewEvents returns a report's events, oldest first.
func (s *Store) ReviewEvents(ctx context.Context, threatID string) ([]core.ReviewEvent, error) {
	var rows []eventRow
	if err := s.db.NewSelect().Model(&rows).Where("threat_id = ?", threatID).Order("at ASC", "id ASC").Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.ReviewEvent, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// fault returns an injected failure for step when the test-only setting asks
// for one (see Options).
func (s *Store) fault(step string) error {
	if s.opts.FailStep == step {
		return &core.StepError{Step: step, Err: fmt.Errorf("injected fault in %s (test setting test_fail_step)", step)}
	}
	return nil
}
