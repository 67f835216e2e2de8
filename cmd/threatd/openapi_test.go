package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// TestOpenAPI: the daemon serves the document kept in the repository at
// {base}/openapi.json without a token, under its configured base path; the
// check every d.do makes catches an answer that strays from it.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "")
	tok := in.user("oas@example.com")
	d := in.serve()
	res := d.raw("GET", base+"/openapi.json", "")
	want, _ := os.ReadFile(filepath.Join(testbin.ModuleRoot(), "core", "api", "openapi.json"))
	if res.code != 200 || res.hdr.Get("Content-Type") != "application/json" || !bytes.Equal(res.body, want) {
		t.Fatalf("openapi.json: %d %s, %d bytes (the repository's: %d)", res.code, res.hdr.Get("Content-Type"), len(res.body), len(want))
	}

	// Answers that stray from the document are caught: a check without its
	// verdict, an undocumented status, a record with a field it does not list.
	check := checkPath("report_type", "ip", "resource_identifier", "192.0.2.1")
	req, _ := http.NewRequest("GET", d.base+check, nil)
	good := d.do("GET", check, tok, "").expect(t, 200, "")
	for _, c := range []struct {
		code int
		body string
	}{
		{200, strings.Replace(good.raw, `"malicious":false,`, "", 1)},
		{200, strings.Replace(good.raw, `"threat_count":0`, `"threat_count":"0"`, 1)},
		{299, good.raw},
		{400, `{"message":"no error field"}`},
	} {
		res := &http.Response{StatusCode: c.code, Header: http.Header{"Content-Type": {"application/json"}}}
		if m := apitest.Mismatches(t, req, nil, res, []byte(c.body)); len(m) == 0 {
			t.Errorf("%d %s passed the OpenAPI check", c.code, c.body)
		}
	}
	// A request the document does not allow, although answered 200.
	bad, _ := http.NewRequest("POST", d.base+base+"/check-malicious", nil)
	bad.Header.Set("Content-Type", "application/json")
	ok := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
	if m := apitest.Mismatches(t, bad, []byte(`{"queries":"all"}`), ok, []byte(`{"results":[]}`)); len(m) == 0 {
		t.Error("a request body of the wrong shape passed the OpenAPI check")
	}

	// Another base path moves the API's paths, in the document too.
	moved := newInstance(t, "server:\n  base_path: /api/v2\n")
	md := moved.serve()
	r := md.raw("GET", "/api/v2/openapi.json", "")
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if r.code != 200 || json.Unmarshal(r.body, &doc) != nil || doc.Paths["/api/v2/check-malicious"] == nil || doc.Paths["/healthz"] == nil || doc.Paths[base+"/check-malicious"] != nil {
		t.Fatalf("openapi.json under /api/v2: %d %.200s", r.code, r.body)
	}
}
