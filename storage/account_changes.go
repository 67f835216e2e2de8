package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// ListSessions returns a user's unexpired sessions, newest first, on
// web_sessions_user_idx.
func (s *Store) ListSessions(ctx context.Context, userID string) ([]core.Session, error) {
	var rows []sessionRow
	err := s.db.NewSelect().Model(&rows).Where("user_id = ?", userID).Where("expires_at > ?", s.now()).
		Order("created_at DESC", "id_hash").Limit(core.MaxListSessions).Scan(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]core.Session, len(rows))
	for i, r := range rows {
		out[i] = core.Session{Hash: r.IDHash, UserID: r.UserID, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}
	}
	return out, nil
}

// ChangeAccount applies an account change in one transaction, with its
// change-feed entries: the user's, and one per token revoked and per
// report withdrawn, so that every daemon's principal cache and index follow.
func (s *Store) ChangeAccount(ctx context.Context, c core.AccountChange) (core.AccountChanged, error) {
	var out core.AccountChanged
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		out = core.AccountChanged{}
		at := c.At.UTC()
		var row userRow
		err := lockRow(s.dialect, tx.NewSelect().Model(&row).Where("id = ?", c.UserID), "user_row").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) || err == nil && row.DeletedAt != nil {
			return core.NotFound("user", c.UserID)
		}
		if err != nil {
			return err
		}
		endSessions, keep, revoke := c.EndSessions, c.KeepSession, false
		cols := []string{"updated_at"}
		row.UpdatedAt = at
		if c.Name != nil {
			row.Name, cols = *c.Name, append(cols, "name")
		}
		if c.PasswordHash != nil {
			row.PasswordHash, cols, endSessions = *c.PasswordHash, append(cols, "password_hash"), true
		}
		if c.Disabled != nil {
			switch {
			case *c.Disabled && row.DisabledAt == nil:
				row.DisabledAt = &at
			case !*c.Disabled:
				row.DisabledAt = nil
			}
			cols = append(cols, "disabled_at")
			if *c.Disabled {
				revoke, endSessions, keep = true, true, ""
			}
		}
		if d := c.Delete; d != nil {
			row.Email, row.Name, row.PasswordHash, row.DeletedAt = d.Email, d.Name, "", &at
			cols = append(cols, "email", "name", "password_hash", "deleted_at")
			revoke, endSessions, keep = true, true, ""
		}
		if _, err := tx.NewUpdate().Model(&row).Column(cols...).WherePK().Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return &core.ConflictError{What: "user", Key: row.Email}
			}
			return err
		}
		tx.record(core.EntityUser, row.ID, "update", at)
		if revoke {
			if out.TokensRevoked, err = revokeAll(ctx, tx, row.ID, at); err != nil {
				return err
			}
		}
		if endSessions {
			q := tx.NewDelete().Model((*sessionRow)(nil)).Where("user_id = ?", row.ID)
			if keep != "" {
				q = q.Where("id_hash <> ?", keep)
			}
			res, err := q.Exec(ctx)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			out.SessionsEnded = int(n)
		}
		if c.Delete != nil {
			if err := s.forget(ctx, tx, row.ID, *c.Delete, at, &out); err != nil {
				return err
			}
		}
		out.User = row.domain()
		return nil
	})
	if err != nil {
		return core.AccountChanged{}, err
	}
	return out, nil
}

// revokeAll revokes the user's live tokens (api_tokens_user_idx) and
// records each revocation.
func revokeAll(ctx context.Context, tx *txn, userID string, at time.Time) (int, error) {
	var ids []string
	if err := tx.NewSelect().Model((*tokenRow)(nil)).Column("id").Where("user_id = ?", userID).
		Where("revoked_at IS NULL").Scan(ctx, &ids); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if _, err := tx.NewUpdate().Model((*tokenRow)(nil)).Set("revoked_at = ?", at).Where("user_id = ?", userID).
		Where("revoked_at IS NULL").Exec(ctx); err != nil {
		return 0, err
	}
	for _, id := range ids {
		tx.record(core.EntityToken, id, "revoke", at)
	}
	return len(ids), nil
}

