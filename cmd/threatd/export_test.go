package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/stix/stixtest"
)

// pluginDir makes a plugin directory holding only the named real plugins
// (and any extra binaries), to test missing ones.
func pluginDir(t *testing.T, names []string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Symlink(testbin.Path(n), filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	for name, pkg := range extra {
		if err := testbin.Build(pkg, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func verifiedWithIOCs(t *testing.T, in *instance, d *daemon, tok string) string {
	t.Helper()
	id := d.submit(tok, `{"report_type":"package","resource_identifier":"stix-pkg","registry":"npm","threat_description":"Steals tokens","severity_level":"high",
		"payload_description":"Exfiltrates to hxxps://c2[.]evil[.]example/in from 198[.]51[.]100[.]4; dropper sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08; name it's ' OR [url:value = 'x","tags":["token-stealer"]}`)
	in.mustCLI("review", "verify", id)
	// The daemon reads its submitter's record (one verified report) a
	// moment later, and the report's confidence moves with it: wait, so
	// that what follows sees data that no longer changes.
	want := float64(core.Confidence(core.ConfidenceInput{Record: core.SubmitterRecord{Verified: 1}.Score()}))
	apitest.Eventually(t, "the report verified, its submitter's record read", 10*time.Second, func() bool {
		m, _ := d.do("GET", base+"/check-malicious?report_type=package&resource_identifier=stix-pkg&ecosystem=npm", tok, "").body["details"].(map[string]any)
		return m != nil && m["confidence"] == want
	})
	return id
}

func TestSTIXExports(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	free := in.user("free@example.com")
	paid := in.user("paid@example.com", "--tier", "paid")
	d := in.serve()
	verifiedWithIOCs(t, in, d, paid)
	v := stixtest.Optional(t)
	for _, path := range []string{"/query-latest-stix", "/anomali-feed", "/anomali-feed?hours=1", "/anomali-feed?ecosystem=npm"} {
		d.do("GET", base+path, free, "").expect(t, 403, "This endpoint requires a paid subscription")
		res := d.raw("GET", base+path, paid)
		if res.code != 200 || res.hdr.Get("Content-Type") != "application/stix+json;version=2.1" {
			t.Fatalf("%s: %d %s %s", path, res.code, res.hdr.Get("Content-Type"), res.body)
		}
		v.Validate(t, res.body)
		var b struct {
			Objects []map[string]any `json:"objects"`
		}
		json.Unmarshal(res.body, &b)
		kinds := map[string]int{}
		for _, o := range b.Objects {
			kinds[o["type"].(string)]++
			if p, ok := o["pattern"].(string); ok && strings.Contains(p, "x'") && !strings.Contains(p, `\'`) {
				t.Fatalf("unescaped quote in %s", p)
			}
		}
		if kinds["malware"] != 1 || kinds["indicator"] < 5 || kinds["relationship"] != kinds["indicator"] || kinds["identity"] != 1 {
			t.Fatalf("%s: objects %v", path, kinds)
		}
		// Deterministic: the same data gives the same bundle.
		if again := d.raw("GET", base+path, paid); string(again.body) != string(res.body) {
			t.Fatalf("%s: re-export differs", path)
		}
	}
	for _, bad := range []string{"/anomali-feed?hours=25", "/anomali-feed?since=2020-01-01T00:00:00Z", "/anomali-feed?limit=5", "/query-latest-stix?ecosystem=cpan"} {
		d.do("GET", base+bad, paid, "").expect(t, 400, "")
	}
}

func TestExporterSDKExampleThroughConfig(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"exporter_routes:\n  - {path: /export/csv, exporter: csv, tier: free}\n")
	tok := in.user("csv@example.com", "--tier", "paid")
	d := in.serve()
	id := verifiedWithIOCs(t, in, d, tok)
	res := d.raw("GET", base+"/export/csv?ecosystem=npm", tok)
	if res.code != 200 || !strings.HasPrefix(res.hdr.Get("Content-Type"), "text/csv") {
		t.Fatalf("%d %s %s", res.code, res.hdr.Get("Content-Type"), res.body)
	}
	lines := strings.Split(strings.TrimSpace(string(res.body)), "\n")
	if lines[0] != "threat_id,report_type,resource_identifier,registry,severity,verified_at,ioc_type,ioc_value,ioc_detail,ioc_versions,ioc_origin,ioc_confidence" || len(lines) < 6 {
		t.Fatalf("csv:\n%s", res.body)
	}
	if !strings.Contains(string(res.body), id+",package,stix-pkg,npm,high,") || !strings.Contains(string(res.body), "url,https://c2.evil.example/in,,,payload,50") {
		t.Fatalf("csv rows:\n%s", res.body)
	}
	// A scoped npm name stays intact (it is what a consumer matches on); a
	// cell a spreadsheet would run is quoted.
	scoped := d.submit(tok, `{"report_type":"package","resource_identifier":"@evil-scope/stealer","registry":"npm","threat_description":"Steals tokens",
		"payload_description":"Runs =HYPERLINK(\"http://x\") from hxxps://drop[.]evil[.]example/p"}`)
	in.mustCLI("review", "verify", scoped)
	eventually(t, "the scoped report in the CSV", func() bool {
		return strings.Contains(string(d.raw("GET", base+"/export/csv?ecosystem=npm", tok).body), scoped)
	})
	body := string(d.raw("GET", base+"/export/csv?ecosystem=npm", tok).body)
	if !strings.Contains(body, scoped+",package,@evil-scope/stealer,npm,") || strings.Contains(body, "'@evil-scope") {
		t.Fatalf("scoped npm name in the CSV:\n%s", body)
	}
}

func TestMissingExporterOnlyAffectsItsEndpoints(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	in.env = []string{"THREATD_PLUGINS__DIR=" + pluginDir(t, []string{"threatd-storage-sqlite", "threatd-exporter-anomali"}, nil)}
	tok := in.user("m@example.com", "--tier", "paid")
	d := in.serve()
	eventually(t, "the warning about the missing exporter", func() bool {
		return strings.Contains(d.logText(), `"msg":"exporter unavailable: its endpoints answer 503 until it can start","exporter":"stix"`) &&
			strings.Contains(d.logText(), "threatd-exporter-stix does not exist")
	})
	r := d.do("GET", base+"/query-latest-stix", tok, "").expect(t, 503, `Exporter "stix" is not available; try again later`)
	// The cause is in the log; the answer shows no internals.
	if r.body["details"] != nil || strings.Contains(r.raw, "/") || r.hdr.Get("Retry-After") == "" {
		t.Fatalf("503 body: %v %v", r.body, r.hdr)
	}
	if res := d.raw("GET", base+"/anomali-feed", tok); res.code != 200 {
		t.Fatalf("anomali with stix missing: %d", res.code)
	}
	d.do("GET", base+"/query-latest", tok, "").expect(t, 200, "")
}

func TestCrashedExporterIsRestarted(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"exporter_routes:\n  - {path: /export/crashy, exporter: crashy, tier: free}\n")
	in.env = []string{"THREATD_PLUGINS__DIR=" + pluginDir(t, []string{"threatd-storage-sqlite", "threatd-exporter-stix", "threatd-exporter-anomali"},
		map[string]string{"threatd-exporter-crashy": "./cmd/threatd/testdata/crashy"})}
	tok := in.user("c@example.com")
	d := in.serve()
	first := d.raw("GET", base+"/export/crashy", tok)
	if first.code != 200 || !strings.HasPrefix(string(first.body), "records=0 pid=") {
		t.Fatalf("first: %d %s", first.code, first.body)
	}
	d.do("GET", base+"/export/crashy?crash=1", tok, "").expect(t, 502, `Exporter "crashy" failed while producing the document; try again`)
	next := d.raw("GET", base+"/export/crashy", tok)
	if next.code != 200 || string(next.body) == string(first.body) {
		t.Fatalf("after the crash: %d %s (want 200 from a new process)", next.code, next.body)
	}
	if !strings.Contains(d.logText(), `"msg":"exporter failed a request; it will be restarted on the next one","exporter":"crashy"`) {
		t.Fatalf("restart not logged:\n%s", d.logText())
	}
}

// An exporter that hangs at its handshake (and whose child keeps its stdout
// open) delays nothing but its own endpoint: the API serves at once, its
// requests answer 504 after a bounded wait, healthz shows it starting, and
// after the handshake timeout the plugin and its child are killed.
func TestHangingExporterDelaysOnlyItself(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"exporter_routes:\n  - {path: /export/hangy, exporter: hangy, tier: free}\n")
	in.env = []string{"THREATD_PLUGINS__DIR=" + pluginDir(t, []string{"threatd-storage-sqlite", "threatd-exporter-stix", "threatd-exporter-anomali"},
		map[string]string{"threatd-exporter-hangy": "./cmd/threatd/testdata/hangy"})}
	tok := in.user("h@example.com", "--tier", "paid")
	started := time.Now()
	d := in.serve()
	d.do("GET", base+"/check-malicious?report_type=package&ecosystem=npm&resource_identifier=x", tok, "").expect(t, 200, "")
	// Well under the handshake timeout (30 s) the hang would take, with
	// room for tests running side by side.
	if took := time.Since(started); took > 20*time.Second {
		t.Fatalf("the API took %v to serve with a hanging exporter", took)
	}
	h := d.do("GET", "/healthz", "", "")
	ex, _ := h.body["plugins"].(map[string]any)["exporters"].(map[string]any)
	if st, _ := ex["hangy"].(map[string]any); st["status"] != "starting" {
		t.Fatalf("healthz while hangy starts: %s", h.raw)
	}
	eventually(t, "the other exporters to be ready", func() bool {
		ex, _ := d.do("GET", "/healthz", "", "").body["plugins"].(map[string]any)["exporters"].(map[string]any)
		st, _ := ex["stix"].(map[string]any)
		return st["status"] == "ready"
	})
	if res := d.raw("GET", base+"/query-latest-stix", tok); res.code != 200 {
		t.Fatalf("stix while hangy hangs: %d", res.code)
	}
	asked := time.Now()
	r := d.do("GET", base+"/export/hangy", tok, "").expect(t, 504, `Exporter "hangy" is still starting; try again shortly`)
	if r.hdr.Get("Retry-After") == "" || time.Since(asked) > 20*time.Second {
		t.Fatalf("504 after %v: %v", time.Since(asked), r.hdr)
	}
	// Past the handshake timeout the start fails and the process group dies.
	eventually45s(t, "hangy to be given up", func() bool {
		ex, _ := d.do("GET", "/healthz", "", "").body["plugins"].(map[string]any)["exporters"].(map[string]any)
		st, _ := ex["hangy"].(map[string]any)
		return st["status"] == "unavailable"
	})
	pids := regexp.MustCompile(`hangy (\d+) started child (\d+)`).FindStringSubmatch(d.logText())
	if pids == nil {
		t.Fatalf("hangy did not log its pids:\n%s", d.logText())
	}
	for _, p := range pids[1:] {
		pid, _ := strconv.Atoi(p)
		waitGone(t, pid)
	}
}

func eventually45s(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// An exporter route with select: all streams every verified report through
// the exporter (here the SDK's streaming CSV example), past any page size,
// optionally one ecosystem's; withdrawn and pending reports are not in it.
func TestExportOfEverything(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"exporter_routes:\n  - {path: /export/csv/all, exporter: csv, tier: paid, select: all}\n")
	tok := in.user("all@example.com", "--tier", "paid")
	out := in.mustCLI("import", "osv", testbin.OSVSampleOf(t, 600, "RubyGems"))
	imported := summaryCounts(t, out)["imported"]
	if imported <= 500 {
		t.Fatalf("imported %d RubyGems reports; the test needs more than one page (500):\n%s", imported, out)
	}
	d := in.serve()
	community := verifiedWithIOCs(t, in, d, tok)
	gone := d.submit(tok, `{"report_type":"domain","resource_identifier":"gone.example","threat_description":"withdrawn"}`)
	in.mustCLI("review", "verify", gone)
	in.mustCLI("review", "reject", gone, "--note", "wrong")
	pending := d.submit(tok, `{"report_type":"domain","resource_identifier":"pending.example","threat_description":"pending"}`)
	ids := func(query string) map[string]map[string]bool {
		t.Helper()
		res := d.raw("GET", base+"/export/csv/all"+query, tok)
		if res.code != 200 || !strings.HasPrefix(res.hdr.Get("Content-Type"), "text/csv") {
			t.Fatalf("%s: %d %s %.300s", query, res.code, res.hdr.Get("Content-Type"), res.body)
		}
		byRegistry := map[string]map[string]bool{}
		for i, line := range strings.Split(strings.TrimSpace(string(res.body)), "\n") {
			if i == 0 {
				continue
			}
			f := strings.SplitN(line, ",", 5)
			if byRegistry[f[3]] == nil {
				byRegistry[f[3]] = map[string]bool{}
			}
			byRegistry[f[3]][f[0]] = true
		}
		return byRegistry
	}
	all := ids("")
	if len(all["rubygems"]) != imported || !all["npm"][community] || len(all["npm"]) != 1 || all[""][gone] || all[""][pending] {
		t.Fatalf("everything: %d rubygems reports (want %d), npm %v, others %v", len(all["rubygems"]), imported, all["npm"], all[""])
	}
	if gems := ids("?ecosystem=rubygems"); len(gems) != 1 || len(gems["rubygems"]) != imported {
		t.Fatalf("ecosystem=rubygems: %d registries, %d reports", len(gems), len(gems["rubygems"]))
	}
	d.do("GET", base+"/export/csv/all?ecosystem=cpan", tok, "").expect(t, 400, "")
}
