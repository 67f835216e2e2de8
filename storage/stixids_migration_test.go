package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// Migration 0021 marks the reports published before it as legacy, whose
// STIX object ids stix_objects lists, and leaves the others to derived ids;
// a legacy report is then found by its listed ids, on both dialects.
func TestDerivedSTIXIDsMigration(t *testing.T) {
	mark := migrationStatement(t, "0021_stix_ids.tx.up.sql", "UPDATE threats")
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			var recs []core.ImportRecord
			for i := range 4 {
				sub := core.Submission{ReportType: ptrS("domain"), ResourceIdentifier: ptrS(fmt.Sprintf("stix-ids-%d.example", i)),
					ThreatDescription: ptrS(fmt.Sprintf("Phishing kit served from https://stix-ids-%d.example/login and 203.0.113.%d", i, i+1))}
				th, err := core.NewThreat(sub, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				at := time.Now().UTC()
				th.Source, th.UpstreamID, th.VerifiedAt = "osv", fmt.Sprintf("MAL-IDS-%d", i), &at
				th.IOCs = core.Derive(th).IOCs
				recs = append(recs, core.ImportRecord{Threat: th})
			}
			out, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "osv-import"})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, o := range out {
				ids = append(ids, o.ThreatID)
			}
			byID := map[string]core.Threat{}
			for _, id := range ids {
				th, err := s.GetThreat(ctx, id)
				if err != nil || th.LegacySTIXIDs || len(th.IOCs) == 0 {
					t.Fatalf("a new report: legacy %v, %d indicators, %v", th.LegacySTIXIDs, len(th.IOCs), err)
				}
				byID[id] = th
			}
			var listed int
			if err := s.db.NewSelect().Table("stix_objects").ColumnExpr("count(*)").Scan(ctx, &listed); err != nil || listed != 0 {
				t.Fatalf("derived ids listed: %d rows, %v", listed, err)
			}
			// As a database before 0021 has them: the first two reports
			// published with listed ids, and every row marked legacy by the
			// new column's default.
			var objects []stixObjectRow
			for _, id := range ids[:2] {
				objects = objectRows(objects, id, true, byID[id].IOCs)
			}
			if err := insertObjectIDs(ctx, s.db, objects); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.NewUpdate().Table("threats").Set("legacy_stix_ids = TRUE").Where("1 = 1").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.ExecContext(ctx, mark); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				th, err := s.GetThreat(ctx, id)
				if err != nil || th.LegacySTIXIDs != (i < 2) {
					t.Fatalf("report %d after the migration: legacy %v, %v", i, th.LegacySTIXIDs, err)
				}
				// Found by every id of its objects, under its own scheme.
				for _, oid := range th.STIXIDs().All(th.IOCs) {
					items, err := s.Feed(ctx, core.FeedQuery{Latest: true, ObjectIDs: []string{oid}, Limit: 10})
					if err != nil || len(items) != 1 || items[0].Threat.ID != id || items[0].Threat.LegacySTIXIDs != (i < 2) {
						t.Fatalf("report %d by object %s: %d changes, %v", i, oid, len(items), err)
					}
				}
			}
			// A legacy report revised keeps listed ids: its new indicator's
			// objects are listed too.
			legacy := ids[0]
			before := listedCount(t, s, legacy)
			upd := recs[0]
			next := time.Now().UTC().Add(time.Hour)
			upd.Threat.UpstreamModified = &next
			upd.Threat.Details.ThreatDescription += " and https://stix-ids-new.example/drop"
			upd.Threat.IOCs = core.Derive(upd.Threat).IOCs
			if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: []core.ImportRecord{upd}, Actor: "osv-import"}); err != nil {
				t.Fatal(err)
			}
			th, err := s.GetThreat(ctx, legacy)
			if err != nil || !th.LegacySTIXIDs {
				t.Fatalf("revised legacy report: legacy %v, %v", th.LegacySTIXIDs, err)
			}
			if after := listedCount(t, s, legacy); after <= before {
				t.Fatalf("revised legacy report: %d listed ids, %d before", after, before)
			}
			for _, oid := range th.STIXIDs().All(th.IOCs) {
				if items, err := s.Feed(ctx, core.FeedQuery{Latest: true, ObjectIDs: []string{oid}, Limit: 10}); err != nil || len(items) != 1 || items[0].Threat.ID != legacy {
					t.Fatalf("revised legacy report by object %s: %d changes, %v", oid, len(items), err)
				}
			}
		})
	}
}

func listedCount(t *testing.T, s *Store, threatID string) int {
	t.Helper()
	var n int
	if err := s.db.NewSelect().Table("stix_objects").ColumnExpr("count(*)").Where("threat_id = ?", threatID).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}
