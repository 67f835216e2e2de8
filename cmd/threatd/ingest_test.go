package main_test

import (
	"archive/zip"
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/storage/pgtest"
)

// realSample is the reference data set of 300 real OSV reports: the tests
// of importing real data skip without it (coretest.Reference). Tests that
// need OSV records but not real ones import testbin.OSVSample.
func realSample(t *testing.T) string {
	t.Helper()
	return coretest.Reference(t, "osv-malicious-sample")
}

// sampleCounts counts the OSV records under dir per registry, from their
// affected packages' ecosystems.
func sampleCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	reg := map[string]string{"npm": "npm", "PyPI": "pypi", "RubyGems": "rubygems", "crates.io": "crates.io", "Go": "go", "NuGet": "nuget", "Maven": "maven"}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	out := map[string]int{}
	for _, f := range files {
		var r struct {
			Affected []struct{ Package struct{ Ecosystem string } } `json:"affected"`
		}
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &r) != nil || len(r.Affected) != 1 {
			t.Fatalf("%s: %v", f, err)
		}
		out[reg[r.Affected[0].Package.Ecosystem]]++
	}
	return out
}

// kiotaRecord is an OSV record of an npm package that affects every
// version, published upstream in 2022 (the layout of MAL-2022-4173).
func kiotaRecord() []byte {
	return testbin.OSVRecord("MAL-2022-4173", "npm", "kiota-authentication-azure", 1)
}

// manifestCounts reads the real sample's MANIFEST.tsv: reports per registry.
func manifestCounts(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(realSample(t), "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := map[string]string{"npm": "npm", "PyPI": "pypi", "RubyGems": "rubygems", "crates.io": "crates.io", "Go": "go", "NuGet": "nuget", "Maven": "maven"}
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		out[reg[cols[3]]]++
	}
	return out
}

func summaryCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+)\s+(\d+)$`).FindAllStringSubmatch(out, -1) {
		var n int
		fmt.Sscan(m[2], &n)
		got[m[1]] = n
	}
	return got
}

func registryCounts(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	rows, err := db.Query("SELECT registry, count(*) FROM threats WHERE status = 'verified' AND source = 'osv' GROUP BY registry")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var r string
		var n int
		rows.Scan(&r, &n)
		got[r] = n
	}
	return got
}

type osvFile struct {
	ID        string   `json:"id"`
	Summary   string   `json:"summary"`
	Published string   `json:"published"`
	Modified  string   `json:"modified"`
	Aliases   []string `json:"aliases"`
	Affected  []struct {
		Package  struct{ Ecosystem, Name string } `json:"package"`
		Versions []string                         `json:"versions"`
		Ranges   []struct {
			Events []map[string]string `json:"events"`
		} `json:"ranges"`
	} `json:"affected"`
	References []struct{ URL string } `json:"references"`
	DB         map[string]any         `json:"database_specific"`
}

func readOSV(t *testing.T, rel string) osvFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realSample(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	var f osvFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestImportOSVSample(t *testing.T) {
	t.Parallel()
	sampleDir := realSample(t)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("i@example.com", "--tier", "paid")
	// A community report for a package of the sample, pending: the import
	// attaches to it instead of duplicating it.
	d0 := in.serve()
	community := d0.submit(tok, `{"report_type":"package","resource_identifier":"kiota-authentication-azure","registry":"npm","threat_description":"seen by our SOC"}`)
	d0.stop()

	out := in.mustCLI("import", "osv", sampleDir)
	sum := summaryCounts(t, out)
	if sum["imported"] != 299 || sum["attached"] != 1 || sum["skipped"] != 0 {
		t.Fatalf("summary %v\n%s", sum, out)
	}
	want := manifestCounts(t)
	db := sqliteDB(t, in)
	got := registryCounts(t, db)
	want["npm"]-- // the attached package stays the community report
	for reg, n := range want {
		if got[reg] != n {
			t.Fatalf("registry %s: %d verified imports, want %d (%v vs %v)", reg, got[reg], n, got, want)
		}
	}
	if n := count(t, db, "SELECT count(*) FROM threats WHERE resource_identifier = 'kiota-authentication-azure'"); n != 1 {
		t.Fatalf("attached package duplicated: %d reports", n)
	}

	// Re-importing changes nothing, not even the change feed.
	seq := count(t, db, "SELECT max(seq) FROM changes")
	if s := summaryCounts(t, in.mustCLI("import", "osv", sampleDir)); s["unchanged"] != 300 || s["imported"] != 0 {
		t.Fatalf("re-import: %v", s)
	}
	if count(t, db, "SELECT max(seq) FROM changes") != seq {
		t.Fatal("a no-op re-import wrote changes")
	}

	d := in.serve()
	// Spot checks against the source files.
	for _, rel := range []string{"npm/MAL-2023-1130.json", "pypi/MAL-2023-7813.json", "nuget/MAL-2024-4252.json"} {
		src := readOSV(t, rel)
		a := src.Affected[0]
		reg := map[string]string{"npm": "npm", "PyPI": "pypi", "NuGet": "nuget"}[a.Package.Ecosystem]
		all := false
		for _, rg := range a.Ranges {
			zero, fixed := false, false
			for _, e := range rg.Events {
				zero = zero || e["introduced"] == "0"
				fixed = fixed || e["fixed"] != "" || e["last_affected"] != ""
			}
			all = all || zero && !fixed
		}
		check := func(version string) map[string]any {
			r := d.do("GET", checkPath("report_type", "package", "resource_identifier", a.Package.Name, "ecosystem", reg, "version", version), tok, "").expect(t, 200, "")
			det, _ := r.body["details"].(map[string]any)
			return det
		}
		// introduced: 0 with no fix affects every version; otherwise the listed ones.
		if unlisted := check("999.0.0"); (unlisted != nil) != all {
			t.Fatalf("%s: version 999.0.0 flagged=%v, want %v", rel, unlisted != nil, all)
		}
		version := "999.0.0"
		if !all {
			version = a.Versions[0]
		}
		det := check(version)
		if det == nil {
			t.Fatalf("%s: %s@%s not flagged", rel, a.Package.Name, version)
		}
		pub, _ := time.Parse(time.RFC3339, src.Published)
		va, _ := time.Parse(time.RFC3339Nano, det["verified_at"].(string))
		if !va.Equal(pub) || det["verified_by"] != "osv-import" || det["osv_advisory_url"] != "https://osv.dev/vulnerability/"+src.ID ||
			det["threat_description"] != strings.TrimSpace(src.Summary) || det["first_seen"] == nil || det["last_seen"] == nil {
			t.Fatalf("%s mapped as %v", rel, det)
		}
		if len(a.Versions) > 0 && det["version_info"] != strings.Join(a.Versions, ", ") {
			t.Fatalf("%s: version_info %v, want %v", rel, det["version_info"], a.Versions)
		}
		for _, ref := range src.References {
			if !strings.Contains(fmt.Sprint(det["evidence_references"]), ref.URL) {
				t.Fatalf("%s: reference %s missing from %v", rel, ref.URL, det["evidence_references"])
			}
		}
		tags := fmt.Sprint(det["tags"])
		for _, o := range src.DB["malicious-packages-origins"].([]any) {
			if s := o.(map[string]any)["source"].(string); !strings.Contains(tags, s) {
				t.Fatalf("%s: origin %s not in tags %s", rel, s, tags)
			}
		}
		// database_specific.iocs: defanged in payload_description, re-fanged in threat-data.
		if iocs, ok := src.DB["iocs"].(map[string]any); ok {
			data := d.do("GET", base+"/threat-data?threat_id="+det["id"].(string), tok, "").expect(t, 200, "")
			for _, u := range iocs["urls"].([]any) {
				if !strings.Contains(det["payload_description"].(string), "hxxps://") || !strings.Contains(fmt.Sprint(data.body["iocs"]), u.(string)) {
					t.Fatalf("%s: IOC %s not carried (payload %q, iocs %v)", rel, u, det["payload_description"], data.body["iocs"])
				}
			}
		}
	}
	// Old upstream publication dates do not flood the latest feed.
	d.do("PUT", base+"/modify-threat-report", tok, fmt.Sprintf(`{"threat_id":%q,"severity_level":"high"}`, community)).expect(t, 200, "")
	fresh := d.submit(tok, `{"report_type":"domain","resource_identifier":"fresh.example","threat_description":"today"}`)
	in.mustCLI("review", "verify", fresh)
	latest := d.do("GET", base+"/query-latest", tok, "").expect(t, 200, "")
	if first := latest.body["threats"].([]any)[0].(map[string]any); first["id"] != fresh {
		t.Fatalf("query-latest starts with %v, not the report verified now", first["resource_identifier"])
	}
}

func TestImportOSVUpdatesWithdrawalsAndBadFiles(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	tok := in.user("u@example.com")
	dir := t.TempDir()
	orig := kiotaRecord()
	write := func(name string, mutate func(map[string]any)) {
		var m map[string]any
		json.Unmarshal(orig, &m)
		if mutate != nil {
			mutate(m)
		}
		b, _ := json.Marshal(m)
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	write("MAL-2022-4173.json", nil)
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{ not json"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"id":"MAL-X","published":"2024-01-01T00:00:00Z","modified":"2024-01-01T00:00:00Z","summary":"x","affected":[{"package":{"ecosystem":"Hackage","name":"x"}}]}`), 0o644)
	out := in.mustCLI("import", "osv", dir)
	if s := summaryCounts(t, out); s["imported"] != 1 || s["skipped"] != 2 || !strings.Contains(out, "broken.json: not an OSV record") || !strings.Contains(out, `ecosystem "Hackage" is not supported`) {
		t.Fatalf("first import:\n%s", out)
	}
	// A newer upstream version updates ours as a revision.
	write("MAL-2022-4173.json", func(m map[string]any) {
		m["modified"] = "2024-05-01T00:00:00Z"
		m["summary"] = "Malicious code in kiota-authentication-azure (npm), now confirmed"
	})
	os.Remove(filepath.Join(dir, "broken.json"))
	os.Remove(filepath.Join(dir, "other.json"))
	if s := summaryCounts(t, in.mustCLI("import", "osv", dir)); s["updated"] != 1 {
		t.Fatalf("modified copy: %v", s)
	}
	d := in.serve()
	q := checkPath("purl", "pkg:npm/kiota-authentication-azure")
	r := d.do("GET", q, tok, "").expect(t, 200, "")
	if det := r.body["details"].(map[string]any); det["threat_description"] != "Malicious code in kiota-authentication-azure (npm), now confirmed" || det["revision"] != float64(1) {
		t.Fatalf("updated record: %v", det)
	}
	// Withdrawn upstream: ours is withdrawn too.
	write("MAL-2022-4173.json", func(m map[string]any) {
		m["modified"] = "2024-06-01T00:00:00Z"
		m["withdrawn"] = "2024-06-01T00:00:00Z"
	})
	if s := summaryCounts(t, in.mustCLI("import", "osv", dir)); s["withdrawn"] != 1 {
		t.Fatalf("withdrawn copy: %v", s)
	}
	eventually(t, "withdrawn report unflagged", func() bool { return d.do("GET", q, tok, "").body["malicious"] == false })
}

