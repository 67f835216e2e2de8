package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Migration 0012 gives each change published before it its own microsecond,
// in (at, seq) order, and records the STIX object ids of every report
// published before, on both dialects; run twice, it changes nothing more.
func TestTAXIIBackfillMigration(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			up := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
			var recs []core.ImportRecord
			for i := range 30 {
				th, err := core.NewThreat(core.Submission{ReportType: ptrS("package"), Registry: ptrS("npm"), ResourceIdentifier: ptrS(fmt.Sprintf("backfill-%d", i)),
					ThreatDescription: ptrS("x"), PayloadDescription: ptrS(fmt.Sprintf("beacons to https://c2-%d.example.net/x", i))}, up)
				if err != nil {
					t.Fatal(err)
				}
				th.ID, th.Source, th.UpstreamID, th.UpstreamModified, th.VerifiedAt = uuid.NewString(), "osv", fmt.Sprintf("MAL-B-%d", i), &up, &up
				recs = append(recs, core.ImportRecord{Threat: th})
			}
			if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "osv-import"}); err != nil {
				t.Fatal(err)
			}
			// As a database before this version has them: three batches,
			// each at one time (the middle one a microsecond after the
			// first), and no object ids.
			t0 := time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC)
			var seqs []int64
			if err := s.db.NewSelect().Table("feed_events").Column("seq").OrderExpr("seq").Scan(ctx, &seqs); err != nil || len(seqs) != 30 {
				t.Fatalf("events: %d %v", len(seqs), err)
			}
			for i, seq := range seqs {
				at := t0
				if i >= 10 {
					at = t0.Add(time.Microsecond)
				}
				if i >= 20 {
					at = t0.Add(time.Hour)
				}
				if _, err := s.db.NewUpdate().Table("feed_events").Set("at = ?", at).Where("seq = ?", seq).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.db.NewDelete().Table("stix_objects").Where("1 = 1").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for run := range 2 {
				runMigration(t, s, "0012")
				var events []feedEventRow
				if err := s.db.NewSelect().Model(&events).OrderExpr("seq").Scan(ctx); err != nil {
					t.Fatal(err)
				}
				for j, e := range events {
					want := t0.Add(time.Duration(j) * time.Microsecond)
					if j >= 20 {
						want = t0.Add(time.Hour + time.Duration(j-20)*time.Microsecond)
					}
					if !e.At.Equal(want) {
						t.Fatalf("run %d: change %d at %v, want %v", run, j, e.At.UTC(), want)
					}
				}
				var objects []stixObjectRow
				if err := s.db.NewSelect().Model(&objects).Scan(ctx); err != nil {
					t.Fatal(err)
				}
				have := map[string]string{}
				for _, o := range objects {
					have[o.ObjectID] = o.ThreatID
				}
				var tids []string
				for _, e := range events {
					tids = append(tids, e.ThreatID)
				}
				stored, err := s.GetThreats(ctx, tids)
				if err != nil || len(stored) != 30 {
					t.Fatalf("reports: %d %v", len(stored), err)
				}
				for _, th := range stored {
					ids := core.STIXIDsOf(th.ID, true).All(core.ExtractIOCs(th))
					if len(ids) < 3 {
						t.Fatalf("%s: %d object ids", th.ResourceIdentifier, len(ids))
					}
					for _, id := range ids {
						if have[id] != th.ID {
							t.Fatalf("run %d: object %s of %s is not recorded", run, id, th.ResourceIdentifier)
						}
					}
				}
			}
		})
	}
}
