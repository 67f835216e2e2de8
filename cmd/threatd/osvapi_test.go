package main_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// readArchive reads an OSV all.zip: record id → record.
func readArchive(t *testing.T, raw []byte) map[string]map[string]any {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatalf("not a zip archive: %v", err)
	}
	out := map[string]map[string]any{}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if f.Name != v["id"].(string)+".json" {
			t.Fatalf("%s holds %v", f.Name, v["id"])
		}
		out[v["id"].(string)] = v
	}
	return out
}

// The daemon's OSV endpoints (docs/osv.md): the archives (paid), the
// same records as `threatd export osv`, and OSV.dev's query API answered
// from the index: query by name and ecosystem or by purl, with and without
// a version, querybatch, and vulns by id, for imported (MAL) and community
// (THREATD) records.
func TestOSVDaemonAPI(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("sam@example.com")
	paid := in.user("tip@example.com", "--tier", "paid")
	sampleDir := testbin.OSVSample(t)
	in.mustCLI("import", "osv", sampleDir)
	npmID, npmName, _ := sampleRecord(t, sampleDir, "npm")
	pypiID, pypiName, _ := sampleRecord(t, sampleDir, "pypi")
	d := in.serve()
	community := d.submit(tok, `{"report_type":"package","resource_identifier":"threatd-api-evil","registry":"npm",
		"threat_description":"Steals npm tokens","version_info":"1.2.3"}`)
	in.mustCLI("review", "verify", community)
	eventually(t, "the verified report in the index", func() bool {
		return d.do("GET", checkPath("report_type", "package", "resource_identifier", "threatd-api-evil", "ecosystem", "npm"), tok, "").body["malicious"] == true
	})

	// The archives: paid; by OSV name and by registry name.
	d.do("GET", base+"/osv/npm/all.zip", tok, "").expect(t, 403, "")
	d.do("GET", base+"/osv/cobol/all.zip", paid, "").expect(t, 404, "")
	d.do("GET", base+"/osv/npm/all.zip?ecosystem=pypi", paid, "").expect(t, 400, "")
	npmZip := d.raw("GET", base+"/osv/npm/all.zip", paid)
	if npmZip.code != 200 || npmZip.hdr.Get("Content-Type") != "application/zip" {
		t.Fatalf("npm archive: %d %s", npmZip.code, npmZip.hdr.Get("Content-Type"))
	}
	npmRecords := readArchive(t, npmZip.body)
	pypiZip := d.raw("GET", base+"/osv/PyPI/all.zip", paid)
	if other := d.raw("GET", base+"/osv/pypi/all.zip", paid); !bytes.Equal(other.body, pypiZip.body) {
		t.Fatal("/osv/pypi/all.zip and /osv/PyPI/all.zip differ")
	}
	pypiRecords := readArchive(t, pypiZip.body)
	if npmRecords[npmID] == nil || npmRecords["THREATD-"+community] == nil || pypiRecords[pypiID] == nil || npmRecords[pypiID] != nil {
		t.Fatalf("archives: npm %d records, pypi %d", len(npmRecords), len(pypiRecords))
	}

	// query: by name and ecosystem, any version and one version.
	q := d.do("POST", base+"/osv/v1/query", tok, fmt.Sprintf(`{"package":{"name":%q,"ecosystem":"npm"},"version":"1.0.0"}`, npmName)).expect(t, 200, "")
	vulns, _ := q.body["vulns"].([]any)
	if len(vulns) != 1 || !reflect.DeepEqual(vulns[0], npmRecords[npmID]) {
		t.Fatalf("query %s: %s\nwant %v", npmName, q.raw, npmRecords[npmID])
	}
	q = d.do("POST", base+"/osv/v1/query", tok, fmt.Sprintf(`{"package":{"purl":"pkg:pypi/%s@0.1"}}`, pypiName)).expect(t, 200, "")
	if vulns, _ = q.body["vulns"].([]any); len(vulns) != 1 || vulns[0].(map[string]any)["id"] != pypiID {
		t.Fatalf("query by purl: %s", q.raw)
	}
	for version, want := range map[string]int{"1.2.3": 1, "1.2.4": 0, "": 1} {
		body := `{"package":{"name":"threatd-api-evil","ecosystem":"npm"}` + map[bool]string{true: `,"version":"` + version + `"`}[version != ""] + `}`
		q = d.do("POST", base+"/osv/v1/query", tok, body).expect(t, 200, "")
		vulns, _ = q.body["vulns"].([]any)
		if len(vulns) != want || (want == 1 && !reflect.DeepEqual(vulns[0], npmRecords["THREATD-"+community])) {
			t.Fatalf("community report at %q: %s", version, q.raw)
		}
		if want == 0 && q.raw != "{}\n" && q.raw != "{}" {
			t.Fatalf("no vulnerability: %q, want {}", q.raw)
		}
	}
	// Bad queries name the field.
	for body, field := range map[string]string{
		`{"commit":"6879efc2c1596d11a6a6ad296f80063b558d5e0f"}`: "commit",
		`{"version":"1.0"}`:                                                        "package",
		`{"package":{"name":"x","ecosystem":"COBOL"}}`:                             "package.ecosystem",
		`{"package":{"ecosystem":"npm"}}`:                                          "package.name",
		`{"package":{"purl":"pkg:npm/x@1","name":"x"}}`:                            "package",
		`{"package":{"purl":"pkg:npm/x@1"},"version":"2"}`:                         "version",
		`{"package":{"name":"x","ecosystem":"npm"},"colour":"red"}`:                "colour",
		`{"queries":[{"package":{"name":"x","ecosystem":"npm"}},{"version":"1"}]}`: "queries[1].package",
	} {
		path := "/osv/v1/query"
		if field == "queries[1].package" {
			path = "/osv/v1/querybatch"
		}
		r := d.do("POST", base+path, tok, body).expect(t, 400, "")
		if r.body["field"] != field {
			t.Errorf("%s: field %v, want %s (%s)", body, r.body["field"], field, r.raw)
		}
	}

	// querybatch: in order, ids and modified only.
	b := d.do("POST", base+"/osv/v1/querybatch", tok, fmt.Sprintf(`{"queries":[{"package":{"name":%q,"ecosystem":"npm"}},
		{"package":{"name":"left-pad","ecosystem":"npm"},"version":"1.3.0"},{"package":{"purl":"pkg:npm/threatd-api-evil@1.2.3"}}]}`, npmName)).expect(t, 200, "")
	results := b.body["results"].([]any)
	if len(results) != 3 || len(results[1].(map[string]any)) != 0 {
		t.Fatalf("querybatch: %s", b.raw)
	}
	for i, id := range map[int]string{0: npmID, 2: "THREATD-" + community} {
		vs := results[i].(map[string]any)["vulns"].([]any)
		v := vs[0].(map[string]any)
		if len(vs) != 1 || v["id"] != id || v["modified"] != npmRecords[id]["modified"] || len(v) != 2 {
			t.Fatalf("querybatch result %d: %v", i, vs)
		}
	}

	// vulns by id: the archive's record.
	for id, want := range map[string]map[string]any{npmID: npmRecords[npmID], "THREATD-" + community: npmRecords["THREATD-"+community], pypiID: pypiRecords[pypiID]} {
		r := d.do("GET", base+"/osv/v1/vulns/"+id, tok, "").expect(t, 200, "")
		if !reflect.DeepEqual(r.body, want) {
			t.Fatalf("vulns/%s: %s\nwant %v", id, r.raw, want)
		}
	}
	for _, id := range []string{"MAL-0000-0", "THREATD-" + tok[:8], "THREATD-00000000-0000-7000-8000-000000000000"} {
		d.do("GET", base+"/osv/v1/vulns/"+id, tok, "").expect(t, 404, "")
	}
	d.do("POST", base+"/osv/v1/query", "", `{}`).expect(t, 401, "Authorization required")

	// The archive is the CLI's export.
	d.stop()
	dir := t.TempDir()
	in.mustCLI("export", "osv", dir)
	raw, err := os.ReadFile(filepath.Join(dir, "npm", "all.zip"))
	if err != nil {
		t.Fatal(err)
	}
	if cli := readArchive(t, raw); !reflect.DeepEqual(cli, npmRecords) {
		t.Fatalf("the daemon's npm archive (%d records) differs from the CLI's (%d)", len(npmRecords), len(cli))
	}
}
