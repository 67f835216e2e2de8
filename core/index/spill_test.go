package index_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/record"
)

// TestSpillFollowsReports drives the spill over a real SQLite store: the
// fill writes every verified report's check answer as record.PublicJSON
// writes it, the follower writes changed reports' answers as it applies
// them (never leaving the old one), and withdrawn reports stop matching.
func TestSpillFollowsReports(t *testing.T) {
	ctx := context.Background()
	sb := newSubmitter(t, "spill@example.com")
	st, reports, p := sb.st, sb.reports, sb.p
	submit := func(name, contact string) core.Threat {
		s := core.Submission{ReportType: ptr("package"), ResourceIdentifier: &name, Registry: ptr("npm"), ThreatDescription: ptr("steals <tokens> & keys")}
		if contact != "" {
			s.ContactEmail = &contact
		}
		th, err := reports.Submit(ctx, p, s)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	a, b, c, d := submit("spill-a", "a@example.org"), submit("spill-b", ""), submit("spill-c", ""), submit("spill-d", "")
	for _, th := range []core.Threat{a, b, d} {
		if _, err := reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	idx := index.New(st, 16)
	if err := idx.EnableSpill(dir); err != nil {
		t.Fatal(err)
	}
	defer idx.CloseSpill()
	if err := idx.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// d is withdrawn after the index loaded and before the follower has
	// seen it: storage no longer returns it as verified, and the fill's
	// pass ends without an entry for it instead of asking again and again.
	if _, err := reports.Decide(ctx, d.ID, 0, core.DecisionReject, "withdrawn", nil); err != nil {
		t.Fatal(err)
	}
	fillCtx, stop := context.WithCancel(ctx)
	defer stop()
	filled := make(chan index.SpillStats, 1)
	go idx.FillSpill(fillCtx, index.SpillHooks{Failed: func(err error, _ time.Duration) { t.Errorf("fill: %v", err) }, Filled: func(s index.SpillStats) { filled <- s }})
	select {
	case s := <-filled:
		if s.Entries != 2 || s.Of != 3 || s.Live <= 0 || s.Garbage != 0 {
			t.Fatalf("filled: %+v", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the spill was not filled")
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("the spill file is left in %s: %v", dir, names)
	}

	// rendered checks name's answer, read from the spill, against the
	// report as stored now.
	rendered := func(name string, want core.Threat) index.Result {
		t.Helper()
		r, err := idx.CheckQuery(ctx, core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: name, Ecosystem: "npm"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want.ID == "" {
			if r.Count != 0 || r.Answer != nil {
				t.Fatalf("%s: %+v, want no match", name, r)
			}
			return r
		}
		if r.Answer == nil || r.Latest.ID != "" {
			t.Fatalf("%s: answered from storage, not the spill: %+v", name, r)
		}
		ts, err := st.GetThreats(ctx, []string{want.ID})
		if err != nil || len(ts) != 1 {
			t.Fatal(ts, err)
		}
		body, _ := record.PublicJSON(ts[0])
		if r.Count != 1 || r.Registry != "npm" || r.ID.String() != want.ID || !bytes.Equal(r.Answer, body) {
			t.Fatalf("%s: count %d registry %q id %s\n got %s\nwant %s", name, r.Count, r.Registry, r.ID, r.Answer, body)
		}
		return r
	}
	if r := rendered("spill-a", a); !r.Contact || r.Submitter != p.User.ID || bytes.Contains(r.Answer, []byte("a@example.org")) {
		t.Fatalf("a report with a contact e-mail: %+v", r)
	}
	if r := rendered("spill-b", b); r.Contact || r.Submitter != p.User.ID { // its submitter's record counts in its confidence
		t.Fatalf("a report without a contact e-mail: %+v", r)
	}
	rendered("spill-c", core.Threat{})
	rendered("never-reported", core.Threat{})

	// Answers are read into pooled buffers (Result.Entry): checks of a and
	// b at once, each giving its buffer back after reading it, always see
	// their own report's record.
	check := func(name string) (index.Result, error) {
		return idx.CheckQuery(ctx, core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: name, Ecosystem: "npm"})
	}
	bodies := map[string][]byte{}
	for _, name := range []string{"spill-a", "spill-b"} {
		r, err := check(name)
		if err != nil || r.Answer == nil {
			t.Fatalf("%s: %+v %v", name, r, err)
		}
		bodies[name] = bytes.Clone(r.Answer)
		r.Entry.Release()
	}
	if bytes.Equal(bodies["spill-a"], bodies["spill-b"]) {
		t.Fatal("a and b have the same answer")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			name := []string{"spill-a", "spill-b"}[g%2]
			for range 300 {
				r, err := check(name)
				if err != nil || !bytes.Equal(r.Answer, bodies[name]) {
					t.Errorf("%s: %v\n got %s\nwant %s", name, err, r.Answer, bodies[name])
					return
				}
				r.Entry.Release()
			}
		})
	}
	wg.Wait()

	// Changes through the follower: a revision, a verification, a
	// withdrawal.
	f := &index.Follower{Store: st, Index: idx, Principals: index.NewPrincipals(sb.acc, time.Second), Log: slog.New(slog.DiscardHandler)}
	_, rev, err := reports.Modify(ctx, p, b.ID, core.Patch{Submission: core.Submission{Publisher: ptr("mallory")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reports.DecideRevision(ctx, rev.ID, true, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := reports.Decide(ctx, c.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := reports.Decide(ctx, a.ID, 0, core.DecisionReject, "withdrawn", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if r := rendered("spill-b", b); !bytes.Contains(r.Answer, []byte(`"publisher":"mallory"`)) {
		t.Fatalf("after the revision: %s", r.Answer)
	}
	rendered("spill-c", c)
	rendered("spill-a", core.Threat{})
	if s := idx.SpillStats(); s.Entries != 2 || s.Of != 2 || s.Garbage == 0 {
		t.Fatalf("after the changes: %+v", s)
	}
}
