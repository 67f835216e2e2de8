package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// SampleSize is how many records OSVSample writes.
const SampleSize = 300

// sampleEcosystems are the sample's folders and OSV ecosystems, in the
// proportions of OSV's malicious-package data (npm most, then PyPI).
var sampleEcosystems = []struct{ folder, ecosystem string }{
	{"npm", "npm"}, {"npm", "npm"}, {"pypi", "PyPI"}, {"npm", "npm"}, {"pypi", "PyPI"}, {"npm", "npm"},
	{"rubygems", "RubyGems"}, {"npm", "npm"}, {"nuget", "NuGet"}, {"pypi", "PyPI"}, {"go", "Go"}, {"crates-io", "crates.io"},
}

// OSVSample writes SampleSize synthetic OSV malicious-package records into
// a new directory, in the layout of OSV's data (<folder>/<id>.json: npm,
// pypi, rubygems, nuget, go, crates-io), and returns it. The records are
// made like real ones (OSV schema 1.5, the "Per source details" text with
// its origin digest, defanged indicators in the text and in
// database_specific.iocs, versions listed or every version affected,
// references and credits) and are the same on every call, so that tests
// of paging, metrics, TAXII and the OSV API need no reference data.
func OSVSample(t testing.TB) string {
	t.Helper()
	return OSVSampleOf(t, SampleSize, "")
}

// OSVSampleOf writes n records as OSVSample does, all of one OSV ecosystem
// when only is not "" (npm, PyPI, RubyGems, NuGet, Go, crates.io).
func OSVSampleOf(t testing.TB, n int, only string) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		eco := sampleEcosystems[i%len(sampleEcosystems)]
		if only != "" {
			for _, e := range sampleEcosystems {
				if e.ecosystem == only {
					eco = e
				}
			}
		}
		id := fmt.Sprintf("MAL-2099-%d", 1000+i)
		body := OSVRecord(id, eco.ecosystem, SamplePackage(eco.ecosystem, i), i)
		if err := os.MkdirAll(filepath.Join(dir, eco.folder), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, eco.folder, id+".json"), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// SamplePackage is the package name of record i in an OSV ecosystem.
func SamplePackage(ecosystem string, i int) string {
	switch ecosystem {
	case "npm":
		if i%5 == 0 {
			return fmt.Sprintf("@sample-scope/stealer-%d", i)
		}
		return fmt.Sprintf("sample-stealer-%d", i)
	case "PyPI":
		return fmt.Sprintf("sample-pypi-stealer-%d", i)
	case "RubyGems":
		return fmt.Sprintf("sample_gem_%d", i)
	case "NuGet":
		return fmt.Sprintf("Sample.Stealer%d", i)
	case "Go":
		return fmt.Sprintf("github.com/sample-org/stealer-%d", i)
	}
	return fmt.Sprintf("sample_crate_%d", i)
}

// OSVRecord is record i of the synthetic sample: id, for package name in
// an OSV ecosystem.
func OSVRecord(id, ecosystem, name string, i int) []byte {
	published := time.Date(2022, 1, 3, 4, 5, 6, 0, time.UTC).Add(time.Duration(i) * 71 * time.Hour)
	modified := published.Add(time.Duration(1+i%9) * 24 * time.Hour)
	digest := sha256.Sum256([]byte(id))
	details := fmt.Sprintf("\n---\n_-= Per source details. Do not edit below this line.=-_\n\n## Source: ghsa-malware (%s)\n"+
		"The package runs a postinstall script that collects environment variables and credentials and sends them to "+
		"hxxps://c2-%d[.]sample-evil-%d[.]example/collect, then downloads a second stage from hxxp://203[.]0[.]113[.]%d/stage2.sh.\n",
		hex.EncodeToString(digest[:]), i, i%7, 1+i%250)
	affected := map[string]any{"package": map[string]any{"ecosystem": ecosystem, "name": name}}
	if i%3 == 0 {
		affected["versions"] = []string{"1.0.0", fmt.Sprintf("1.0.%d", 1+i%5)}
	} else {
		affected["ranges"] = []map[string]any{{"type": "ECOSYSTEM", "events": []map[string]string{{"introduced": "0"}}}}
	}
	rec := map[string]any{
		"schema_version": "1.5.0",
		"id":             id,
		"published":      published.Format(time.RFC3339),
		"modified":       modified.Format(time.RFC3339),
		"summary":        fmt.Sprintf("Malicious code in %s (%s)", name, ecosystem),
		"details":        details,
		"affected":       []any{affected},
		"references":     []map[string]string{{"type": "WEB", "url": fmt.Sprintf("https://security.example/advisories/%s", id)}},
		"credits":        []map[string]any{{"name": "Sample Research", "type": "FINDER", "contact": []string{"https://research.example"}}},
	}
	if i%6 == 0 {
		rec["database_specific"] = map[string]any{"iocs": map[string]any{
			"urls":    []string{fmt.Sprintf("https://payload-%d.sample-evil.example/p.exe", i)},
			"domains": []string{fmt.Sprintf("exfil-%d.sample-evil.example", i)},
			"ips":     []string{fmt.Sprintf("198.51.100.%d", 1+i%250)},
		}}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}
