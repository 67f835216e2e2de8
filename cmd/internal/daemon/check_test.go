package daemon_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core"
)

func TestCheckVisibilityAndRecord(t *testing.T) {
	t.Parallel()
	d := start(t, quiet)
	sub := d.user("sub@example.com")
	other := d.user("other@example.com")
	d.user("rita@example.com", "--name", "Rita Reviewer", "--role", "reviewer")
	rev := d.token("rita@example.com")
	id := d.submit(sub, `{"report_type":"package","resource_identifier":"Evil-Lib","registry":"npm","threat_description":"Steals tokens",
		"payload_description":"posts to hxxps://x[.]example","contact_email":"me@example.org","version_info":"1.0.0, 1.0.1"}`)
	q := checkPath("report_type", "package", "resource_identifier", "evil-lib", "ecosystem", "npm")

	// Pending reports are never flagged.
	r := d.do("GET", q, other, "").expect(t, 200, "")
	if r.body["malicious"] != false || r.body["threat_count"] != float64(0) || r.body["details"] != nil || r.body["message"] == nil ||
		r.body["ecosystem"] != "npm" || r.body["resource_identifier"] != "evil-lib" || r.body["report_type"] != "package" {
		t.Fatalf("pending report: %v", r.body)
	}
	d.review(core.DecisionVerify, 1, "", "rita@example.com", id)
	r = d.until(200, "GET", q, other, "")
	eventually(t, "verified report flagged", func() bool {
		r = d.do("GET", q, other, "")
		return r.body["malicious"] == true
	})
	det := r.body["details"].(map[string]any)
	apitest.CheckRecord(t, det)
	if r.body["threat_count"] != float64(1) || r.body["message"] != nil || det["id"] != id || det["status"] != "verified" ||
		det["verified_by"] != "Rita Reviewer" || det["verified_at"] == nil || det["severity_level"] != nil ||
		det["payload_description"] != "posts to hxxps://x[.]example" || det["registry"] != "npm" || det["resource_identifier"] != "Evil-Lib" {
		t.Fatalf("verified: %v", r.body)
	}
	// contact_email: never to others; to the submitter and reviewers.
	if _, shown := det["contact_email"]; shown {
		t.Fatal("contact_email shown to another user")
	}
	for _, tok := range []string{sub, rev} {
		if e := d.do("GET", q, tok, "").body["details"].(map[string]any)["contact_email"]; e != "me@example.org" {
			t.Fatalf("contact_email for the submitter/reviewer: %v", e)
		}
	}
	// Withdrawn: no longer flagged.
	d.review(core.DecisionReject, 1, "false positive", "", id)
	eventually(t, "withdrawn report unflagged", func() bool { return d.do("GET", q, other, "").body["malicious"] == false })
}

