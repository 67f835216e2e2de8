package main_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"
)

var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// quiet limits keep rate limiting out of the way of the submit rules.
const quiet = "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 0, paid: 0}\n"

func pkg(name string) string {
	return fmt.Sprintf(`{"report_type":"package","resource_identifier":%q,"registry":"npm","threat_description":"Steals tokens"}`, name)
}

func TestSubmitCreated(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("s@example.com")
	d := in.serve()
	payload := "## What it does\n\n- posts `~/.npmrc` to hxxps://exfil[.]example[.]com/c\n- C2 203[.]0[.]113[.]9\n\n<img src=x onerror=alert(1)>"
	body := fmt.Sprintf(`{"report_type":"package","resource_identifier":"Evil-Pkg","registry":"npm","threat_description":"Steals npm tokens",
		"package_name":"evil-pkg","publisher":"mallory","payload_description":%q,"severity_level":"critical",
		"evidence_references":"https://a.example/1|https://b.example/2","contact_email":"r@example.org","tags":["stealer"],
		"version_info":"1.0.0, 1.0.1","first_seen":"2026-11-01T00:00:00Z","last_seen":"2026-11-02T00:00:00Z",
		"osv_advisory_url":"https://osv.dev/vulnerability/MAL-2026-1","contributors":["alice"],"download_count":1500}`, payload)
	r := d.do("POST", base+"/submit-threat-report", tok, body).expect(t, 201, "")
	id, _ := r.body["threat_id"].(string)
	if !uuidRe.MatchString(id) || r.body["status"] != "pending" || r.body["message"] == "" || len(r.body) != 3 {
		t.Fatalf("201 body: %v", r.body)
	}
	if r.hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", r.hdr.Get("Content-Type"))
	}
	// The alias of the overview.
	r2 := d.do("POST", base+"/submit-threat", tok, pkg("other-pkg")).expect(t, 201, "")
	if r2.body["status"] != "pending" {
		t.Fatal(r2.body)
	}
	// Stored as written: read the real SQLite file.
	db := sqliteDB(t, in)
	var stored, name string
	if err := db.QueryRow(`SELECT d.payload_description, d.package_name FROM threat_details d WHERE d.threat_id = ?`, id).Scan(&stored, &name); err != nil {
		t.Fatal(err)
	}
	if stored != payload || name != "evil-pkg" {
		t.Fatalf("payload stored as %q (name %q), want it exactly as written", stored, name)
	}
	// Reviewers see it.
	out := in.mustCLI("review", "list")
	if !strings.Contains(out, id) || !strings.Contains(out, "Evil-Pkg") {
		t.Fatalf("review list:\n%s", out)
	}
}

