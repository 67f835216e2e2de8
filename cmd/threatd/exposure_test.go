package main_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestExposureClients: the real npm, pip and go install through the
// firewall for two users and three tokens; reports verified afterwards
// name what each token got: their exposures name that user, token and
// address with first, last and count, and neither the other user nor a
// version nobody got; threatd exposure lists them; each user sees their
// own; one signed exposure.found event a report.
func TestExposureClients(t *testing.T) {
	t.Parallel()
	npm, goBin := needTool(t, "npm"), needTool(t, "go")
	u := fakeregistry.New(t)
	u.NPMPackage(t, "exp-left", "1.0.0", "1.0.0", "1.1.0")
	u.PyPIProject(t, "exp-py", "1.0", "2.0")
	u.GoModule(t, "example.com/expmod", "v1.0.0")
	u.NPMPackage(t, "exp-never", "1.0.0", "1.0.0")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+hookConfig+fwConfig(u))
	recv, all := newReceiver(t), newReceiver(t)
	_, secret := addWebhook(t, in, "--url", recv.srv.URL+"/hook", "--events", "exposure.found")
	addWebhook(t, in, "--url", all.srv.URL+"/hook")
	a1 := in.user("ana@example.com")
	a2 := in.mustCLI("token", "issue", "--email", "ana@example.com")
	a2 = strings.TrimSpace(a2)
	b := in.user("bo@example.com")
	admin := in.user("admin@example.com", "--role", "admin")
	d := in.serve()

	dir := npmProject(t)
	if out, ok := client(t, dir, npmEnv(t, in, d, a1), npm, "install", "--ignore-scripts", "exp-left@1.0.0"); !ok || npmInstalled(dir, "exp-left") != "1.0.0" {
		t.Fatalf("npm install:\n%s", out)
	}
	if out, ok, _ := pipInstaller(t, in, d, a2)("exp-py==1.0"); !ok {
		t.Fatalf("pip install:\n%s", out)
	}
	if out, ok := client(t, goModDir(t), goEnv(t, in, d, b, t.TempDir(), d.base+base+"/firewall/go"), goBin, "get", "example.com/expmod@v1.0.0"); !ok {
		t.Fatalf("go get:\n%s", out)
	}
	npmReport := fwReport(t, in, d, admin, "npm", "exp-left", "1.0.0")
	pyReport := fwReport(t, in, d, admin, "pypi", "exp-py", "")
	goReport := fwReport(t, in, d, admin, "go", "example.com/expmod", "1.0.0") // as OSV names Go versions
	unfetched := fwReport(t, in, d, admin, "npm", "exp-never", "")

	exposures := func(id string) []map[string]any {
		r := d.do("GET", base+"/exposure?threat_id="+id, admin, "")
		var out []map[string]any
		if r.code == 200 {
			for _, x := range r.body["exposures"].([]any) {
				out = append(out, x.(map[string]any))
			}
		}
		return out
	}
	var got []map[string]any
	eventually(t, "npm's exposure", func() bool { got = exposures(npmReport); return len(got) == 1 })
	e := got[0]
	if e["user"] != "ana@example.com" || e["kind"] != "served" || e["client_ip"] != "127.0.0.1" || e["purl"] != "pkg:npm/exp-left@1.0.0" ||
		e["count"].(float64) < 1 || e["first"] == nil || e["last"] == nil || e["token_id"] == "" {
		t.Fatalf("npm exposure %v", e)
	}
	eventually(t, "pip's exposure", func() bool { got = exposures(pyReport); return len(got) == 1 })
	if got[0]["user"] != "ana@example.com" || got[0]["token_id"] == e["token_id"] || got[0]["purl"] != "pkg:pypi/exp-py@1.0" {
		t.Fatalf("pip exposure %v (npm's token %v)", got[0], e["token_id"])
	}
	eventually(t, "go's exposure", func() bool { got = exposures(goReport); return len(got) == 1 })
	if got[0]["user"] != "bo@example.com" || got[0]["purl"] != "pkg:golang/example.com/expmod@v1.0.0" || got[0]["kind"] != "served" {
		t.Fatalf("go exposure %v", got[0])
	}
	if n := len(exposures(unfetched)); n != 0 {
		t.Fatalf("a version nobody got has %d exposures", n)
	}
	if r := d.do("GET", base+"/account/exposure", b, "").expect(t, 200, ""); len(r.body["exposures"].([]any)) != 1 ||
		r.body["exposures"].([]any)[0].(map[string]any)["threat_id"] != goReport {
		t.Fatalf("bo sees %v", r.body)
	}
	if r := d.do("GET", base+"/account/exposure", a1, "").expect(t, 200, ""); len(r.body["exposures"].([]any)) != 2 {
		t.Fatalf("ana sees %v", r.body)
	}
	// One exposure.found event a report, signed, to the subscription that
	// names it; none to the one that does not.
	var events []delivery
	eventually(t, "the exposure.found events", func() bool {
		events = nil
		for _, x := range recv.deliveries() {
			if x.Type == "exposure.found" {
				events = append(events, x)
			}
		}
		return len(events) == 3
	})
	evented := map[string]bool{}
	for _, ev := range events {
		if err := verifyWebhook(secret, http.Header{"Webhook-Id": {ev.ID}, "Webhook-Timestamp": {ev.Timestamp}, "Webhook-Signature": {ev.Signature}}, ev.Body, time.Now()); err != nil {
			t.Fatalf("signature: %v", err)
		}
		var body struct {
			Data struct {
				ThreatID  string           `json:"threat_id"`
				Total     int              `json:"total"`
				Exposures []map[string]any `json:"exposures"`
			} `json:"data"`
		}
		if err := json.Unmarshal(ev.Body, &body); err != nil || body.Data.Total != 1 || len(body.Data.Exposures) != 1 ||
			body.Data.Exposures[0]["threat_id"] != body.Data.ThreatID ||
			(body.Data.ThreatID == goReport) != (body.Data.Exposures[0]["user"] == "bo@example.com") {
			t.Fatalf("event %s: %v", ev.Body, err)
		}
		evented[body.Data.ThreatID] = true
	}
	if !evented[npmReport] || !evented[pyReport] || !evented[goReport] {
		t.Fatalf("events of %v: one a report", evented)
	}
	for _, x := range all.deliveries() {
		if x.Type == "exposure.found" {
			t.Fatalf("a subscription without exposure.found got %s", x.Body)
		}
	}
	var listed []map[string]any
	if err := json.Unmarshal([]byte(in.mustCLI("exposure", npmReport, "--json")), &listed); err != nil || len(listed) != 1 || listed[0]["user"] != "ana@example.com" {
		t.Fatalf("threatd exposure --json: %v %v", listed, err)
	}
	if out := in.mustCLI("exposure", npmReport); !strings.Contains(out, "pkg:npm/exp-left@1.0.0") || strings.Contains(out, "bo@example.com") {
		t.Fatalf("threatd exposure %s:\n%s", npmReport, out)
	}
	if out := in.mustCLI("exposure"); !strings.Contains(out, "pkg:npm/exp-left@1.0.0") || !strings.Contains(out, "pkg:pypi/exp-py@1.0") || !strings.Contains(out, "pkg:golang/example.com/expmod@v1.0.0") {
		t.Fatalf("threatd exposure:\n%s", out)
	}
}

