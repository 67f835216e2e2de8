package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// osvScanner finds osv-scanner v2 (`make osv-scanner` builds the pinned
// version into bin/tools): THREATD_OSV_SCANNER, or bin/tools beside the
// test binaries. `make test` sets THREATD_OSV_SCANNER_TESTS=required, so a
// missing scanner fails there; elsewhere the test skips.
func osvScanner(t *testing.T) string {
	t.Helper()
	p := os.Getenv("THREATD_OSV_SCANNER")
	if p == "" {
		p = filepath.Join(testbin.Dir(t), "tools", "osv-scanner")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("THREATD_OSV_SCANNER_TESTS") == "required" {
			t.Fatalf("osv-scanner is needed: %v (make osv-scanner)", err)
		}
		t.Skipf("no osv-scanner at %s (make osv-scanner builds it)", p)
	}
	return p
}

// sampleRecord is the first record of the sample's ecosystem folder with a
// single affected package that affects every version, and its file.
func sampleRecord(t *testing.T, sampleDir, folder string) (id, name, file string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sampleDir, folder, "*.json"))
	sort.Strings(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			ID       string `json:"id"`
			Affected []struct {
				Package struct{ Name string } `json:"package"`
				Ranges  []struct {
					Events []map[string]string `json:"events"`
				} `json:"ranges"`
			} `json:"affected"`
			Withdrawn string `json:"withdrawn"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Withdrawn != "" || len(r.Affected) != 1 || len(r.Affected[0].Ranges) != 1 {
			continue
		}
		if ev := r.Affected[0].Ranges[0].Events; len(ev) == 1 && ev[0]["introduced"] == "0" {
			return r.ID, r.Affected[0].Package.Name, f
		}
	}
	t.Fatalf("no single-package all-versions record in %s", folder)
	return "", "", ""
}

// TestOSVExportWithOSVScanner: the real OSV sample imported, a community
// report verified, `threatd export osv`, and osv-scanner v2 scanning a
// package-lock.json and a requirements.txt offline against the export: the
// imported packages under their MAL ids, the community one under its
// THREATD id (at the affected version only), nothing for clean packages.
// Then the round trip: the export imported again changes nothing, also
// for a report updated upstream since its first import.
func TestOSVExportWithOSVScanner(t *testing.T) {
	t.Parallel()
	scanner := osvScanner(t)
	in := newInstance(t, quiet)
	tok := in.user("sam@example.com")
	in.user("rita@example.com", "--role", "reviewer")
	sampleDir := testbin.OSVSample(t)
	in.mustCLI("import", "osv", sampleDir)
	npmID, npmName, npmFile := sampleRecord(t, sampleDir, "npm")
	pypiID, pypiName, _ := sampleRecord(t, sampleDir, "pypi")
	// A newer upstream version of the npm record: the report is updated.
	var upstream map[string]any
	raw, err := os.ReadFile(npmFile)
	if err != nil || json.Unmarshal(raw, &upstream) != nil {
		t.Fatalf("%s: %v", npmFile, err)
	}
	upstream["modified"] = "2026-11-01T10:00:00Z"
	upstream["details"] = "A newer analysis of " + npmName + "."
	raw, _ = json.Marshal(upstream)
	newer := filepath.Join(t.TempDir(), npmID+".json")
	if err := os.WriteFile(newer, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := in.mustCLI("import", "osv", newer); !regexp.MustCompile(`(?m)^updated +1$`).MatchString(out) {
		t.Fatalf("importing a newer version of %s:\n%s", npmID, out)
	}

	d := in.serve()
	r := d.do("POST", base+"/submit-threat-report", tok, `{"report_type":"package","resource_identifier":"threatd-community-evil","registry":"npm",
		"threat_description":"Steals npm tokens","version_info":"1.2.3, 1.2.4"}`).expect(t, 201, "")
	communityID := r.body["threat_id"].(string)
	in.mustCLI("review", "verify", communityID)
	d.stop()

	root := t.TempDir()
	out := in.mustCLI("export", "osv", filepath.Join(root, "osv-scanner"))
	for _, want := range []string{"npm: ", "PyPI: ", "RubyGems: "} {
		if !strings.Contains(out, want) {
			t.Fatalf("export osv said:\n%s", out)
		}
	}

	proj := t.TempDir()
	lock := map[string]any{
		"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"":                                    map[string]any{"name": "app", "version": "1.0.0"},
			"node_modules/" + npmName:             map[string]any{"version": "1.0.0"},
			"node_modules/threatd-community-evil": map[string]any{"version": "1.2.3"},
			"node_modules/left-pad":               map[string]any{"version": "1.3.0"},
			"node_modules/x/node_modules/threatd-community-evil": map[string]any{"version": "1.2.5"},
		},
	}
	raw, _ = json.Marshal(lock)
	if err := os.WriteFile(filepath.Join(proj, "package-lock.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "requirements.txt"), []byte(pypiName+"==1.0.0\nrequests==2.31.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	found := osvScannerFindings(t, scanner, root, filepath.Join(proj, "package-lock.json"), filepath.Join(proj, "requirements.txt"))
	want := map[string][]string{
		npmName + "@1.0.0":             {npmID},
		"threatd-community-evil@1.2.3": {"THREATD-" + communityID},
		pypiName + "@1.0.0":            {pypiID},
	}
	if len(found) != len(want) {
		t.Errorf("osv-scanner found %v, want %v", found, want)
	}
	for k, ids := range want {
		if !slices.Equal(found[k], ids) {
			t.Errorf("osv-scanner: %s has %v, want %v", k, found[k], ids)
		}
	}

	// The round trip: importing the export changes nothing.
	for _, eco := range []string{"npm", "PyPI"} {
		out := in.mustCLI("import", "osv", filepath.Join(root, "osv-scanner", eco, "all.zip"))
		for _, k := range []string{"imported", "updated", "withdrawn", "attached", "skipped"} {
			if m := regexp.MustCompile(`(?m)^` + k + ` +(\d+)$`).FindStringSubmatch(out); m == nil || m[1] != "0" {
				t.Errorf("re-importing the %s export: %s is not 0:\n%s", eco, k, out)
			}
		}
	}
}

// osvScannerFindings runs osv-scanner offline on lockfiles against the OSV
// database under root (threatd export osv root/osv-scanner), which must
// find something (exit 1), and returns its findings: package@version → the
// vulnerability ids, in its order.
func osvScannerFindings(t *testing.T, scanner, root string, lockfiles ...string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"scan", "--offline-vulnerabilities", "--format", "json"}
	for _, l := range lockfiles {
		args = append(args, "-L", l)
	}
	cmd := exec.CommandContext(ctx, scanner, args...)
	cmd.Env = append(os.Environ(), "OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY="+root)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("osv-scanner: %v (exit 1 means vulnerabilities found)\n%s\n%s", err, stderr.String(), stdout)
	}
	var res struct {
		Results []struct {
			Packages []struct {
				Package struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"package"`
				Vulnerabilities []struct {
					ID string `json:"id"`
				} `json:"vulnerabilities"`
			} `json:"packages"`
		} `json:"results"`
	}
	if err := json.Unmarshal(stdout, &res); err != nil {
		t.Fatalf("osv-scanner's JSON: %v\n%s", err, stdout)
	}
	found := map[string][]string{}
	for _, s := range res.Results {
		for _, p := range s.Packages {
			for _, v := range p.Vulnerabilities {
				found[p.Package.Name+"@"+p.Package.Version] = append(found[p.Package.Name+"@"+p.Package.Version], v.ID)
			}
		}
	}
	return found
}
