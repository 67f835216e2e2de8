package main_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
