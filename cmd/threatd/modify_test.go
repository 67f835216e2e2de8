package main_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

var revLine = regexp.MustCompile(`REV ([0-9a-f-]{36})  revision (\d+) of ([0-9a-f-]{36})`)

func TestModify(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	owner := in.user("owner@example.com")
	other := in.user("other@example.com", "--name", "Olga")
	d := in.serve()
	id := d.submit(owner, `{"report_type":"package","resource_identifier":"mod-lib","registry":"npm","threat_description":"Steals tokens","tags":["stealer"]}`)
	put := func(token, body string) response { return d.do("PUT", base+"/modify-threat-report", token, body) }
	q := checkPath("report_type", "package", "resource_identifier", "mod-lib", "ecosystem", "npm")

	// The owner's change to a pending report applies at once.
	r := put(owner, fmt.Sprintf(`{"threat_id":%q,"publisher":"mallory","severity_level":"high"}`, id)).expect(t, 200, "")
	if r.body["threat_id"] != id || r.body["status"] != "pending" || r.body["revision"] != float64(1) || r.body["message"] != "Threat report updated" {
		t.Fatalf("owner edit: %v", r.body)
	}
	// Someone else's change to a pending report waits for review.
	r = put(other, fmt.Sprintf(`{"threat_id":%q,"version_info":"1.0.0"}`, id)).expect(t, 200, "")
	if r.body["status"] != "pending" || r.body["revision"] != float64(2) || !strings.Contains(r.body["message"].(string), "pending review") {
		t.Fatalf("other's edit: %v", r.body)
	}
	// The owner's edit made it version 2 (docs/cli.md, content versions).
	in.mustCLI("review", "verify", id, "--version", "2")
	var det map[string]any
	eventually(t, "verified", func() bool {
		det, _ = d.do("GET", q, owner, "").body["details"].(map[string]any)
		return det != nil
	})
	if det["publisher"] != "mallory" || det["severity_level"] != "high" || det["version_info"] != nil || det["revision"] != float64(1) {
		t.Fatalf("published record: %v", det)
	}
	// A change to a verified report, even by its owner, waits for review and
	// leaves the published record as it is.
	r = put(owner, fmt.Sprintf(`{"threat_id":%q,"threat_description":"Steals tokens and SSH keys","tags":[]}`, id)).expect(t, 200, "")
	if r.body["status"] != "verified" || r.body["revision"] != float64(3) {
		t.Fatalf("edit of a verified report: %v", r.body)
	}
	det = d.do("GET", q, owner, "").body["details"].(map[string]any)
	if det["threat_description"] != "Steals tokens" || len(det["tags"].([]any)) != 1 {
		t.Fatalf("published record changed before review: %v", det)
	}
	// Reviewers see the pending revisions as a diff.
	out := in.mustCLI("review", "list")
	if !strings.Contains(out, "threat_description:") || !strings.Contains(out, "+ Steals tokens and SSH keys") || !strings.Contains(out, "version_info:") {
		t.Fatalf("review list:\n%s", out)
	}
	var rev2, rev3 string
	for _, m := range revLine.FindAllStringSubmatch(out, -1) {
		switch m[2] {
		case "2":
			rev2 = m[1]
		case "3":
			rev3 = m[1]
		}
	}
	if rev2 == "" || rev3 == "" {
		t.Fatalf("pending revisions 2 and 3 not listed:\n%s", out)
	}
	in.mustCLI("review", "approve-revision", rev3, "--note", "confirmed")
	eventually(t, "approved revision published", func() bool {
		det = d.do("GET", q, owner, "").body["details"].(map[string]any)
		return det["threat_description"] == "Steals tokens and SSH keys"
	})
	if len(det["tags"].([]any)) != 0 || det["revision"] != float64(3) || det["publisher"] != "mallory" {
		t.Fatalf("after approval: %v", det)
	}
	out = in.mustCLI("review", "reject-revision", rev2, "--note", "versions unconfirmed")
	if !strings.Contains(out, "revision 2") || !strings.Contains(out, "rejected") {
		t.Fatalf("reject-revision: %s", out)
	}
	if r := in.cli("review", "reject-revision", rev2, "--note", "again"); r.code == 0 || !strings.Contains(r.stderr, "already rejected") {
		t.Fatalf("deciding twice: %+v", r)
	}
	if r := in.cli("review", "reject-revision", rev3); r.code == 0 || !strings.Contains(r.stderr, "note") {
		t.Fatalf("reject without a note: %+v", r)
	}
	time.Sleep(2 * freshness)
	if det = d.do("GET", q, owner, "").body["details"].(map[string]any); det["version_info"] != nil {
		t.Fatalf("rejected revision applied: %v", det)
	}

	// Errors.
	cases := []struct {
		body   string
		status int
		errSub string
	}{
		{fmt.Sprintf(`{"threat_id":%q,"report_type":"url"}`, id), 400, "report_type: cannot be changed"},
		{fmt.Sprintf(`{"threat_id":%q,"resource_identifier":"other-lib"}`, id), 400, "resource_identifier: cannot be changed"},
		{fmt.Sprintf(`{"threat_id":%q,"registry":"pypi"}`, id), 400, "registry: cannot be changed"},
		{fmt.Sprintf(`{"threat_id":%q,"resource_identifier":"MOD-LIB","registry":"npm","publisher":"m2"}`, id), 200, ""},
		{fmt.Sprintf(`{"threat_id":%q,"severity_level":"apocalyptic"}`, id), 400, "severity_level:"},
		{fmt.Sprintf(`{"threat_id":%q,"threat_description":""}`, id), 400, "threat_description:"},
		{fmt.Sprintf(`{"threat_id":%q,"colour":"red"}`, id), 400, "colour: is not a known field"},
		{fmt.Sprintf(`{"threat_id":%q}`, id), 400, "nothing to change"},
		{`{"publisher":"x"}`, 400, "threat_id: is required"},
		{`{"threat_id":"not-a-uuid","publisher":"x"}`, 400, "threat_id: must be a UUID"},
		{`{"threat_id":"00000000-0000-4000-8000-000000000000","publisher":"x"}`, 404, "Threat not found"},
	}
	for _, c := range cases {
		r := put(other, c.body)
		if r.code != c.status || c.errSub != "" && !strings.Contains(fmt.Sprint(r.body["error"]), c.errSub) {
			t.Errorf("%s: %d %v, want %d %q", c.body, r.code, r.body, c.status, c.errSub)
		}
	}
	d.do("POST", base+"/modify-threat-report", other, `{}`).expect(t, 405, "Method not allowed")

	// A rejected report cannot be modified. (Version 3: the owner's edit and
	// one approved revision were applied.)
	in.mustCLI("review", "reject", id, "--note", "withdrawn", "--version", "3")
	put(owner, fmt.Sprintf(`{"threat_id":%q,"publisher":"x"}`, id)).expect(t, 409, "This report was rejected and cannot be modified")

	// Every revision is kept.
	db := sqliteDB(t, in)
	if n := count(t, db, "SELECT count(*) FROM threat_revisions WHERE threat_id = '"+id+"'"); n != 4 {
		t.Fatalf("%d revisions kept, want 4", n)
	}
}

