package main_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/core/ioc"
	"github.com/threatd/threatd/core/ioctest"
)

// The 29,604 real OSV reports of the shared sample, imported through the
// real source and storage plugins and read back over HTTPS from
// /threat-data, publish no false indicator and miss none the upstream
// records list (the audit of core/ioctest, as in osv's test on the
// records as read). Every report's id comes from a streamed export of
// everything (select: all).
func TestRealReportsThroughTheDaemon(t *testing.T) {
	t.Parallel()
	zips := coretest.OSVArchives(t)
	if len(zips) < 8 {
		t.Fatalf("%d archives of real reports, want 8", len(zips))
	}
	in := newInstance(t, quiet+"exporter_routes:\n  - {path: /export/csv/all, exporter: csv, tier: paid, select: all}\n")
	tok := in.user("audit@example.com", "--tier", "paid")
	in.mustCLI(append([]string{"import", "osv"}, zips...)...)
	d := in.serve()
	res := d.raw("GET", base+"/export/csv/all", tok)
	if res.code != 200 {
		t.Fatalf("export: %d %.300s", res.code, res.body)
	}
	seen := map[string]bool{}
	var ids []string
	for i, line := range strings.Split(strings.TrimSpace(string(res.body)), "\n") {
		if id, _, _ := strings.Cut(line, ","); i > 0 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) < 29_000 {
		t.Fatalf("%d reports exported, want the 29,604 imported less the withdrawn and merged", len(ids))
	}
	type data struct {
		Threat struct {
			ID                 string `json:"id"`
			ResourceIdentifier string `json:"resource_identifier"`
			VersionInfo        string `json:"version_info"`
			PayloadDescription string `json:"payload_description"`
			ThreatDescription  string `json:"threat_description"`
			EvidenceReferences string `json:"evidence_references"`
			OSVAdvisoryURL     string `json:"osv_advisory_url"`
		} `json:"threat"`
		IOCs []ioc.IOC `json:"iocs"`
	}
	var (
		mu     sync.Mutex
		counts ioctest.Counts
		failed []string
		wg     sync.WaitGroup
	)
	next := make(chan string)
	for range 4 {
		wg.Go(func() {
			for id := range next {
				req, _ := http.NewRequest("GET", d.base+base+"/threat-data?threat_id="+id, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				r, err := d.client.Do(req)
				var body data
				if err == nil {
					err = json.NewDecoder(r.Body).Decode(&body)
					r.Body.Close()
					if err == nil && r.StatusCode != 200 {
						err = fmt.Errorf("status %d", r.StatusCode)
					}
				}
				mu.Lock()
				if err != nil {
					failed = append(failed, id+": "+err.Error())
				} else {
					th := body.Threat
					counts.Add(ioctest.Report{ID: th.ID, UpstreamID: th.OSVAdvisoryURL, ResourceIdentifier: th.ResourceIdentifier, VersionInfo: th.VersionInfo,
						PayloadDescription: th.PayloadDescription, ThreatDescription: th.ThreatDescription,
						EvidenceReferences: th.EvidenceReferences, OSVAdvisoryURL: th.OSVAdvisoryURL}, body.IOCs)
				}
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d /threat-data calls failed: %q", len(failed), len(ids), failed[:min(5, len(failed))])
	}
	t.Logf("through the daemon: %s", &counts)
	if counts.False() != 0 || counts.Listed < 13_000 || counts.Missed != 0 {
		t.Fatalf("%d false and %d missed indicators: %s", counts.False(), counts.Missed, &counts)
	}

	pullRealTAXII(t, d, tok, ids)

	// The MISP feed of the same reports: every event valid against MISP's
	// definitions, one object per package report, and no indicator for IDS
	// on shared infrastructure (github.com, registries, CDNs).
	rules := loadMISPRules(t)
	feed := t.TempDir()
	msg := in.mustCLI("export", "misp", feed)
	var reports, events int
	if _, err := fmt.Sscanf(msg, "%d reports in %d events", &reports, &events); err != nil || reports < len(ids) {
		t.Fatalf("export misp: %q (%d reports exported as CSV)", msg, len(ids))
	}
	files, _ := filepath.Glob(filepath.Join(feed, "*-*.json"))
	st := &mispStats{types: map[string]int{}}
	infra := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rules.check(t, b, st)
		var ev struct {
			Event struct {
				Object []struct {
					Attribute []struct {
						Relation string `json:"object_relation"`
						Value    string `json:"value"`
						ToIDs    bool   `json:"to_ids"`
					} `json:"Attribute"`
				} `json:"Object"`
			} `json:"Event"`
		}
		_ = json.Unmarshal(b, &ev)
		for _, o := range ev.Event.Object {
			for _, a := range o.Attribute {
				if !a.ToIDs || (a.Relation != "ioc-domain" && a.Relation != "ioc-url") {
					continue
				}
				host := a.Value
				if u, err := url.Parse(a.Value); err == nil && u.Host != "" {
					host = u.Hostname()
				}
				if ioc.IsInfrastructure(host) && a.Relation == "ioc-domain" {
					infra++
				}
			}
		}
	}
	t.Logf("MISP feed: %d events, %d objects, %d attributes, %d withdrawn", len(files), st.objects, st.attributes, st.withdrawn)
	if len(files) != events || st.objects != reports || infra != 0 {
		t.Fatalf("MISP feed: %d files for %d events, %d objects for %d reports, %d infrastructure domains for IDS", len(files), events, st.objects, reports, infra)
	}
}

// osvPackage is what a scan test needs of a real OSV record.
type osvPackage struct {
	name     string
	versions []string // listed versions; empty: every version
	// openAbove: a range from a version other than 0 with no fix beside
	// the list (check-malicious matches the listed versions).
	openAbove bool
}

// realPackages reads the affected packages of eco's archive of real
// reports: those with a version list, and those affecting every version
// (a range introduced at 0 and never fixed). Withdrawn records and ranges
// with a fix are left out (counted in the second result).
func realPackages(t *testing.T, eco string) ([]osvPackage, int) {
	t.Helper()
	zr, err := zip.OpenReader(filepath.Join(coretest.Reference(t, "osv-malicious-full"), eco, "all.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []osvPackage
	left := 0
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Withdrawn string `json:"withdrawn"`
			Affected  []struct {
				Package  struct{ Name string } `json:"package"`
				Versions []string              `json:"versions"`
				Ranges   []struct {
					Events []map[string]string `json:"events"`
				} `json:"ranges"`
			} `json:"affected"`
		}
		err = json.NewDecoder(rc).Decode(&rec)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		for _, a := range rec.Affected {
			fixed, fromZero := false, false
			for _, r := range a.Ranges {
				for _, e := range r.Events {
					if e["fixed"] != "" || e["last_affected"] != "" {
						fixed = true
					}
					if e["introduced"] == "0" {
						fromZero = true
					}
				}
			}
			if rec.Withdrawn != "" || fixed && len(a.Versions) == 0 {
				left++
				continue
			}
			openAbove := false
			if len(a.Versions) > 0 && len(a.Ranges) > 0 && !fixed {
				if fromZero {
					a.Versions = nil // a version list beside a range open from 0: every version
				} else {
					openAbove = true
				}
			}
			out = append(out, osvPackage{a.Package.Name, a.Versions, openAbove})
		}
	}
	return out, left
}

// The real npm and PyPI reports, imported, and lockfiles naming every one
// of their packages: threatd scan finds each package at a reported version
// (every one), and none at a version its reports do not list (none wrong).
func TestScanRealReports(t *testing.T) {
	t.Parallel()
	npmPkgs, npmLeft := realPackages(t, "npm")
	pyPkgs, pyLeft := realPackages(t, "PyPI")
	in := newInstance(t, quiet)
	in.mustCLI("import", "osv", filepath.Join(coretest.Reference(t, "osv-malicious-full"), "npm", "all.zip"),
		filepath.Join(coretest.Reference(t, "osv-malicious-full"), "PyPI", "all.zip"))
	dir := t.TempDir()
	// Expected findings: "name@version" for each reported version, and a
	// version no report lists for names reported at some versions only.
	want, clean := map[string]bool{}, map[string]bool{}
	ecosystems := []struct {
		eco, clean string
		pkgs       []osvPackage
		fold       func(string) string
	}{
		{"npm", "999.0.0-threatd-clean", npmPkgs, strings.ToLower},
		// pip's ==999 selects 999.0.0+local (a real report lists 999):
		// the clean version differs in its public part.
		{"pypi", "999999.1+threatd.clean", pyPkgs, core.NormalizePyPIName},
	}
	allVersions := map[string]bool{}
	for _, e := range ecosystems {
		for _, p := range e.pkgs {
			if len(p.versions) == 0 {
				allVersions[e.eco+" "+e.fold(p.name)] = true
			}
		}
	}
	lock := map[string]any{"": map[string]any{"name": "real", "version": "1.0.0"}}
	var req strings.Builder
	seen := map[string]bool{}
	add := func(eco, name, version string, expect bool) {
		key := eco + " " + name + "@" + version
		if seen[key] {
			return
		}
		seen[key] = true
		if expect {
			want[key] = true
		} else {
			clean[key] = true
		}
		if eco == "npm" {
			path := "node_modules/" + name
			if _, taken := lock[path]; taken {
				path = fmt.Sprintf("node_modules/v%d/node_modules/%s", len(lock), name)
			}
			lock[path] = map[string]any{"version": version}
		} else {
			fmt.Fprintf(&req, "%s==%s\n", name, version)
		}
	}
	for _, e := range ecosystems {
		for _, p := range e.pkgs {
			if len(p.versions) == 0 {
				add(e.eco, p.name, "1.0.0", true)
				continue
			}
			for _, v := range p.versions {
				add(e.eco, p.name, v, true)
			}
			if !allVersions[e.eco+" "+e.fold(p.name)] && !p.openAbove {
				add(e.eco, p.name, e.clean, false)
			}
		}
	}
	raw, _ := json.Marshal(map[string]any{"name": "real", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": lock})
	os.WriteFile(filepath.Join(dir, "package-lock.json"), raw, 0o644)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(req.String()), 0o644)
	r := in.cliIn(dir, "scan", "--format", "json", "package-lock.json", "requirements.txt")
	var a scanAnswer
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || r.code != 1 {
		t.Fatalf("exit %d %v\n%.2000s", r.code, err, r.stderr)
	}
	found := map[string]bool{}
	for _, m := range a.Malicious {
		found[m.Ecosystem+" "+m.Name+"@"+m.Version] = true
	}
	var missed, wrong []string
	for k := range want {
		if !found[k] {
			missed = append(missed, k)
		}
	}
	for k := range found {
		if clean[k] || !want[k] {
			wrong = append(wrong, k)
		}
	}
	t.Logf("real reports: %d npm and %d PyPI packages (%d and %d records left out: withdrawn or fixed ranges); "+
		"%d package versions checked, %d reported versions found, %d missed, %d clean versions, %d wrongly found, %d entries skipped",
		len(npmPkgs), len(pyPkgs), npmLeft, pyLeft, a.Packages, len(want)-len(missed), len(missed), len(clean), len(wrong), len(a.Skipped))
	if len(missed) > 0 || len(wrong) > 0 || len(a.Skipped) > 0 {
		slices.Sort(missed)
		slices.Sort(wrong)
		t.Fatalf("missed %d: %q\nwrong %d: %.20q\nskipped: %.5v", len(missed), missed, len(wrong), wrong, a.Skipped)
	}
}
