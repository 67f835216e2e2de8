package storage

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

type sightingRow struct {
	bun.BaseModel `bun:"table:sightings,alias:sg"`

	ID         string    `bun:"id,pk"`
	ThreatID   string    `bun:"threat_id,notnull"`
	Type       string    `bun:"type,notnull"`
	Source     string    `bun:"source,notnull"`
	ObservedAt time.Time `bun:"observed_at,notnull"`
	Count      int64     `bun:"count,notnull"`
	Note       string    `bun:"note,notnull"`
	UserID     *string   `bun:"user_id"`
	AutoDay    *string   `bun:"auto_day"`
	CreatedAt  time.Time `bun:"created_at,notnull"`
}

type sightingCountRow struct {
	bun.BaseModel `bun:"table:sighting_counts,alias:sc"`

	ThreatID      string     `bun:"threat_id,pk"`
	Seen          int64      `bun:"seen,notnull"`
	FalsePositive int64      `bun:"false_positive,notnull"`
	Expired       int64      `bun:"expired,notnull"`
	LastSeen      *time.Time `bun:"last_seen"`
}

func (r sightingRow) domain() core.Sighting {
	s := core.Sighting{ID: r.ID, ThreatID: r.ThreatID, Type: r.Type, Source: r.Source, ObservedAt: r.ObservedAt.UTC(), Count: r.Count,
		Note: r.Note, Auto: r.AutoDay != nil, CreatedAt: r.CreatedAt.UTC()}
	if r.UserID != nil {
		s.UserID = *r.UserID
	}
	return s
}

// verified says whether the report id is verified now (within tx).
func verified(ctx context.Context, tx bun.IDB, id string) (bool, error) {
	n, err := tx.NewSelect().Table("threats").Where("id = ? AND status = ?", id, core.StatusVerified).Count(ctx)
	return n > 0, err
}

// addCounts adds to a report's counts (its row made when it has none).
func addCounts(ctx context.Context, tx bun.IDB, threatID, typ string, n int64, seenAt time.Time) error {
	row := sightingCountRow{ThreatID: threatID}
	var column string
	switch typ {
	case core.SightingSeen:
		row.Seen, column = n, "seen"
		at := seenAt.UTC()
		row.LastSeen = &at
	case core.SightingFalsePositive:
		row.FalsePositive, column = n, "false_positive"
	default:
		row.Expired, column = n, "expired"
	}
	q := tx.NewInsert().Model(&row).On("CONFLICT (threat_id) DO UPDATE").
		Set(column + " = sc." + column + " + EXCLUDED." + column)
	if typ == core.SightingSeen {
		q = q.Set("last_seen = CASE WHEN sc.last_seen IS NULL OR sc.last_seen < EXCLUDED.last_seen THEN EXCLUDED.last_seen ELSE sc.last_seen END")
	}
	_, err := q.Exec(ctx)
	return err
}