// An all.zip is imported; the source keeps its entries' heads in the data
// directory, and a re-import of the archive downloaded again finds the
// unchanged records unchanged and the one modified updated.
func TestImportOSVZipArchive(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	archive := filepath.Join(t.TempDir(), "all.zip")
	files, _ := filepath.Glob(filepath.Join(testbin.OSVSample(t), "pypi", "*.json"))
	write := func(modify string) {
		f, _ := os.Create(archive)
		zw := zip.NewWriter(f)
		for _, p := range files {
			w, _ := zw.Create(filepath.Base(p))
			b, _ := os.ReadFile(p)
			if p == modify {
				now := time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
				b = regexp.MustCompile(`"modified": *"[^"]*"`).ReplaceAll(b, []byte(`"modified": "`+now+`"`))
			}
			w.Write(b)
		}
		zw.Close()
		f.Close()
	}
	write("")
	if s := summaryCounts(t, in.mustCLI("import", "osv", archive)); s["imported"] != len(files) || len(files) == 0 {
		t.Fatalf("zip: %v for %d files", s, len(files))
	}
	cached, _ := filepath.Glob(filepath.Join(in.dir, "data", "plugin-cache", "source-osv", "osv-heads-*.bin"))
	if len(cached) != 1 {
		t.Fatalf("the source's head cache after the import: %q", cached)
	}
	if s := summaryCounts(t, in.mustCLI("import", "osv", archive)); s["unchanged"] != len(files) {
		t.Fatalf("re-import: %v for %d files", s, len(files))
	}
	write(files[len(files)/2])
	if s := summaryCounts(t, in.mustCLI("import", "osv", archive)); s["updated"] != 1 || s["unchanged"] != len(files)-1 {
		t.Fatalf("re-import with %s modified: %v for %d files", filepath.Base(files[len(files)/2]), s, len(files))
	}
}

