package storage

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// TestExplainAtScale prints the plan and the time of every statement the
// web site's browse, search and indicator pages run, on a database of the
// size a user runs (make bench-scale points it at its 1M-report databases:
// THREATD_EXPLAIN_DSN=sqlite:<file> or postgres:<dsn>). PostgreSQL's plans
// are EXPLAIN (ANALYZE, BUFFERS); SQLite's EXPLAIN QUERY PLAN. A page read
// that scans the reports table or sorts it fails the test. Without the
// variable it skips: the 50,000-report plans of TestQueryPlansAtScale run
// in every make test.
func TestExplainAtScale(t *testing.T) {
	spec := os.Getenv("THREATD_EXPLAIN_DSN")
	if spec == "" {
		t.Skip("THREATD_EXPLAIN_DSN is not set (make bench-scale sets it)")
	}
	kind, dsn, _ := strings.Cut(spec, ":")
	d := SQLite
	if kind == "postgres" {
		d = Postgres
	}
	ctx := context.Background()
	s, err := Open(d, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log := &queryLog{}
	s.hooks.add(log)

	// A keyset position in the middle of the verified reports.
	newest, err := s.QueryThreats(ctx, core.ThreatQuery{Descending: true, Limit: 1})
	if err != nil || len(newest) == 0 {
		t.Fatalf("no verified report: %v", err)
	}
	oldest, err := s.QueryThreats(ctx, core.ThreatQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	mid := oldest[0].VerifiedAt.Add(newest[0].VerifiedAt.Sub(*oldest[0].VerifiedAt) / 2)
	log.take()
	week := mid.Add(-7 * 24 * time.Hour)

	type step struct {
		name string
		run  func() error
		page bool // a page read: bounded, no scan, no sort
	}
	query := func(q core.ThreatQuery) func() error {
		return func() error { _, err := s.QueryThreats(ctx, q); return err }
	}
	count := func(q core.ThreatQuery) func() error {
		return func() error { _, err := s.CountThreats(ctx, q); return err }
	}
	deep := func(q core.ThreatQuery) core.ThreatQuery {
		q.AfterVerifiedAt, q.AfterID = mid, "ffffffff-ffff-7fff-bfff-ffffffffffff"
		return q
	}
	filters := map[string]core.ThreatQuery{
		"all":                {},
		"ecosystem=pypi":     {Registry: core.RegistryPyPI},
		"type=package & npm": {ReportType: core.TypePackage, Registry: core.RegistryNPM},
		"severity=high":      {Severity: core.SeverityHigh},
		"a week":             {VerifiedFrom: week, VerifiedTo: mid},
	}
	var steps []step
	for _, name := range []string{"all", "ecosystem=pypi", "type=package & npm", "severity=high", "a week"} {
		q := filters[name]
		q.Descending, q.Limit = true, 51
		steps = append(steps,
			step{"browse " + name + ", first page", query(q), true},
			step{"browse " + name + ", from the middle", query(deep(q)), true})
		if name != "all" { // the unfiltered total is the index's length
			steps = append(steps, step{"count " + name, count(q), false})
		}
	}
	steps = append(steps,
		step{"name prefix bench-npm-00123", func() error {
			_, err := s.ThreatsByKeyPrefix(ctx, core.KeyPrefixQuery{Prefixes: []string{"package:npm:bench-npm-00123", "package:pypi:bench-npm-00123", "package:rubygems:bench-npm-00123"}, After: "", Limit: 21})
			return err
		}, true},
		step{"indicator c2-0000010.bench-exfil.example", query(core.ThreatQuery{IndicatorKey: ioc.Key(ioc.Domain, "c2-0000010.bench-exfil.example"), Descending: true, Limit: 20}), true},
		step{"indicator count", count(core.ThreatQuery{IndicatorKey: ioc.Key(ioc.Domain, "c2-0000010.bench-exfil.example")}), true},
		step{"latest 20 (home page)", func() error {
			_, err := s.LatestVerified(ctx, core.LatestFilter{Limit: 20})
			return err
		}, true},
	)
	for _, st := range steps {
		start := time.Now()
		if err := st.run(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		took := time.Since(start)
		for _, q := range log.take() {
			plan := explainAny(t, s, d, q)
			log.take()
			fmt.Printf("### %s (%s, %.1f ms)\n%s\n%s\n\n", st.name, d, float64(took.Microseconds())/1000, q, plan)
			bad := strings.Contains(plan, "Seq Scan on threats") || strings.Contains(plan, "SCAN threat_row") && !strings.Contains(plan, "USING") ||
				strings.Contains(plan, "TEMP B-TREE") && !strings.HasPrefix(st.name, "indicator") || walks(plan) ||
				strings.HasPrefix(st.name, "indicator") && strings.Contains(plan, "threats_status_verified_idx (status=?)")
			if st.page && bad {
				t.Errorf("%s: a page read scans or sorts the reports:\n%s", st.name, plan)
			}
		}
	}
}

// walkRE finds how many rows a PostgreSQL plan node read to throw away,
// or how many times it ran.
var walkRE = regexp.MustCompile(`(?:Rows Removed by Filter: |loops=)(\d+)`)

// walks reports whether a plan reads thousands of rows for a page: a walk
// of an index that a bounded read does not need.
func walks(plan string) bool {
	for _, m := range walkRE.FindAllStringSubmatch(plan, -1) {
		if n, _ := strconv.Atoi(m[1]); n > 5000 {
			return true
		}
	}
	return false
}

// explainAny returns the plan of q on d: PostgreSQL's EXPLAIN (ANALYZE,
// BUFFERS) text, or SQLite's EXPLAIN QUERY PLAN steps.
func explainAny(t *testing.T, s *Store, d Dialect, q string) string {
	t.Helper()
	if d == SQLite {
		return explain(t, s, q)
	}
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN (ANALYZE, BUFFERS) "+q)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
