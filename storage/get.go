package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// GetThreat returns one report with its details.
func (s *Store) GetThreat(ctx context.Context, id string) (core.Threat, error) {
	var row threatRow
	err := s.db.NewSelect().Model(&row).Relation("Details").Where("threat_row.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return core.Threat{}, core.NotFound("threat", id)
	}
	if err != nil {
		return core.Threat{}, err
	}
	return row.domain(), nil
}

// GetThreats returns the reports with these ids. On SQLite it runs two
// statements prepared once (reports, then their details, by a JSON list of
// ids): parsing the SQL of a fresh query took over a third of a look-up's
// CPU, and the check path's record misses run this thousands of times a
// second. PostgreSQL parses on the server, cheaply: one bun query.
func (s *Store) GetThreats(ctx context.Context, ids []string) ([]core.Threat, error) {
	return s.getThreats(ctx, ids, false)
}

// GetThreatsWithIOCs is GetThreats with the reports' stored indicators.
func (s *Store) GetThreatsWithIOCs(ctx context.Context, ids []string) ([]core.Threat, error) {
	return s.getThreats(ctx, ids, true)
}

// getThreats is GetThreats, with the reports' stored indicators when iocs
// is set (the feed's read, GetThreatsWithIOCs): at most MaxGetThreats ids.
func (s *Store) getThreats(ctx context.Context, ids []string, iocs bool) ([]core.Threat, error) {
	if len(ids) > core.MaxGetThreats {
		return nil, core.Invalid("ids", "at most %d in one call", core.MaxGetThreats)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	var rows []threatRow
	if err := s.getThreatsRaw(ctx, ids, iocs, &rows); err != nil {
		// A raw statement: bun's hook does not see it.
		s.corrupt.note(err)
		return nil, err
	}
	out := make([]core.Threat, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// getStmt is GetThreats' prepared statement.
type getStmt struct {
	once sync.Once
	stmt *sql.Stmt
	err  error
}

// getThreatsSQL reads reports and their details by a list of ids (a JSON
// array on SQLite, a text[] on PostgreSQL), timestamps as text for
// parseStamp, JSON columns as text; scanned by threatScanner in this order:
// the report's columns, then d.threat_id, one column per field of
// core.Details, and d.iocs when iocs is set. It is the hot read of a check that hits a report outside
// the record cache: prepared once, one plan for every batch size (bun's IN
// list was parsed and planned anew per call, and scanned by reflection).
func getThreatsSQL(d Dialect, iocs bool) string {
	stamp := func(col string) string {
		if d == SQLite {
			return "CAST(" + col + " AS TEXT)"
		}
		return `to_char(` + col + ` AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
	}
	cols := []string{"t.id", "t.report_type", "t.resource_identifier", "t.registry", "t.canonical_key", "t.status",
		"t.submitter_id", "t.revision", "t.source", "t.upstream_id", stamp("t.created_at"), stamp("t.updated_at"),
		stamp("t.verified_at"), "t.verified_by", stamp("t.upstream_modified"), "t.all_versions", "t.version", "t.legacy_stix_ids",
		stamp("t.disputed_at"), stamp("t.kept_at"), "d.threat_id"}
	for _, f := range core.DetailFields {
		col := "d." + f.Name
		switch f.Kind {
		case core.FieldTime:
			col = stamp(col)
		case core.FieldList:
			if d != SQLite {
				col += "::text"
			}
		}
		cols = append(cols, col)
	}
	if iocs {
		cols = append(cols, "d.iocs")
	}
	where := "t.id IN (SELECT value FROM json_each(?))"
	if d != SQLite {
		where = "t.id = ANY($1::text[])"
	}
	return "SELECT " + strings.Join(cols, ", ") + "\n FROM threats AS t LEFT JOIN threat_details AS d ON d.threat_id = t.id\n WHERE " + where
}

// pgTextArray writes ids as a PostgreSQL text[] literal, passed as a
// parameter (never spliced into SQL): every element quoted and escaped.
func pgTextArray(ids []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(pgArrayEscaper.Replace(id))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var pgArrayEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

func (s *Store) getThreatsRaw(ctx context.Context, ids []string, iocs bool, out *[]threatRow) error {
	get := &s.get
	if iocs {
		get = &s.getFull
	}
	get.once.Do(func() {
		get.stmt, get.err = s.db.DB.PrepareContext(context.Background(), getThreatsSQL(s.dialect, iocs))
	})
	if get.err != nil {
		return get.err
	}
	var arg any
	if s.dialect == SQLite {
		list, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		arg = string(list)
	} else {
		arg = pgTextArray(ids)
	}
	rows, err := get.stmt.QueryContext(ctx, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	sc := newThreatScanner(iocs)
	for rows.Next() {
		r, err := sc.scan(rows)
		if err != nil {
			return err
		}
		*out = append(*out, r)
	}
	return rows.Err()
}

// threatScanner reads the rows of getThreatsSQL: the report's columns,
// then the details' by the type of each field. One serves every row of a
// statement: its columns and their destinations are allocated once, not
// per row (a report's read is a fill's, a feed page's, a check's).
type threatScanner struct {
	r                                                  threatRow
	registry, submitter, source, upstream, verifiedBy  sql.NullString
	created, updated, verified, upstreamMod, detailsID sql.NullString
	disputed, kept                                     sql.NullString
	details                                            []sql.Null[any]
	iocs                                               sql.RawBytes
	dest                                               []any
}

func newThreatScanner(withIOCs bool) *threatScanner {
	sc := &threatScanner{details: make([]sql.Null[any], len(core.DetailFields))}
	r := &sc.r
	sc.dest = []any{&r.ID, &r.ReportType, &r.ResourceIdentifier, &sc.registry, &r.CanonicalKey, &r.Status,
		&sc.submitter, &r.Revision, &sc.source, &sc.upstream, &sc.created, &sc.updated, &sc.verified, &sc.verifiedBy, &sc.upstreamMod, &r.AllVersions, &r.Version, &r.LegacySTIXIDs,
		&sc.disputed, &sc.kept, &sc.detailsID}
	for i := range sc.details {
		sc.dest = append(sc.dest, &sc.details[i])
	}
	if withIOCs {
		sc.dest = append(sc.dest, &sc.iocs)
	}
	return sc
}

// scan reads the row rows is at.
func (sc *threatScanner) scan(rows *sql.Rows) (threatRow, error) {
	if err := rows.Scan(sc.dest...); err != nil {
		return threatRow{}, err
	}
	// Each Scan writes every column; sc.r's other fields stay empty.
	r := sc.r
	r.Registry, r.SubmitterID, r.Source, r.UpstreamID, r.VerifiedBy = nullStr(sc.registry), nullStr(sc.submitter), nullStr(sc.source), nullStr(sc.upstream), nullStr(sc.verifiedBy)
	var err error
	if r.CreatedAt, err = parseStamp(sc.created.String); err != nil {
		return r, fmt.Errorf("report %s: created_at: %w", r.ID, err)
	}
	if r.UpdatedAt, err = parseStamp(sc.updated.String); err != nil {
		return r, fmt.Errorf("report %s: updated_at: %w", r.ID, err)
	}
	for _, f := range [...]struct {
		src *sql.NullString
		dst **time.Time
	}{{&sc.verified, &r.VerifiedAt}, {&sc.upstreamMod, &r.UpstreamModified}, {&sc.disputed, &r.DisputedAt}, {&sc.kept, &r.KeptAt}} {
		if !f.src.Valid {
			continue
		}
		t, err := parseStamp(f.src.String)
		if err != nil {
			return r, fmt.Errorf("report %s: %w", r.ID, err)
		}
		*f.dst = &t
	}
	if !sc.detailsID.Valid {
		return r, nil
	}
	d := &detailsRow{ThreatID: sc.detailsID.String}
	if err := scanDetails(&d.Details, sc.details); err != nil {
		return r, fmt.Errorf("report %s: %w", r.ID, err)
	}
	if len(sc.iocs) > 2 { // not NULL, not []
		if d.IOCs, err = decodeJSON[[]ioc.IOC](sc.iocs); err != nil {
			return r, fmt.Errorf("report %s: iocs: %w", r.ID, err)
		}
	}
	r.Details = d
	return r, nil
}

// The scans of a field of core.Details from its column as getThreatsSQL
// reads it, by kind (scanDetails calls them): text, JSON text for lists,
// timestamp text, or a whole number. NULL leaves the field empty.

func scanText(dst *string, col sql.Null[any]) error {
	text, ok, err := columnText(col)
	if ok {
		*dst = text
	}
	return err
}

func scanList(dst *[]string, col sql.Null[any]) error {
	text, ok, err := columnText(col)
	if !ok || err != nil || text == "" {
		return err
	}
	list, err := decodeJSON[[]string]([]byte(text))
	if err != nil {
		return err
	}
	*dst = list
	return nil
}

func scanTime(dst **time.Time, col sql.Null[any]) error {
	text, ok, err := columnText(col)
	if !ok || err != nil {
		return err
	}
	t, err := parseStamp(text)
	if err != nil {
		return err
	}
	*dst = &t
	return nil
}

func scanCount(dst **int64, col sql.Null[any]) error {
	if !col.Valid {
		return nil
	}
	n, ok := col.V.(int64)
	if !ok {
		return fmt.Errorf("unexpected %T for a number", col.V)
	}
	*dst = &n
	return nil
}

// columnText is a text column's value, and whether it is not NULL.
func columnText(col sql.Null[any]) (string, bool, error) {
	if !col.Valid {
		return "", false, nil
	}
	switch v := col.V.(type) {
	case string:
		return v, true, nil
	case []byte:
		return string(v), true, nil
	}
	return "", false, fmt.Errorf("unexpected %T for text", col.V)
}

// decodeJSON decodes a JSON column that storage itself wrote (a report's
// lists and indicators) into a new T: with encoding/json/v2's decoder,
// two to three times as fast as encoding/json's on these columns
// (BenchmarkGetThreatsWithIOCs), and strict, so that anything it refuses
// (a member of another name or case, a duplicate, invalid UTF-8, a
// fraction where a whole number goes) is decoded again, from nothing, by
// encoding/json, as every such column was before: the two can only
// differ on what the strict decoder refuses.
func decodeJSON[T any](b []byte) (T, error) {
	var v T
	if jsonv2.Unmarshal(b, &v, jsonv2.RejectUnknownMembers(true)) == nil {
		return v, nil
	}
	var again T
	err := json.Unmarshal(b, &again)
	return again, err
}

func nullStr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}
