package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// ListTokens returns a user's tokens, newest first.
func (s *Store) ListTokens(ctx context.Context, userID string) ([]core.Token, error) {
	var rows []tokenRow
	if err := s.db.NewSelect().Model(&rows).Where("user_id = ?", userID).Order("created_at DESC", "id DESC").Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Token, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// RevokeUserToken revokes the user's token with this id.
func (s *Store) RevokeUserToken(ctx context.Context, t core.UserToken) (core.Token, error) {
	return s.revoke(ctx, t.TokenID, "id = ? AND user_id = ?", t.TokenID, t.UserID)
}

// TokensUsed records last-use times; an older time never overwrites a newer.
func (s *Store) TokensUsed(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		for id, at := range used {
			_, err := tx.NewUpdate().Model((*tokenRow)(nil)).Set("last_used_at = ?", at.UTC()).
				Where("id = ?", id).Where("last_used_at IS NULL OR last_used_at < ?", at.UTC()).Exec(ctx)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// SetPassword stores a password hash and ends the user's sessions.
func (s *Store) SetPassword(ctx context.Context, p core.PasswordReset) (core.User, error) {
	var row userRow
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		err := tx.NewSelect().Model(&row).Where("email = ?", p.Email).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return core.NotFound("user", p.Email)
		}
		if err != nil {
			return err
		}
		now := s.now()
		row.PasswordHash, row.UpdatedAt = p.Hash, now
		if _, err := tx.NewUpdate().Model(&row).Column("password_hash", "updated_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", row.ID).Exec(ctx); err != nil {
			return err
		}
		tx.record(core.EntityUser, row.ID, "update", now)
		return nil
	})
	if err != nil {
		return core.User{}, err
	}
	return row.domain(), nil
}

// CreateSession stores a session and drops the user's expired ones.
func (s *Store) CreateSession(ctx context.Context, ses core.Session) error {
	row := sessionRow{IDHash: ses.Hash, UserID: ses.UserID, CreatedAt: ses.CreatedAt.UTC(), ExpiresAt: ses.ExpiresAt.UTC()}
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", ses.UserID).Where("expires_at <= ?", s.now()).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			switch {
			case isUniqueViolation(err):
				return &core.ConflictError{What: "session", Key: ""}
			case isForeignKeyViolation(err):
				return core.NotFound("user", ses.UserID)
			}
			return err
		}
		return nil
	})
}

// SessionUser returns an unexpired session and its user.
func (s *Store) SessionUser(ctx context.Context, hash string) (core.SessionOwner, error) {
	var ses sessionRow
	err := s.db.NewSelect().Model(&ses).Where("id_hash = ?", hash).Where("expires_at > ?", s.now()).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.SessionOwner{}, core.NotFound("session", "")
	}
	if err != nil {
		return core.SessionOwner{}, err
	}
	var u userRow
	if err := s.db.NewSelect().Model(&u).Where("id = ?", ses.UserID).Scan(ctx); err != nil {
		return core.SessionOwner{}, err
	}
	return core.SessionOwner{
		Session: core.Session{Hash: ses.IDHash, UserID: ses.UserID, CreatedAt: ses.CreatedAt.UTC(), ExpiresAt: ses.ExpiresAt.UTC()},
		User:    u.domain(),
	}, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.NewDelete().Model((*sessionRow)(nil)).Where("id_hash = ?", hash).Exec(ctx)
		return err
	})
}

// ListSubmissions returns one page of a user's reports, newest first.
func (s *Store) ListSubmissions(ctx context.Context, q core.SubmissionQuery) (core.ThreatList, error) {
	userID, offset, limit := q.UserID, q.Offset, q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return core.ThreatList{}, err
	}
	if offset < 0 {
		return core.ThreatList{}, core.Invalid("offset", "must not be negative (got %d)", offset)
	}
	total, err := s.db.NewSelect().Model((*threatRow)(nil)).Where("submitter_id = ?", userID).Count(ctx)
	if err != nil {
		return core.ThreatList{}, err
	}
	// The page's ids come from the (submitter_id, created_at, id) index
	// alone; the reports and their details are read for those ids only,
	// and put in order here (a page at most). With the join in the same
	// query, every skipped row was joined too, and a deep page cost as
	// much as all the pages before it.
	page := s.db.NewSelect().Model((*threatRow)(nil)).Column("id").Where("submitter_id = ?", userID).
		Order("created_at DESC", "id DESC").Offset(int64(offset)).Limit(int64(limit))
	var rows []threatRow
	err = s.db.NewSelect().Model(&rows).Relation("Details", detailsWithoutIOCs).Where("threat_row.id IN (?)", page).Scan(ctx)
	if err != nil {
		return core.ThreatList{}, err
	}
	slices.SortFunc(rows, func(a, b threatRow) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	out := make([]core.Threat, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return core.ThreatList{Threats: out, Total: int(total)}, nil
}

// SubmitterRecords reads the users by primary key and counts each one's
// reports by status on threats_submitter_status_idx (submitter_id, status).
func (s *Store) SubmitterRecords(ctx context.Context, userIDs []string) ([]core.SubmitterRecord, error) {
	if len(userIDs) > core.MaxGetThreats {
		return nil, core.Invalid("user_ids", "at most %d in one call (got %d)", core.MaxGetThreats, len(userIDs))
	}
	if len(userIDs) == 0 {
		return nil, nil
	}
	count := func(status core.Status) string {
		return "(SELECT count(*) FROM threats AS t WHERE t.submitter_id = u.id AND t.status = '" + string(status) + "')"
	}
	var rows []struct {
		ID       string `bun:"id"`
		Name     string `bun:"name"`
		Verified int64  `bun:"verified"`
		Rejected int64  `bun:"rejected"`
		Pending  int64  `bun:"pending"`
	}
	if err := s.db.NewSelect().TableExpr("users AS u").ColumnExpr("u.id, u.name").
		ColumnExpr(count(core.StatusVerified)+" AS verified").ColumnExpr(count(core.StatusRejected)+" AS rejected").
		ColumnExpr(count(core.StatusPending)+" AS pending").
		Where("u.id IN (?)", bun.List(userIDs)).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	out := make([]core.SubmitterRecord, len(rows))
	for i, r := range rows {
		out[i] = core.SubmitterRecord{UserID: r.ID, Name: r.Name, Verified: r.Verified, Rejected: r.Rejected, Pending: r.Pending}
	}
	return out, nil
}
