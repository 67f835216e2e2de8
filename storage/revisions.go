package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/ioc"
)

// lockThreat reads a report with its details, locking it until commit on PostgreSQL.
func (s *Store) lockThreat(ctx context.Context, tx bun.Tx, id string) (threatRow, error) {
	var row threatRow
	err := lockRow(s.dialect, tx.NewSelect().Model(&row).Relation("Details").Where("threat_row.id = ?", id), "threat_row").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return row, core.NotFound("threat", id)
	}
	return row, err
}

// applyDetails merges patch onto the locked report and writes the details
// with iocs, the indicators the daemon derived from the same merge onto
// content version version (core.Merged): core.ErrStale when the report is
// no longer at it. A change without a version is refused: its indicators
// would be none.
func (s *Store) applyDetails(ctx context.Context, tx *txn, row *threatRow, patch core.Patch, number int, at time.Time, version int, iocs []ioc.IOC) error {
	if version == 0 {
		return core.Invalid("version", "a change that applies must name the content version it was merged onto, with that content's indicators")
	}
	if row.Version != version {
		return core.ErrStale
	}
	merged, err := core.ApplyPatch(row.domain(), patch, at)
	if err != nil {
		return err
	}
	merged.IOCs = iocs
	_, dr := toThreatRow(merged)
	if _, err := tx.NewUpdate().Model(&dr).WherePK().Exec(ctx); err != nil {
		return err
	}
	row.Details, row.Revision, row.UpdatedAt = &dr, number, at
	row.SeverityLevel = str(string(merged.Details.SeverityLevel))
	row.Version++
	if _, err := tx.NewUpdate().Model(row).Column("revision", "version", "updated_at", "severity_level").WherePK().Exec(ctx); err != nil {
		return err
	}
	tx.record(core.EntityThreat, row.ID, "update", at)
	if row.Status == string(core.StatusVerified) {
		tx.publish(row, core.ChangeRevised)
	}
	return nil
}

// ModifyThreat stores a change as an applied or a pending revision.
func (s *Store) ModifyThreat(ctx context.Context, m core.Modification) (core.Modified, error) {
	var (
		row threatRow
		rev revisionRow
	)
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		if err := lockUser(ctx, s.dialect, tx.Tx, m.AuthorID); err != nil {
			return err
		}
		var err error
		if row, err = s.lockThreat(ctx, tx.Tx, m.ThreatID); err != nil {
			return err
		}
		if row.Status == string(core.StatusRejected) {
			return &core.ConflictError{What: "threat", Key: row.ID, Message: "This report was rejected and cannot be modified"}
		}
		if row.Revision != m.BaseRevision {
			return core.ErrStale
		}
		if err := s.checkSubmitLimits(ctx, tx, m.AuthorID, core.SubmitPolicy{HourlyLimit: m.Policy.HourlyLimit, Now: m.Policy.Now}); err != nil {
			return err
		}
		var last int
		if err := tx.NewSelect().Table("threat_revisions").ColumnExpr("coalesce(max(number), 0)").Where("threat_id = ?", row.ID).Scan(ctx, &last); err != nil {
			return err
		}
		rev = revisionRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, Number: last + 1, AuthorID: str(m.AuthorID),
			AuthorName: m.AuthorName, State: core.RevisionPending, Changes: m.Patch, CreatedAt: m.At}
		action := "propose-revision"
		if m.AuthorID != "" && deref(row.SubmitterID) == m.AuthorID && row.Status == string(core.StatusPending) {
			if err := s.applyDetails(ctx, tx, &row, m.Patch, rev.Number, m.At, m.Version, m.IOCs); err != nil {
				return err
			}
			rev.State, action = core.RevisionApplied, "revise"
		} else if _, err := core.ApplyPatch(row.domain(), m.Patch, m.At); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(&rev).Exec(ctx); err != nil {
			return err
		}
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, RevisionID: &rev.ID, Action: action,
			ActorID: str(m.AuthorID), ActorName: m.AuthorName, At: m.At}
		_, err = tx.NewInsert().Model(&ev).Exec(ctx)
		return err
	})
	if err != nil {
		return core.Modified{}, err
	}
	return core.Modified{Threat: row.domain(), Revision: rev.domain()}, nil
}

// DecideRevision approves (and applies) or rejects a pending revision.
func (s *Store) DecideRevision(ctx context.Context, d core.RevisionDecision) (core.Modified, error) {
	var (
		row threatRow
		rev revisionRow
	)
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		err := tx.NewSelect().Model(&rev).Where("id = ?", d.RevisionID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return core.NotFound("revision", d.RevisionID)
		} else if err != nil {
			return err
		}
		if row, err = s.lockThreat(ctx, tx.Tx, rev.ThreatID); err != nil {
			return err
		}
		if rev.State != core.RevisionPending {
			return &core.ConflictError{What: "revision", Key: rev.ID, Message: "revision " + rev.ID + " is already " + rev.State}
		}
		action := "reject-revision"
		if d.Approve {
			if row.Status == string(core.StatusRejected) {
				return &core.ConflictError{What: "threat", Key: row.ID, Message: "the report was rejected: its revisions cannot be applied"}
			}
			if err := s.applyDetails(ctx, tx, &row, rev.Changes, rev.Number, d.At, d.Version, d.IOCs); err != nil {
				return err
			}
			rev.State, action = core.RevisionApproved, "approve-revision"
			if rev.AuthorID != nil {
				if err := earn(ctx, tx, "revision:"+rev.ID, *rev.AuthorID, row.ID, community.ReputationRevision, community.PointsRevision, d.At); err != nil {
					return err
				}
			}
		} else {
			rev.State = core.RevisionRejected
		}
		rev.Note, rev.DecidedAt, rev.DecidedBy = str(d.Note), &d.At, &d.ActorName
		if _, err := tx.NewUpdate().Model(&rev).Column("state", "note", "decided_at", "decided_by").WherePK().Exec(ctx); err != nil {
			return err
		}
		ev := eventRow{ID: uuid.Must(uuid.NewV7()).String(), ThreatID: row.ID, RevisionID: &rev.ID, Action: action,
			ActorID: str(d.ActorID), ActorName: d.ActorName, Note: str(d.Note), At: d.At}
		_, err = tx.NewInsert().Model(&ev).Exec(ctx)
		return err
	})
	if err != nil {
		return core.Modified{}, err
	}
	return core.Modified{Threat: row.domain(), Revision: rev.domain()}, nil
}

// ListPendingRevisions returns pending revisions, oldest first.
func (s *Store) ListPendingRevisions(ctx context.Context) ([]core.Revision, error) {
	var rows []revisionRow
	if err := s.db.NewSelect().Model(&rows).Where("state = ?", core.RevisionPending).Order("created_at ASC", "id ASC").Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Revision, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// GetRevision returns one revision.
func (s *Store) GetRevision(ctx context.Context, id string) (core.Revision, error) {
	if _, err := uuid.Parse(id); err != nil {
		return core.Revision{}, core.NotFound("revision", id)
	}
	var row revisionRow
	err := s.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Revision{}, core.NotFound("revision", id)
	}
	if err != nil {
		return core.Revision{}, err
	}
	return row.domain(), nil
}

// ListRevisions returns a report's revisions, oldest first.
func (s *Store) ListRevisions(ctx context.Context, threatID string) ([]core.Revision, error) {
	var rows []revisionRow
	if err := s.db.NewSelect().Model(&rows).Where("threat_id = ?", threatID).Order("number ASC").Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Revision, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}
