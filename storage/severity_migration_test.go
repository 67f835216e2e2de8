package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Migration 0018's backfill copies each report's severity from its details
// to its row, on both dialects, and the severity filter then finds them.
func TestSeverityBackfillMigration(t *testing.T) {
	backfill := migrationStatement(t, "0018_severity.tx.up.sql", "UPDATE threats")
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openMigrated(t, d)
			var recs []core.ImportRecord
			for i := range 9 {
				sub := core.Submission{ReportType: ptrS("package"), Registry: ptrS("npm"), ResourceIdentifier: ptrS(fmt.Sprintf("sev-%d", i)), ThreatDescription: ptrS("x")}
				if i%3 > 0 {
					sub.SeverityLevel = ptrS([]string{"", "high", "critical"}[i%3])
				}
				th, err := core.NewThreat(sub, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				at := time.Now().UTC()
				th.ID, th.Source, th.UpstreamID, th.VerifiedAt = uuid.NewString(), "osv", fmt.Sprintf("MAL-S-%d", i), &at
				recs = append(recs, core.ImportRecord{Threat: th})
			}
			if _, err := s.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "osv-import"}); err != nil {
				t.Fatal(err)
			}
			// As a database before 0018 has them: no copy on the rows.
			if _, err := s.db.NewUpdate().Table("threats").Set("severity_level = NULL").Where("1 = 1").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if n, _ := s.CountThreats(ctx, core.ThreatQuery{Severity: core.SeverityHigh}); n != 0 {
				t.Fatalf("before the backfill, %d high reports", n)
			}
			if _, err := s.db.ExecContext(ctx, backfill); err != nil {
				t.Fatal(err)
			}
			for sev, want := range map[core.Severity]int64{core.SeverityHigh: 3, core.SeverityCritical: 3, core.SeverityLow: 0} {
				if n, err := s.CountThreats(ctx, core.ThreatQuery{Severity: sev}); err != nil || n != want {
					t.Errorf("after the backfill, %s: %d, %v; want %d", sev, n, err, want)
				}
			}
		})
	}
}

// migrationStatement returns the statement of the embedded migration file
// name that contains text, for a test that runs it alone.
func migrationStatement(t *testing.T, name, text string) string {
	t.Helper()
	body, err := migrationFiles.ReadFile("migrations/" + name)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range strings.Split(string(body), "--bun:split") {
		if strings.Contains(stmt, text) {
			return stmt
		}
	}
	t.Fatalf("no statement of %s contains %q", name, text)
	return ""
}
