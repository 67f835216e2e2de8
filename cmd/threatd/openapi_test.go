package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// The OpenAPI document kept in the repository (core/api/openapi.json),
// loaded once: every answer d.do receives is checked against it.
var openAPI struct {
	once   sync.Once
	router routers.Router
	err    error
}

func openAPIRouter(t testing.TB) routers.Router {
	openAPI.once.Do(func() {
		b, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(), "core", "api", "openapi.json"))
		if err != nil {
			openAPI.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(b)
		if err != nil {
			openAPI.err = err
			return
		}
		if openAPI.err = doc.Validate(context.Background()); openAPI.err != nil {
			return
		}
		openAPI.router, openAPI.err = gorillamux.NewRouter(doc)
	})
	if openAPI.err != nil {
		t.Fatalf("core/api/openapi.json: %v", openAPI.err)
	}
	return openAPI.router
}

func init() {
	// The media types of TAXII, STIX and the OSV archives, decoded as what
	// they are for validation.
	openapi3filter.RegisterBodyDecoder("application/taxii+json", openapi3filter.JSONBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/stix+json", openapi3filter.JSONBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/zip", openapi3filter.FileBodyDecoder)
}

// checkOpenAPI checks one exchange against the OpenAPI document with
// kin-openapi (openAPIMismatches) and fails t for each mismatch.
func checkOpenAPI(t testing.TB, req *http.Request, reqBody []byte, res *http.Response, resBody []byte) {
	t.Helper()
	for _, m := range openAPIMismatches(t, req, reqBody, res, resBody) {
		t.Error(m)
	}
}

// openAPIMismatches: every answer must be one the document describes (its
// status, content type and body schema); a request the daemon accepted
// (2xx) must be one the document allows. Paths the document does not list
// (the web site, unknown paths, another base path) are not checked.
func openAPIMismatches(t testing.TB, req *http.Request, reqBody []byte, res *http.Response, resBody []byte) []string {
	route, params, err := openAPIRouter(t).FindRoute(req)
	if err != nil {
		return nil
	}
	var out []string
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if res.StatusCode < 300 {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			out = append(out, fmt.Sprintf("OpenAPI: %s %s was answered %d, but the document does not allow the request: %v", req.Method, req.URL.RequestURI(), res.StatusCode, err))
		}
	}
	check := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: res.StatusCode, Header: res.Header,
		Body:    io.NopCloser(bytes.NewReader(resBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), check); err != nil {
		out = append(out, fmt.Sprintf("OpenAPI: the answer to %s %s does not match the document: %d %.300s: %v", req.Method, req.URL.RequestURI(), res.StatusCode, resBody, err))
	}
	return out
}

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
		if m := openAPIMismatches(t, req, nil, res, []byte(c.body)); len(m) == 0 {
			t.Errorf("%d %s passed the OpenAPI check", c.code, c.body)
		}
	}
	// A request the document does not allow, although answered 200.
	bad, _ := http.NewRequest("POST", d.base+base+"/check-malicious", nil)
	bad.Header.Set("Content-Type", "application/json")
	ok := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}}
	if m := openAPIMismatches(t, bad, []byte(`{"queries":"all"}`), ok, []byte(`{"results":[]}`)); len(m) == 0 {
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
