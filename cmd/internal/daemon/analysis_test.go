package daemon_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core"
)

// corpusCase is a case of the rules analyzer's labelled corpus.
func corpusCase(t *testing.T, side, eco, name string) map[string]string {
	return fakeregistry.ReadCase(t, filepath.Join("..", "..", "threatd-analyzer-rules", "testdata", "corpus", side, eco, name))
}

// TestAnalysis: the firewall analyses what it fetches, in the background,
// with the rules analyzer plugin. A version whose install script posts the
// environment (new over a clean previous version) becomes one pending
// report by the source user analysis, with its findings; the firewall
// then holds it (403, rule suspicious, the findings), and the package
// document leaves it out, so a range resolves to the version before;
// rejecting the report releases it. A clean version stays clean; a version
// in quarantine is analysed before its quarantine ends, and verifying its
// report makes that version (alone) malicious; POST /analysis
// analyses again (reviewers only) without a second report; GET /analysis
// shows the result, 404 for a version never analysed.
func TestAnalysis(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	u := fakeregistry.New(t)
	old := fakeregistry.OldTimes(3)
	clean := map[string]string{"index.js": "module.exports = function pad(s, n) { return String(s).padStart(n); };\n", "package.json": `{"main":"index.js"}`}
	evil := corpusCase(t, "malicious", "npm", "env-token-stealer")
	u.NPMPackageFiles(t, "an-evil-pad", []fakeregistry.NPMRelease{
		{Version: "1.0.0", At: old[0], Files: clean},
		{Version: "1.0.1", At: old[1], Files: evil},
	})
	u.NPMPackageFiles(t, "a-clean-pad", []fakeregistry.NPMRelease{
		{Version: "2.0.0", At: old[0], Files: clean},
		{Version: "2.0.1", At: old[1], Files: map[string]string{"index.js": clean["index.js"] + "module.exports.left = (s) => s.trimStart();\n", "package.json": clean["package.json"]}},
	})
	u.NPMPackageFiles(t, "a-fresh-pad", []fakeregistry.NPMRelease{
		{Version: "3.0.0", At: old[0], Files: clean},
		{Version: "3.0.1", At: time.Now().Add(-time.Minute), Files: corpusCase(t, "malicious", "npm", "npmrc-curl-post")},
	})
	d := start(t, quiet+"  new_user_max_unverified: 0\n"+fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n", u.Srv.URL))
	dev := d.user("dev@example.com")
	reviewer := d.user("rita@example.com", "--role", "reviewer")
	fw := base + "/firewall/npm"
	analysisOf := func(purl string) response {
		return d.do("GET", base+"/analysis?purl="+purl, dev, "")
	}

	// Fetched for the first time: served (nothing holds it yet), then analysed.
	if code, _, body := d.fwGet(fw+"/an-evil-pad/-/an-evil-pad-1.0.1.tgz", dev); code != 200 {
		t.Fatalf("first fetch: %d %s", code, body)
	}
	if code, _, _ := d.fwGet(fw+"/a-clean-pad/-/a-clean-pad-2.0.1.tgz", dev); code != 200 {
		t.Fatalf("clean fetch: %d", code)
	}
	var got response
	// An analysis starts a plugin process and reads two archives: on a
	// loaded 2-core machine, more than eventually's 10 s.
	deadline := time.Now().Add(time.Minute)
	for got = analysisOf("pkg:npm/an-evil-pad@1.0.1"); got.code != 200; got = analysisOf("pkg:npm/an-evil-pad@1.0.1") {
		if time.Now().After(deadline) {
			// What the daemon did instead: its analysis lines.
			var lines []string
			for _, l := range strings.Split(d.logs.String(), "\n") {
				if strings.Contains(l, "analys") {
					lines = append(lines, l)
				}
			}
			t.Fatalf("the analysis of an-evil-pad@1.0.1 did not happen within a minute; the daemon's analysis log:\n%s", strings.Join(lines, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	got.expect(t, 200, "")
	if got.body["verdict"] != "suspicious" || got.body["state"] != "done" || got.body["score"].(float64) < 4 || len(got.body["digest"].(string)) != 64 {
		t.Fatalf("analysis: %s", got.raw)
	}
	findings := got.body["findings"].([]any)
	first := findings[0].(map[string]any)
	if first["new"] != true || first["file"] == "" || first["rule"] == "" || !strings.Contains(got.raw, `"analyzers":["rules"]`) {
		t.Fatalf("findings: %s", got.raw)
	}
	eventually(t, "the clean analysis", func() bool {
		r := analysisOf("pkg:npm/a-clean-pad@2.0.1")
		return r.code == 200 && r.body["verdict"] == "clean"
	})
	analysisOf("pkg:npm/a-clean-pad@9.9.9").expect(t, 404, "pkg:npm/a-clean-pad@9.9.9 was never analysed")
	analysisOf("pkg:maven/a/b@1").expect(t, 400, "purl: names no package analysis reads: it reads npm, PyPI, Go, RubyGems and crates.io packages (pkg:npm, pkg:pypi, pkg:golang, pkg:gem, pkg:cargo)")
	analysisOf("pkg:npm/a-clean-pad").expect(t, 400, "purl: names no version: a purl of one version, such as pkg:npm/a-clean-pad@1.2.3")

	// One pending report by the source user analysis, naming the findings.
	var reportID string
	eventually(t, "the analysis report", func() bool {
		reportID, _ = got.body["report_id"].(string)
		if reportID == "" {
			got = analysisOf("pkg:npm/an-evil-pad@1.0.1")
		}
		return reportID != ""
	})
	var status, email, payload, versionInfo string
	if err := d.db().QueryRow(`SELECT t.status, u.email, d.payload_description, d.version_info FROM threats t JOIN users u ON u.id = t.submitter_id
		JOIN threat_details d ON d.threat_id = t.id WHERE t.id = ?`, reportID).Scan(&status, &email, &payload, &versionInfo); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || email != "analysis@"+core.SourceUserDomain || versionInfo != "1.0.1" || !strings.Contains(payload, first["rule"].(string)) || !strings.Contains(payload, "new in this version") {
		t.Fatalf("report: %s %s %s\n%s", status, email, versionInfo, payload)
	}

	// Held while it is pending: the tarball is refused, the document
	// leaves the version out and its latest tag points at the version before.
	var refusal map[string]any
	eventually(t, "the hold", func() bool {
		code, _, body := d.fwGet(fw+"/an-evil-pad/-/an-evil-pad-1.0.1.tgz", dev)
		return code == 403 && json.Unmarshal(body, &refusal) == nil
	})
	if refusal["rule"] != "suspicious" || !strings.HasPrefix(refusal["error"].(string), "Held by threatd: npm an-evil-pad@1.0.1 is suspicious (") ||
		!strings.HasSuffix(refusal["error"].(string), "); a reviewer decides") || len(refusal["findings"].([]any)) == 0 {
		t.Fatalf("refusal: %v", refusal)
	}
	_, _, doc := d.fwGet(fw+"/an-evil-pad", dev)
	var packument struct {
		Versions map[string]any    `json:"versions"`
		Tags     map[string]string `json:"dist-tags"`
	}
	if err := json.Unmarshal(doc, &packument); err != nil || packument.Versions["1.0.1"] != nil || packument.Versions["1.0.0"] == nil || packument.Tags["latest"] != "1.0.0" {
		t.Fatalf("package document: %s", doc)
	}

	// Analysed again on request: no second report.
	d.do("POST", base+"/analysis", dev, `{"purl":"pkg:npm/an-evil-pad@1.0.1"}`).expect(t, 403, "This endpoint needs a token of a user whose role is reviewer or admin (yours is submitter)")
	d.do("POST", base+"/analysis", reviewer, `{"purl":"pkg:npm/an-evil-pad@1.0.1"}`).expect(t, 202, "")
	d.do("POST", base+"/analysis", reviewer, `{"purl":"pkg:pypi/x"}`).expect(t, 400, "purl: names no version: a purl of one version, such as pkg:pypi/x@1.2.3")
	eventually(t, "the second analysis", func() bool {
		r := analysisOf("pkg:npm/an-evil-pad@1.0.1")
		return r.code == 200 && r.body["state"] == "done" && r.body["verdict"] == "suspicious"
	})
	db := d.db()
	if n := count(t, db, `SELECT count(*) FROM threats WHERE submitter_id = (SELECT id FROM users WHERE email = 'analysis@sources.threatd.invalid')`); n != 1 {
		t.Fatalf("%d analysis reports, want 1", n)
	}

	// A version in quarantine is analysed before its quarantine ends.
	if code, _, body := d.fwGet(fw+"/a-fresh-pad", dev); code != 200 || strings.Contains(string(body), `"3.0.1"`) {
		t.Fatalf("a fresh version is held by its quarantine: %d %s", code, body)
	}
	var fresh response
	eventually(t, "the quarantined version analysed and reported", func() bool {
		fresh = analysisOf("pkg:npm/a-fresh-pad@3.0.1")
		id, _ := fresh.body["report_id"].(string)
		return fresh.code == 200 && fresh.body["verdict"] == "suspicious" && id != ""
	})
	// Verified, its report makes the version malicious.
	d.verify(fresh.body["report_id"].(string))
	eventually(t, "the verified analysis report in check-malicious", func() bool {
		r := d.do("GET", checkPath("purl", "pkg:npm/a-fresh-pad@3.0.1"), dev, "")
		return r.code == 200 && r.body["malicious"] == true
	})
	if r := d.do("GET", checkPath("purl", "pkg:npm/a-fresh-pad@3.0.0"), dev, ""); r.body["malicious"] != false {
		t.Fatalf("the version before: %v", r.body)
	}

	// Rejected, the report releases the version.
	d.review(core.DecisionReject, 0, "a test package", "rita@example.com", reportID)
	eventually(t, "the release", func() bool {
		code, _, _ := d.fwGet(fw+"/an-evil-pad/-/an-evil-pad-1.0.1.tgz", dev)
		return code == 200
	})
}
