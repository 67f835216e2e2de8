package storage

import (
	"context"
	"strings"
	"testing"

	"github.com/threatd/threatd/core"
)

// An import keeps PostgreSQL's statistics current: after 12,000 records
// the planner knows the table's size, and the per-batch look-up of
// upstream ids is not planned as a search of the unique index by source
// alone that filters every report of the source (the plan it got without
// statistics: 32 ms a batch at 50,000 reports instead of 2 ms).
func TestPostgresImportKeepsStatistics(t *testing.T) {
	ctx := context.Background()
	s := openPG(t)
	recs := planRecords(12_000)
	for i := 0; i < len(recs); i += 500 {
		if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs[i : i+500], Actor: "osv-import"}); err != nil {
			t.Fatal(err)
		}
	}
	var tuples float64
	if err := s.db.NewRaw("SELECT reltuples FROM pg_class WHERE oid = 'threats'::regclass").Scan(ctx, &tuples); err != nil {
		t.Fatal(err)
	}
	if tuples < 10_000 {
		t.Fatalf("the planner counts %.0f reports after an import of 12,000", tuples)
	}
	ids := make([]string, 0, 500)
	for _, r := range recs[3000:3500] {
		ids = append(ids, "'"+r.Threat.UpstreamID+"'")
	}
	var plan []string
	q := "EXPLAIN SELECT upstream_id, upstream_modified FROM threats WHERE source = 'osv' AND upstream_id IN (" + strings.Join(ids, ", ") + ")"
	if err := s.db.NewRaw(q).Scan(ctx, &plan); err != nil {
		t.Fatal(err)
	}
	for _, line := range plan {
		if strings.Contains(line, "Index Cond: (source = ") && !strings.Contains(line, "upstream_id") {
			t.Fatalf("the upstream look-up searches the index by source alone: %s", line)
		}
	}
}
