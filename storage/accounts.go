package storage

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// CreateUser stores a new user.
func (s *Store) CreateUser(ctx context.Context, u core.User) (core.User, error) {
	now := s.now()
	row := userRow{
		ID: u.ID, Email: u.Email, Name: u.Name, Tier: string(u.Tier), Role: string(u.Role),
		SubmissionsPerHour: u.SubmissionsPerHour, CreatedAt: now, UpdatedAt: now, PasswordHash: u.PasswordHash,
	}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return &core.ConflictError{What: "user", Key: u.Email}
			}
			return err
		}
		tx.record(core.EntityUser, row.ID, "create", now)
		return nil
	})
	if err != nil {
		return core.User{}, err
	}
	return row.domain(), nil
}

// UserByEmail returns the user with that e-mail.
func (s *Store) UserByEmail(ctx context.Context, email string) (core.User, error) {
	var row userRow
	err := s.db.NewSelect().Model(&row).Where("email = ?", email).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.User{}, core.NotFound("user", email)
	}
	if err != nil {
		return core.User{}, err
	}
	return row.domain(), nil
}

// SetUserLimit sets or clears a user's hourly submission limit.
func (s *Store) SetUserLimit(ctx context.Context, l core.UserLimit) (core.User, error) {
	return s.updateUser(ctx, l.Email, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		return q.Set("submissions_per_hour = ?", l.PerHour)
	})
}

// updateUser applies set to the user with that e-mail in one transaction,
// with its change-feed entry (the daemons' user caches follow it), and
// returns the user as stored; ErrNotFound when no user has that e-mail.
func (s *Store) updateUser(ctx context.Context, email string, set func(*bun.UpdateQuery) *bun.UpdateQuery) (core.User, error) {
	var row userRow
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		now := s.now()
		res, err := set(tx.NewUpdate().Model((*userRow)(nil)).Set("updated_at = ?", now).Where("email = ?", email)).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return core.NotFound("user", email)
		}
		if err := tx.NewSelect().Model(&row).Where("email = ?", email).Scan(ctx); err != nil {
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

// CreateToken stores a token hash for an existing user.
func (s *Store) CreateToken(ctx context.Context, t core.Token) (core.Token, error) {
	row := tokenRow{ID: t.ID, UserID: t.UserID, Name: t.Name, Hash: t.Hash, Hint: t.Hint, CreatedAt: s.now()}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
			switch {
			case isUniqueViolation(err):
				return &core.ConflictError{What: "token", Key: t.ID}
			case isForeignKeyViolation(err):
				return core.NotFound("user", t.UserID)
			}
			return err
		}
		tx.record(core.EntityToken, row.ID, "create", row.CreatedAt)
		return nil
	})
	if err != nil {
		return core.Token{}, err
	}
	return row.domain(), nil
}

// RevokeToken revokes the token with this hash. Revoking a revoked token
// succeeds and leaves its revocation time as it was.
func (s *Store) RevokeToken(ctx context.Context, hash string) (core.Token, error) {
	return s.revoke(ctx, "", "hash = ?", hash)
}

// revoke revokes the one token the condition (where, arg) selects, and
// answers ErrNotFound naming key when there is none.
func (s *Store) revoke(ctx context.Context, key, where string, args ...any) (core.Token, error) {
	var row tokenRow
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		err := tx.NewSelect().Model(&row).Where(where, args...).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return core.NotFound("token", key)
		}
		if err != nil || row.RevokedAt != nil {
			return err
		}
		now := s.now()
		row.RevokedAt = &now
		if _, err := tx.NewUpdate().Model(&row).Column("revoked_at").WherePK().Exec(ctx); err != nil {
			return err
		}
		tx.record(core.EntityToken, row.ID, "revoke", now)
		return nil
	})
	if err != nil {
		return core.Token{}, err
	}
	return row.domain(), nil
}

// Authenticate returns the live token with this hash and its user.
func (s *Store) Authenticate(ctx context.Context, hash string) (core.TokenOwner, error) {
	var tok tokenRow
	err := s.db.NewSelect().Model(&tok).Where("hash = ?", hash).Where("revoked_at IS NULL").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.TokenOwner{}, core.NotFound("token", "")
	}
	if err != nil {
		return core.TokenOwner{}, err
	}
	var u userRow
	if err := s.db.NewSelect().Model(&u).Where("id = ?", tok.UserID).Scan(ctx); err != nil {
		return core.TokenOwner{}, err
	}
	return core.TokenOwner{Token: tok.domain(), User: u.domain()}, nil
}

// SetUserAccess changes a user's tier and role (nil = unchanged).
func (s *Store) SetUserAccess(ctx context.Context, a core.UserAccess) (core.User, error) {
	return s.updateUser(ctx, a.Email, func(q *bun.UpdateQuery) *bun.UpdateQuery {
		if a.Tier != nil {
			q = q.Set("tier = ?", string(*a.Tier))
		}
		if a.Role != nil {
			q = q.Set("role = ?", string(*a.Role))
		}
		return q
	})
}

// ListUsers returns a page of users in e-mail order (the unique index on
// email).
func (s *Store) ListUsers(ctx context.Context, q core.UserQuery) ([]core.User, error) {
	if err := core.CheckLimit(q.Limit, core.MaxListUsers); err != nil {
		return nil, err
	}
	var rows []userRow
	if err := s.db.NewSelect().Model(&rows).Where("email > ?", q.After).OrderExpr("email").Limit(int64(q.Limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.User, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}