func sqliteDB(t *testing.T, in *instance) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(in.dir, "data", "threatd.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"server:\n  max_body_bytes: 4096\n")
	tok := in.user("v@example.com", "--tier", "paid")
	d := in.serve()
	required := "report_type, resource_identifier and threat_description are required"
	cases := []struct {
		body, err, field string
	}{
		{`{}`, required, ""},
		{`{"report_type":"url","resource_identifier":"","threat_description":"x"}`, required, ""},
		{`{"report_type":null,"resource_identifier":"https://x.example/","threat_description":"x"}`, required, ""},
		{`{"report_type":"url","resource_identifier":"https://x.example/","threat_description":"x","colour":"red"}`, "colour: is not a known field", "colour"},
		{`{"report_type":"url",`, "Malformed JSON: unexpected end of input", ""},
		{`[1,2]`, "Malformed JSON: expected an object, got array", ""},
		// What encoding/json let through (issue 11): trailing data, invalid
		// UTF-8, unpaired surrogates, duplicate and case-variant members.
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x"}]]]`, "Malformed JSON: unexpected data after the object at byte 79", ""},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x"} {}`, "Malformed JSON: unexpected data after the object at byte 80", ""},
		{"{\"report_type\":\"ip\",\"resource_identifier\":\"192.0.2.1\",\"threat_description\":\"bad \xff byte\"}", "threat_description: is not valid UTF-8 (byte 80 of the body)", "threat_description"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"lone \ud800 half"}`, "", "threat_description"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","report_type":"url"}`, "report_type: is given more than once", "report_type"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","REPORT_TYPE":"url"}`, "REPORT_TYPE: is not a known field", "REPORT_TYPE"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","contributors":["a",7]}`, "contributors: entry 1 must be a string, got number", "contributors"},
		{`{"report_type":"virus","resource_identifier":"x","threat_description":"x"}`, "", "report_type"},
		{`{"report_type":"package","resource_identifier":"x","threat_description":"x"}`, "", "registry"},
		{`{"report_type":"package","resource_identifier":"x","registry":"cpan","threat_description":"x"}`, "", "registry"},
		{`{"report_type":"package","resource_identifier":"has space","registry":"npm","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"package","resource_identifier":"a","package_name":"b","registry":"npm","threat_description":"x"}`, "", "package_name"},
		{`{"report_type":"url","resource_identifier":"evil.example/x","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"domain","resource_identifier":"https://evil.example","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"ip","resource_identifier":"300.1.1.1","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"repository","resource_identifier":"https://github.com/a/b","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"wallet","resource_identifier":"abc","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"container","resource_identifier":"Bad/Image","threat_description":"x"}`, "", "resource_identifier"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","severity_level":"apocalyptic"}`, "", "severity_level"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","evidence_references":"see blog"}`, "", "evidence_references"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","version_info":"every version before 2"}`, "", "version_info"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","first_seen":"last week"}`, "", "first_seen"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","first_seen":"2026-02-01","last_seen":"2026-01-01"}`, "", "last_seen"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","contact_email":"nope"}`, "", "contact_email"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","tags":"one"}`, "tags: must be an array, got string", "tags"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","contributors":[1]}`, "", "contributors"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","download_count":-5}`, "download_count: must not be negative", "download_count"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","download_count":1.5}`, "download_count: must be a whole number, got 1.5", "download_count"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","download_count":-1.5}`, "download_count: must not be negative", "download_count"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","download_count":1e30}`, "download_count: must be a whole number, got 1e30", "download_count"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","download_count":"12"}`, "", "download_count"},
		{`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","osv_advisory_url":"MAL-1"}`, "", "osv_advisory_url"},
	}
	for _, c := range cases {
		r := d.do("POST", base+"/submit-threat-report", tok, c.body)
		if r.code != 400 {
			t.Errorf("%s: %d %s, want 400", c.body, r.code, r.raw)
			continue
		}
		e, _ := r.body["error"].(string)
		if c.err != "" && e != c.err || c.field != "" && (r.body["field"] != c.field || !strings.HasPrefix(e, c.field+": ")) {
			t.Errorf("%s: %v; want error %q naming %q", c.body, r.body, c.err, c.field)
		}
	}
	// An error quotes at most a short prefix of a bad value.
	long := strings.Repeat("x", 3000)
	for _, body := range []string{
		`{"report_type":"` + long + `","resource_identifier":"192.0.2.1","threat_description":"x"}`,
		`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","` + long + `":1}`,
		`{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"x","severity_level":"` + long + `"}`,
	} {
		r := d.do("POST", base+"/submit-threat-report", tok, body)
		if e, _ := r.body["error"].(string); r.code != 400 || len(e) > 400 || !strings.Contains(e, "… (3000 bytes)") {
			t.Errorf("long value: %d, error of %d bytes: %.500s", r.code, len(e), r.raw)
		}
	}
	r := d.do("POST", base+"/submit-threat-report", tok, `{"threat_description":"x"}`).expect(t, 400, required)
	if fmt.Sprint(r.body["missing"]) != "[report_type resource_identifier]" {
		t.Fatalf("missing = %v", r.body["missing"])
	}
	big := `{"report_type":"ip","resource_identifier":"192.0.2.1","threat_description":"` + strings.Repeat("x", 5000) + `"}`
	d.do("POST", base+"/submit-threat-report", tok, big).expect(t, 413, "Request body too large: the limit is 4096 bytes")
	// Nothing of it was stored.
	if n := count(t, sqliteDB(t, in), "SELECT count(*) FROM threats"); n != 0 {
		t.Fatalf("%d threats stored by invalid requests", n)
	}
	for _, m := range []string{"GET", "PUT", "DELETE", "PATCH"} {
		for _, p := range []string{"/submit-threat-report", "/submit-threat"} {
			d.do(m, base+p, tok, "").expect(t, 405, "Method not allowed")
		}
	}
	d.do("POST", base+"/submit-threat-report", "", pkg("x")).expect(t, 401, "Authorization required")
	d.do("POST", base+"/submit-threat-report", "thd_bogus", pkg("x")).expect(t, 401, "Invalid API token")
	// Non-ASCII look-alike names are accepted as written.
	r = d.do("POST", base+"/submit-threat-report", tok, pkg("еxpress")).expect(t, 201, "")
	var name string
	sqliteDB(t, in).QueryRow("SELECT resource_identifier FROM threats WHERE id = ?", r.body["threat_id"]).Scan(&name)
	if name != "еxpress" {
		t.Fatalf("stored %q", name)
	}
}

