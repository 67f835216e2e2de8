package storage

import (
	"context"
	"log/slog"
	"sync"
)

// PostgreSQL plans from statistics that autovacuum refreshes once a table
// has grown by 10 %, and no sooner than a minute apart. An import fills
// the reports table faster than that: with no statistics yet, the batch
// look-up "source = $1 AND upstream_id IN (500 ids)" searched the unique
// index (source, upstream_id) by source alone and filtered every report of
// the source (52 ms a batch at 200,000 reports; 32 ms at 50,000, where the
// right plan takes under 2 ms). So an import analyzes the tables it grows
// itself, each time they have doubled since the last time: about twenty
// ANALYZE runs for a million records, each reading a bounded sample.

// growth counts the reports an import created since the last ANALYZE.
type growth struct {
	mu    sync.Mutex
	known bool  // base has been read from pg_class
	base  int64 // reports at the last ANALYZE
	added int64 // reports created since
}

// minAnalyze is the growth below which the statistics are left alone.
const minAnalyze = 5000

// noteImported records n reports created by an import and analyzes the
// tables once they have doubled. A failed ANALYZE is logged: the import
// goes on with the statistics it has.
func (s *Store) noteImported(ctx context.Context, n int) {
	if s.dialect != Postgres || n == 0 {
		return
	}
	g := &s.growth
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known {
		var tuples float64
		if err := s.db.NewRaw("SELECT reltuples FROM pg_class WHERE oid = 'threats'::regclass").Scan(ctx, &tuples); err != nil {
			slog.Warn("reading the reports table's size for ANALYZE", "error", err)
			return
		}
		g.known, g.base = true, max(int64(tuples), 0) // -1: never analyzed
	}
	g.added += int64(n)
	if g.added < max(g.base, minAnalyze) {
		return
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE threats, threat_details, review_events, threat_indicators, stix_objects"); err != nil {
		slog.Warn("ANALYZE after an import batch", "error", err)
		return
	}
	g.base, g.added = g.base+g.added, 0
}
