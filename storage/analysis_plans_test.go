package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/exposure"
)

// TestAnalysisPlans: the analysis queue's statements, which every daemon
// runs every 2 s (the holds, the queue's length, a claim) and once per
// version it sees (queueing), read the queue's partial index or a key,
// never the whole table: at 100,000 analysed versions and 500 queued, no
// statement scans analyses outside an index or sorts it.
func TestAnalysisPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "analysis.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-24 * time.Hour).UTC()
	if _, err := s.db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99999)
INSERT INTO analyses (ecosystem, name, version, state, queued_at, digest, verdict, result, analyzed_at, report_id)
SELECT 'npm', 'p-' || i, '1.0.0', 'done', ?, 'ab', 'clean', '{"verdict":"clean","score":0,"findings":[],"analyzers":["rules"]}', ?,
  CASE WHEN i % 1000 = 0 THEN 'r-' || i END FROM n`, base, base); err != nil {
		t.Fatal(err)
	}
	var jobs []analysis.Job
	for i := range 500 {
		jobs = append(jobs, analysis.Job{Ecosystem: "npm", Name: fmt.Sprintf("q-%d", i), Version: "1.0.0", QueuedAt: base.Add(time.Duration(i) * time.Second)})
	}
	if _, err := s.QueueAnalyses(ctx, analysis.QueueRequest{Jobs: jobs, MaxQueued: 10_000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	log := &queryLog{}
	s.hooks.add(log)
	check := func(what string) {
		t.Helper()
		qs := log.take()
		defer log.take() // the EXPLAINs
		n := 0
		for _, q := range qs {
			if !strings.HasPrefix(q, "SELECT") && !strings.HasPrefix(q, "UPDATE") && !strings.HasPrefix(q, "INSERT") {
				continue
			}
			n++
			plan := explain(t, s, q)
			if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN analyses") && !strings.Contains(plan, "INDEX") ||
				strings.Contains(plan, "SCAN analysis_row") && !strings.Contains(plan, "INDEX") || strings.Contains(plan, "SCAN threats") {
				t.Errorf("%s sorts or scans: %s\n%.300s", what, plan, q)
			}
		}
		if n == 0 {
			t.Fatalf("%s ran no statement", what)
		}
	}
	if _, err := s.AnalysisHolds(ctx, analysis.HoldQuery{Limit: analysis.MaxHolds}); err != nil {
		t.Fatal(err)
	}
	check("the holds")
	if q, err := s.AnalysisQueue(ctx); err != nil || q.Queued != 500 {
		t.Fatalf("queue %+v %v", q, err)
	}
	check("the queue's length")
	got, err := s.ClaimAnalyses(ctx, analysis.Claim{Holder: "d", Now: time.Now(), TTL: time.Minute, Limit: 2})
	if err != nil || len(got) != 2 || got[0].Name != "q-0" {
		t.Fatalf("claim: %+v %v", got, err)
	}
	check("a claim")
	if _, err := s.QueueAnalyses(ctx, analysis.QueueRequest{Jobs: []analysis.Job{{Ecosystem: "npm", Name: "new", Version: "1"}}, MaxQueued: 10_000}); err != nil {
		t.Fatal(err)
	}
	check("queueing a version")
	if _, err := s.AnalysesOfReports(ctx, []string{"r-1000", "r-2000"}); err != nil {
		t.Fatal(err)
	}
	check("the analyses of reports")
	if _, err := s.Analysis(ctx, analysis.Key{Ecosystem: "npm", Name: "p-5", Version: "1.0.0"}); err != nil {
		t.Fatal(err)
	}
	check("one analysis")
}

// TestExposurePlans: a report's exposures, a user's and everyone's are
// read a page at a time in id order through an index, never sorted: at
// 200,000 exposures of one report.
func TestExposurePlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "exposure.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	if _, err := s.db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199999)
INSERT INTO exposures (threat_id, kind, ecosystem, name, version, purl, user_email, token_id, client_ip, project, first_at, last_at, count, found_at, row_key)
SELECT CASE WHEN i % 10 = 0 THEN 'other' ELSE 'th' END, 'served', 'npm', 'p', '1', 'pkg:npm/p@1', 'u' || (i % 100) || '@example.com', 't' || i, '', '', ?, ?, 1, ?, 'k' || i FROM n`, at, at, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	log := &queryLog{}
	s.hooks.add(log)
	for _, q := range []exposure.Query{{ThreatID: "th", Limit: 100}, {ThreatID: "th", After: 100_000, Limit: 1000}, {User: "u7@example.com", Limit: 100}, {Limit: 100}} {
		if _, err := s.ListExposures(ctx, q); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range log.take() {
			if !strings.HasPrefix(stmt, "SELECT") {
				continue
			}
			plan := explain(t, s, stmt)
			if strings.Contains(plan, "TEMP B-TREE") || q.ThreatID+q.User != "" && !strings.Contains(plan, "INDEX exposures_") {
				t.Errorf("%+v sorts or scans: %s\n%.300s", q, plan, stmt)
			}
		}
		log.take()
	}
	// Which packages anyone got (the detector's filter of a batch): by
	// the ledger's primary key and the inventories' package index, at
	// 200,000 ledger rows.
	if _, err := s.db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199999)
INSERT INTO firewall_ledger (ecosystem, name, version, purl, user_email, token_id, client_ip, day, first_at, last_at, count)
SELECT 'npm', 'p' || (i % 20000), '1', '', '', 't' || i, '', ?, ?, ?, 1 FROM n`, at, at, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ExposedPackages(ctx, []exposure.Package{{Ecosystem: "npm", Name: "p7"}, {Ecosystem: "npm", Name: "nobody"}, {Ecosystem: "pypi", Name: "p7"}}); err != nil || len(got) != 1 {
		t.Fatalf("exposed packages %v %v", got, err)
	}
	for _, stmt := range log.take() {
		if plan := explain(t, s, stmt); strings.Contains(plan, "SCAN firewall_ledger") || strings.Contains(plan, "SCAN inventory_items") {
			t.Errorf("ExposedPackages scans: %s\n%.300s", plan, stmt)
		}
	}
}