func TestSubmitDuplicates(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	a := in.user("a@example.com", "--tier", "paid")
	b := in.user("b@example.com", "--tier", "paid")
	d := in.serve()
	first := d.do("POST", base+"/submit-threat-report", a, pkg("LoDash")).expect(t, 201, "")
	id := first.body["threat_id"].(string)
	r := d.do("POST", base+"/submit-threat-report", b, pkg("lodash")).expect(t, 409, "")
	if r.body["existingThreatId"] != id || r.body["packageName"] != "LoDash" || r.body["registry"] != "npm" || r.body["status"] != "pending" ||
		!strings.Contains(r.body["error"].(string), "modify-threat-report") {
		t.Fatalf("409: %v", r.body)
	}
	// Same name in another registry is another package.
	d.do("POST", base+"/submit-threat-report", b, `{"report_type":"package","resource_identifier":"lodash","registry":"pypi","threat_description":"x"}`).expect(t, 201, "")

	in.mustCLI("review", "verify", id)
	r = d.do("POST", base+"/submit-threat-report", b, pkg("LODASH")).expect(t, 409, "")
	if r.body["status"] != "verified" {
		t.Fatalf("409 after verification: %v", r.body)
	}
	in.mustCLI("review", "reject", id, "--note", "false positive")
	d.do("POST", base+"/submit-threat-report", b, pkg("lodash")).expect(t, 201, "")

	// Non-package: the canonical identifier, registry null.
	d.do("POST", base+"/submit-threat-report", a, `{"report_type":"url","resource_identifier":"HTTPS://Evil.Example:443/a?b=1#x","threat_description":"x"}`).expect(t, 201, "")
	r = d.do("POST", base+"/submit-threat", b, `{"report_type":"url","resource_identifier":"https://evil.example/a?b=1","threat_description":"y"}`).expect(t, 409, "")
	if r.body["packageName"] != "https://evil.example/a?b=1" || r.body["registry"] != nil || r.body["status"] != "pending" {
		t.Fatalf("url 409: %v", r.body)
	}
	if _, present := r.body["registry"]; !present {
		t.Fatal("registry must be present as null")
	}
}

func TestSubmitNewUserCap(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("new@example.com")
	in.mustCLI("user", "add", "--email", "rita@example.com", "--name", "Rita", "--role", "reviewer")
	d := in.serve()
	var ids []string
	for i := range 3 {
		r := d.do("POST", base+"/submit-threat-report", tok, pkg(fmt.Sprintf("cap-%d", i))).expect(t, 201, "")
		ids = append(ids, r.body["threat_id"].(string))
	}
	r := d.do("POST", base+"/submit-threat-report", tok, pkg("cap-3")).expect(t, 403,
		"New user limit reached: you may have at most 3 unverified reports until 3 of your reports are verified")
	if r.body["verified_reports"] != float64(0) || r.body["unverified_reports"] != float64(3) {
		t.Fatalf("403 body: %v", r.body)
	}
	// A submitter may not review.
	if res := in.cli("review", "verify", ids[0], "--as", "new@example.com"); res.code == 0 || !strings.Contains(res.stderr, "only reviewers and admins") {
		t.Fatalf("submitter reviewing: %+v", res)
	}
	for i, id := range ids[:2] {
		out := in.mustCLI("review", "verify", id, "--as", "rita@example.com", "--note", "confirmed")
		if !strings.Contains(out, "verified (by Rita)") {
			t.Fatalf("verify %d: %s", i, out)
		}
	}
	// 2 verified, 1 pending: two more fit, the third is refused again.
	d.do("POST", base+"/submit-threat-report", tok, pkg("cap-3")).expect(t, 201, "")
	d.do("POST", base+"/submit-threat-report", tok, pkg("cap-4")).expect(t, 201, "")
	r = d.do("POST", base+"/submit-threat-report", tok, pkg("cap-5")).expect(t, 403, "")
	if r.body["verified_reports"] != float64(2) || r.body["unverified_reports"] != float64(3) {
		t.Fatalf("403 body: %v", r.body)
	}
	// The third verified report lifts the cap for good.
	in.mustCLI("review", "verify", ids[2])
	for i := 5; i < 9; i++ {
		d.do("POST", base+"/submit-threat-report", tok, pkg(fmt.Sprintf("cap-%d", i))).expect(t, 201, "")
	}
}

func TestSubmitHourlyLimit(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  submissions_per_hour: 2\n  new_user_max_unverified: 0\n")
	tok := in.user("h@example.com")
	paid := in.user("p@example.com", "--tier", "paid")
	d := in.serve()
	d.do("POST", base+"/submit-threat-report", tok, pkg("h-0")).expect(t, 201, "")
	d.do("POST", base+"/submit-threat-report", tok, pkg("h-1")).expect(t, 201, "")
	r := d.do("POST", base+"/submit-threat-report", tok, pkg("h-2")).expect(t, 429, "Submission limit exceeded: the maximum is 2 submissions per hour")
	if ra, err := strconv.Atoi(r.hdr.Get("Retry-After")); err != nil || ra < 3500 || ra > 3600 {
		t.Fatalf("Retry-After %q", r.hdr.Get("Retry-After"))
	}
	// Paid users have no hourly limit by default.
	for i := range 4 {
		d.do("POST", base+"/submit-threat-report", paid, pkg(fmt.Sprintf("p-%d", i))).expect(t, 201, "")
	}
	// An administrator raises the limit while the daemon runs.
	in.mustCLI("user", "set-limit", "--email", "h@example.com", "--submissions-per-hour", "3")
	d.until(201, "POST", base+"/submit-threat-report", tok, pkg("h-2"))
	d.do("POST", base+"/submit-threat-report", tok, pkg("h-3")).expect(t, 429, "Submission limit exceeded: the maximum is 3 submissions per hour")
}

