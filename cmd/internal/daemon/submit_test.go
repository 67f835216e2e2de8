package daemon_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/core"
)

func TestModifyCountsTowardHourlyLimit(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"  submissions_per_hour: 2\n  new_user_max_unverified: 0\n")
	tok := d.user("h@example.com")
	id := d.submit(tok, `{"report_type":"ip","resource_identifier":"192.0.2.77","threat_description":"x"}`)
	d.do("PUT", base+"/modify-threat-report", tok, fmt.Sprintf(`{"threat_id":%q,"publisher":"p"}`, id)).expect(t, 200, "")
	d.do("PUT", base+"/modify-threat-report", tok, fmt.Sprintf(`{"threat_id":%q,"publisher":"q"}`, id)).
		expect(t, 429, "Submission limit exceeded: the maximum is 2 submissions per hour")
	d.do("POST", base+"/submit-threat-report", tok, pkg("over")).expect(t, 429, "")
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"server:\n  max_body_bytes: 4096\n")
	tok := d.user("v@example.com", "--tier", "paid")
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
	if n := count(t, d.db(), "SELECT count(*) FROM threats"); n != 0 {
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
	d.db().QueryRow("SELECT resource_identifier FROM threats WHERE id = ?", r.body["threat_id"]).Scan(&name)
	if name != "еxpress" {
		t.Fatalf("stored %q", name)
	}
}

func TestSubmitDuplicates(t *testing.T) {
	t.Parallel()
	d := start(t, quiet)
	a := d.user("a@example.com", "--tier", "paid")
	b := d.user("b@example.com", "--tier", "paid")
	first := d.do("POST", base+"/submit-threat-report", a, pkg("LoDash")).expect(t, 201, "")
	id := first.body["threat_id"].(string)
	r := d.do("POST", base+"/submit-threat-report", b, pkg("lodash")).expect(t, 409, "")
	if r.body["existingThreatId"] != id || r.body["packageName"] != "LoDash" || r.body["registry"] != "npm" || r.body["status"] != "pending" ||
		!strings.Contains(r.body["error"].(string), "modify-threat-report") {
		t.Fatalf("409: %v", r.body)
	}
	// Same name in another registry is another package.
	d.do("POST", base+"/submit-threat-report", b, `{"report_type":"package","resource_identifier":"lodash","registry":"pypi","threat_description":"x"}`).expect(t, 201, "")

	d.verify(id)
	r = d.do("POST", base+"/submit-threat-report", b, pkg("LODASH")).expect(t, 409, "")
	if r.body["status"] != "verified" {
		t.Fatalf("409 after verification: %v", r.body)
	}
	d.review(core.DecisionReject, 1, "false positive", "", id)
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

func TestSubmitConcurrency(t *testing.T) {
	t.Parallel()
	d := start(t, quiet)
	tok := d.user("c@example.com")
	fresh := d.user("fresh@example.com")
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
	if n := count(t, d.db(), "SELECT count(*) FROM threats"); n != 4 {
		t.Fatalf("%d threats stored, want 4", n)
	}
}
