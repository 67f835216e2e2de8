package api

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
)

// query-latest is answered from memory until a verified report changes:
// a pending submission leaves the cached answer (and the index version)
// alone; a verification, once the follower applies it, replaces it.
func TestQueryLatestCache(t *testing.T) {
	ctx := context.Background()
	f := newChain(t, 0, 0)
	follower := &index.Follower{Store: f.srv.store, Index: f.srv.index, Principals: f.srv.principals, Log: slog.New(slog.DiscardHandler)}
	latest := func() int {
		r := f.do(t, "GET", "/functions/v1/query-latest", f.free, "")
		if r.code != 200 {
			t.Fatalf("query-latest: %d %v", r.code, r.body)
		}
		return int(r.body["count"].(float64))
	}
	if n := latest(); n != 0 {
		t.Fatalf("%d reports at first", n)
	}
	reports := core.NewReports(f.srv.store, core.Limits{})
	p, err := f.srv.accounts.Authenticate(ctx, f.paid)
	if err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	th, err := reports.Submit(ctx, p, core.Submission{ReportType: s("package"), ResourceIdentifier: s("cached-pkg"), Registry: s("npm"), ThreatDescription: s("x"), ContactEmail: s("reporter@example.org")})
	if err != nil {
		t.Fatal(err)
	}
	v := f.srv.index.Version()
	if err := follower.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if f.srv.index.Version() != v {
		t.Fatal("a pending submission moved the index version")
	}
	if _, err := reports.Decide(ctx, th.ID, 0, core.DecisionVerify, "", nil); err != nil {
		t.Fatal(err)
	}
	if n := latest(); n != 0 {
		t.Fatalf("%d reports before the follower applied the verification: not served from the cache", n)
	}
	if err := follower.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if n := latest(); n != 1 {
		t.Fatalf("%d reports after the verification was applied, want 1", n)
	}

	// The rendered body is shared by callers who may not see contact
	// e-mails; the submitter still sees the report's.
	contact := func(token string) any {
		r := f.do(t, "GET", "/functions/v1/query-latest", token, "")
		if r.code != 200 || r.hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("query-latest: %d %s %v", r.code, r.hdr.Get("Content-Type"), r.body)
		}
		return r.body["threats"].([]any)[0].(map[string]any)["contact_email"]
	}
	for range 2 {
		if c := contact(f.free); c != nil {
			t.Fatalf("another user sees the contact e-mail %v", c)
		}
		if c := contact(f.paid); c != "reporter@example.org" {
			t.Fatalf("the submitter sees contact e-mail %v", c)
		}
	}
}

// A request whose client has gone (its context cancelled) is answered 499
// and not counted as a server failure.
func TestClientClosedRequest(t *testing.T) {
	f := newChain(t, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest("GET", "/functions/v1/query-latest", nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+f.free)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 499 || !strings.Contains(rec.Body.String(), "The client closed the request") {
		t.Fatalf("cancelled request: %d %s", rec.Code, rec.Body.String())
	}
}
