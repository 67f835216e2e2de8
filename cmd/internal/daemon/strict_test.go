package daemon_test

import (
	"strings"
	"testing"
)

// Query strings and headers a lax server would misread (issue 11): a bad
// percent-escape is a 400 naming its parameter, not a silently absent one;
// an oversized header block is a JSON 431; every answer is nosniff, and
// answers to callers are never cached.
func TestStrictQueryAndHeaders(t *testing.T) {
	t.Parallel()
	d := start(t, quiet)
	tok := d.user("strict@example.com", "--tier", "paid")
	for _, c := range []struct{ query, err, field string }{
		{"report_type=package&ecosystem=npm&resource_identifier=%zz", `resource_identifier: has a malformed percent-escape: "%zz" is not % followed by two hexadecimal digits`, "resource_identifier"},
		{"report_type=package&ecosystem=npm&resource_identifier=left%2", `resource_identifier: has a malformed percent-escape: "%2" is not % followed by two hexadecimal digits`, "resource_identifier"},
		{"report_type=package&ecosystem=npm&resource_identifier=a;b", "", "resource_identifier"},
		{"report_type=package&ecosystem=npm&resource%zz=x", "", "resource%zz"},
	} {
		r := d.do("GET", base+"/check-malicious?"+c.query, tok, "").expect(t, 400, c.err)
		if r.body["field"] != c.field {
			t.Errorf("%s: field %v, want %s (%s)", c.query, r.body["field"], c.field, r.raw)
		}
	}
	d.do("GET", base+"/query-latest?ecosystem=%e", tok, "").expect(t, 400, `ecosystem: has a malformed percent-escape: "%e" is not % followed by two hexadecimal digits`)
	d.do("GET", base+"/threat-data?threat_id=%G0", tok, "").expect(t, 400, "")
	// A well-formed escape still works.
	r := d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=%40scope%2Fname", tok, "").expect(t, 200, "")
	if r.body["resource_identifier"] != "@scope/name" {
		t.Fatalf("escaped identifier read as %v", r.body["resource_identifier"])
	}
	for _, h := range []string{"X-Content-Type-Options", "Cache-Control"} {
		if got, want := r.hdr.Get(h), map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}[h]; got != want {
			t.Errorf("200 from the API: %s = %q, want %q", h, got, want)
		}
	}
	r = d.do("GET", base+"/check-malicious?report_type=package", "", "").expect(t, 401, "Authorization required")
	if r.hdr.Get("X-Content-Type-Options") != "nosniff" || r.hdr.Get("Cache-Control") != "no-store" {
		t.Errorf("401: headers %v", r.hdr)
	}
	if r = d.do("GET", "/healthz", "", ""); r.hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("healthz: headers %v", r.hdr)
	}

	// Headers over the limit: a JSON 431, whether one header or many.
	big := strings.Repeat("a", 70<<10)
	d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=x", tok, "", "X-Padding", big).
		expect(t, 431, "Request header fields too large: the limit is 65536 bytes")
	var many []string
	for i := range 40 {
		many = append(many, "X-Pad-"+strings.Repeat("b", i+1), strings.Repeat("c", 2000))
	}
	d.do("GET", "/healthz", "", "", many...).expect(t, 431, "Request header fields too large: the limit is 65536 bytes")
	// Just under the limit is served.
	d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=x", tok, "", "X-Padding", strings.Repeat("a", 60<<10)).expect(t, 200, "")
}