// AddSightings stores people's sightings of verified reports and adds
// them to the reports' counts, in one transaction: a report not verified
// is not found, a second false-positive vote a conflict (the vote index
// keeps the first, so the transaction goes on).
func (s *Store) AddSightings(ctx context.Context, ss []core.Sighting) ([]string, error) {
	if len(ss) > core.MaxSightingBatch {
		return nil, core.Invalid("sightings", "at most %d at once", core.MaxSightingBatch)
	}
	out := make([]string, len(ss))
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		isVerified := map[string]bool{}
		for i, sg := range ss {
			ok, seen := isVerified[sg.ThreatID]
			if !seen {
				var err error
				if ok, err = verified(ctx, tx, sg.ThreatID); err != nil {
					return err
				}
				isVerified[sg.ThreatID] = ok
			}
			if !ok {
				out[i] = core.SightingNotFound
				continue
			}
			row := sightingRow{ID: sg.ID, ThreatID: sg.ThreatID, Type: sg.Type, Source: sg.Source, ObservedAt: sg.ObservedAt.UTC(), Count: sg.Count,
				Note: sg.Note, CreatedAt: sg.CreatedAt.UTC()}
			if sg.UserID != "" {
				row.UserID = &sg.UserID
			}
			q := tx.NewInsert().Model(&row)
			if sg.Type == core.SightingFalsePositive && sg.UserID != "" {
				q = q.On("CONFLICT (threat_id, user_id) WHERE type = 'false_positive' AND user_id IS NOT NULL DO NOTHING")
			}
			res, err := q.Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				out[i] = core.SightingConflict
				continue
			}
			if err := addCounts(ctx, tx, sg.ThreatID, sg.Type, sg.Count, sg.ObservedAt); err != nil {
				return err
			}
			out[i] = core.SightingAdded
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AddSeen adds the daemon's own seen sightings, one row per report,
// source and UTC day, in one transaction; reports no longer verified are
// skipped.
func (s *Store) AddSeen(ctx context.Context, seen []core.SeenCount) error {
	if len(seen) == 0 {
		return nil
	}
	// One row per report, source and day, in a fixed order (concurrent
	// writers lock rows in the same order).
	type key struct{ threat, source, day string }
	merged := map[key]core.SeenCount{}
	for _, sc := range seen {
		k := key{sc.ThreatID, sc.Source, sc.At.UTC().Format(time.DateOnly)}
		m := merged[k]
		m.ThreatID, m.Source, m.Count = sc.ThreatID, sc.Source, m.Count+sc.Count
		if sc.At.After(m.At) {
			m.At = sc.At
		}
		merged[k] = m
	}
	keys := make([]key, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.threat+"\x00"+a.source+"\x00"+a.day < b.threat+"\x00"+b.source+"\x00"+b.day
	})
	now := s.now().UTC()
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, k := range keys {
			sc := merged[k]
			ok, err := verified(ctx, tx, sc.ThreatID)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			day := k.day
			row := sightingRow{ID: autoSightingID(k.threat, k.source, day), ThreatID: sc.ThreatID, Type: core.SightingSeen, Source: sc.Source,
				ObservedAt: sc.At.UTC(), Count: sc.Count, AutoDay: &day, CreatedAt: now}
			if _, err := tx.NewInsert().Model(&row).On("CONFLICT (threat_id, source, auto_day) WHERE auto_day IS NOT NULL DO UPDATE").
				Set("count = sg.count + EXCLUDED.count").
				Set("observed_at = CASE WHEN sg.observed_at < EXCLUDED.observed_at THEN EXCLUDED.observed_at ELSE sg.observed_at END").
				Exec(ctx); err != nil {
				return err
			}
			if err := addCounts(ctx, tx, sc.ThreatID, core.SightingSeen, sc.Count, sc.At); err != nil {
				return err
			}
		}
		return nil
	})
}

// autoSightingID is the id of the daemon's row of a report, source and
// day: the same on every daemon that shares the database.
func autoSightingID(threat, source, day string) string {
	return "auto:" + threat + ":" + source + ":" + day
}

// ListSightings reads a page of a report's sightings, newest first,
// through its index on (threat_id, observed_at, id).
func (s *Store) ListSightings(ctx context.Context, q core.SightingQuery) (core.SightingList, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return core.SightingList{}, err
	}
	var rows []sightingRow
	sel := s.db.NewSelect().Model(&rows).Where("threat_id = ?", q.ThreatID)
	if q.Cursor != "" {
		at, id, ok := strings.Cut(q.Cursor, "\x00")
		t, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil {
			return core.SightingList{}, core.Invalid("cursor", "is not a cursor this list gave")
		}
		sel = sel.Where("(observed_at < ? OR (observed_at = ? AND id < ?))", t.UTC(), t.UTC(), id)
	}
	if err := sel.OrderExpr("observed_at DESC, id DESC").Limit(int64(q.Limit + 1)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return core.SightingList{}, err
	}
	out := core.SightingList{}
	for i, r := range rows {
		if i == q.Limit {
			out.Next = out.Sightings[i-1].Cursor()
			break
		}
		out.Sightings = append(out.Sightings, r.domain())
	}
	return out, nil
}

// CountSightings reads the counts of the reports that have sightings.
func (s *Store) CountSightings(ctx context.Context, threatIDs []string) ([]core.SightingCounts, error) {
	if len(threatIDs) == 0 {
		return nil, nil
	}
	if len(threatIDs) > core.MaxGetThreats {
		return nil, core.Invalid("threat_ids", "at most %d at once", core.MaxGetThreats)
	}
	var rows []sightingCountRow
	if err := s.db.NewSelect().Model(&rows).Where("threat_id IN (?)", bun.List(threatIDs)).OrderExpr("threat_id").Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	out := make([]core.SightingCounts, len(rows))
	for i, r := range rows {
		out[i] = core.SightingCounts{ThreatID: r.ThreatID, Seen: r.Seen, FalsePositive: r.FalsePositive, Expired: r.Expired, LastSeen: timeOf(r.LastSeen)}
	}
	return out, nil
}
