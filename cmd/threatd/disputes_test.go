package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage/pgtest"
)

// TestDisputesTwoDaemonsOnPostgres: two daemons on one PostgreSQL
// database. Three distinct users' false-positive votes (the submitter's
// own not counted), sent to either daemon, put a verified report in
// dispute: it stays published, both daemons' records say disputed with a
// lower confidence, review list and show list the votes and notes, a
// webhook says threat.disputed. A reviewer keeps it (a note required):
// both daemons show it closed, threat.kept is delivered, the history
// keeps both steps, and the same voters cannot reopen it.
func TestDisputesTwoDaemonsOnPostgres(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	dsn := pgtest.Server(t).Database(t, t.Name())
	in := newInstance(t, fmt.Sprintf("storage:\n  plugin: postgres\n  dsn: %q\n", dsn)+quiet+"  new_user_max_unverified: 0\n"+hookConfig)
	in.mustCLI("migrate")
	addWebhook(t, in, "--url", r.srv.URL, "--events", "threat.disputed,threat.kept")
	submitter := in.user("dev@example.com")
	var voters []string
	for i := range 4 {
		voters = append(voters, in.user(fmt.Sprintf("voter%d@example.com", i)))
	}
	a, b := in.serve(), in.serve()
	id := a.submit(submitter, `{"report_type":"package","resource_identifier":"disputed-pkg","registry":"npm","threat_description":"Steals tokens","severity_level":"high"}`)
	in.mustCLI("review", "verify", id)
	check := base + "/check-malicious?report_type=package&resource_identifier=disputed-pkg&ecosystem=npm"
	details := func(d *daemon) map[string]any {
		m, _ := d.do("GET", check, voters[0], "").body["details"].(map[string]any)
		return m
	}
	// Its submitter's record (one verified report) counts in its
	// confidence once each daemon has read it.
	record := core.SubmitterRecord{Verified: 1}.Score()
	for _, d := range []*daemon{a, b} {
		apitest.Eventually(t, "the report verified, its submitter's record read", 10*time.Second, func() bool {
			m := details(d)
			return m != nil && m["confidence"] == float64(core.Confidence(core.ConfidenceInput{Record: record}))
		})
	}
	vote := func(d *daemon, tok, note string) response {
		return d.do("POST", base+"/sightings", tok, fmt.Sprintf(`{"threat_id":%q,"type":"false_positive","note":%q}`, id, note))
	}
	for i, v := range []struct {
		d    *daemon
		tok  string
		note string
	}{{a, submitter, "my own report is wrong"}, {a, voters[0], "it is our internal package"}, {b, voters[1], "published by our CI"}} {
		if r := vote(v.d, v.tok, v.note); r.code != 201 {
			t.Fatalf("vote %d: %d %s", i, r.code, r.raw)
		}
	}
	if d := details(a); d["disputed"] != false {
		t.Fatalf("disputed by two counted votes: %v", d["disputed"])
	}
	if r := vote(b, voters[0], "again"); r.code != 409 {
		t.Fatalf("a second vote by the same user on the other daemon: %d %s", r.code, r.raw)
	}
	if r := vote(b, voters[2], "a **false** positive"); r.code != 201 {
		t.Fatalf("third counted vote: %d %s", r.code, r.raw)
	}
	disputed := float64(core.Confidence(core.ConfidenceInput{Votes: 3, Disputed: true, Record: record}))
	for name, d := range map[string]*daemon{"a": a, "b": b} {
		eventually(t, "daemon "+name+" shows the dispute", func() bool {
			m := details(d)
			return m["disputed"] == true && m["confidence"] == disputed && m["status"] == "verified"
		})
	}
	apitest.Eventually(t, "threat.disputed delivered", 20*time.Second, func() bool { return len(r.delivered("threat.disputed", id)) == 1 })

	list := in.mustCLI("review", "list")
	if !strings.Contains(list, "DISPUTED") || !strings.Contains(list, id) || !strings.Contains(list, "3 votes") ||
		!strings.Contains(list, "published by our CI") || strings.Contains(list, "my own report is wrong") {
		t.Fatalf("review list:\n%s", list)
	}
	show := in.mustCLI("review", "show", id)
	if !strings.Contains(show, "DISPUTED since") || !strings.Contains(show, "a **false** positive") || !strings.Contains(show, "dispute by threatd") {
		t.Fatalf("review show:\n%s", show)
	}

	if r := in.cli("review", "keep", id); r.code == 0 || !strings.Contains(r.stderr, "note") {
		t.Fatalf("keep without a note: %d %s", r.code, r.stderr)
	}
	in.mustCLI("review", "keep", id, "--note", "the payload is real: see the evidence")
	base50 := float64(core.Confidence(core.ConfidenceInput{Record: record}))
	for name, d := range map[string]*daemon{"a": a, "b": b} {
		eventually(t, "daemon "+name+" shows the dispute closed", func() bool {
			m := details(d)
			return m["disputed"] == false && m["confidence"] == base50
		})
	}
	apitest.Eventually(t, "threat.kept delivered", 20*time.Second, func() bool { return len(r.delivered("threat.kept", id)) == 1 })
	if show := in.mustCLI("review", "show", id); !strings.Contains(show, "keep by threatd: the payload is real") || strings.Contains(show, "DISPUTED since") {
		t.Fatalf("review show after keep:\n%s", show)
	}
	if r := in.cli("review", "keep", id, "--note", "again"); r.code == 0 || !strings.Contains(r.stderr, "not disputed") {
		t.Fatalf("keeping an undisputed report: %d %s", r.code, r.stderr)
	}
	// The same voters cannot reopen it; a new voter without a record of
	// their own is not counted once a reviewer kept it.
	for _, tok := range voters[:3] {
		if r := vote(a, tok, "still wrong"); r.code != 409 {
			t.Fatalf("a vote after keep by a voter of the dispute: %d", r.code)
		}
	}
	if r := vote(a, voters[3], "new voter"); r.code != 201 {
		t.Fatalf("a new voter: %d", r.code)
	}
	time.Sleep(2 * freshness)
	if m := details(b); m["disputed"] != false || m["confidence"] != float64(core.Confidence(core.ConfidenceInput{Record: record})) {
		t.Fatalf("after a fresh account's vote: disputed %v confidence %v", m["disputed"], m["confidence"])
	}
	if list := in.mustCLI("review", "list"); strings.Contains(list, "DISPUTED") {
		t.Fatalf("review list after keep:\n%s", list)
	}
}
