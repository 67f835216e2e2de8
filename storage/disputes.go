package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// votesQuery selects the votes counted toward a report's dispute: people's
// false-positive sightings since its last decision, its submitter's own
// left out (through sightings_vote_idx). Once a reviewer has kept the
// report, only voters with a record count (a verified report of their
// own, through threats_submitter_status_idx): fresh accounts cannot
// reopen a kept dispute again and again.
func votesQuery(q *bun.SelectQuery, row threatRow) *bun.SelectQuery {
	q = q.Where("sg.threat_id = ? AND sg.type = ? AND sg.user_id IS NOT NULL AND sg.created_at > ?", row.ID, community.SightingFalsePositive, community.VoteSince(row.VerifiedAt, row.KeptAt))
	if row.SubmitterID != nil {
		q = q.Where("sg.user_id <> ?", *row.SubmitterID)
	}
	if community.VotersNeedRecord(row.KeptAt) {
		q = q.Where("EXISTS (SELECT 1 FROM threats AS tv WHERE tv.submitter_id = sg.user_id AND tv.status = ?)", string(core.StatusVerified))
	}
	return q
}

// countVotes counts a report's votes after a new one (within tx), keeps
// the number with its counts, and puts the report in dispute when they
// reach threshold (0: never) and it is not in dispute already.
func (s *Store) countVotes(ctx context.Context, tx *txn, threatID string, threshold int, now time.Time) error {
	var row threatRow
	if err := lockRow(s.dialect, tx.NewSelect().Model(&row).Where("id = ?", threatID), "threat_row").Scan(ctx); err != nil {
		return err
	}
	n, err := votesQuery(tx.NewSelect().Model((*sightingRow)(nil)), row).Count(ctx)
	if err != nil {
		return err
	}
	opens := community.OpensDispute(n, threshold, row.DisputedAt != nil)
	q := tx.NewUpdate().Table("sighting_counts").Set("votes = ?", n).Set("updated_at = ?", now).Where("threat_id = ?", threatID)
	if opens {
		q = q.Set("disputed = ?", true)
	}
	if _, err := q.Exec(ctx); err != nil {
		return err
	}
	if !opens {
		return nil
	}
	row.DisputedAt = &now
	if _, err := tx.NewUpdate().Model(&row).Column("disputed_at").WherePK().Exec(ctx); err != nil {
		return err
	}
	st := string(core.StatusVerified)
	note := fmt.Sprintf("%d false-positive votes put the report back in review", n)
	ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, Action: core.ActionDispute, FromStatus: &st, ToStatus: &st,
		ActorName: core.SystemReviewer, Note: &note, At: now}
	if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
		return err
	}
	tx.record(core.EntityThreat, row.ID, core.ActionDispute, now)
	tx.publish(&row, core.ChangeDisputed)
	return nil
}

// closeDispute ends a report's dispute (a reviewer kept or withdrew it):
// its votes start again from zero.
func closeDispute(ctx context.Context, tx *txn, row *threatRow, at time.Time) error {
	row.DisputedAt = nil
	if _, err := tx.NewUpdate().Model(row).Column("disputed_at").WherePK().Exec(ctx); err != nil {
		return err
	}
	_, err := tx.NewUpdate().Table("sighting_counts").Set("votes = 0").Set("disputed = ?", false).Set("updated_at = ?", at.UTC()).
		Where("threat_id = ?", row.ID).Exec(ctx)
	return err
}

// ListDisputed reads a keyset page of the reports in dispute through
// threats_disputed_idx, oldest dispute first.
func (s *Store) ListDisputed(ctx context.Context, q community.DisputeQuery) (core.ThreatList, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return core.ThreatList{}, err
	}
	total, err := s.db.NewSelect().Model((*threatRow)(nil)).Where("disputed_at IS NOT NULL").Count(ctx)
	if err != nil {
		return core.ThreatList{}, err
	}
	var rows []threatRow
	sel := s.db.NewSelect().Model(&rows).Relation("Details").Where("threat_row.disputed_at IS NOT NULL")
	if q.AfterID != "" {
		at := q.AfterDisputedAt.UTC()
		sel = sel.Where("(threat_row.disputed_at > ? OR (threat_row.disputed_at = ? AND threat_row.id > ?))", at, at, q.AfterID)
	}
	if err := sel.OrderExpr("threat_row.disputed_at, threat_row.id").Limit(int64(q.Limit)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return core.ThreatList{}, err
	}
	out := core.ThreatList{Total: int(total), Threats: make([]core.Threat, len(rows))}
	for i, r := range rows {
		out.Threats[i] = r.domain()
	}
	return out, nil
}

// DisputeVotes reads the votes counted toward a report's dispute now.
func (s *Store) DisputeVotes(ctx context.Context, threatID string) ([]community.Sighting, error) {
	if _, err := uuid.Parse(threatID); err != nil {
		return nil, core.NotFound("threat", threatID)
	}
	var row threatRow
	if err := s.db.NewSelect().Model(&row).Where("id = ?", threatID).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return nil, core.NotFound("threat", threatID)
	} else if err != nil {
		return nil, err
	}
	var rows []sightingRow
	if err := votesQuery(s.db.NewSelect().Model(&rows), row).OrderExpr("sg.created_at, sg.id").Limit(community.MaxDisputeVotes).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]community.Sighting, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}
