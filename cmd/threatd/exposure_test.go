package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// TestExposureClients: the real npm, pip and go install through the
// firewall for two users and three tokens; reports verified afterwards
// name what one token got: their exposures name that user, token and
// address with first, last and count, and neither the other user nor a
// version nobody got; threatd exposure lists them; each user sees their
// own.
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
	if n := len(exposures(unfetched)); n != 0 {
		t.Fatalf("a version nobody got has %d exposures", n)
	}
	if r := d.do("GET", base+"/account/exposure", b, "").expect(t, 200, ""); len(r.body["exposures"].([]any)) != 0 {
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
		return len(events) == 2
	})
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
			(body.Data.ThreatID != npmReport && body.Data.ThreatID != pyReport) || body.Data.Exposures[0]["user"] != "ana@example.com" {
			t.Fatalf("event %s: %v", ev.Body, err)
		}
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
	if out := in.mustCLI("exposure"); !strings.Contains(out, "pkg:npm/exp-left@1.0.0") || !strings.Contains(out, "pkg:pypi/exp-py@1.0") || strings.Contains(out, "bo@example.com") {
		t.Fatalf("threatd exposure:\n%s", out)
	}
}
