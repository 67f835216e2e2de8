package storage

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Migration 0020 derives the indicators of every report stored without
// them (iocs NULL, as before 0019), whatever its status and across batch
// boundaries, leaves the reports that have them alone, and is idempotent.
func TestIOCsBackfillMigration(t *testing.T) {
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			var recs []core.ImportRecord
			for i := range 1203 {
				sub := core.Submission{ReportType: ptrS("package"), Registry: ptrS("npm"), ResourceIdentifier: ptrS(fmt.Sprintf("iocs-%d", i)),
					ThreatDescription: ptrS(fmt.Sprintf("Calls hxxps://c2-%d.backfill[.]example/beacon", i))}
				th, err := core.NewThreat(sub, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				at := time.Now().UTC()
				th.ID, th.Source, th.UpstreamID, th.VerifiedAt = uuid.NewString(), "osv", fmt.Sprintf("MAL-I-%d", i), &at
				recs = append(recs, core.ImportRecord{Threat: th}) // not derived: the backfill must
			}
			for i := 0; i < len(recs); i += 500 {
				if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs[i:min(i+500, len(recs))], Actor: "osv-import"}); err != nil {
					t.Fatal(err)
				}
			}
			// As a database before 0019 has them: no indicators stored;
			// but one report already has some, which the backfill keeps.
			if _, err := s.db.NewUpdate().Table("threat_details").Set("iocs = NULL").Where("1 = 1").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			kept := `[{"type":"domain","value":"kept.example","origin":"payload","confidence":50}]`
			first, err := s.QueryThreats(ctx, core.ThreatQuery{UpstreamID: "MAL-I-7", Limit: 1})
			if err != nil || len(first) != 1 {
				t.Fatal(first, err)
			}
			if _, err := s.db.NewUpdate().Table("threat_details").Set("iocs = ?", kept).Where("threat_id = ?", first[0].ID).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for range 2 { // idempotent
				if err := backfillIOCs(ctx, s.db); err != nil {
					t.Fatal(err)
				}
			}
			var nulls int
			if err := s.db.NewSelect().Table("threat_details").ColumnExpr("count(*)").Where("iocs IS NULL").Scan(ctx, &nulls); err != nil || nulls != 0 {
				t.Fatalf("%d reports without indicators after the backfill (%v)", nulls, err)
			}
			for _, i := range []int{0, 499, 500, 1202} {
				got, err := s.QueryThreats(ctx, core.ThreatQuery{UpstreamID: fmt.Sprintf("MAL-I-%d", i), Limit: 1})
				if err != nil || len(got) != 1 {
					t.Fatal(got, err)
				}
				th, err := s.GetThreat(ctx, got[0].ID)
				if err != nil {
					t.Fatal(err)
				}
				want := core.Derive(th).IOCs
				if len(want) < 2 || !reflect.DeepEqual(th.IOCs, want) {
					t.Fatalf("report %d: stored %+v, want %+v", i, th.IOCs, want)
				}
			}
			if th, err := s.GetThreat(ctx, first[0].ID); err != nil || len(th.IOCs) != 1 || th.IOCs[0].Value != "kept.example" {
				t.Fatalf("a report that had indicators: %+v %v", th.IOCs, err)
			}
		})
	}
}
