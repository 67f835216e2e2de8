package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// LatestVerified returns verified reports matching f, newest verification first.
func (s *Store) LatestVerified(ctx context.Context, f core.LatestFilter) ([]core.Threat, error) {
	limit := f.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
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
		q = q.Where("threat_row.severity_level = ?", string(f.Severity))
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
	return eachBatch(rows, summaryBatch, func(rows *sql.Rows) (core.Summary, error) {
		var (
			sum                core.Summary
			rtype              string
			registry, versions sql.NullString
			stamp              any
		)
		if err := rows.Scan(&sum.ID, &sum.CanonicalKey, &rtype, &registry, &stamp, &sum.AllVersions, &versions); err != nil {
			return sum, err
		}
		sum.ReportType, sum.Registry, sum.VersionInfo = core.ReportType(rtype), registry.String, versions.String
		if sum.VerifiedAt, err = stampValue(stamp); err != nil {
			return sum, fmt.Errorf("report %s: verified_at: %w", sum.ID, err)
		}
		return sum, nil
	}, fn)
}

// eachBatch reads every row of rows (and closes them) with scan, handing
// fn batches of n: a streamed read of any size holds one batch.
func eachBatch[T any](rows *sql.Rows, n int, scan func(*sql.Rows) (T, error), fn func([]T) error) error {
	defer rows.Close()
	batch := make([]T, 0, n)
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return err
		}
		if batch = append(batch, v); len(batch) == n {
			if err := fn(batch); err != nil {
				return err
			}
			batch = make([]T, 0, n)
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

// QueryThreats returns one keyset page of verified reports.
func (s *Store) QueryThreats(ctx context.Context, q core.ThreatQuery) ([]core.Threat, error) {
	limit := q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
	}
	var rows []threatRow
	sel := s.db.NewSelect().Model(&rows)
	switch {
	case q.IOCsOnly && q.Publisher == "":
		sel = sel.Relation("Details", func(q *bun.SelectQuery) *bun.SelectQuery { return q.Column("threat_id", "iocs") })
	case !q.Listing || q.Publisher != "":
		sel = sel.Relation("Details")
	}
	sel = threatFilter(s.dialect, sel, q)
	dir := "ASC"
	if q.Descending {
		dir = "DESC"
	}
	if q.AfterID != "" {
		op := ">"
		if q.Descending {
			op = "<"
		}
		// The first term bounds the index range (PostgreSQL does not make
		// one of the OR: it walked every report before the position).
		sel = sel.Where("threat_row.verified_at "+op+"= ? AND (threat_row.verified_at "+op+" ? OR (threat_row.verified_at = ? AND threat_row.id "+op+" ?))",
			q.AfterVerifiedAt, q.AfterVerifiedAt, q.AfterVerifiedAt, q.AfterID)
	}
	if err := sel.OrderExpr("threat_row.verified_at " + dir + ", threat_row.id " + dir).Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	return domains(rows), nil
}

// threatFilter adds q's filters (not its keyset position) to sel, a
// select of threat_row with its Details relation.
func threatFilter(d Dialect, sel *bun.SelectQuery, q core.ThreatQuery) *bun.SelectQuery {
	switch {
	case q.Withdrawn:
		// A withdrawn report is rejected with the verified_at it had.
		sel = sel.Where("threat_row.status IN (?, ?) AND threat_row.verified_at IS NOT NULL", string(core.StatusVerified), string(core.StatusRejected))
	case q.IndicatorKey != "" && d == SQLite:
		// The indicator's few reports are found by primary key from its
		// rows and then sorted; SQLite's planner (no statistics) walked
		// every verified report in order instead, probing the indicator
		// for each. The unary + keeps it from using the status index.
		sel = sel.Where("+threat_row.status = ?", string(core.StatusVerified))
	default:
		sel = sel.Where("threat_row.status = ?", string(core.StatusVerified))
	}
	if !q.VerifiedFrom.IsZero() {
		sel = sel.Where("threat_row.verified_at >= ?", q.VerifiedFrom)
	}
	if !q.VerifiedTo.IsZero() {
		sel = sel.Where("threat_row.verified_at < ?", q.VerifiedTo)
	}
	if q.Registry != "" {
		sel = sel.Where("threat_row.registry = ?", q.Registry)
	}
	if q.ReportType != "" {
		sel = sel.Where("threat_row.report_type = ?", string(q.ReportType))
	}
	if q.Severity != "" {
		sel = sel.Where("threat_row.severity_level = ?", string(q.Severity))
	}
	if q.Publisher != "" {
		sel = sel.Where("lower(details.publisher) = lower(?)", q.Publisher)
	}
	if q.IndicatorKey != "" {
		// The indicator's rows, by primary key: a few reports, whatever
		// the size of the database.
		sel = sel.Where("threat_row.id IN (SELECT i.threat_id FROM threat_indicators AS i WHERE i.key = ?)", q.IndicatorKey)
	}
	if q.UpstreamID != "" {
		// "<id>" or "<id>/…": a range of the upstream key index ('0' is
		// the character after '/').
		sel = sel.Where("threat_row.source = ? AND (threat_row.upstream_id = ? OR (threat_row.upstream_id >= ? AND threat_row.upstream_id < ?))",
			core.OSVSource, q.UpstreamID, q.UpstreamID+"/", q.UpstreamID+"0")
	}
	return sel
}

