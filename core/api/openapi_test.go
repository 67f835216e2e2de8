package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/registries"
)

// The OpenAPI document is a valid OpenAPI 3.1 document (kin-openapi's
// validation) and lists every endpoint the daemon serves outside the web
// site, with its method; a moved base path moves the API's paths only.
func TestOpenAPIDocument(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}

	param := regexp.MustCompile(`:([a-z]+)`)
	want := map[string][]string{} // path → methods
	add := func(method, path string) {
		path = param.ReplaceAllString(path, "{$1}")
		want[path] = append(want[path], method)
	}
	var s Server
	for _, r := range s.apiRoutes() {
		add(r.method, DefaultBasePath+r.path)
	}
	for _, r := range BuiltinExportRoutes {
		p := r.Path
		if strings.HasPrefix(p, "/osv/") {
			p = "/osv/{ecosystem}/" + p[strings.LastIndex(p, "/")+1:]
		}
		add(http.MethodGet, DefaultBasePath+p)
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz", DefaultBasePath + "/openapi.json"} {
		add(http.MethodGet, p)
	}
	for _, p := range []string{"/", "/api/", "/api/collections/", "/api/collections/:collection/", "/api/collections/:collection/objects/",
		"/api/collections/:collection/manifest/", "/api/collections/:collection/objects/:object/", "/api/collections/:collection/objects/:object/versions/"} {
		add(http.MethodGet, taxiiPrefix+p)
	}
	add(http.MethodPost, taxiiPrefix+"/api/collections/:collection/objects/")
	for _, reg := range registries.Names() {
		add(http.MethodGet, DefaultBasePath+"/firewall/"+reg+"/{path}")
		add(http.MethodHead, DefaultBasePath+"/firewall/"+reg+"/{path}")
	}
	add(http.MethodPost, DefaultBasePath+"/firewall/npm/-/npm/v1/security/advisories/bulk")
	for _, a := range registries.All() {
		if q, ok := a.(firewall.Queried); ok {
			for _, p := range q.QueryPaths() {
				add(http.MethodPost, DefaultBasePath+"/firewall/"+a.Registry()+"/"+p)
			}
		}
	}
	for _, r := range append(append(s.firewallAdminRoutes(), s.analysisRoutes()...), s.exposureRoutes()...) {
		add(r.method, DefaultBasePath+r.path)
	}
	add(http.MethodDelete, taxiiPrefix+"/api/collections/:collection/objects/:object/")

	for path, methods := range want {
		item := doc.Paths.Value(path)
		if item == nil {
			t.Errorf("%s is served but not in the OpenAPI document", path)
			continue
		}
		for _, m := range slices.Compact(methods) {
			if item.GetOperation(m) == nil {
				t.Errorf("%s %s is served but not in the OpenAPI document", m, path)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			if !slices.Contains(want[path], m) {
				t.Errorf("%s %s is in the OpenAPI document but not served", m, path)
			}
		}
	}

	moved, err := openAPIFor("/api/v2")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		OpenAPI string                     `json:"openapi"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(moved, &m); err != nil || m.OpenAPI != "3.1.0" {
		t.Fatalf("moved document: %v %q", err, m.OpenAPI)
	}
	if m.Paths["/api/v2/check-malicious"] == nil || m.Paths["/healthz"] == nil || m.Paths["/taxii2/"] == nil || m.Paths[DefaultBasePath+"/account"] != nil ||
		len(m.Paths) != len(doc.Paths.Map()) {
		t.Fatalf("paths under /api/v2: %d of %d", len(m.Paths), len(doc.Paths.Map()))
	}
}
