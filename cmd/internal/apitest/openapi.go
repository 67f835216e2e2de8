// Package apitest is how the daemon's tests, end to end (cmd/threatd) and
// in process (cmd/internal/daemon), talk to its API: requests whose every
// exchange is checked against the OpenAPI document kept in the repository
// (core/api/openapi.json).
package apitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/threatd/threatd/core/coretest"
)

// The OpenAPI document kept in the repository (core/api/openapi.json),
// loaded once: every answer Do receives is checked against it.
var openAPI struct {
	once   sync.Once
	router routers.Router
	err    error
}

func router(t testing.TB) routers.Router {
	openAPI.once.Do(func() {
		b, err := os.ReadFile(filepath.Join(coretest.ModuleRoot(), "core", "api", "openapi.json"))
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

// Check checks one exchange against the OpenAPI document with
// kin-openapi (Mismatches) and fails t for each mismatch.
func Check(t testing.TB, req *http.Request, reqBody []byte, res *http.Response, resBody []byte) {
	t.Helper()
	for _, m := range Mismatches(t, req, reqBody, res, resBody) {
		t.Error(m)
	}
}

// Mismatches: every answer must be one the document describes (its
// status, content type and body schema); a request the daemon accepted
// (2xx) must be one the document allows. Paths the document does not list
// (the web site, unknown paths, another base path) are not checked.
func Mismatches(t testing.TB, req *http.Request, reqBody []byte, res *http.Response, resBody []byte) []string {
	route, params, err := router(t).FindRoute(req)
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