func TestImportOSVIntoPostgresAndScheduledSourceLease(t *testing.T) {
	t.Parallel()
	sampleDir := testbin.OSVSample(t)
	dsn := pgtest.Server(t).Database(t, t.Name())
	in := newInstance(t, fmt.Sprintf("storage:\n  plugin: postgres\n  dsn: %q\nsources:\n  - {name: osv-sample, plugin: osv, paths: [%q], interval: 1h}\n", dsn, sampleDir))
	a, b := in.serve(), in.serve()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	defer db.Close()
	eventually(t, "the scheduled import", func() bool { return count(t, db, "SELECT count(*) FROM threats") == 300 })
	// The run is logged once its last batch is committed, and the other
	// daemon logs its refused lease when it tries: wait for both lines
	// (the daemons log on their own schedules), then count.
	eventually(t, "the source run and the refused lease to be logged", func() bool {
		logs := a.logText() + b.logText()
		return strings.Contains(logs, `"msg":"source run"`) && strings.Contains(logs, "another daemon holds the lease")
	})
	runs := strings.Count(a.logText(), `"msg":"source run"`) + strings.Count(b.logText(), `"msg":"source run"`)
	held := strings.Count(a.logText(), "another daemon holds the lease") + strings.Count(b.logText(), "another daemon holds the lease")
	if runs != 1 || held != 1 {
		t.Fatalf("source ran %d times, lease refused %d times (want 1 and 1)", runs, held)
	}
	want := sampleCounts(t, sampleDir)
	got := registryCounts(t, db)
	for reg, n := range want {
		if got[reg] != n {
			t.Fatalf("registry %s: %d, want %d", reg, got[reg], n)
		}
	}
	if s := summaryCounts(t, in.mustCLI("import", "osv", sampleDir)); s["unchanged"] != 300 {
		t.Fatalf("re-import on PostgreSQL: %v", s)
	}
}

// A batch of long reports never aborts an import: 60 records of 100 KB each
// went to storage as one 6 MB message (500 per batch) and gRPC refused it
// ("message larger than max"), every run, leaving the folder half imported.
// Batches are now bounded by bytes, through the real plugins.
func TestImportOfLongRecordsIsSplitByBytes(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	dir := t.TempDir()
	long := strings.Repeat("The payload exfiltrates credentials to a remote host. ", 1900) // ~100 KB
	for i := range 60 {
		rec := fmt.Sprintf(`{"id":"MAL-LONG-%02d","published":"2025-01-01T00:00:00Z","modified":"2025-01-02T00:00:00Z","summary":"Malicious code in long-%02d",
			"details":%q,"affected":[{"package":{"ecosystem":"npm","name":"long-%02d"},"versions":["1.0.0"]}]}`, i, i, long, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("MAL-LONG-%02d.json", i)), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := in.cli("import", "osv", dir)
	if r.code != 0 {
		t.Fatalf("import of 6 MB of long records: exit %d\n%s", r.code, r.stderr)
	}
	if s := summaryCounts(t, r.stdout); s["imported"] != 60 || s["skipped"] != 0 {
		t.Fatalf("summary: %v\n%s", s, r.stdout)
	}
	if n := count(t, sqliteDB(t, in), "SELECT count(*) FROM threat_details WHERE length(payload_description) > 100000"); n != 60 {
		t.Fatalf("%d long payloads stored, want 60", n)
	}
}
