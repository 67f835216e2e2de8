package main_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core"
)

// TestReputation: over real HTTPS, review decisions earn and cost points
// (a verified high report 30, a rejected one -10, an approved revision 5),
// a duplicate earns nothing and is counted; /account says so; the public
// profile and the leaderboard show them without an e-mail address; the
// submitter's record moves the confidence of their reports; sightings,
// one's own included, earn nothing.
func TestReputation(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("zoe@example.com", "--name", "Zoe")
	other := in.user("max@example.com", "--name", "Max")
	d := in.serve()
	high := d.submit(tok, `{"report_type":"package","resource_identifier":"rep-high","registry":"npm","threat_description":"Steals tokens","severity_level":"high"}`)
	low := d.submit(tok, `{"report_type":"package","resource_identifier":"rep-low","registry":"npm","threat_description":"Typosquat"}`)
	bad := d.submit(tok, `{"report_type":"domain","resource_identifier":"not-bad.example","threat_description":"Looked odd"}`)
	in.mustCLI("review", "verify", high)
	in.mustCLI("review", "verify", low)
	in.mustCLI("review", "reject", bad, "--note", "a false positive")
	// A duplicate of a verified report: refused, counted.
	if r := d.do("POST", base+"/submit-threat-report", tok, `{"report_type":"package","resource_identifier":"rep-high","registry":"npm","threat_description":"again"}`); r.code != 409 {
		t.Fatalf("duplicate: %d %s", r.code, r.raw)
	}
	// Max proposes a revision that is approved.
	d.do("PUT", base+"/modify-threat-report", other, `{"threat_id":"`+low+`","publisher":"mallory"}`).expect(t, 200, "")
	list := in.mustCLI("review", "list")
	m := regexp.MustCompile(`REV ([0-9a-f-]{36})`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no pending revision listed:\n%s", list)
	}
	in.mustCLI("review", "approve-revision", m[1])
	// Sightings, one's own included, earn nothing.
	for range 3 {
		if r := d.do("POST", base+"/sightings", tok, `{"threat_id":"`+high+`","type":"seen"}`); r.code != 201 {
			t.Fatalf("sighting: %d %s", r.code, r.raw)
		}
	}

	acc := d.do("GET", base+"/account", tok, "")
	if acc.body["points"] != 30.0+10-10 || acc.body["verified"] != 2.0 || acc.body["rejected"] != 1.0 || acc.body["duplicates"] != 1.0 {
		t.Fatalf("account: %s", acc.raw)
	}
	if acc := d.do("GET", base+"/account", other, ""); acc.body["points"] != 5.0 || acc.body["verified"] != 0.0 {
		t.Fatalf("the proposer's account: %s", acc.raw)
	}

	web := in.browser(d)
	page := web.get("/users/Zoe").expect(t, 200, "Zoe", "rep-high", "/threats/"+high, "(+30)", "(-10)", "a duplicate of an existing report")
	if strings.Contains(page.body, "zoe@example.com") || strings.Contains(page.body, "not-bad.example") {
		t.Fatal("the profile shows an e-mail address or a rejected report's subject")
	}
	web.get("/users/Nobody").expect(t, 404)
	board := web.get("/leaderboard?period=all").expect(t, 200, `href="/users/Zoe"`, `href="/users/Max"`)
	if strings.Index(board.body, "/users/Zoe") > strings.Index(board.body, "/users/Max") {
		t.Fatal("the leaderboard does not rank by points")
	}
	web.get("/leaderboard?period=30d").expect(t, 200, `href="/users/Zoe"`)
	web.get("/leaderboard?period=1w").expect(t, 400)

	// Zoe's record (2 verified, 1 rejected) is in her reports' confidence;
	// her own sightings of her report are counted, never weighed.
	want := float64(core.Confidence(core.ConfidenceInput{Record: core.SubmitterRecord{Verified: 2, Rejected: 1}.Score()}))
	defer func() {
		if t.Failed() {
			t.Log(d.do("GET", base+"/threats/"+high+"/sightings", tok, "").raw)
		}
	}()
	apitest.Eventually(t, "the submitter's record in the confidence", 15*time.Second, func() bool {
		r := d.do("GET", base+"/check-malicious?report_type=package&resource_identifier=rep-high&ecosystem=npm", other, "")
		det, _ := r.body["details"].(map[string]any)
		if det != nil && det["confidence"] != want {
			t.Logf("confidence %v, want %v: %v", det["confidence"], want, det["sightings"])
		}
		return det != nil && det["confidence"] == want
	})
}
