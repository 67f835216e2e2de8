package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// corpus is a case of the rules analyzer's labelled corpus (inert samples:
// their network targets are under .invalid, and nothing here runs them).
func corpus(t *testing.T, eco, name string) map[string]string {
	return fakeregistry.ReadCase(t, filepath.Join("..", "threatd-analyzer-rules", "testdata", "corpus", "malicious", eco, name))
}

// analysisUpstream publishes, beside a clean first version, a version that
// turns malicious two hours ago, in npm, PyPI and Go: past a 1 h
// quarantine, so that the firewall holds each until its analysis ends.
func analysisUpstream(t *testing.T) *fakeregistry.Registry {
	u := fakeregistry.New(t)
	old, recent := fakeregistry.OldTimes(1)[0], time.Now().Add(-2*time.Hour)
	u.NPMPackageFiles(t, "ana-pad", []fakeregistry.NPMRelease{
		{Version: "1.0.0", At: old, Files: map[string]string{"index.js": "module.exports = (s, n) => String(s).padStart(n);\n", "package.json": `{"main":"index.js"}`}},
		{Version: "1.0.1", At: recent, Files: corpus(t, "npm", "env-token-stealer")},
	})
	u.PyPIProjectFiles(t, "ana-lib", []fakeregistry.Release{
		{Version: "1.0", At: old, Files: map[string]string{"ana_lib/__init__.py": "VERSION = \"1.0\"\n"}},
		{Version: "1.1", At: recent, Files: map[string]string{"ana_lib/__init__.py": corpus(t, "pypi", "env-to-collector")["envcollector/__init__.py"]}},
	})
	run := strings.Replace(corpus(t, "go", "bash-curl")["run.go"], "package gocurl", "package anamod", 1)
	u.GoModuleFiles(t, "example.com/anamod", []fakeregistry.Release{
		{Version: "v1.0.0", At: old, Files: map[string]string{"anamod.go": "package anamod\n\n// Pad pads.\nfunc Pad(s string) string { return \" \" + s }\n"}},
		{Version: "v1.1.0", At: recent, Files: map[string]string{"anamod.go": "package anamod\n\n// Pad pads.\nfunc Pad(s string) string { return \" \" + s }\n", "run.go": run}},
	})
	return u
}

