package storage

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
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
	UpdatedAt     *time.Time `bun:"updated_at"`
	Votes         int64      `bun:"votes,notnull"`
	Disputed      bool       `bun:"disputed,notnull"`
	Weight        int64      `bun:"weight,notnull"`
}

func (r sightingCountRow) domain() core.SightingCounts {
	return core.SightingCounts{ThreatID: r.ThreatID, Seen: r.Seen, FalsePositive: r.FalsePositive, Expired: r.Expired,
		LastSeen: timeOf(r.LastSeen), UpdatedAt: timeOf(r.UpdatedAt), Votes: r.Votes, Disputed: r.Disputed, Weight: r.Weight}
}

func (r sightingRow) domain() community.Sighting {
	s := community.Sighting{ID: r.ID, ThreatID: r.ThreatID, Type: r.Type, Source: r.Source, ObservedAt: r.ObservedAt.UTC(), Count: r.Count,
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

// addCounts adds to a report's counts (its row made when it has none),
// changed at now; weight is what a seen sighting adds to its weight.
func addCounts(ctx context.Context, tx bun.IDB, threatID, typ string, n, weight int64, seenAt, now time.Time) error {
	now = now.UTC()
	row := sightingCountRow{ThreatID: threatID, UpdatedAt: &now}
	var column string
	switch typ {
	case community.SightingSeen:
		row.Seen, row.Weight, column = n, weight, "seen"
		at := seenAt.UTC()
		row.LastSeen = &at
	case community.SightingFalsePositive:
		row.FalsePositive, column = n, "false_positive"
	default:
		row.Expired, column = n, "expired"
	}
	q := tx.NewInsert().Model(&row).On("CONFLICT (threat_id) DO UPDATE").
		Set(column + " = sc." + column + " + EXCLUDED." + column).Set("updated_at = EXCLUDED.updated_at")
	if typ == community.SightingSeen {
		q = q.Set("last_seen = CASE WHEN sc.last_seen IS NULL OR sc.last_seen < EXCLUDED.last_seen THEN EXCLUDED.last_seen ELSE sc.last_seen END").
			Set("weight = sc.weight + EXCLUDED.weight")
	}
	_, err := q.Exec(ctx)
	return err
}

// AddSightings stores people's sightings of verified reports and adds
// them to the reports' counts, in one transaction and a bounded number of
// statements whatever the batch's size (which reports are verified, the
// sightings, the counts: one statement each; the votes, one count per
// report voted on): a report not verified is not found, a second
// false-positive vote a conflict (the vote index keeps the first, so the
// transaction goes on).
func (s *Store) AddSightings(ctx context.Context, b community.SightingBatch) ([]string, error) {
	ss := b.Sightings
	if len(ss) > community.MaxSightingBatch {
		return nil, core.Invalid("sightings", "at most %d at once", community.MaxSightingBatch)
	}
	out := make([]string, len(ss))
	if len(ss) == 0 {
		return out, nil
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	// In report order (each outcome in its place): concurrent writers
	// (daemons sharing a PostgreSQL database) lock reports' rows in the
	// same order, so that none waits for another in a cycle.
	order := make([]int, len(ss))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ss[order[a]].ThreatID < ss[order[b]].ThreatID })
	ids := make([]string, 0, len(ss))
	for _, i := range order {
		if len(ids) == 0 || ids[len(ids)-1] != ss[i].ThreatID {
			ids = append(ids, ss[i].ThreatID)
		}
	}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		clear(out)
		// By their keys, the status read (with "AND status = ?" SQLite
		// reads the million verified reports through their status index).
		var found []struct {
			ID        string  `bun:"id"`
			Status    string  `bun:"status"`
			Submitter *string `bun:"submitter_id"`
		}
		if err := tx.NewSelect().Table("threats").Column("id", "status", "submitter_id").Where("id IN (?)", bun.List(ids)).
			Scan(ctx, &found); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		isVerified := make(map[string]bool, len(found))
		submitter := make(map[string]string, len(found))
		for _, f := range found {
			isVerified[f.ID] = f.Status == string(core.StatusVerified)
			submitter[f.ID] = deref(f.Submitter)
		}
		rows := make([]sightingRow, 0, len(ss))
		for _, i := range order {
			sg := ss[i]
			if !isVerified[sg.ThreatID] {
				out[i] = community.SightingNotFound
				continue
			}
			row := sightingRow{ID: sg.ID, ThreatID: sg.ThreatID, Type: sg.Type, Source: sg.Source, ObservedAt: sg.ObservedAt.UTC(), Count: sg.Count,
				Note: sg.Note, CreatedAt: sg.CreatedAt.UTC()}
			if sg.UserID != "" {
				row.UserID = &sg.UserID
			}
			rows = append(rows, row)
		}
		if len(rows) == 0 {
			return nil
		}
		// The vote index keeps a person's first false-positive vote on a
		// report (an earlier one, or the first in this batch); the others
		// are not inserted, and not returned.
		var added []string
		if err := tx.NewInsert().Model(&rows).
			On("CONFLICT (threat_id, user_id) WHERE type = 'false_positive' AND user_id IS NOT NULL DO NOTHING").
			Returning("id").Scan(ctx, &added); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		isAdded := make(map[string]bool, len(added))
		for _, id := range added {
			isAdded[id] = true
		}
		var (
			sums  []sightingCountRow
			votes []string
		)
		for _, i := range order {
			sg := ss[i]
			if out[i] == community.SightingNotFound {
				continue
			}
			if !isAdded[sg.ID] {
				out[i] = community.SightingConflict
				continue
			}
			out[i] = community.SightingAdded
			if len(sums) == 0 || sums[len(sums)-1].ThreatID != sg.ThreatID {
				sums = append(sums, sightingCountRow{ThreatID: sg.ThreatID, UpdatedAt: &now})
			}
			c := &sums[len(sums)-1]
			switch sg.Type {
			case community.SightingSeen:
				c.Seen += sg.Count
				if sg.UserID == "" || sg.UserID != submitter[sg.ThreatID] {
					// A submitter's sighting of their own report is
					// shown, never weighed.
					c.Weight += community.SeenWeight(sg.Count)
				}
				if at := sg.ObservedAt.UTC(); c.LastSeen == nil || at.After(*c.LastSeen) {
					c.LastSeen = &at
				}
			case community.SightingFalsePositive:
				c.FalsePositive += sg.Count
				if sg.UserID != "" && (len(votes) == 0 || votes[len(votes)-1] != sg.ThreatID) {
					votes = append(votes, sg.ThreatID)
				}
			default:
				c.Expired += sg.Count
			}
		}
		if err := addCountRows(ctx, tx, sums); err != nil {
			return err
		}
		for _, id := range votes {
			if err := s.countVotes(ctx, tx, id, b.DisputeVotes, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// addCountRows adds each row's counts to its report's (a row made for a
// report that has none), in one statement; the rows are one a report, in
// report order.
func addCountRows(ctx context.Context, tx bun.IDB, rows []sightingCountRow) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&rows).On("CONFLICT (threat_id) DO UPDATE").
		Set("seen = sc.seen + EXCLUDED.seen").
		Set("false_positive = sc.false_positive + EXCLUDED.false_positive").
		Set("expired = sc.expired + EXCLUDED.expired").
		Set("last_seen = CASE WHEN EXCLUDED.last_seen IS NOT NULL AND (sc.last_seen IS NULL OR sc.last_seen < EXCLUDED.last_seen) THEN EXCLUDED.last_seen ELSE sc.last_seen END").
		Set("updated_at = EXCLUDED.updated_at").
		Set("weight = sc.weight + EXCLUDED.weight").
		Exec(ctx)
	return err
}

// AddSeen adds the daemon's own seen sightings, one row per report,
// source and UTC day, in one transaction; reports no longer verified are
// skipped.
func (s *Store) AddSeen(ctx context.Context, seen []community.SeenCount) error {
	if len(seen) == 0 {
		return nil
	}
	// One row per report, source and day, in a fixed order (concurrent
	// writers lock rows in the same order).
	type key struct{ threat, source, day string }
	merged := map[key]community.SeenCount{}
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
			row := sightingRow{ID: autoSightingID(k.threat, k.source, day), ThreatID: sc.ThreatID, Type: community.SightingSeen, Source: sc.Source,
				ObservedAt: sc.At.UTC(), Count: sc.Count, AutoDay: &day, CreatedAt: now}
			// The row of a day weighs as one sighting however much it
			// counts: its weight moves only while its count is below the
			// cap.
			var had []int64
			if err := tx.NewInsert().Model(&row).On("CONFLICT (threat_id, source, auto_day) WHERE auto_day IS NOT NULL DO UPDATE").
				Set("count = sg.count + EXCLUDED.count").
				Set("observed_at = CASE WHEN sg.observed_at < EXCLUDED.observed_at THEN EXCLUDED.observed_at ELSE sg.observed_at END").
				Returning("count").Scan(ctx, &had); err != nil {
				return err
			}
			weight := community.SeenWeight(sc.Count)
			if len(had) == 1 {
				weight = community.SeenWeight(had[0]) - community.SeenWeight(had[0]-sc.Count)
			}
			if err := addCounts(ctx, tx, sc.ThreatID, community.SightingSeen, sc.Count, weight, sc.At, now); err != nil {
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
func (s *Store) ListSightings(ctx context.Context, q community.SightingQuery) (community.SightingList, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return community.SightingList{}, err
	}
	var rows []sightingRow
	sel := s.db.NewSelect().Model(&rows).Where("threat_id = ?", q.ThreatID)
	if q.Cursor != "" {
		at, id, ok := strings.Cut(q.Cursor, "\x00")
		t, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil {
			return community.SightingList{}, core.Invalid("cursor", "is not a cursor this list gave")
		}
		sel = sel.Where("(observed_at < ? OR (observed_at = ? AND id < ?))", t.UTC(), t.UTC(), id)
	}
	if err := sel.OrderExpr("observed_at DESC, id DESC").Limit(int64(q.Limit + 1)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return community.SightingList{}, err
	}
	out := community.SightingList{}
	for i, r := range rows {
		if i == q.Limit {
			out.Next = out.Sightings[i-1].Cursor()
			break
		}
		out.Sightings = append(out.Sightings, r.domain())
	}
	// Who reported them, by name: one read of the page's users.
	var ids []string
	for _, sg := range out.Sightings {
		if sg.UserID != "" && !slices.Contains(ids, sg.UserID) {
			ids = append(ids, sg.UserID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	var users []userRow
	if err := s.db.NewSelect().Model(&users).Column("id", "email", "name").Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return community.SightingList{}, err
	}
	byID := make(map[string]userRow, len(users))
	for _, u := range users {
		byID[u.ID] = u
	}
	for i, sg := range out.Sightings {
		if u, ok := byID[sg.UserID]; ok {
			out.Sightings[i].UserName, out.Sightings[i].UserEmail = u.Name, u.Email
		}
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
	return countsOf(rows), nil
}

func countsOf(rows []sightingCountRow) []core.SightingCounts {
	out := make([]core.SightingCounts, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out
}

// SightingCountsPage reads a page of counts: all of them in threat id
// order through the primary key, or those changed since q.Since in order
// of change through the index on updated_at (a few: what changed in the
// last seconds).
func (s *Store) SightingCountsPage(ctx context.Context, q community.SightingCountsQuery) ([]core.SightingCounts, error) {
	if err := core.CheckLimit(q.Limit, core.MaxPage); err != nil {
		return nil, err
	}
	var rows []sightingCountRow
	sel := s.db.NewSelect().Model(&rows)
	switch {
	case q.Since.IsZero():
		if q.After != "" {
			sel = sel.Where("threat_id > ?", q.After)
		}
		sel = sel.OrderExpr("threat_id")
	case q.After != "":
		since := q.Since.UTC()
		sel = sel.Where("updated_at >= ? AND (updated_at > ? OR threat_id > ?)", since, since, q.After).OrderExpr("updated_at, threat_id")
	default:
		sel = sel.Where("updated_at >= ?", q.Since.UTC()).OrderExpr("updated_at, threat_id")
	}
	if err := sel.Limit(int64(q.Limit)).Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return countsOf(rows), nil
}
