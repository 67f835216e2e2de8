package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// LatestVerified returns verified reports matching f, newest verification first.
func (s *Store) LatestVerified(ctx context.Context, f core.LatestFilter) ([]core.Threat, error) {
	limit := f.Limit
	if limit <= 0 || limit > 10000 {
		limit = 100
	}
	var rows []threatRow
	q := s.db.NewSelect().Model(&rows).Relation("Details").
		Where("threat_row.status = ?", string(core.StatusVerified))
	if f.ReportType != "" {
		q = q.Where("threat_row.report_type = ?", string(f.ReportType))
	}
	if f.Registry != "" {
		q = q.Where("threat_row.registry = ?", f.Registry)
	}
	if f.Severity != "" {
		q = q.Where("details.severity_level = ?", string(f.Severity))
	}
	if err := q.Order("threat_row.verified_at DESC", "threat_row.id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Threat, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// summaryBatch is how many summaries one callback (and one stream message) carries.
const summaryBatch = 1000

// EachVerifiedSummary streams every verified report through one query (one
// pass over the table, in no particular order), in batches of summaryBatch.
// Paging with "id > last ORDER BY id LIMIT n" instead re-reads and sorts the
// verified rows for every page: quadratic at a million reports.
//
// The query reads the threats table alone: the version list, the only
// detail the index needs, is fetched only for reports that do not affect
// every version, and on SQLite the table is read in storage order rather
// than through threats_status_verified_idx (nearly every report is
// verified; going through the index costs a row look-up each). Rows are
// scanned without reflection, and SQLite's text timestamps are parsed by
// parseStamp. At a million reports this took the load from 12.5 s to a
// few seconds (docs/performance.md).
func (s *Store) EachVerifiedSummary(ctx context.Context, fn func([]core.Summary) error) error {
	rows, err := s.db.QueryContext(ctx, verifiedSummaries(s.dialect), string(core.StatusVerified))
	if err != nil {
		return err
	}
	defer rows.Close()
	batch := make([]core.Summary, 0, summaryBatch)
	for rows.Next() {
		var (
			sum                core.Summary
			rtype              string
			registry, versions sql.NullString
			stamp              any
		)
		if err := rows.Scan(&sum.ID, &sum.CanonicalKey, &rtype, &registry, &stamp, &sum.AllVersions, &versions); err != nil {
			return err
		}
		sum.ReportType, sum.Registry, sum.VersionInfo = core.ReportType(rtype), registry.String, versions.String
		if sum.VerifiedAt, err = stampValue(stamp); err != nil {
			return fmt.Errorf("report %s: verified_at: %w", sum.ID, err)
		}
		if batch = append(batch, sum); len(batch) == summaryBatch {
			if err := fn(batch); err != nil {
				return err
			}
			batch = make([]core.Summary, 0, summaryBatch)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// verifiedSummaries is the index load's query (one parameter: the status).
func verifiedSummaries(d Dialect) string {
	// On SQLite, "+t.status" keeps the planner off the status index, and
	// the timestamp is read as text for parseStamp.
	status, stamp := "t.status", "t.verified_at"
	if d == SQLite {
		status, stamp = "+t.status", "CAST(t.verified_at AS TEXT)"
	}
	return "SELECT t.id, t.canonical_key, t.report_type, t.registry, " + stamp + ", t.all_versions, " +
		"CASE WHEN t.all_versions THEN NULL ELSE (SELECT d.version_info FROM threat_details AS d WHERE d.threat_id = t.id) END " +
		"FROM threats AS t WHERE " + status + " = ?"
}

// stampValue converts a scanned timestamp: a time from PostgreSQL, text
// from SQLite, NULL as the zero time.
func stampValue(v any) (time.Time, error) {
	switch v := v.(type) {
	case nil:
		return time.Time{}, nil
	case time.Time:
		return v.UTC(), nil
	case string:
		return parseStamp(v)
	case []byte:
		return parseStamp(string(v))
	}
	return time.Time{}, fmt.Errorf("unexpected %T", v)
}

// parseStamp parses a timestamp as bun writes it to SQLite,
// "2006-01-02 15:04:05[.999999]+00:00", without time.Parse's layout
// interpretation on the common UTC form (a million of them at start-up);
// anything else goes to time.Parse.
func parseStamp(s string) (time.Time, error) {
	if t, ok := parseUTCStamp(s); ok {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot parse %q", s)
}

func parseUTCStamp(s string) (time.Time, bool) {
	body, ok := strings.CutSuffix(s, "+00:00")
	if !ok {
		body, ok = strings.CutSuffix(s, "Z")
	}
	if !ok || len(body) < 19 || body[4] != '-' || body[7] != '-' || (body[10] != ' ' && body[10] != 'T') || body[13] != ':' || body[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := body[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	var f [6]int
	for i, r := range [6][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}} {
		if f[i], ok = num(r[0], r[1]); !ok {
			return time.Time{}, false
		}
	}
	nsec := 0
	if frac := body[19:]; frac != "" {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		n, ok := num(20, len(body))
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		nsec = n
	}
	if f[1] < 1 || f[1] > 12 || f[2] < 1 || f[2] > 31 || f[3] > 23 || f[4] > 59 || f[5] > 59 {
		return time.Time{}, false
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], nsec, time.UTC)
	if t.Day() != f[2] { // 31 February and the like
		return time.Time{}, false
	}
	return t, true
}

// lockThreat reads a report with its details, locking it until commit on PostgreSQL.
func (s *Store) lockThreat(ctx context.Context, tx bun.Tx, id string) (threatRow, error) {
	var row threatRow
	err := lockRow(s.dialect, tx.NewSelect().Model(&row).Relation("Details").Where("threat_row.id = ?", id), "threat_row").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return row, core.NotFound("threat", id)
	}
	return row, err
}

// applyDetails merges patch onto the locked report and writes the details.
func (s *Store) applyDetails(ctx context.Context, tx *txn, row *threatRow, patch core.Submission, number int, at time.Time) error {
	merged, err := core.ApplyPatch(row.domain(), patch, at)
	if err != nil {
		return err
	}
	_, dr := toThreatRow(merged)
	if _, err := tx.NewUpdate().Model(&dr).WherePK().Exec(ctx); err != nil {
		return err
	}
	row.Details, row.Revision, row.UpdatedAt = &dr, number, at
	row.Version++
	if _, err := tx.NewUpdate().Model(row).Column("revision", "version", "updated_at").WherePK().Exec(ctx); err != nil {
		return err
	}
	tx.record(core.EntityThreat, row.ID, "update", at)
	if row.Status == string(core.StatusVerified) {
		tx.publish(row, core.ChangeRevised)
	}
	return nil
}

// ModifyThreat stores a change as an applied or a pending revision.
func (s *Store) ModifyThreat(ctx context.Context, m core.Modification, p core.SubmitPolicy) (core.Threat, core.Revision, error) {
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
		if err := s.checkSubmitLimits(ctx, tx, m.AuthorID, core.SubmitPolicy{HourlyLimit: p.HourlyLimit, Now: p.Now}); err != nil {
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
			if err := s.applyDetails(ctx, tx, &row, m.Patch, rev.Number, m.At); err != nil {
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
		return core.Threat{}, core.Revision{}, err
	}
	return row.domain(), rev.domain(), nil
}

// DecideRevision approves (and applies) or rejects a pending revision.
func (s *Store) DecideRevision(ctx context.Context, d core.RevisionDecision) (core.Threat, core.Revision, error) {
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
			if err := s.applyDetails(ctx, tx, &row, rev.Changes, rev.Number, d.At); err != nil {
				return err
			}
			rev.State, action = core.RevisionApproved, "approve-revision"
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
		return core.Threat{}, core.Revision{}, err
	}
	return row.domain(), rev.domain(), nil
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
