package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

// TestFirewallPlans: the firewall's lists read their indexes in order, a
// page at a time: the decision list by (at, seq) from a time or a cursor,
// the held list by until; never a sort of the table nor a scan of it
// outside an index (the list runs per request; the table reaches millions
// of rows: docs/performance.md has the plans at 10 M).
func TestFirewallPlans(t *testing.T) {
	ctx := context.Background()
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "fw.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-24 * time.Hour).UTC()
	var ds []firewall.FirewallDecision
	var hs []firewall.HeldVersion
	for i := range 20_000 {
		ds = append(ds, firewall.FirewallDecision{Time: base.Add(time.Duration(i) * time.Second), Ecosystem: "npm", Name: fmt.Sprintf("p-%d", i%500),
			Version: "1.0.0", Purl: "pkg:npm/p@1.0.0", Rule: firewall.RuleQuarantine, Action: firewall.ActionBlock, User: "u@example.com", ClientIP: "10.0.0.1"})
		if i < 5000 {
			hs = append(hs, firewall.HeldVersion{Ecosystem: "npm", Name: fmt.Sprintf("h-%d", i), Version: "1.0.0", FirstSeen: base, Until: base.Add(time.Duration(i) * time.Minute)})
		}
	}
	if err := s.RecordDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordHeld(ctx, hs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	log := &queryLog{}
	s.hooks.add(log)
	check := func(what string, wantIndex string) {
		t.Helper()
		qs := log.take()
		defer log.take() // the EXPLAINs
		if len(qs) == 0 {
			t.Fatalf("%s ran no statement", what)
		}
		for _, q := range qs {
			if !strings.HasPrefix(q, "SELECT") {
				continue // the plans asked for below, BEGIN, COMMIT
			}
			plan := explain(t, s, q)
			if strings.Contains(plan, "TEMP B-TREE") || strings.Contains(plan, "SCAN firewall_") && !strings.Contains(plan, "INDEX") {
				t.Errorf("%s sorts or scans: %s\n%.200s", what, plan, q)
			}
			if strings.Contains(q, "ORDER BY") && !strings.Contains(plan, wantIndex) {
				t.Errorf("%s does not read %s: %s\n%.200s", what, wantIndex, plan, q)
			}
		}
	}
	page, err := s.ListDecisions(ctx, firewall.FirewallDecisionQuery{Since: base.Add(time.Hour), Limit: 100})
	if err != nil || len(page.Decisions) != 100 || !page.More {
		t.Fatalf("since: %d %v", len(page.Decisions), err)
	}
	check("the decisions since a time", "firewall_decisions_at_idx")
	if _, err := s.ListDecisions(ctx, firewall.FirewallDecisionQuery{After: page.Decisions[99].Seq, Limit: 100}); err != nil {
		t.Fatal(err)
	}
	check("the decisions after a cursor", "firewall_decisions_at_idx")
	if _, err := s.ListDecisions(ctx, firewall.FirewallDecisionQuery{Limit: 100}); err != nil {
		t.Fatal(err)
	}
	check("the first decisions", "firewall_decisions_at_idx")
	held, err := s.ListHeld(ctx, firewall.HeldQuery{Now: base.Add(time.Hour), Limit: 100})
	if err != nil || len(held) != 100 {
		t.Fatalf("held: %d %v", len(held), err)
	}
	check("the held versions", "firewall_held_until_idx")
	l := held[99]
	if _, err := s.ListHeld(ctx, firewall.HeldQuery{Now: base.Add(time.Hour), Limit: 100,
		After: l.Cursor()}); err != nil {
		t.Fatal(err)
	}
	check("the held versions after a cursor", "firewall_held_until_idx")
}