func TestCheckSemantics(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"  new_user_max_unverified: 0\n")
	tok := d.user("s@example.com", "--tier", "paid")
	ids := map[string]string{
		"pkg":      d.submit(tok, `{"report_type":"package","resource_identifier":"LoDash","registry":"npm","threat_description":"a","version_info":"4.17.20, 4.17.21"}`),
		"allver":   d.submit(tok, `{"report_type":"package","resource_identifier":"requests_toolbelt","registry":"pypi","threat_description":"b"}`),
		"maven":    d.submit(tok, `{"report_type":"package","resource_identifier":"org.evil:lib","registry":"maven","threat_description":"c"}`),
		"domain":   d.submit(tok, `{"report_type":"domain","resource_identifier":"evil.example","threat_description":"d"}`),
		"url":      d.submit(tok, `{"report_type":"url","resource_identifier":"https://cdn.evil.example/x.js","threat_description":"e"}`),
		"image":    d.submit(tok, `{"report_type":"container","resource_identifier":"evilorg/miner:1.0","threat_description":"f"}`),
		"ip":       d.submit(tok, `{"report_type":"ip","resource_identifier":"203.0.113.9","threat_description":"g"}`),
		"lodashpy": d.submit(tok, `{"report_type":"package","resource_identifier":"lodash","registry":"pypi","threat_description":"h"}`),
	}
	// Verify in a known order: the url last, so it is the most recent match.
	order := []string{"pkg", "allver", "maven", "domain", "image", "ip", "lodashpy", "url"}
	for _, k := range order {
		d.verify(ids[k])
		time.Sleep(5 * time.Millisecond)
	}
	eventually(t, "index caught up with the last verification", func() bool {
		r := d.do("GET", checkPath("report_type", "url", "resource_identifier", "https://cdn.evil.example/x.js"), tok, "")
		det, _ := r.body["details"].(map[string]any)
		return det != nil && det["id"] == ids["url"]
	})
	type want struct {
		malicious bool
		count     int
		id        string
		ecosystem any
	}
	cases := []struct {
		name   string
		params []string
		want   want
	}{
		{"normalised name", []string{"report_type", "package", "resource_identifier", "LODASH", "ecosystem", "npm"}, want{true, 1, ids["pkg"], "npm"}},
		{"listed version", []string{"report_type", "package", "resource_identifier", "lodash", "ecosystem", "npm", "version", "4.17.21"}, want{true, 1, ids["pkg"], "npm"}},
		{"other version", []string{"report_type", "package", "resource_identifier", "lodash", "ecosystem", "npm", "version", "4.17.22"}, want{false, 0, "", "npm"}},
		{"no ecosystem: every registry", []string{"report_type", "package", "resource_identifier", "lodash"}, want{true, 2, ids["lodashpy"], "pypi"}},
		{"no ecosystem + version", []string{"report_type", "package", "resource_identifier", "lodash", "version", "4.17.20"}, want{true, 2, ids["lodashpy"], "pypi"}},
		{"empty version_info = all versions", []string{"report_type", "package", "resource_identifier", "Requests.Toolbelt", "ecosystem", "pypi", "version", "0.0.1"}, want{true, 1, ids["allver"], "pypi"}},
		{"purl with version", []string{"purl", "pkg:npm/lodash@4.17.20"}, want{true, 1, ids["pkg"], "npm"}},
		{"purl other version", []string{"purl", "pkg:npm/lodash@1.0.0"}, want{false, 0, "", "npm"}},
		{"purl without version", []string{"purl", "pkg:npm/lodash"}, want{true, 1, ids["pkg"], "npm"}},
		{"purl pypi", []string{"purl", "pkg:pypi/requests-toolbelt@1.0"}, want{true, 1, ids["allver"], "pypi"}},
		{"purl maven", []string{"purl", "pkg:maven/org.evil/lib@2.0"}, want{true, 1, ids["maven"], "maven"}},
		{"purl docker", []string{"purl", "pkg:docker/evilorg/miner@1.0"}, want{true, 1, ids["image"], "dockerhub"}},
		{"url flagged by its own and its domain", []string{"report_type", "url", "resource_identifier", "HTTPS://cdn.evil.example:443/x.js"}, want{true, 2, ids["url"], nil}},
		{"url flagged by parent domain", []string{"report_type", "url", "resource_identifier", "http://a.b.evil.example/other"}, want{true, 1, ids["domain"], nil}},
		{"subdomain flagged by domain", []string{"report_type", "domain", "resource_identifier", "Sub.Evil.Example."}, want{true, 1, ids["domain"], nil}},
		{"container normalised", []string{"report_type", "container", "resource_identifier", "docker.io/evilorg/miner:1.0"}, want{true, 1, ids["image"], "dockerhub"}},
		{"container other tag", []string{"report_type", "container", "resource_identifier", "evilorg/miner:2.0"}, want{false, 0, "", nil}},
		{"ip", []string{"report_type", "ip", "resource_identifier", "::ffff:203.0.113.9"}, want{true, 1, ids["ip"], nil}},
		{"miss", []string{"report_type", "domain", "resource_identifier", "good.example"}, want{false, 0, "", nil}},
	}
	for _, c := range cases {
		r := d.do("GET", checkPath(c.params...), tok, "").expect(t, 200, "")
		got := want{malicious: r.body["malicious"] == true, count: int(r.body["threat_count"].(float64)), ecosystem: r.body["ecosystem"]}
		if det, ok := r.body["details"].(map[string]any); ok {
			got.id = det["id"].(string)
			apitest.CheckRecord(t, det)
		}
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v (%v)", c.name, got, c.want, r.body)
		}
	}
	for _, bad := range []struct{ params []string }{
		{[]string{"resource_identifier", "x"}},
		{[]string{"report_type", "virus", "resource_identifier", "x"}},
		{[]string{"report_type", "package", "resource_identifier", "x", "ecosystem", "cpan"}},
		{[]string{"report_type", "url", "resource_identifier", "not a url"}},
		{[]string{"purl", "pkg:npm/x", "report_type", "package"}},
		{[]string{"purl", "nonsense"}},
		{[]string{"purl", "pkg:hex/phoenix@1.0"}},
		{[]string{"report_type", "ip", "resource_identifier", "1.2.3.4", "ecosytem", "npm"}},
	} {
		r := d.do("GET", checkPath(bad.params...), tok, "")
		if r.code != 400 || r.body["error"] == "" {
			t.Errorf("%v: %d %v, want 400", bad.params, r.code, r.body)
		}
	}
	d.do("DELETE", base+"/check-malicious", tok, "").expect(t, 405, "Method not allowed")
	d.do("GET", checkPath("report_type", "ip", "resource_identifier", "1.2.3.4"), "", "").expect(t, 401, "Authorization required")
}