// TestSubmitOrder checks each adjacent pair of docs/api/submit.md, "Errors, in the order they are checked":
// body errors before the cap, the cap before the hourly limit, the hourly
// limit before the duplicate.
func TestSubmitOrder(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  submissions_per_hour: 3\n")
	tok := in.user("o@example.com")
	d := in.serve()
	for i := range 3 {
		d.do("POST", base+"/submit-threat-report", tok, pkg(fmt.Sprintf("o-%d", i))).expect(t, 201, "")
	}
	// Capped (3 pending, 0 verified) and at the hourly limit (3) and a duplicate:
	d.do("POST", base+"/submit-threat-report", tok, `{"report_type":"package"}`).expect(t, 400, "")
	d.do("POST", base+"/submit-threat-report", tok, pkg("o-0")).expect(t, 403, "")
	// Lift the cap: still at the hourly limit, still a duplicate.
	in.mustCLI("user", "add", "--email", "x@example.com")
	out := in.mustCLI("review", "list")
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			in.mustCLI("review", "verify", f[0])
		}
	}
	d.do("POST", base+"/submit-threat-report", tok, pkg("o-0")).expect(t, 429, "")
	in.mustCLI("user", "set-limit", "--email", "o@example.com", "--submissions-per-hour", "0")
	d.until(409, "POST", base+"/submit-threat-report", tok, pkg("o-0"))
}

func TestSubmitConcurrency(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("c@example.com")
	fresh := in.user("fresh@example.com")
	d := in.serve()
	statuses := func(n int, body func(i int) string, token string) map[int]int {
		var mu sync.Mutex
		got := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				r := d.do("POST", base+"/submit-threat-report", token, body(i))
				mu.Lock()
				got[r.code]++
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		return got
	}
	got := statuses(20, func(int) string { return pkg("same-pkg") }, tok)
	if got[201] != 1 || got[409] != 19 {
		t.Fatalf("20 identical submissions at once: %v, want one 201 and nineteen 409", got)
	}
	got = statuses(10, func(i int) string { return pkg(fmt.Sprintf("fresh-%d", i)) }, fresh)
	if got[201] != 3 || got[403] != 7 {
		t.Fatalf("a new user's 10 submissions at once: %v, want three 201 and seven 403", got)
	}
	if n := count(t, sqliteDB(t, in), "SELECT count(*) FROM threats"); n != 4 {
		t.Fatalf("%d threats stored, want 4", n)
	}
}

// TestSubmitStorageFailures makes each storage step fail (test-only setting)
// and checks the exact 500 of spec §7 and that no trace of the report remains.
func TestSubmitStorageFailures(t *testing.T) {
	t.Parallel()
	for step, msg := range map[string]string{
		"lookup":         "Failed to check for existing package",
		"insert_threat":  "Failed to create threat report",
		"insert_details": "Failed to create threat details",
	} {
		t.Run(step, func(t *testing.T) {
			in := newInstance(t, quiet+"storage:\n  settings:\n    test_fail_step: "+step+"\n")
			in.env = []string{"THREATD_TEST_FAULTS=1"}
			tok := in.user("f@example.com")
			d := in.serve()
			r := d.do("POST", base+"/submit-threat-report", tok, pkg("faulty")).expect(t, 500, msg)
			if det, _ := r.body["details"].(string); !strings.Contains(det, "injected fault in "+step) {
				t.Fatalf("details: %v", r.body)
			}
			db := sqliteDB(t, in)
			for _, q := range []string{"SELECT count(*) FROM threats", "SELECT count(*) FROM threat_details",
				"SELECT count(*) FROM review_events", "SELECT count(*) FROM changes WHERE entity = 'threat'"} {
				if n := count(t, db, q); n != 0 {
					t.Fatalf("%s = %d after a failed submission", q, n)
				}
			}
			if !strings.Contains(in.mustCLI("migrate"), "0 threats") {
				t.Fatal("threat counted after rollback")
			}
		})
	}
	// The setting is refused without the test switch: the daemon does not start.
	in := newInstance(t, "storage:\n  settings:\n    test_fail_step: insert_details\n")
	r := in.cli("serve", "--listen", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.stderr, "THREATD_TEST_FAULTS=1") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