// forget is the rest of deleting an account: the user's pending reports
// are withdrawn and their pending revisions rejected, each with a review
// event; the name they acted under is replaced in revisions and review
// events; the contact e-mail of their reports is removed.
func (s *Store) forget(ctx context.Context, tx *txn, userID string, d core.AccountDeletion, at time.Time, out *core.AccountChanged) error {
	// What the firewall served the user's tokens, their projects'
	// inventories and the exposures of both (docs/exposure.md).
	tokens := tx.NewSelect().Table("api_tokens").Column("id").Where("user_id = ?", userID)
	projects := tx.NewSelect().Table("inventories").Column("project").Where("token_id IN (?)", tokens)
	if _, err := tx.NewDelete().Table("inventory_items").Where("project IN (?)", projects).Exec(ctx); err != nil {
		return err
	}
	for _, table := range []string{"firewall_ledger", "exposures", "inventories"} {
		if _, err := tx.NewDelete().Table(table).Where("token_id IN (?)", tokens).Exec(ctx); err != nil {
			return err
		}
	}
	// Pending reports (threats_submitter_status_idx).
	var pending []string
	if err := tx.NewSelect().Model((*threatRow)(nil)).Column("id").Where("submitter_id = ?", userID).
		Where("status = ?", core.StatusPending).Scan(ctx, &pending); err != nil {
		return err
	}
	from, to := string(core.StatusPending), string(core.StatusRejected)
	for _, id := range pending {
		if _, err := tx.NewUpdate().Model((*threatRow)(nil)).Set("status = ?", to).Set("updated_at = ?", at).
			Where("id = ?", id).Exec(ctx); err != nil {
			return err
		}
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: id, Action: string(core.DecisionReject),
			FromStatus: &from, ToStatus: &to, ActorName: d.ActorName, Note: str(d.Note), At: at}
		if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
			return err
		}
		tx.record(core.EntityThreat, id, string(core.DecisionReject), at)
	}
	out.ReportsWithdrawn = len(pending)

	// Pending revisions (threat_revisions_author_created_idx).
	var revs []revisionRow
	if err := tx.NewSelect().Model(&revs).Column("id", "threat_id").Where("author_id = ?", userID).
		Where("state = ?", core.RevisionPending).Scan(ctx); err != nil {
		return err
	}
	for _, r := range revs {
		if _, err := tx.NewUpdate().Model((*revisionRow)(nil)).Set("state = ?", core.RevisionRejected).
			Set("note = ?", d.Note).Set("decided_at = ?", at).Set("decided_by = ?", d.ActorName).
			Where("id = ?", r.ID).Exec(ctx); err != nil {
			return err
		}
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: r.ThreatID, RevisionID: &r.ID, Action: "reject-revision",
			ActorName: d.ActorName, Note: str(d.Note), At: at}
		if _, err := tx.NewInsert().Model(&ev).Exec(ctx); err != nil {
			return err
		}
		tx.record(core.EntityThreat, r.ThreatID, "update", at)
	}
	out.RevisionsWithdrawn = len(revs)

	// The name the user acted under.
	if _, err := tx.NewUpdate().Model((*revisionRow)(nil)).Set("author_name = ?", d.Name).Where("author_id = ?", userID).Exec(ctx); err != nil {
		return err
	}
	if _, err := tx.NewUpdate().Model((*eventRow)(nil)).Set("actor_name = ?", d.Name).Where("actor_id = ?", userID).Exec(ctx); err != nil {
		return err
	}

	// The contact e-mail of the user's reports, which only they and the
	// reviewers saw; each report changed is recorded, so that no daemon
	// keeps serving it from a cache.
	var contacts []string
	if err := tx.NewSelect().TableExpr("threats AS t").Column("t.id").
		Join("JOIN threat_details AS d ON d.threat_id = t.id").
		Where("t.submitter_id = ?", userID).Where("d.contact_email IS NOT NULL").Scan(ctx, &contacts); err != nil {
		return err
	}
	for _, id := range contacts {
		if _, err := tx.NewUpdate().Model((*detailsRow)(nil)).Set("contact_email = NULL").Where("threat_id = ?", id).Exec(ctx); err != nil {
			return err
		}
		tx.record(core.EntityThreat, id, "update", at)
	}
	return nil
}
