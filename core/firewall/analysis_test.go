package firewall

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core/analysis"
)

// TestAnalysisRules: a version with a pending analysis report is held by
// the suspicious rule (before its quarantine), with its findings, and a
// waiver lifts it; a version whose quarantine ended while its analysis
// runs is held for at most analysis.max_wait, and renderings that hold it
// are judged again soon; a version seen young is queued once.
func TestAnalysisRules(t *testing.T) {
	t.Parallel()
	p, _ := NewPolicy(matcher{}, nil, served)
	if err := p.Configure(Settings{Quarantine: Quarantine{Default: 48 * time.Hour, UntilAnalysed: true, MaxWait: 24 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	a := NewAnalyses()
	var queued []analysis.Key
	a.Queue = func(k analysis.Key) bool { queued = append(queued, k); return true }
	p.SetAnalyses(a)
	f := analysis.Finding{Rule: "npm_install_exfil", Severity: analysis.SeverityCritical, File: "index.js", Line: 3, New: true}
	a.Set([]analysis.Hold{
		{Key: analysis.Key{Ecosystem: "npm", Name: "evil", Version: "1.0.1"}, Suspect: true, ReportID: "r1", Strongest: "npm_install_exfil in index.js:3", Findings: []analysis.Finding{f}},
		{Key: analysis.Key{Ecosystem: "npm", Name: "slow", Version: "2.0.0"}, Unfinished: true},
		{Key: analysis.Key{Ecosystem: "pypi", Name: "my-lib", Version: "1.0"}, Unfinished: true},
	})
	now := time.Now()
	v, err := p.Lookup(context.Background(), "npm", "Evil")
	if err != nil {
		t.Fatal(err)
	}
	r := p.Decide(v, "1.0.1", Facts{Published: now.Add(-time.Hour)}, now, nil)
	if r.Rule != RuleSuspicious || r.Action != ActionBlock || len(r.Findings) != 1 || !r.Until.IsZero() ||
		r.Message != "Held by threatd: npm Evil@1.0.1 is suspicious (npm_install_exfil in index.js:3); a reviewer decides" {
		t.Fatalf("suspicious: %+v", r)
	}
	if !strings.Contains(v.Fingerprint(), "analysis:1.0.1:r1") {
		t.Fatalf("a suspect is part of the fingerprint: %q", v.Fingerprint())
	}
	ws := NewWaivers([]Waiver{{ID: "w", Ecosystem: "npm", Name: "evil", Version: "1.0.1", Rule: RuleSuspicious, Until: now.Add(time.Hour)}})
	lower, _ := p.Lookup(context.Background(), "npm", "evil")
	if r := p.Decide(lower, "1.0.1", Facts{Published: now.Add(-72 * time.Hour)}, now, ws); r.Action != ActionWaived || r.Rule != RuleSuspicious {
		t.Fatalf("waived: %+v", r)
	}
	if r := p.Decide(v, "1.0.0", Facts{Published: now.Add(-72 * time.Hour)}, now, nil); r.Action != "" {
		t.Fatalf("another version: %+v", r)
	}

	slow, _ := p.Lookup(context.Background(), "npm", "slow")
	if slow.Fingerprint() != "" {
		t.Fatalf("an unfinished analysis changes no fingerprint: %q", slow.Fingerprint())
	}
	for _, c := range []struct {
		age  time.Duration
		rule string
	}{{50 * time.Hour, RuleQuarantine}, {71 * time.Hour, RuleQuarantine}, {73 * time.Hour, ""}} {
		r := p.Decide(slow, "2.0.0", Facts{Published: now.Add(-c.age)}, now, nil)
		if r.Rule != c.rule {
			t.Fatalf("published %s ago: %+v", c.age, r)
		}
		if c.rule != "" && (!strings.Contains(r.Message, "is being analysed; its quarantine of 2d ended") || r.Recheck.Sub(now) != AnalysisRecheck ||
			!r.Until.Equal(now.Add(-c.age).Add(72*time.Hour).UTC())) {
			t.Fatalf("waiting: %+v", r)
		}
	}
	if r := p.Decide(slow, "2.0.1", Facts{Published: now.Add(-50 * time.Hour)}, now, nil); r.Rule != "" {
		t.Fatalf("a version whose analysis ended: %+v", r)
	}
	py, _ := p.Lookup(context.Background(), "pypi", "My_Lib")
	if r := p.Decide(py, "1.0", Facts{Published: now.Add(-50 * time.Hour)}, now, nil); r.Rule != RuleQuarantine {
		t.Fatalf("PyPI names fold: %+v", r)
	}

	// A young version is queued as it is judged, once; seen past its
	// quarantine for the first time, it waits for its analysis.
	g := &Gate{Policy: p, Adapters: map[string]Adapter{}}
	fresh, _ := p.Lookup(context.Background(), "npm", "fresh")
	if r := g.Version(fresh, "1.0.0", map[string]Facts{"1.0.0": {Published: now.Add(-50 * time.Hour)}}); r.Rule != RuleQuarantine || r.Recheck.IsZero() {
		t.Fatalf("first seen past its quarantine: %+v", r)
	}
	if r := g.Version(fresh, "0.9.0", map[string]Facts{"0.9.0": {Published: now.Add(-100 * time.Hour)}}); r.Rule != "" {
		t.Fatalf("past the wait: %+v", r)
	}
	if len(queued) != 1 || queued[0] != (analysis.Key{Ecosystem: "npm", Name: "fresh", Version: "1.0.0"}) {
		t.Fatalf("queued %v", queued)
	}
}
