package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Migration 0025 keeps every published change, its seq and its sequence
// (a deleted last change's seq is not given again), and then takes the
// kinds of a dispute, on both dialects. Run again on a migrated database,
// as a database with changes meets it.
func TestFeedKindsMigration(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			var recs []core.ImportRecord
			for i := range 5 {
				rec := importedPackage(t, fmt.Sprintf("kinds-%d", i), "osv", fmt.Sprintf("MAL-K-%d", i))
				at := time.Now().UTC()
				rec.Threat.ID, rec.Threat.VerifiedAt = uuid.NewString(), &at
				recs = append(recs, rec)
			}
			if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "osv-import"}); err != nil {
				t.Fatal(err)
			}
			var before []feedEventRow
			if err := s.db.NewSelect().Model(&before).Order("seq").Scan(ctx); err != nil || len(before) != 5 {
				t.Fatalf("%d changes, %v", len(before), err)
			}
			// The last change goes (its report deleted with an account, say).
			last := before[len(before)-1].Seq
			if _, err := s.db.NewDelete().Model((*feedEventRow)(nil)).Where("seq = ?", last).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for _, q := range feedKindsSQL(s.db.Dialect().Name()) {
				if _, err := s.db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%v: %s", err, q)
				}
			}
			var after []feedEventRow
			if err := s.db.NewSelect().Model(&after).Order("seq").Scan(ctx); err != nil || len(after) != 4 {
				t.Fatalf("after: %d changes, %v", len(after), err)
			}
			for i, r := range after {
				if r.Seq != before[i].Seq || r.ThreatID != before[i].ThreatID || r.Kind != before[i].Kind || !r.At.Equal(before[i].At) {
					t.Fatalf("change %d: %+v, was %+v", i, r, before[i])
				}
			}
			row := feedEventRow{ThreatID: before[0].ThreatID, Kind: core.ChangeDisputed, Version: 1, At: time.Now().UTC()}
			if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err != nil {
				t.Fatalf("a disputed change: %v", err)
			}
			if row.Seq <= last {
				t.Fatalf("new seq %d, the deleted last was %d", row.Seq, last)
			}
			row = feedEventRow{ThreatID: before[0].ThreatID, Kind: "liked", Version: 1, At: time.Now().UTC()}
			if _, err := s.db.NewInsert().Model(&row).Exec(ctx); err == nil {
				t.Fatal("an unknown kind was stored")
			}
		})
	}
}