// TestAnalysisClients: the real npm, pip and go through the firewall,
// against an upstream that publishes a version turning malicious. Each
// is analysed in the background as the firewall lists it, found
// suspicious, and held: a range resolves to the previous version, the
// exact version is refused with the hold's message. threatd review reject
// releases it to every client. (npm runs with --ignore-scripts: the
// samples are never run.)
func TestAnalysisClients(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	npm, goBin := needTool(t, "npm"), needTool(t, "go")
	u := analysisUpstream(t)
	old, recent := fakeregistry.OldTimes(1)[0], time.Now().Add(-2*time.Hour)
	u.CargoCrate(t, "ana-crate", []string{"1.0.0", "1.0.1"}, []time.Time{old, recent})
	rubyGem(u, t, "ana-gem", []string{"1.0.0", "1.0.1"}, []time.Time{old, recent})
	in := newInstance(t, quiet+fwConfig(u)+fmt.Sprintf("  quarantine:\n    default: 1h\n  cargo:\n    upstream: %q\n  rubygems:\n    upstream: %q\n", u.Srv.URL+"/cargo", u.Srv.URL+"/rubygems"))
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall"

	// Listing each package queues its new version.
	for _, p := range []string{"/npm/ana-pad", "/pypi/simple/ana-lib/", "/go/example.com/anamod/@v/list", "/cargo/an/a-/ana-crate", "/rubygems/info/ana-gem"} {
		if code, _, body := d.fwGet(fw+p, tok); code != 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
	reports := map[string]string{}
	for _, purl := range []string{"pkg:npm/ana-pad@1.0.1", "pkg:pypi/ana-lib@1.1", "pkg:golang/example.com/anamod@v1.1.0"} {
		var r response
		eventually(t, purl+" found suspicious", func() bool {
			r = d.do("GET", base+"/analysis?purl="+purl, tok, "")
			id, _ := r.body["report_id"].(string)
			return r.code == 200 && r.body["verdict"] == "suspicious" && id != ""
		})
		reports[purl] = r.body["report_id"].(string)
		show := in.mustCLI("analysis", "show", purl)
		if !strings.Contains(show, purl+": suspicious (score ") || !strings.Contains(show, "report "+reports[purl]+" (pending)") || !strings.Contains(show, "new") {
			t.Fatalf("threatd analysis show %s:\n%s", purl, show)
		}
	}
	// A crate and a gem are fetched as the firewall fetches them (the
	// crate where config.json's dl says) and read: clean.
	for _, purl := range []string{"pkg:cargo/ana-crate@1.0.1", "pkg:gem/ana-gem@1.0.1"} {
		var r response
		eventually(t, purl+" analysed", func() bool {
			r = d.do("GET", base+"/analysis?purl="+purl, tok, "")
			return r.code == 200
		})
		if r.body["verdict"] != "clean" || len(r.body["digest"].(string)) != 64 {
			t.Fatalf("%s: %v", purl, r.body)
		}
	}
	held := func(p, want string) {
		t.Helper()
		eventually(t, p+" held as suspicious", func() bool {
			code, _, body := d.fwGet(fw+p, tok)
			return code == 403 && strings.Contains(string(body), want)
		})
	}
	held("/npm/ana-pad/-/ana-pad-1.0.1.tgz", "Held by threatd: npm ana-pad@1.0.1 is suspicious (")
	held("/go/example.com/anamod/@v/v1.1.0.zip", "Held by threatd: go example.com/anamod@v1.1.0 is suspicious (")

	npmInstall := func(spec string) (string, bool, string) {
		dir := npmProject(t)
		out, ok := client(t, dir, npmEnv(t, in, d, tok), npm, "install", "--ignore-scripts", spec)
		return out, ok, npmInstalled(dir, "ana-pad")
	}
	pip := pipInstaller(t, in, d, tok)
	goEnvFor := func() []string { return goEnv(t, in, d, tok, t.TempDir(), d.base+fw+"/go") }

	if out, ok, got := npmInstall("ana-pad"); !ok || got != "1.0.0" {
		t.Fatalf("npm install ana-pad installed %q:\n%s", got, out)
	}
	if out, ok, _ := npmInstall("ana-pad@1.0.1"); ok || !strings.Contains(out, "No matching version found for ana-pad@1.0.1") {
		t.Fatalf("npm install ana-pad@1.0.1 (ok=%v):\n%s", ok, out)
	}
	if out, ok, target := pip("ana-lib"); !ok || readFile(t, filepath.Join(target, "ana_lib", "__init__.py")) != "VERSION = \"1.0\"\n" {
		t.Fatalf("pip install ana-lib:\n%s", out)
	}
	if out, ok, _ := pip("ana-lib==1.1"); ok || !strings.Contains(out, "Held by threatd: pypi ana-lib@1.1 is suspicious") {
		t.Fatalf("pip install ana-lib==1.1 (ok=%v):\n%s", ok, out)
	}
	dir := goModDir(t)
	if out, ok := client(t, dir, goEnvFor(), goBin, "get", "example.com/anamod@latest"); !ok || !strings.Contains(readFile(t, filepath.Join(dir, "go.mod")), "example.com/anamod v1.0.0") {
		t.Fatalf("go get example.com/anamod@latest:\n%s", out)
	}
	if out, ok := client(t, goModDir(t), goEnvFor(), goBin, "get", "example.com/anamod@v1.1.0"); ok || !strings.Contains(out, "Held by threatd: go example.com/anamod@v1.1.0 is suspicious") {
		t.Fatalf("go get example.com/anamod@v1.1.0 (ok=%v):\n%s", ok, out)
	}

	// Rejected, each report releases its version.
	for _, id := range reports {
		in.mustCLI("review", "reject", id, "--note", "the test's own package")
	}
	eventually(t, "ana-pad@1.0.1 released", func() bool {
		_, ok, got := npmInstall("ana-pad@1.0.1")
		return ok && got == "1.0.1"
	})
	eventually(t, "ana-lib==1.1 released", func() bool {
		_, ok, target := pip("ana-lib==1.1")
		return ok && strings.Contains(readFile(t, filepath.Join(target, "ana_lib", "__init__.py")), "collector.ctx.invalid")
	})
	eventually(t, "example.com/anamod@v1.1.0 released", func() bool {
		dir := goModDir(t)
		_, ok := client(t, dir, goEnvFor(), goBin, "get", "example.com/anamod@v1.1.0")
		b, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
		return ok && strings.Contains(string(b), "example.com/anamod v1.1.0")
	})
}

// TestAnalysisBrowser: a reviewer reads an automatic report's findings in
// the review queue and on the report's page, in headless Chromium at 1280
// and 390 px (core/web/e2e/analysis.mjs), and rejects it from the queue;
// the firewall then serves the version.
func TestAnalysisBrowser(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	node, chromium, shots := needBrowser(t)
	u := analysisUpstream(t)
	in := newInstance(t, "limits:\n  per_ip_per_minute: 0\n"+fwConfig(u)+"  quarantine:\n    default: 1h\n")
	in.user("rita@example.com", "--role", "reviewer", "--name", "Rita")
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "rita@example.com")
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall"
	if code, _, body := d.fwGet(fw+"/npm/ana-pad", tok); code != 200 {
		t.Fatalf("package document: %d %s", code, body)
	}
	var r response
	eventually(t, "the automatic report", func() bool {
		r = d.do("GET", base+"/analysis?purl=pkg:npm/ana-pad@1.0.1", tok, "")
		id, _ := r.body["report_id"].(string)
		return r.code == 200 && id != ""
	})
	id := r.body["report_id"].(string)
	rule := r.body["findings"].([]any)[0].(map[string]any)["rule"].(string)
	runBrowserScript(t, node, chromium, shots, "analysis.mjs", d.base,
		"REVIEWER_EMAIL=rita@example.com", "REVIEWER_PASSWORD=correct horse battery",
		"ANALYSIS_THREAT_ID="+id, "ANALYSIS_PACKAGE=ana-pad", "ANALYSIS_RULE="+rule)
	if show := in.mustCLI("review", "show", id); !strings.Contains(show, "rejected") {
		t.Fatalf("the report after the browser rejected it:\n%s", show)
	}
	eventually(t, "ana-pad@1.0.1 released", func() bool {
		code, _, _ := d.fwGet(fw+"/npm/ana-pad/-/ana-pad-1.0.1.tgz", tok)
		return code == 200
	})
}

