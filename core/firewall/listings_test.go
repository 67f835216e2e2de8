package firewall

import (
	"strings"
	"testing"
	"time"
)

// A version that appears after its package was first listed appeared
// then, whatever its registry's time; the first listing's versions, and
// requests before any listing, say nothing.
func TestListingsAppeared(t *testing.T) {
	l := NewListings()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if got := l.Appeared("go", "example.com/m", []string{"v1.2.0"}, false, t0); got != nil {
		t.Fatalf("a request before any listing: %v", got)
	}
	if got := l.Appeared("go", "example.com/m", []string{"v1.0.0", "v1.1.0"}, true, t0); got != nil {
		t.Fatalf("the first listing: %v", got)
	}
	if got := l.Appeared("go", "example.com/m", []string{"v1.0.0"}, false, t0.Add(2*time.Second)); got != nil {
		t.Fatalf("a listed version asked for: %v", got)
	}
	later := t0.Add(time.Hour)
	got := l.Appeared("go", "example.com/m", []string{"v1.0.0", "v1.1.0", "v1.3.0"}, true, later)
	if len(got) != 1 || !got["v1.3.0"].Equal(later) {
		t.Fatalf("a version that appeared: %v", got)
	}
	if got := l.Appeared("go", "example.com/m", []string{"v1.3.0", "v1.4.0"}, false, later.Add(time.Hour)); !got["v1.3.0"].Equal(later) || !got["v1.4.0"].Equal(later.Add(time.Hour)) {
		t.Fatalf("appeared stays when it appeared; one asked for directly appears then: %v", got)
	}
	var nilListings *Listings
	if nilListings.Appeared("go", "x", []string{"v1"}, true, t0) != nil {
		t.Fatal("a nil Listings remembers nothing")
	}
}

// A version that appeared recently is held from then, with both times in
// the message; a version past FactsPerDocument is not held by a listing.
func TestDecideAppearedAndUnjudged(t *testing.T) {
	p, _ := NewPolicy(matcher{}, nil, served)
	if err := p.Configure(Settings{Quarantine: Quarantine{Default: 48 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	v := Verdict{Registry: "go", Name: "example.com/m"}
	r := p.Decide(v, "v1.3.0", Facts{Published: now.AddDate(-1, 0, 0), Appeared: now.Add(-time.Hour)}, now, nil)
	if !r.Refused() || r.Rule != "quarantine" || !strings.Contains(r.Message, "Held by threatd: go example.com/m@v1.3.0 appeared 1h ago (its registry dates it 2025-11-27); quarantine is 2d") {
		t.Fatalf("appeared: %+v", r)
	}
	if r := p.Decide(v, "v1.0.0", Facts{Unjudged: true}, now, nil); r.Refused() || r.Action != "" {
		t.Fatalf("unjudged: %+v", r)
	}
}
