package main_test

import (
	"fmt"
	"strings"
	"testing"
)

// A review decision applies to the text the reviewer read (docs/cli.md, review):
// an owner's edit between `review show` and `review verify` bumps the
// report's version, and a decision on the old version is refused and changes
// nothing.
func TestReviewDecidesOnTheVersionItRead(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	owner := in.user("owner@example.com")
	in.mustCLI("user", "add", "--email", "rita@example.com", "--role", "reviewer")
	d := in.serve()
	// A payload that would hide its end on a terminal: a carriage return
	// and a right-to-left override.
	r := d.do("POST", base+"/submit-threat-report", owner, `{"report_type":"package","resource_identifier":"versioned-pkg","registry":"npm",
		"threat_description":"Steals tokens","payload_description":"first line\rhidden \u202eevil","version_info":"1.0.0,1.0.1 , 2.0.0"}`).expect(t, 201, "")
	id := r.body["threat_id"].(string)

	list := in.mustCLI("review", "list")
	if !strings.Contains(list, "VERSION") || !strings.Contains(list, id+"  1 ") {
		t.Fatalf("review list lacks the version:\n%s", list)
	}
	show := in.mustCLI("review", "show", id)
	for _, want := range []string{"VERSION       1", "STATUS        pending", `first line\rhidden <U+202E>evil`, "VERSIONS      1.0.0,1.0.1 , 2.0.0",
		"threatd review verify " + id + " --version 1"} {
		if !strings.Contains(show, want) {
			t.Fatalf("review show lacks %q:\n%s", want, show)
		}
	}

	// The owner edits the pending report after the reviewer read it.
	d.do("PUT", base+"/modify-threat-report", owner, fmt.Sprintf(`{"threat_id":%q,"threat_description":"Steals tokens and wallets"}`, id)).expect(t, 200, "")
	stale := in.cli("review", "verify", id, "--as", "rita@example.com")
	if stale.code == 0 || !strings.Contains(stale.stderr, "is at version 2, not 1") {
		t.Fatalf("verify of version 1 after an edit: exit %d\n%s%s", stale.code, stale.stdout, stale.stderr)
	}
	if c := d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=versioned-pkg", owner, ""); c.body["malicious"] != false {
		t.Fatalf("a refused decision published the report: %s", c.raw)
	}
	show = in.mustCLI("review", "show", id)
	if !strings.Contains(show, "VERSION       2") || !strings.Contains(show, "Steals tokens and wallets") || !strings.Contains(show, "revise by") {
		t.Fatalf("review show after the edit:\n%s", show)
	}
	if out := in.mustCLI("review", "verify", id, "--version", "2", "--as", "rita@example.com"); !strings.Contains(out, "version 2 is now verified") {
		t.Fatalf("verify of the current version: %s", out)
	}
	eventually(t, "the verified report to be served", func() bool {
		c := d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=versioned-pkg", owner, "")
		details, _ := c.body["details"].(map[string]any)
		return c.body["malicious"] == true && details["threat_description"] == "Steals tokens and wallets" && details["version_info"] == "1.0.0,1.0.1 , 2.0.0"
	})

	// Withdrawing names the version too; a bad --version is refused.
	if r := in.cli("review", "reject", id, "--note", "duplicate"); r.code == 0 || !strings.Contains(r.stderr, "is at version 2, not 1") {
		t.Fatalf("reject of version 1: exit %d %s", r.code, r.stderr)
	}
	if r := in.cli("review", "reject", id, "--note", "duplicate", "--version", "0"); r.code == 0 || !strings.Contains(r.stderr, "invalid --version") {
		t.Fatalf("--version 0: exit %d %s", r.code, r.stderr)
	}
	in.mustCLI("review", "reject", id, "--note", "duplicate", "--version", "2")
	if show = in.mustCLI("review", "show", id); !strings.Contains(show, "STATUS        rejected") {
		t.Fatalf("after the withdrawal:\n%s", show)
	}
	if r := in.cli("review", "show", "00000000-0000-7000-8000-000000000000"); r.code == 0 {
		t.Fatalf("show of an unknown id succeeded: %s", r.stdout)
	}
}

// TestReviewListShowsEveryPendingReport: review list prints every pending
// report (it printed the first 10,000 as "10000 pending report(s)"), and
// with --limit says how many it left out and how to see them.
func TestReviewListShowsEveryPendingReport(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("sub@example.com")
	d := in.serve()
	var ids []string
	for i := range 5 {
		ids = append(ids, d.submit(tok, fmt.Sprintf(`{"report_type":"domain","resource_identifier":"queue-%d.example","threat_description":"x"}`, i)))
	}
	r := in.cli("review", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "5 pending report(s)") {
		t.Fatalf("review list: exit %d\n%s", r.code, r.stderr)
	}
	for _, id := range ids {
		if !strings.Contains(r.stdout, id) {
			t.Fatalf("review list lacks %s:\n%s", id, r.stdout)
		}
	}
	r = in.cli("review", "list", "--limit", "2")
	if r.code != 0 || !strings.Contains(r.stderr, "showing 2 of 5 pending report(s) (--limit 0 lists them all)") ||
		!strings.Contains(r.stdout, ids[0]) || !strings.Contains(r.stdout, ids[1]) || strings.Contains(r.stdout, ids[2]) {
		t.Fatalf("review list --limit 2: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := in.cli("review", "list", "--limit", "-1"); r.code == 0 || !strings.Contains(r.stderr, "invalid --limit -1") {
		t.Fatalf("--limit -1: exit %d %s", r.code, r.stderr)
	}
}