func TestCheckBatch(t *testing.T) {
	t.Parallel()
	d := start(t, "limits:\n  per_ip_per_minute: 0\n  per_token_per_minute: {free: 10, paid: 100}\n  batch_max: 300\n")
	tok := d.user("b@example.com", "--tier", "paid")
	id := d.submit(tok, `{"report_type":"ip","resource_identifier":"198.51.100.7","threat_description":"c2"}`)
	d.verify(id)
	eventually(t, "verified", func() bool {
		return d.do("GET", checkPath("report_type", "ip", "resource_identifier", "198.51.100.7"), tok, "").body["malicious"] == true
	})
	body := `{"queries":[
		{"report_type":"ip","resource_identifier":"198.51.100.7"},
		{"report_type":"ip","resource_identifier":"198.51.100.8"},
		{"report_type":"virus","resource_identifier":"x"},
		{"purl":"pkg:npm/left-pad"},
		{"report_type":"ip","resource_identifier":"198.51.100.7","colour":"red"},
		{"report_type":"ip"}
	]}`
	r := d.do("POST", base+"/check-malicious", tok, body).expect(t, 200, "")
	res := r.body["results"].([]any)
	if len(res) != 6 {
		t.Fatalf("results: %v", res)
	}
	hit, miss := res[0].(map[string]any), res[1].(map[string]any)
	if hit["malicious"] != true || hit["details"].(map[string]any)["id"] != id || miss["malicious"] != false || res[3].(map[string]any)["malicious"] != false {
		t.Fatalf("hit/miss: %v", res)
	}
	for _, i := range []int{2, 4, 5} {
		e := res[i].(map[string]any)
		if e["index"] != float64(i) || e["error"] == "" || len(e) != 2 {
			t.Fatalf("entry %d: %v", i, e)
		}
	}
	// Each 100 queries count as one request toward the per-token limit.
	remaining := func(r response) int { n, _ := strconv.Atoi(r.hdr.Get("RateLimit-Remaining")); return n }
	apitest.ClearOfWindowEdge(t, time.Minute, 10*time.Second)
	before := remaining(d.do("GET", base+"/account", tok, ""))
	qs := make([]string, 250)
	for i := range qs {
		qs[i] = fmt.Sprintf(`{"report_type":"ip","resource_identifier":"192.0.2.%d"}`, i%250+1)
	}
	r = d.do("POST", base+"/check-malicious", tok, `{"queries":[`+strings.Join(qs, ",")+`]}`).expect(t, 200, "")
	if len(r.body["results"].([]any)) != 250 || remaining(r) != before-3 {
		t.Fatalf("250 queries: remaining %d → %d, want 3 requests counted", before, remaining(r))
	}
	qs = append(qs, qs[:51]...)
	d.do("POST", base+"/check-malicious", tok, `{"queries":[`+strings.Join(qs, ",")+`]}`).expect(t, 400, "queries: has 301 queries; at most 300 are allowed in one request")
	d.do("POST", base+"/check-malicious", tok, `{"query":[]}`).expect(t, 400, "query: is not a known field")
}