// TestExposurePostgresTwoDaemons: installs through one daemon, the
// report verified by the CLI, one exposure listed on both daemons, and
// one exposure.found event however many daemons found it.
func TestExposurePostgresTwoDaemons(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	u.NPMPackage(t, "pg-exp", "1.0.0", "1.0.0")
	in := pgInstance(t, quiet+"  new_user_max_unverified: 0\n"+hookConfig+fwConfig(u))
	recv := newReceiver(t)
	addWebhook(t, in, "--url", recv.srv.URL+"/hook", "--events", "exposure.found")
	tok := in.user("pg@example.com")
	admin := in.user("adm@example.com", "--role", "admin")
	a, b := in.serve(), in.serve()
	for range 3 {
		if code, _, _ := a.fwGet(base+"/firewall/npm/pg-exp/-/pg-exp-1.0.0.tgz", tok); code != 200 {
			t.Fatalf("tarball: %d", code)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the ledger's write, once a second
	id := b.submit(admin, `{"report_type":"package","resource_identifier":"pg-exp","registry":"npm","threat_description":"Steals tokens","version_info":"1.0.0"}`)
	in.mustCLI("review", "verify", id)
	for _, d := range []*daemon{a, b} {
		eventually(t, "the exposure on each daemon", func() bool {
			r := d.do("GET", base+"/exposure?threat_id="+id, admin, "")
			return r.code == 200 && r.body["count"].(float64) == 1 && r.body["exposures"].([]any)[0].(map[string]any)["count"].(float64) == 3
		})
	}
	eventually(t, "the event", func() bool { return len(recv.deliveries()) >= 1 })
	time.Sleep(2 * time.Second)
	if n := len(recv.deliveries()); n != 1 {
		t.Fatalf("%d exposure.found deliveries, want 1", n)
	}
}

// TestExposureBrowser: the administrator's exposure page lists who got a
// version a report verified later names, and that user's account page
// tells them, in Chromium at 1280 and 390 px (core/web/e2e/exposure.mjs).
func TestExposureBrowser(t *testing.T) {
	t.Parallel()
	node, chromium, shots := needBrowser(t)
	u := fakeregistry.New(t)
	u.NPMPackage(t, "web-exp", "1.0.0", "1.0.0")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+fwConfig(u))
	admin := in.user("root@example.com", "--role", "admin")
	tok := in.user("ana@example.com")
	for _, email := range []string{"root@example.com", "ana@example.com"} {
		in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", email)
	}
	d := in.serve()
	if code, _, _ := d.fwGet(base+"/firewall/npm/web-exp/-/web-exp-1.0.0.tgz", tok); code != 200 {
		t.Fatalf("tarball: %d", code)
	}
	time.Sleep(1500 * time.Millisecond) // the ledger's write
	id := fwReport(t, in, d, admin, "npm", "web-exp", "1.0.0")
	eventually(t, "the exposure", func() bool {
		r := d.do("GET", base+"/exposure?threat_id="+id, admin, "")
		return r.code == 200 && r.body["count"].(float64) == 1
	})
	runBrowserScript(t, node, chromium, shots, "exposure.mjs", d.base,
		"ADMIN_EMAIL=root@example.com", "ADMIN_PASSWORD=correct horse battery",
		"USER_EMAIL=ana@example.com", "USER_PASSWORD=correct horse battery", "EXPOSED_PURL=pkg:npm/web-exp@1.0.0")
}

// TestExposureImages: an image pulled through the firewall's image
// registry (skopeo) by its tag is an exposure of a container report of
// that tag verified later; a report of a tag nobody pulled has none.
func TestExposureImages(t *testing.T) {
	t.Parallel()
	needTool(t, "skopeo")
	registry := dockerRegistry(t)
	layout := t.TempDir()
	ociLayout(t, layout, "1.0", "2.0")
	for _, tag := range []string{"1.0", "2.0"} {
		if out, ok := skopeo(t, nil, "copy", "--dest-tls-verify=false", "oci:"+layout+":"+tag, "docker://"+registry+"/library/exp-app:"+tag); !ok {
			t.Fatalf("loading the upstream: %s", out)
		}
	}
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+fmt.Sprintf("firewall:\n  oci:\n    listen: \"127.0.0.1:0\"\n    upstream: %q\n    file_hosts: []\n", "http://"+registry))
	tok := in.user("dev@example.com")
	admin := in.user("adm@example.com", "--role", "admin")
	d := in.serve()
	m := ociListening.FindStringSubmatch(d.logText())
	if m == nil {
		t.Fatalf("no firewall oci listening line:\n%s", d.logText())
	}
	if out, ok := skopeo(t, in, "copy", "--src-cert-dir=CERTDIR", "--src-creds=threatd:"+tok, "docker://"+m[1]+"/library/exp-app:1.0", "dir:"+t.TempDir()); !ok {
		t.Fatalf("pull: %s", out)
	}
	time.Sleep(1500 * time.Millisecond) // the ledger's write
	pulled := d.submit(admin, `{"report_type":"container","resource_identifier":"exp-app:1.0","registry":"dockerhub","threat_description":"Cryptominer in the entrypoint"}`)
	in.mustCLI("review", "verify", pulled)
	never := d.submit(admin, `{"report_type":"container","resource_identifier":"exp-app:2.0","registry":"dockerhub","threat_description":"Cryptominer in the entrypoint"}`)
	in.mustCLI("review", "verify", never)
	var r response
	eventually(t, "the image's exposures", func() bool {
		r = d.do("GET", base+"/exposure?threat_id="+pulled, admin, "")
		return r.code == 200 && r.body["count"].(float64) == 1
	})
	purls := map[string]bool{}
	for _, x := range r.body["exposures"].([]any) {
		e := x.(map[string]any)
		purls[e["purl"].(string)] = true
		if e["user"] != "dev@example.com" || e["kind"] != "served" {
			t.Fatalf("exposure %v", e)
		}
	}
	if !purls["pkg:docker/library/exp-app@1.0"] || len(purls) != 1 {
		t.Fatalf("purls %v: the tag pulled", purls)
	}
	time.Sleep(2 * time.Second)
	if r := d.do("GET", base+"/exposure?threat_id="+never, admin, ""); r.body["count"].(float64) != 0 {
		t.Fatalf("a tag nobody pulled: %v", r.body)
	}
}