// TestAnalysisPostgresTwoDaemons: two daemons on one PostgreSQL database,
// both fetching the same new versions at once, analyse each version once
// (one daemon's log names it, one claim), file one report for the
// suspicious one, and both hold it.
func TestAnalysisPostgresTwoDaemons(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	u := analysisUpstream(t)
	clean := map[string]string{"index.js": "module.exports = 1;\n", "package.json": `{"main":"index.js"}`}
	old, recent := fakeregistry.OldTimes(1)[0], time.Now().Add(-2*time.Hour)
	var names []string
	for i := range 8 {
		name := fmt.Sprintf("pg-ana-%d", i)
		names = append(names, name)
		u.NPMPackageFiles(t, name, []fakeregistry.NPMRelease{{Version: "1.0.0", At: old, Files: clean}, {Version: "1.0.1", At: recent, Files: clean}})
	}
	names = append(names, "ana-pad")
	in := pgInstance(t, quiet+fwConfig(u)+"  quarantine:\n    default: 1h\n")
	tok := in.user("dev@example.com")
	a, b := in.serve(), in.serve()
	var wg sync.WaitGroup
	for _, d := range []*daemon{a, b} {
		for _, n := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.fwGet(base+"/firewall/npm/"+n, tok)
			}()
		}
	}
	wg.Wait()
	for _, n := range names {
		purl := "pkg:npm/" + n + "@1.0.1"
		eventually(t, purl+" analysed", func() bool {
			r := a.do("GET", base+"/analysis?purl="+purl, tok, "")
			return r.code == 200 && r.body["state"] == "done"
		})
	}
	// Each version's analysis is logged by the daemon that ran it, after
	// it stored the result: once across both.
	logged := func(purl string) int {
		return strings.Count(a.logText(), `"purl":"`+purl+`","verdict"`) + strings.Count(b.logText(), `"purl":"`+purl+`","verdict"`)
	}
	for _, n := range names {
		purl := "pkg:npm/" + n + "@1.0.1"
		eventually(t, purl+"'s analysis logged", func() bool { return logged(purl) >= 1 })
	}
	time.Sleep(3 * time.Second) // a second claim would have run by now
	for _, n := range names {
		if purl := "pkg:npm/" + n + "@1.0.1"; logged(purl) != 1 {
			t.Errorf("%s analysed %d times by the two daemons", purl, logged(purl))
		}
	}
	var r response
	eventually(t, "the report", func() bool {
		r = b.do("GET", base+"/analysis?purl=pkg:npm/ana-pad@1.0.1", tok, "")
		id, _ := r.body["report_id"].(string)
		return id != ""
	})
	if r.body["verdict"] != "suspicious" || r.body["report_status"] != "pending" {
		t.Fatalf("ana-pad: %v", r.body)
	}
	if pending := in.mustCLI("review", "list"); strings.Count(pending, "\n") != 2 || !strings.Contains(pending, " ana-pad ") {
		t.Fatalf("the review queue:\n%s", pending)
	}
	for _, d := range []*daemon{a, b} {
		eventually(t, "the hold on both daemons", func() bool {
			code, _, body := d.fwGet(base+"/firewall/npm/ana-pad/-/ana-pad-1.0.1.tgz", tok)
			return code == 403 && strings.Contains(string(body), `"rule":"suspicious"`)
		})
	}
}
