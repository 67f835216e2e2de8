package storage

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

type reputationRow struct {
	bun.BaseModel `bun:"table:reputation_events,alias:re"`

	ID       string    `bun:"id,pk"`
	UserID   string    `bun:"user_id,notnull"`
	ThreatID *string   `bun:"threat_id"`
	Kind     string    `bun:"kind,notnull"`
	Points   int       `bun:"points,notnull"`
	At       time.Time `bun:"at,notnull"`
}

// earn records a reputation event within tx (id: its kind and subject,
// so that the same event is never counted twice).
func earn(ctx context.Context, tx bun.IDB, id, userID, threatID, kind string, points int, at time.Time) error {
	row := reputationRow{ID: id, UserID: userID, ThreatID: str(threatID), Kind: kind, Points: points, At: at.UTC()}
	_, err := tx.NewInsert().Model(&row).On("CONFLICT (id) DO NOTHING").Exec(ctx)
	return err
}

// reviewPoints records what a review decision on row earns or costs its
// submitter, by the rule of core/community (ReviewPoints). A source's report imported pending
// earns or costs its source user the same when a reviewer decides it (an
// import verified by its source is no review decision and earns nothing).
func reviewPoints(ctx context.Context, tx bun.IDB, row threatRow, from, to core.Status, wasDisputed bool, at time.Time) error {
	if row.SubmitterID == nil {
		return nil
	}
	sev := core.Severity("")
	if row.SeverityLevel != nil {
		sev = core.Severity(*row.SeverityLevel)
	}
	e, ok := community.ReviewPoints(row.ID, sev, from, to, wasDisputed)
	if !ok {
		return nil
	}
	return earn(ctx, tx, e.Key, *row.SubmitterID, row.ID, e.Kind, e.Points, at)
}

// RecordDuplicate counts a refused duplicate on its submitter's record.
func (s *Store) RecordDuplicate(ctx context.Context, d core.Duplicate) error {
	return earn(ctx, s.db, "duplicate:"+uuid.NewString(), d.UserID, d.ThreatID, community.ReputationDuplicate, 0, d.At)
}

// Reputations reads users' records: their points and duplicates from
// their events (reputation_events_user_idx), their reports by state.
func (s *Store) Reputations(ctx context.Context, userIDs []string) ([]community.Reputation, error) {
	if len(userIDs) > core.MaxGetThreats {
		return nil, core.Invalid("user_ids", "at most %d in one call (got %d)", core.MaxGetThreats, len(userIDs))
	}
	if len(userIDs) == 0 {
		return nil, nil
	}
	records, err := s.SubmitterRecords(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	var sums []struct {
		UserID     string `bun:"user_id"`
		Points     int64  `bun:"points"`
		Duplicates int64  `bun:"duplicates"`
	}
	if err := s.db.NewSelect().Model((*reputationRow)(nil)).ColumnExpr("user_id, COALESCE(SUM(points), 0) AS points").
		ColumnExpr("COUNT(CASE WHEN kind = ? THEN 1 END) AS duplicates", community.ReputationDuplicate).
		Where("user_id IN (?)", bun.List(userIDs)).Group("user_id").Scan(ctx, &sums); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	byUser := map[string]int{}
	for i, sm := range sums {
		byUser[sm.UserID] = i
	}
	var deleted []string
	if err := s.db.NewSelect().Model((*userRow)(nil)).Column("id").Where("id IN (?) AND deleted_at IS NOT NULL", bun.List(userIDs)).Scan(ctx, &deleted); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]community.Reputation, 0, len(records))
	for _, r := range records {
		if slices.Contains(deleted, r.UserID) {
			continue
		}
		rep := community.Reputation{UserID: r.UserID, Name: r.Name, Verified: r.Verified, Rejected: r.Rejected, Pending: r.Pending}
		if i, ok := byUser[r.UserID]; ok {
			rep.Points, rep.Duplicates = sums[i].Points, sums[i].Duplicates
		}
		out = append(out, rep)
	}
	return out, nil
}

