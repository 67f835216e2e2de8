package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// ImportedVersions returns the upstream modified time of the reports
// imported from source under ids: one read of the unique index
// threats_upstream_key, outside any write transaction, scanned by hand
// (on SQLite the timestamp is read as text for parseStamp).
func (s *Store) ImportedVersions(ctx context.Context, q core.VersionQuery) (map[string]time.Time, error) {
	source, ids := q.Source, q.IDs
	if len(ids) > core.MaxImportedVersions {
		return nil, core.Invalid("ids", "at most %d in one call", core.MaxImportedVersions)
	}
	out := make(map[string]time.Time, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	stamp := "upstream_modified"
	if s.dialect == SQLite {
		stamp = "CAST(upstream_modified AS TEXT)"
	}
	rows, err := s.db.QueryContext(ctx, "SELECT upstream_id, "+stamp+" FROM "+tableUsing(s.dialect, "threats", "threats_upstream_key")+
		" WHERE source = ? AND upstream_id IN (?)", source, bun.List(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v any
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		t, err := stampValue(v)
		if err != nil {
			return nil, fmt.Errorf("upstream_modified of %s: %w", id, err)
		}
		if !t.IsZero() {
			out[id] = t
		}
	}
	return out, rows.Err()
}

// ImportedIDs pages through the upstream ids of the live reports a source
// created (attributed to its source user: never a report it was attached
// to), on the unique index threats_upstream_key (source, upstream_id).
func (s *Store) ImportedIDs(ctx context.Context, q core.ImportedIDQuery) ([]string, error) {
	if q.Limit < 1 || q.Limit > core.MaxImportedVersions {
		return nil, core.Invalid("limit", "must be between 1 and %d (got %d)", core.MaxImportedVersions, q.Limit)
	}
	if q.Source == "" {
		return nil, core.Invalid("source", "is required")
	}
	var ids []string
	err := s.db.NewSelect().TableExpr(tableUsing(s.dialect, "threats", "threats_upstream_key")).Column("upstream_id").
		Where("source = ?", q.Source).Where("upstream_id > ?", q.After).
		Where("status IN (?, ?)", string(core.StatusPending), string(core.StatusVerified)).
		Where("submitter_id = (SELECT u.id FROM users AS u WHERE u.email = ?)", core.SourceUserEmail(q.Source)).
		OrderExpr("upstream_id").Limit(int64(q.Limit)).Scan(ctx, &ids)
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}