func domains(rows []threatRow) []core.Threat {
	out := make([]core.Threat, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out
}

// CountThreats counts what q selects. The details are joined only when a
// filter reads them.
func (s *Store) CountThreats(ctx context.Context, q core.ThreatQuery) (int64, error) {
	sel := s.db.NewSelect().TableExpr("threats AS threat_row")
	if q.Severity != "" || q.Publisher != "" {
		sel = sel.Join("JOIN threat_details AS details ON details.threat_id = threat_row.id")
	}
	n, err := threatFilter(s.dialect, sel, q).Count(ctx)
	return int64(n), err
}

// ThreatsByKeyPrefix reads ranges of the verified-key index
// (threats_verified_key_idx, in byte order).
func (s *Store) ThreatsByKeyPrefix(ctx context.Context, q core.KeyPrefixQuery) ([]core.Threat, error) {
	prefixes, after, limit := q.Prefixes, q.After, q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
	}
	if len(prefixes) == 0 || len(prefixes) > core.MaxKeyPrefixes {
		return nil, core.Invalid("prefixes", "must name 1 to %d prefixes (got %d)", core.MaxKeyPrefixes, len(prefixes))
	}
	// Each prefix is a range of the index read in key order and cut at
	// limit, in one statement whatever the number of ranges; no range is
	// read past limit however many keys it holds, and nothing is sorted
	// there. The at most limit keys of each range are merged here.
	key := "t.canonical_key " + byteOrder(s.dialect)
	parts := make([]string, len(prefixes))
	args := make([]any, 0, 3*len(prefixes)+1)
	for i, p := range prefixes {
		if p == "" {
			return nil, core.Invalid("prefixes", "must not be empty")
		}
		// Every string that starts with p sorts in [p, p + the highest
		// code point).
		where := key + " >= ? AND " + key + " < ? AND t.status = 'verified'"
		args = append(args, p, p+"\U0010FFFF")
		if after != "" {
			where += " AND " + key + " > ?"
			args = append(args, after)
		}
		parts[i] = fmt.Sprintf("SELECT * FROM (SELECT t.id, t.canonical_key FROM %s WHERE %s ORDER BY %s LIMIT %d) AS r%d",
			tableUsing(s.dialect, `"threats" AS "t"`, "threats_verified_key_idx"), where, key, limit, i)
	}
	type hit struct {
		ID           string `bun:"id"`
		CanonicalKey string `bun:"canonical_key"`
	}
	var hits []hit
	if err := s.db.NewRaw(strings.Join(parts, " UNION ALL "), args...).Scan(ctx, &hits); err != nil {
		return nil, err
	}
	slices.SortFunc(hits, func(a, b hit) int { return strings.Compare(a.CanonicalKey, b.CanonicalKey) })
	// Overlapping prefixes give a report twice: next to itself, in key order.
	ids := make([]string, 0, min(len(hits), limit))
	for i, h := range hits {
		if len(ids) == limit {
			break
		}
		if i == 0 || h.ID != hits[i-1].ID {
			ids = append(ids, h.ID)
		}
	}
	// The reports by id (GetThreats' prepared read), in key order; one
	// withdrawn between the two reads is left out.
	out := make([]core.Threat, 0, len(ids))
	for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
		ths, err := s.getThreats(ctx, chunk, false)
		if err != nil {
			return nil, err
		}
		for _, t := range ths {
			if t.Status == core.StatusVerified {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b core.Threat) int { return strings.Compare(a.CanonicalKey, b.CanonicalKey) })
	return out, nil
}
