package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/threatd/threatd/core"
)

// Feed returns one page of published changes in (at, seq) order, each with
// its report as it is now. The page is read from feed_events' (at, seq) or
// (registry, at, seq) index from the keyset position on; the reports are
// then read by primary key.
func (s *Store) Feed(ctx context.Context, q core.FeedQuery) ([]core.FeedItem, error) {
	limit := q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
	}
	if len(q.ObjectIDs) > core.MaxGetThreats {
		return nil, core.Invalid("object_ids", "at most %d in one call (got %d)", core.MaxGetThreats, len(q.ObjectIDs))
	}
	var objectReports []string
	if len(q.ObjectIDs) > 0 {
		var err error
		if objectReports, err = s.reportsOfObjects(ctx, q.ObjectIDs); err != nil {
			return nil, err
		}
		if len(objectReports) == 0 {
			return nil, nil
		}
	}
	var rows []feedEventRow
	sel := s.db.NewSelect().Model(&rows)
	if q.Registry != "" {
		sel = sel.Where("feed_event_row.registry = ?", q.Registry)
	}
	// The page after a cursor starts at the cursor's time: SQLite reads
	// the (at, seq) index from the lower bound on at it is given, and
	// From alone made every page read every row before it again.
	from := q.From
	if q.AfterSeq > 0 && q.AfterAt.After(from) {
		from = q.AfterAt
	}
	if !from.IsZero() {
		sel = sel.Where("feed_event_row.at >= ?", from.UTC())
	}
	if !q.To.IsZero() {
		sel = sel.Where("feed_event_row.at < ?", q.To.UTC())
	}
	if q.AfterSeq > 0 {
		sel = sel.Where("(feed_event_row.at, feed_event_row.seq) > (?, ?)", q.AfterAt.UTC(), q.AfterSeq)
	}
	if q.Kind != "" {
		sel = sel.Where("feed_event_row.kind = ?", q.Kind)
	}
	if q.Latest {
		sel = sel.Where("NOT EXISTS (SELECT 1 FROM feed_events AS l WHERE l.threat_id = feed_event_row.threat_id AND l.seq > feed_event_row.seq)")
	}
	if len(q.ObjectIDs) > 0 {
		sel = sel.Where("feed_event_row.threat_id IN (?)", bun.List(objectReports))
	}
	if q.Published {
		sel = sel.Where("feed_event_row.kind = ?", core.ChangeVerified).
			Where("EXISTS (SELECT 1 FROM threats AS t WHERE t.id = feed_event_row.threat_id AND t.status = ?)", string(core.StatusVerified))
	}
	if err := sel.OrderExpr("feed_event_row.at ASC, feed_event_row.seq ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(rows))
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.ThreatID] {
			seen[r.ThreatID] = true
			ids = append(ids, r.ThreatID)
		}
	}
	byID := make(map[string]core.Threat, len(ids))
	for chunk := range slices.Chunk(ids, core.MaxGetThreats) {
		threats, err := s.getThreats(ctx, chunk, true)
		if err != nil {
			return nil, err
		}
		for _, t := range threats {
			byID[t.ID] = t
		}
	}
	out := make([]core.FeedItem, 0, len(rows))
	for _, r := range rows {
		if t, ok := byID[r.ThreatID]; ok {
			out = append(out, core.FeedItem{Event: r.domain(), Threat: t})
		}
	}
	return out, nil
}

// LastFeedEvent returns the last published change before to.
func (s *Store) LastFeedEvent(ctx context.Context, to time.Time) (core.FeedEvent, error) {
	var rows []feedEventRow
	sel := s.db.NewSelect().Model(&rows)
	if !to.IsZero() {
		sel = sel.Where("feed_event_row.at < ?", to.UTC())
	}
	if err := sel.OrderExpr("feed_event_row.at DESC, feed_event_row.seq DESC").Limit(1).Scan(ctx); err != nil {
		return core.FeedEvent{}, err
	}
	if len(rows) == 0 {
		return core.FeedEvent{}, nil
	}
	return rows[0].domain(), nil
}

// Changes returns up to limit change-feed entries after seq.
func (s *Store) Changes(ctx context.Context, q core.ChangeQuery) ([]core.Change, error) {
	after, limit := q.After, q.Limit
	if err := core.CheckLimit(limit, core.MaxPage); err != nil {
		return nil, err
	}
	var rows []changeRow
	if err := s.db.NewSelect().Model(&rows).Where("seq > ?", after).Order("seq ASC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, err
	}
	out := make([]core.Change, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// reportsOfObjects returns the reports that may be published as one of the
// STIX objects ids (core.STIXIDs): those stix_objects lists them for (the
// reports stored before migration 0021), and those in the range of report
// ids a derived object id names (core.STIXReportRange). A range may hold a
// report without the object, by chance: the caller renders the reports and
// keeps the objects asked for.
func (s *Store) reportsOfObjects(ctx context.Context, ids []string) ([]string, error) {
	var listed []string
	if err := s.db.NewSelect().Table("stix_objects").ColumnExpr("DISTINCT threat_id").
		Where("object_id IN (?)", bun.List(ids)).Scan(ctx, &listed); err != nil {
		return nil, fmt.Errorf("stix_objects: %w", err)
	}
	type span struct{ lo, hi string }
	var spans []span
	seen := map[span]bool{}
	for _, id := range ids {
		lo, hi, ok := core.STIXReportRange(id)
		if sp := (span{lo, hi}); ok && !seen[sp] {
			seen[sp] = true
			spans = append(spans, sp)
		}
	}
	out := listed
	// One statement per 100 ranges, each a range of the primary key
	// (SQLite allows 500 terms in a compound select).
	for chunk := range slices.Chunk(spans, 100) {
		var b strings.Builder
		args := make([]any, 0, 2*len(chunk))
		for i, sp := range chunk {
			if i > 0 {
				b.WriteString(" UNION ALL ")
			}
			b.WriteString("SELECT id FROM threats WHERE id >= ? AND id <= ?")
			args = append(args, sp.lo, sp.hi)
		}
		var found []string
		if err := s.db.NewRaw(b.String(), args...).Scan(ctx, &found); err != nil {
			return nil, fmt.Errorf("reports of derived object ids: %w", err)
		}
		out = append(out, found...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