// Leaderboard sums the points of the period by user: a range of
// reputation_events_at_idx (all of them for "all"), grouped.
func (s *Store) Leaderboard(ctx context.Context, q community.LeaderboardQuery) ([]community.LeaderboardEntry, error) {
	if err := core.CheckLimit(q.Limit, community.MaxLeaderboard); err != nil {
		return nil, err
	}
	var rows []struct {
		UserID   string `bun:"user_id"`
		Name     string `bun:"name"`
		Points   int64  `bun:"points"`
		Verified int64  `bun:"verified"`
	}
	sel := s.db.NewSelect().TableExpr("reputation_events AS re").Join("JOIN users AS u ON u.id = re.user_id").
		ColumnExpr("re.user_id, u.name, SUM(re.points) AS points").
		ColumnExpr("COUNT(CASE WHEN re.kind = ? THEN 1 END) AS verified", community.ReputationVerified).
		Where("u.deleted_at IS NULL AND u.disabled_at IS NULL")
	if !q.Since.IsZero() {
		sel = sel.Where("re.at >= ?", q.Since.UTC())
	}
	if err := sel.Group("re.user_id", "u.name").Having("SUM(re.points) > 0").
		OrderExpr("points DESC, verified DESC, u.name, re.user_id").Limit(int64(q.Limit)).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]community.LeaderboardEntry, len(rows))
	for i, r := range rows {
		out[i] = community.LeaderboardEntry{UserID: r.UserID, Name: r.Name, Points: r.Points, Verified: r.Verified}
	}
	return out, nil
}

// ReputationHistory reads a user's latest events through
// reputation_events_user_idx, newest first.
func (s *Store) ReputationHistory(ctx context.Context, q community.HistoryQuery) ([]community.ReputationEvent, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return nil, err
	}
	var rows []reputationRow
	if err := s.db.NewSelect().Model(&rows).Where("user_id = ?", q.UserID).OrderExpr("at DESC, id DESC").Limit(int64(q.Limit)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]community.ReputationEvent, len(rows))
	for i, r := range rows {
		out[i] = community.ReputationEvent{Kind: r.Kind, ThreatID: deref(r.ThreatID), Points: r.Points, At: r.At.UTC()}
	}
	return out, nil
}

// UsersByName reads the active users with a public name (users_name_idx).
func (s *Store) UsersByName(ctx context.Context, name string) ([]core.User, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, nil
	}
	var rows []userRow
	if err := s.db.NewSelect().Model(&rows).Where("name = ? AND deleted_at IS NULL AND disabled_at IS NULL", name).
		OrderExpr("created_at, id").Limit(10).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]core.User, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// SubmitterRecordsAll reads every submitter's reports by state, in one
// pass over the community reports (threats_submitter_status_idx). Source
// users (core.SourceUserDomain), whose imported reports may number a
// million, are left out: the pass reads the index around their ranges
// (imported reports' confidence takes no record).
func (s *Store) SubmitterRecordsAll(ctx context.Context) ([]core.SubmitterRecord, error) {
	var sources []string
	if err := s.db.NewSelect().Table("users").Column("id").Where("email LIKE ?", "%@"+core.SourceUserDomain).
		OrderExpr("id").Scan(ctx, &sources); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	type record struct {
		UserID   string `bun:"submitter_id"`
		Verified int64  `bun:"verified"`
		Rejected int64  `bun:"rejected"`
		Pending  int64  `bun:"pending"`
	}
	var rows []record
	// The ranges of submitter ids between the source users' ids.
	for i := 0; i <= len(sources); i++ {
		var part []record
		q := s.db.NewSelect().Model((*threatRow)(nil)).ColumnExpr("submitter_id").
			ColumnExpr("COUNT(CASE WHEN status = ? THEN 1 END) AS verified", core.StatusVerified).
			ColumnExpr("COUNT(CASE WHEN status = ? THEN 1 END) AS rejected", core.StatusRejected).
			ColumnExpr("COUNT(CASE WHEN status = ? THEN 1 END) AS pending", core.StatusPending).
			Where("submitter_id IS NOT NULL")
		if i > 0 {
			q = q.Where("submitter_id > ?", sources[i-1])
		}
		if i < len(sources) {
			q = q.Where("submitter_id < ?", sources[i])
		}
		if err := q.Group("submitter_id").Scan(ctx, &part); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		rows = append(rows, part...)
	}
	out := make([]core.SubmitterRecord, len(rows))
	for i, r := range rows {
		out[i] = core.SubmitterRecord{UserID: r.UserID, Verified: r.Verified, Rejected: r.Rejected, Pending: r.Pending}
	}
	return out, nil
}
