package api

import (
	"context"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/index"
)

// While the index of verified reports loads at start, the daemon answers:
// /healthz says "starting" with progress (503), checks answer 503 with
// Retry-After, and other routes work; once loaded, checks are answered.
func TestStartingIndex(t *testing.T) {
	f := newChain(t, 0, 0)
	f.srv.index = index.New(f.srv.store, 100) // as at start: not loaded yet
	r := f.do(t, "GET", "/healthz", "", "")
	if r.code != 503 || r.body["status"] != "starting" {
		t.Fatalf("healthz while loading: %d %v", r.code, r.body)
	}
	idx, _ := r.body["index"].(map[string]any)
	if idx["loaded"] != false || idx["progress"] == nil {
		t.Fatalf("healthz index while loading: %v", idx)
	}
	r = f.do(t, "GET", "/functions/v1/check-malicious?report_type=package&resource_identifier=x&ecosystem=npm", f.free, "")
	if r.code != 503 || r.hdr.Get("Retry-After") != "1" || !strings.Contains(r.body["error"].(string), "index of verified reports is loading") {
		t.Fatalf("check while loading: %d %v %v", r.code, r.hdr, r.body)
	}
	// The registry firewall fails closed: a partial index would let malicious versions through.
	r = f.do(t, "GET", "/functions/v1/firewall/npm/left-pad", f.free, "")
	if r.code != 503 || r.hdr.Get("Retry-After") != "1" {
		t.Fatalf("firewall while loading: %d %v %v", r.code, r.hdr, r.body)
	}
	r = f.do(t, "POST", "/functions/v1/check-malicious", f.free, `{"queries":[]}`)
	if r.code != 503 {
		t.Fatalf("batch check while loading: %d %v", r.code, r.body)
	}
	if r := f.do(t, "GET", "/functions/v1/account", f.free, ""); r.code != 200 {
		t.Fatalf("account while loading: %d %v", r.code, r.body)
	}

	if err := f.srv.index.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := f.do(t, "GET", "/healthz", "", ""); r.code != 200 || r.body["status"] != "ok" {
		t.Fatalf("healthz once loaded: %d %v", r.code, r.body)
	}
	r = f.do(t, "GET", "/functions/v1/check-malicious?report_type=package&resource_identifier=x&ecosystem=npm", f.free, "")
	if r.code != 200 || r.body["malicious"] != false {
		t.Fatalf("check once loaded: %d %v", r.code, r.body)
	}
	// Loaded, the firewall asks its upstream (here one that does not answer).
	if r := f.do(t, "GET", "/functions/v1/firewall/npm/left-pad", f.free, ""); r.code != 502 {
		t.Fatalf("firewall once loaded, upstream down: %d %v", r.code, r.body)
	}
}

// The firewall's budgets are its own: firewall.per_token_per_minute counts
// firewall requests only, with the RateLimit-* headers of every answer.
func TestFirewallTokenBudget(t *testing.T) {
	f := newChain(t, 0, 1)
	f.srv.opts.Firewall.PerTokenPerMinute = 2
	for i := range 2 {
		if r := f.do(t, "GET", "/functions/v1/firewall/npm/left-pad", f.free, ""); r.code != 502 || r.hdr.Get("RateLimit-Limit") != "2" {
			t.Fatalf("firewall request %d: %d %v", i, r.code, r.hdr)
		}
	}
	r := f.do(t, "GET", "/functions/v1/firewall/npm/left-pad", f.free, "")
	if r.code != 429 || r.hdr.Get("Retry-After") == "" || !strings.Contains(r.body["error"].(string), "the firewall allows 2 requests per minute") {
		t.Fatalf("third firewall request: %d %v", r.code, r.body)
	}
	// The API's own budget (1 per minute here) is untouched by them.
	if r := f.do(t, "GET", "/functions/v1/account", f.free, ""); r.code != 200 {
		t.Fatalf("account after the firewall's budget ran out: %d %v", r.code, r.body)
	}
}