// evidence_references_add appends evidence instead of replacing it, also
// when two proposals wait for review at once; submit does not know it.
func TestModifyAddsEvidence(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	owner := in.user("owner@example.com")
	other := in.user("other@example.com")
	d := in.serve()
	id := d.submit(owner, `{"report_type":"package","resource_identifier":"evidence-lib","registry":"npm","threat_description":"Steals tokens","evidence_references":"https://a.example/1"}`)
	put := func(token, body string) response { return d.do("PUT", base+"/modify-threat-report", token, body) }
	q := checkPath("report_type", "package", "resource_identifier", "evidence-lib", "ecosystem", "npm")
	evidence := func() any {
		det, _ := d.do("GET", q, owner, "").body["details"].(map[string]any)
		return det["evidence_references"]
	}

	// The owner's addition to a pending report applies at once; a URL the
	// report lists already is not repeated.
	put(owner, fmt.Sprintf(`{"threat_id":%q,"evidence_references_add":" https://b.example/2 | https://a.example/1"}`, id)).expect(t, 200, "")
	in.mustCLI("review", "verify", id, "--version", "2")
	eventually(t, "verified", func() bool { return evidence() == "https://a.example/1|https://b.example/2" })

	// Two additions proposed by others on the verified report, approved in
	// turn, keep every link.
	put(other, fmt.Sprintf(`{"threat_id":%q,"evidence_references_add":"https://c.example/3"}`, id)).expect(t, 200, "")
	put(other, fmt.Sprintf(`{"threat_id":%q,"evidence_references_add":"https://d.example/4"}`, id)).expect(t, 200, "")
	out := in.mustCLI("review", "list")
	if !strings.Contains(out, "evidence_references:") || !strings.Contains(out, "+ https://a.example/1|https://b.example/2|https://d.example/4") {
		t.Fatalf("review list does not show the addition as a diff:\n%s", out)
	}
	for _, m := range revLine.FindAllStringSubmatch(out, -1) {
		in.mustCLI("review", "approve-revision", m[1])
	}
	want := "https://a.example/1|https://b.example/2|https://c.example/3|https://d.example/4"
	eventually(t, "both additions published", func() bool { return evidence() == want })

	// Both forms in one change: the list is replaced, then added to.
	put(other, fmt.Sprintf(`{"threat_id":%q,"evidence_references":"https://e.example/5","evidence_references_add":"https://f.example/6"}`, id)).expect(t, 200, "")
	out = in.mustCLI("review", "list")
	if !strings.Contains(out, "+ https://e.example/5|https://f.example/6") {
		t.Fatalf("replace then add:\n%s", out)
	}

	for _, c := range []struct{ body, err string }{
		{`"evidence_references_add":""`, "evidence_references_add: is empty"},
		{`"evidence_references_add":"ftp://x.example/a"`, "evidence_references_add: entry 0:"},
		{`"evidence_references_add":"https://x.example/a||https://y.example/b"`, "evidence_references_add: entry 1 is empty"},
		{`"evidence_references_add":["https://x.example/a"]`, "evidence_references_add"},
	} {
		r := put(other, fmt.Sprintf(`{"threat_id":%q,%s}`, id, c.body))
		if msg, _ := r.body["error"].(string); r.code != 400 || !strings.HasPrefix(msg, c.err) {
			t.Errorf("%s: %d %s, want 400 starting %q", c.body, r.code, r.raw, c.err)
		} else {
			t.Logf("%s: %s", c.body, msg)
		}
	}
	// Fifty in all is allowed; fifty-one is not.
	var links []string
	for i := range 46 {
		links = append(links, fmt.Sprintf("https://g.example/%d", i))
	}
	put(other, fmt.Sprintf(`{"threat_id":%q,"evidence_references_add":%q}`, id, strings.Join(links, "|"))).expect(t, 200, "")
	put(other, fmt.Sprintf(`{"threat_id":%q,"evidence_references_add":%q}`, id, strings.Join(links, "|")+"|https://h.example/0")).
		expect(t, 400, "evidence_references_add: would give the report 51 evidence URLs; at most 50 are kept")
	// A submission gives evidence_references; the addition is for modify only.
	d.do("POST", base+"/submit-threat-report", owner, `{"report_type":"url","resource_identifier":"https://evil.example/x","threat_description":"Phishing","evidence_references_add":"https://a.example/1"}`).
		expect(t, 400, "evidence_references_add: is not a known field")
	if got := evidence(); got != want {
		t.Fatalf("refused changes altered the report: %v", got)
	}
}