// TestExposureWhileStopped: a report verified by the CLI while no daemon
// runs has its exposures found when a daemon starts (it reads the changes
// of the day before its start), and once.
func TestExposureWhileStopped(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	u.NPMPackage(t, "stopped-exp", "1.0.0", "1.0.0")
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+fwConfig(u))
	tok := in.user("dev@example.com")
	admin := in.user("adm@example.com", "--role", "admin")
	d := in.serve()
	if code, _, _ := d.fwGet(base+"/firewall/npm/stopped-exp/-/stopped-exp-1.0.0.tgz", tok); code != 200 {
		t.Fatalf("tarball: %d", code)
	}
	id := d.submit(admin, `{"report_type":"package","resource_identifier":"stopped-exp","registry":"npm","threat_description":"Steals tokens"}`)
	if err := d.stop(); err != nil { // the ledger is written as the daemon stops
		t.Fatal(err)
	}
	in.mustCLI("review", "verify", id)
	d = in.serve()
	eventually(t, "the exposure found at start", func() bool {
		r := d.do("GET", base+"/exposure?threat_id="+id, admin, "")
		return r.code == 200 && r.body["count"].(float64) == 1
	})
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	d = in.serve()
	time.Sleep(2 * time.Second)
	if r := d.do("GET", base+"/exposure?threat_id="+id, admin, ""); r.body["count"].(float64) != 1 {
		t.Fatalf("after a second start: %v", r.body)
	}
}
