package storagetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/port"
)

// testAnalyses: a version is queued once (again only when forced), the
// queue is bounded, a claim leases each job to one holder (concurrent
// claimers never share one), an expired lease is claimed again, a result
// is stored only by its holder, and the holds name unfinished analyses and
// suspicious ones whose report is pending.
func testAnalyses(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	job := func(eco, name, ver string) analysis.Job {
		return analysis.Job{Ecosystem: eco, Name: name, Version: ver}
	}
	got, err := s.QueueAnalyses(c, analysis.QueueRequest{Jobs: []analysis.Job{job("npm", "left-pad", "1.0.0"), job("npm", "left-pad", "1.0.1"), job("pypi", "requests", "2.0.0")}, MaxQueued: 3})
	if err != nil || got != (analysis.QueueResult{Queued: 3}) {
		t.Fatalf("queue: %+v %v", got, err)
	}
	got, err = s.QueueAnalyses(c, analysis.QueueRequest{Jobs: []analysis.Job{job("npm", "left-pad", "1.0.0"), job("go", "example.com/m", "v1.0.0")}, MaxQueued: 3})
	if err != nil || got != (analysis.QueueResult{Known: 1, Full: 1}) {
		t.Fatalf("a known version is left, one over the bound refused: %+v %v", got, err)
	}
	if _, err := s.QueueAnalyses(c, analysis.QueueRequest{Jobs: []analysis.Job{job("npm", "", "1")}}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a job without a name: %v", err)
	}
	if q, err := s.AnalysisQueue(c); err != nil || q != (analysis.QueueLength{Queued: 3}) {
		t.Fatalf("queue length %+v %v", q, err)
	}
	if _, err := s.Analysis(c, analysis.Key{Ecosystem: "npm", Name: "never", Version: "1"}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("never queued: %v", err)
	}

	// Two daemons claim at once: every job goes to exactly one.
	var mu sync.Mutex
	claimed := map[analysis.Key]string{}
	var wg sync.WaitGroup
	for _, holder := range []string{"daemon-a", "daemon-b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				jobs, err := s.ClaimAnalyses(c, analysis.Claim{Holder: holder, Now: time.Now(), TTL: time.Hour, Limit: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) > 1 {
					t.Errorf("a claim of 1 leased %d", len(jobs))
				}
				mu.Lock()
				for _, j := range jobs {
					if prev, ok := claimed[j.Key()]; ok {
						t.Errorf("%v claimed by %s and %s", j.Key(), prev, holder)
					}
					claimed[j.Key()] = holder
					if j.Attempts != 1 {
						t.Errorf("first claim of %v: attempts %d", j.Key(), j.Attempts)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != 3 {
		t.Fatalf("claimed %v", claimed)
	}
	if jobs, err := s.ClaimAnalyses(c, analysis.Claim{Holder: "daemon-c", Now: time.Now(), TTL: time.Hour, Limit: 10}); err != nil || len(jobs) != 0 {
		t.Fatalf("every job is leased: %+v %v", jobs, err)
	}
	if q, _ := s.AnalysisQueue(c); q != (analysis.QueueLength{Running: 3}) {
		t.Fatalf("queue length while running %+v", q)
	}
	lp := analysis.Key{Ecosystem: "npm", Name: "left-pad", Version: "1.0.1"}
	// The lease of a daemon that stopped expires: another claims the job.
	later := time.Now().Add(2 * time.Hour)
	jobs, err := s.ClaimAnalyses(c, analysis.Claim{Holder: "daemon-c", Now: later, TTL: time.Hour, Limit: 10})
	if err != nil || len(jobs) != 3 || jobs[0].Attempts != 2 {
		t.Fatalf("expired leases are claimed again: %+v %v", jobs, err)
	}
	res := analysis.Result{Verdict: analysis.VerdictSuspicious, Score: 7, Analyzers: []string{"rules"},
		Findings: []analysis.Finding{{Rule: "npm_exfil_env", Severity: analysis.SeverityCritical, File: "index.js", Line: 3, Excerpt: "fetch(x)", New: true}}}
	if _, err := s.FinishAnalysis(c, analysis.Outcome{Key: lp, Holder: claimed[lp], Digest: "ab", Result: res, At: now()}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("the former holder stores nothing: %v", err)
	}
	e, err := s.FinishAnalysis(c, analysis.Outcome{Key: lp, Holder: "daemon-c", Digest: "ab", Result: res, At: now()})
	if err != nil || e.State != analysis.StateDone || e.Digest != "ab" || e.Result.Score != 7 || len(e.Result.Findings) != 1 || e.Result.Findings[0].Line != 3 || e.ReportID != "" || e.Attempts != 2 {
		t.Fatalf("finish: %+v %v", e, err)
	}
	// Its report, pending, holds it; once reviewed it holds no more.
	u := user(t, s, "analysis@"+core.SourceUserDomain)
	r := report(t, u.ID, core.TypePackage, "npm", "left-pad")
	create(t, s, r)
	if err := s.LinkAnalysisReport(c, analysis.ReportLink{Key: lp, ReportID: r.ID}); err != nil {
		t.Fatal(err)
	}
	holds, err := s.AnalysisHolds(c, analysis.HoldQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var suspect *analysis.Hold
	unfinished := 0
	for i, h := range holds {
		if h.Suspect {
			suspect = &holds[i]
		}
		if h.Unfinished {
			unfinished++
		}
	}
	if unfinished != 2 || suspect == nil || suspect.Key != lp || suspect.ReportID != r.ID || suspect.Strongest != "npm_exfil_env in index.js:3" || len(suspect.Findings) != 1 {
		t.Fatalf("holds %+v", holds)
	}
	if es, err := s.AnalysesOfReports(c, []string{r.ID, "other"}); err != nil || len(es) != 1 || es[0].Key() != lp {
		t.Fatalf("by report: %+v %v", es, err)
	}
	if e, err := s.Analysis(c, lp); err != nil || e.ReportID != r.ID || e.ReportStatus != string(core.StatusPending) {
		t.Fatalf("read: %+v %v", e, err)
	}
	if _, err := s.ReviewThreat(c, core.Review{ThreatID: r.ID, Decision: core.DecisionReject, ActorName: "Rita", Note: "benign", At: now()}); err != nil {
		t.Fatal(err)
	}
	holds, _ = s.AnalysisHolds(c, analysis.HoldQuery{Limit: 100})
	for _, h := range holds {
		if h.Suspect {
			t.Fatalf("a rejected report holds nothing: %+v", h)
		}
	}
	// Forced, a done version is queued again, its report kept.
	got, err = s.QueueAnalyses(c, analysis.QueueRequest{Jobs: []analysis.Job{{Ecosystem: "npm", Name: "left-pad", Version: "1.0.1", RequestedBy: "rita@example.com"}}, Force: true})
	if err != nil || got.Queued != 1 {
		t.Fatalf("forced: %+v %v", got, err)
	}
	if e, _ := s.Analysis(c, lp); e.State != analysis.StateQueued || e.RequestedBy != "rita@example.com" || e.ReportID != r.ID || e.Result.Verdict != analysis.VerdictSuspicious {
		t.Fatalf("queued again: %+v", e)
	}
	if _, err := s.ClaimAnalyses(c, analysis.Claim{Holder: "x", Now: now(), TTL: time.Hour, Limit: analysis.MaxClaim + 1}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("claim over the bound: %v", err)
	}
	var _ port.Store = s
}
