package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// quarantineConfig is the policy of TestFirewallQuarantine: the default
// 48 h window, a 1 h window for q-short*, q-excluded never held.
const quarantineConfig = `  quarantine:
    default: 48h
    packages:
      - {ecosystem: npm, name: "q-short*", duration: 1h}
    exclude:
      npm: ["q-excluded"]
`

// TestFirewallQuarantine: the upstream serves, for npm, PyPI (HTML and
// JSON pages) and Go, a package with a version published 30 days ago and
// one published now. The real npm, pnpm, pip and go commands install the
// old one; asking for the new one fails with the hold's message at the
// terminal, as does npm ci with a lockfile that pins it. Overrides,
// exclusions, the install-script warning, waivers (by CLI and API, ending
// by themselves), decisions (listed, paged, pushed to a webhook receiver
// that verifies them) and the held list follow.
func TestFirewallQuarantine(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	old, fresh := now.Add(-30*24*time.Hour), now.Add(-10*time.Minute)
	u := newUpstreamRegistry(t)
	u.npmPackageAt(t, "q-pkg", "1.1.0", nil, []string{"1.0.0", "1.1.0"}, []time.Time{old, fresh}, nil)
	u.npmPackageAt(t, "q-short-lived", "2.0.0", nil, []string{"1.0.0", "2.0.0"}, []time.Time{old, now.Add(-2 * time.Hour)}, nil)
	u.npmPackageAt(t, "q-excluded", "1.0.1", nil, []string{"1.0.0", "1.0.1"}, []time.Time{old, fresh}, nil)
	u.npmPackageAt(t, "q-scripts", "1.0.1", nil, []string{"1.0.0", "1.0.1"}, []time.Time{old, old.Add(time.Hour)},
		map[string]map[string]string{"1.0.0": {"test": "true"}, "1.0.1": {"test": "true", "postinstall": "node -e 0"}})
	u.npmPackageAt(t, "q-evil", "1.0.1", nil, []string{"1.0.0", "1.0.1"}, []time.Time{old, old.Add(time.Hour)}, nil)
	u.pypiProjectAt(t, "q-py", []string{"1.0.0", "1.1.0"}, []time.Time{old, fresh})
	u.goModuleAt(t, "example.com/qmod", []string{"v1.0.0", "v1.1.0"}, []time.Time{old, fresh})

	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+hookConfig+fwConfig(u)+quarantineConfig)
	tok := in.user("dev@example.com")
	reviewer := in.user("rita@example.com", "--role", "reviewer")
	admin := in.user("root@example.com", "--role", "admin")
	recv := newReceiver(t)
	hookID, secret := addWebhook(t, in, "--url", recv.srv.URL+"/hook", "--events", "firewall.blocked,firewall.warned")
	reportsHook, _ := addWebhook(t, in, "--url", recv.srv.URL+"/reports")
	d := in.serve()
	fw := base + "/firewall"
	until := fresh.Add(48 * time.Hour).Format(time.RFC3339)

	t.Run("documents", func(t *testing.T) {
		code, _, body := d.fwGet(fw+"/npm/q-pkg", tok)
		var doc struct {
			DistTags map[string]string         `json:"dist-tags"`
			Versions map[string]map[string]any `json:"versions"`
			Time     map[string]string         `json:"time"`
		}
		if code != 200 || json.Unmarshal(body, &doc) != nil {
			t.Fatalf("q-pkg document: %d %s", code, body)
		}
		if _, held := doc.Versions["1.1.0"]; held || doc.Time["1.1.0"] != "" || doc.DistTags["latest"] != "1.0.0" {
			t.Fatalf("1.1.0 is not held back (latest must move to 1.0.0): %s", body)
		}
		// The times of the versions left are the upstream's, byte for byte.
		if want := old.Format("2006-01-02T15:04:05.000Z"); doc.Time["1.0.0"] != want || !strings.Contains(string(body), `"1.0.0":"`+want+`"`) {
			t.Fatalf("time of 1.0.0 %q, want the upstream's %q", doc.Time["1.0.0"], want)
		}
		// The exact request: 403 with the message, the rule and the end.
		code, _, body = d.fwGet(fw+"/npm/q-pkg/-/q-pkg-1.1.0.tgz", tok)
		var refusal struct{ Error, Rule, Until string }
		if code != 403 || json.Unmarshal(body, &refusal) != nil || refusal.Rule != "quarantine" || refusal.Until != until ||
			!strings.HasPrefix(refusal.Error, "Held by threatd: npm q-pkg@1.1.0 was published 10m ago; quarantine is 2d, until "+until) {
			t.Fatalf("held tarball: %d %s", code, body)
		}
		if code, _, body := d.fwGet(fw+"/npm/q-pkg/1.1.0", tok); code != 403 || !strings.Contains(string(body), "Held by threatd") {
			t.Fatalf("version document of a held version: %d %s", code, body)
		}
		// PyPI: both pages drop (HTML) or mark (JSON) the new files.
		code, _, body = d.fwGet(fw+"/pypi/simple/q-py/", tok)
		if code != 200 || !strings.Contains(string(body), `q_py-1.1.0-py3-none-any.whl#sha256=`+sha256hex(u.files["/files/q_py-1.1.0-py3-none-any.whl"].body)+`" data-requires-python="&gt;=3.7" data-yanked="Held by threatd: pypi q-py@1.1.0`) ||
			strings.Contains(string(body), `q_py-1.0.0-py3-none-any.whl#sha256=`+sha256hex(u.files["/files/q_py-1.0.0-py3-none-any.whl"].body)+`" data-requires-python="&gt;=3.7" data-yanked`) {
			t.Fatalf("q-py HTML page: %d %s", code, body)
		}
		code, _, body = d.fwGet(fw+"/pypi/simple/q-py/", tok, "Accept", "application/vnd.pypi.simple.v1+json")
		if code != 200 || !strings.Contains(string(body), "Held by threatd: pypi q-py@1.1.0") {
			t.Fatalf("q-py JSON page: %d %s", code, body)
		}
		// Go: the list and @latest leave it out; its files are refused.
		if code, _, body := d.fwGet(fw+"/go/example.com/qmod/@v/list", tok); code != 200 || strings.TrimSpace(string(body)) != "v1.0.0" {
			t.Fatalf("qmod list: %d %q", code, body)
		}
		if code, _, body := d.fwGet(fw+"/go/example.com/qmod/@latest", tok); code != 200 || !strings.Contains(string(body), `"v1.0.0"`) {
			t.Fatalf("qmod @latest: %d %s", code, body)
		}
		if code, _, body := d.fwGet(fw+"/go/example.com/qmod/@v/v1.1.0.zip", tok); code != 403 || !strings.HasPrefix(string(body), "Held by threatd: go example.com/qmod@v1.1.0") {
			t.Fatalf("qmod v1.1.0.zip: %d %s", code, body)
		}
		// A version tagged after the module was listed, on a commit dated
		// a year back: held from when it appeared, not served at once.
		u.goModuleAt(t, "example.com/backdated", []string{"v1.0.0"}, []time.Time{old})
		if code, _, body := d.fwGet(fw+"/go/example.com/backdated/@v/list", tok); code != 200 || strings.TrimSpace(string(body)) != "v1.0.0" {
			t.Fatalf("backdated list: %d %q", code, body)
		}
		time.Sleep(6 * time.Second)
		u.goModuleAt(t, "example.com/backdated", []string{"v1.0.0", "v1.1.0"}, []time.Time{old, old.Add(time.Hour)})
		if code, _, body := d.fwGet(fw+"/go/example.com/backdated/@v/v1.1.0.zip", tok); code != 403 ||
			!strings.HasPrefix(string(body), "Held by threatd: go example.com/backdated@v1.1.0 appeared ") || !strings.Contains(string(body), "(its registry dates it "+old.Add(time.Hour).UTC().Format(time.DateOnly)+")") {
			t.Fatalf("a backdated version's zip: %d %s", code, body)
		}
		if code, _, _ := d.fwGet(fw+"/go/example.com/backdated/@v/v1.0.0.zip", tok); code != 200 {
			t.Fatalf("the version listed first: %d", code)
		}
		// Overrides: q-short* is held 1 h (2.0.0 is 2 h old: served);
		// q-excluded is never held.
		if code, _, body := d.fwGet(fw+"/npm/q-short-lived/-/q-short-lived-2.0.0.tgz", tok); code != 200 {
			t.Fatalf("q-short-lived 2.0.0 (2 h old, 1 h window): %d %s", code, body)
		}
		if code, _, body := d.fwGet(fw+"/npm/q-excluded/-/q-excluded-1.0.1.tgz", tok); code != 200 {
			t.Fatalf("q-excluded 1.0.1 (excluded): %d %s", code, body)
		}
		// install_scripts (warn by default): served, with the header on the
		// document and on the tarball.
		code, hdr, _ := d.fwGet(fw+"/npm/q-scripts/-/q-scripts-1.0.1.tgz", tok)
		want := "install_scripts: npm q-scripts@1.0.1 adds install scripts (postinstall) that 1.0.0 did not have"
		if code != 200 || hdr.Get("X-Threatd-Warning") != want {
			t.Fatalf("q-scripts 1.0.1 tarball: %d warning %q, want %q", code, hdr.Get("X-Threatd-Warning"), want)
		}
		if code, hdr, _ := d.fwGet(fw+"/npm/q-scripts", tok); code != 200 || hdr.Get("X-Threatd-Warning") != want {
			t.Fatalf("q-scripts document: %d warning %q", code, hdr.Get("X-Threatd-Warning"))
		}
		if _, hdr, _ := d.fwGet(fw+"/npm/q-scripts/-/q-scripts-1.0.0.tgz", tok); hdr.Get("X-Threatd-Warning") != "" {
			t.Fatalf("1.0.0 adds no script, yet: %q", hdr.Get("X-Threatd-Warning"))
		}
	})

	t.Run("npm", func(t *testing.T) {
		needTool(t, "npm")
		env := npmEnv(t, in, d, tok)
		dir := npmProject(t)
		if out, ok := client(t, dir, env, "npm", "install", "q-pkg"); !ok || npmInstalled(dir, "q-pkg") != "1.0.0" {
			t.Fatalf("npm install q-pkg installed %q:\n%s", npmInstalled(dir, "q-pkg"), out)
		}
		out, ok := client(t, npmProject(t), env, "npm", "install", "q-pkg@1.1.0")
		if ok || !strings.Contains(out, "No matching version found for q-pkg@1.1.0") {
			t.Fatalf("npm install q-pkg@1.1.0 (ok=%v):\n%s", ok, out)
		}
		// A lockfile pins the new version: npm ci, which skips npm's own
		// cooldown, fails with the hold's message.
		pinned := npmProject(t)
		pinLockfile(t, pinned, "q-pkg", "1.1.0", d.base+fw+"/npm/q-pkg/-/q-pkg-1.1.0.tgz", u.files["/q-pkg/-/q-pkg-1.1.0.tgz"].body)
		out, ok = client(t, pinned, env, "npm", "ci")
		if ok || !strings.Contains(out, "Held by threatd: npm q-pkg@1.1.0 was published") || !strings.Contains(out, "until "+until) {
			t.Fatalf("npm ci pinning q-pkg@1.1.0 (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("pnpm", func(t *testing.T) {
		pnpm := needTool(t, "pnpm")
		env := append(npmEnv(t, in, d, tok), "PNPM_HOME="+t.TempDir(), "npm_config_store_dir="+t.TempDir())
		dir := npmProject(t)
		if out, ok := client(t, dir, env, pnpm, "add", "q-pkg"); !ok || npmInstalled(dir, "q-pkg") != "1.0.0" {
			t.Fatalf("pnpm add q-pkg installed %q:\n%s", npmInstalled(dir, "q-pkg"), out)
		}
		out, ok := client(t, npmProject(t), env, pnpm, "add", "q-pkg@1.1.0")
		if ok || !strings.Contains(out, "q-pkg@1.1.0") {
			t.Fatalf("pnpm add q-pkg@1.1.0 (ok=%v):\n%s", ok, out)
		}
		// pnpm's lockfile pins it: the tarball's refusal reaches the terminal.
		pinned := npmProject(t)
		lock := fmt.Sprintf(`lockfileVersion: '9.0'

settings:
  autoInstallPeers: true
  excludeLinksFromLockfile: false

importers:

  .:
    dependencies:
      q-pkg:
        specifier: 1.1.0
        version: 1.1.0

packages:

  q-pkg@1.1.0:
    resolution: {integrity: %s, tarball: %s}

snapshots:

  q-pkg@1.1.0: {}
`, integrity(u.files["/q-pkg/-/q-pkg-1.1.0.tgz"].body), d.base+fw+"/npm/q-pkg/-/q-pkg-1.1.0.tgz")
		_ = os.WriteFile(filepath.Join(pinned, "package.json"), []byte(`{"name":"consumer","version":"1.0.0","private":true,"dependencies":{"q-pkg":"1.1.0"}}`), 0o644)
		_ = os.WriteFile(filepath.Join(pinned, "pnpm-lock.yaml"), []byte(lock), 0o644)
		out, ok = client(t, pinned, env, pnpm, "install", "--frozen-lockfile")
		if ok || !strings.Contains(out, "403") {
			t.Fatalf("pnpm install --frozen-lockfile pinning q-pkg@1.1.0 (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("pip", func(t *testing.T) {
		pip := pipInstaller(t, in, d, tok)
		if out, ok, target := pip("q-py"); !ok || readFile(t, filepath.Join(target, "q_py", "__init__.py")) != "VERSION = \"1.0.0\"\n" {
			t.Fatalf("pip install q-py:\n%s", out)
		}
		out, ok, _ := pip("q-py==1.1.0")
		if ok || !strings.Contains(out, "Held by threatd: pypi q-py@1.1.0") {
			t.Fatalf("pip install q-py==1.1.0 (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("go", func(t *testing.T) {
		goBin := needTool(t, "go")
		env := goEnv(t, in, d, tok, t.TempDir(), d.base+fw+"/go")
		dir := goModDir(t)
		if out, ok := client(t, dir, env, goBin, "get", "example.com/qmod@latest"); !ok || !strings.Contains(readFile(t, filepath.Join(dir, "go.mod")), "example.com/qmod v1.0.0") {
			t.Fatalf("go get example.com/qmod@latest:\n%s", out)
		}
		out, ok := client(t, goModDir(t), env, goBin, "get", "example.com/qmod@v1.1.0")
		if ok || !strings.Contains(out, "Held by threatd: go example.com/qmod@v1.1.0 was published") {
			t.Fatalf("go get example.com/qmod@v1.1.0 (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("waivers", func(t *testing.T) {
		fwReport(t, in, d, tok, "npm", "q-evil", "1.0.1")
		eventually(t, "q-evil 1.0.1 blocked", func() bool {
			code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
			return code == 403
		})
		// Bad input: 400 naming the field, exit 2, nothing stored.
		for body, field := range map[string]string{
			`{"ecosystem":"npm","name":"q-evil","rule":"malicious","for":"1h"}`:                                     "reason",
			`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours"}`:                                "for",
			`{"ecosystem":"cpan","name":"q-evil","rule":"malicious","reason":"ours","for":"1h"}`:                    "ecosystem",
			`{"ecosystem":"npm","name":"q-evil","rule":"typosquat","reason":"ours","for":"1h"}`:                     "rule",
			`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","for":"a while"}`:                "for",
			`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","until":"2020-01-01T00:00:00Z"}`: "until",
		} {
			r := d.do("POST", base+"/firewall/waivers", reviewer, body)
			if r.code != 400 || r.body["field"] != field {
				t.Errorf("POST %s: %d %v, want 400 naming %s", body, r.code, r.body, field)
			}
		}
		if r := in.cli("firewall", "waive", "npm", "q-evil@1.0.1", "--rule", "malicious", "--for", "1h"); r.code != 2 || !strings.Contains(r.stderr, "reason") {
			t.Errorf("waive without a reason: exit %d %s", r.code, r.stderr)
		}
		if r := in.cli("firewall", "waive", "npm", "q-evil@1.0.1", "--rule", "malicious", "--reason", "x", "--for", "soon"); r.code != 2 || !strings.Contains(r.stderr, "--for") {
			t.Errorf("waive --for soon: exit %d %s", r.code, r.stderr)
		}
		if r := d.do("GET", base+"/firewall/waivers", reviewer, ""); r.code != 200 || r.body["count"] != 0.0 {
			t.Fatalf("waivers after bad input: %d %v", r.code, r.body)
		}
		if r := d.do("POST", base+"/firewall/waivers", tok, `{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","for":"1h"}`); r.code != 403 {
			t.Fatalf("a submitter's waiver: %d %v", r.code, r.body)
		}
		// Wide waivers are an administrator's: a reviewer's of a glob, or
		// longer than firewall.reviewer_waiver_max (168h), is 403.
		for body, why := range map[string]string{
			`{"ecosystem":"npm","name":"*","rule":"malicious","reason":"ours","for":"1h"}`:       "a waiver of a name glob that names fewer than 3 letters or digits (*) needs an administrator",
			`{"ecosystem":"npm","name":"@*/*","rule":"malicious","reason":"ours","for":"1h"}`:    "a waiver of a name glob that names fewer than 3 letters or digits (@*/*) needs an administrator",
			`{"ecosystem":"npm","name":"q-evil","rule":"malicious","reason":"ours","for":"30d"}`: "a waiver for longer than 7d needs an administrator",
		} {
			if r := d.do("POST", base+"/firewall/waivers", reviewer, body); r.code != 403 || !strings.Contains(r.raw, why) {
				t.Errorf("a reviewer's wide waiver %s: %d %s", body, r.code, r.raw)
			}
		}
		if r := d.do("GET", base+"/firewall/waivers", reviewer, ""); r.code != 200 || r.body["count"] != 0.0 {
			t.Fatalf("waivers after refused wide ones: %d %v", r.code, r.body)
		}

		// A waiver by CLI, short: the version installs until it ends.
		id := strings.TrimSpace(in.mustCLI("firewall", "waive", "npm", "q-evil@1.0.1", "--rule", "malicious", "--reason", "our fork, reviewed", "--for", "4s", "--as", "rita@example.com"))
		eventually(t, "the waiver applied", func() bool {
			code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
			return code == 200
		})
		_, _, body := d.fwGet(fw+"/npm/q-evil", tok)
		if !strings.Contains(string(body), `"latest":"1.0.1"`) {
			t.Fatalf("while waived, 1.0.1 is listed again: %s", body)
		}
		list := in.mustCLI("firewall", "waivers", "--json")
		if !strings.Contains(list, id) || !strings.Contains(list, `"reason":"our fork, reviewed"`) || !strings.Contains(list, `"created_by":"rita@example.com"`) {
			t.Fatalf("waivers --json: %s", list)
		}
		waitFor(t, "the waiver's end", 10*time.Second, func() bool {
			code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
			return code == 403
		})

		// By API: made, listed, removed; the version is blocked again.
		r := d.do("POST", base+"/firewall/waivers", reviewer, `{"ecosystem":"npm","name":"q-evil","version":"1.0.1","rule":"malicious","reason":"false positive","for":"1h"}`)
		if r.code != 201 || r.body["created_by"] != "rita@example.com" || r.body["rule"] != "malicious" || r.body["waiver_id"] == nil || r.body["until"] == nil {
			t.Fatalf("POST waiver: %d %v", r.code, r.body)
		}
		apiID := r.body["waiver_id"].(string)
		code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
		if code != 200 {
			t.Fatalf("a waiver made on this daemon applies at once: %d", code)
		}
		// The real client installs the waived version.
		if _, err := exec.LookPath("npm"); err == nil {
			dir := npmProject(t)
			if out, ok := client(t, dir, npmEnv(t, in, d, tok), "npm", "install", "q-evil@1.0.1"); !ok || npmInstalled(dir, "q-evil") != "1.0.1" {
				t.Fatalf("npm install q-evil@1.0.1 while waived:\n%s", out)
			}
		}
		if r := d.do("GET", base+"/firewall/waivers", admin, ""); r.code != 200 || r.body["count"] != 1.0 {
			t.Fatalf("GET waivers: %d %v", r.code, r.body)
		}
		if r := d.do("DELETE", base+"/firewall/waivers/"+apiID, reviewer, ""); r.code != 204 {
			t.Fatalf("DELETE waiver: %d %v", r.code, r.body)
		}
		if r := d.do("DELETE", base+"/firewall/waivers/"+apiID, reviewer, ""); r.code != 404 {
			t.Fatalf("DELETE again: %d %v", r.code, r.body)
		}
		if code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok); code != 403 {
			t.Fatalf("after the waiver's removal: %d", code)
		}
	})

	t.Run("web", func(t *testing.T) {
		in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "root@example.com")
		b := in.browser(d)
		b.get("/login?next=/admin/firewall")
		b.post("/login", url.Values{"email": {"root@example.com"}, "password": {"correct horse battery"}, "next": {"/admin/firewall"}}).
			expect(t, 200, "Waivers", "No waivers in force", "Firewall blocks", "q-evil")
		// Without a reason: the form again, naming the field; nothing made.
		b.post("/admin/firewall/waivers", url.Values{"ecosystem": {"npm"}, "name": {"q-evil"}, "version": {"1.0.1"}, "rule": {"malicious"}, "for": {"1h"}}).
			expect(t, 400, "reason: is required", "No waivers in force")
		page := b.post("/admin/firewall/waivers", url.Values{"ecosystem": {"npm"}, "name": {"q-evil"}, "version": {"1.0.1"}, "rule": {"malicious"},
			"reason": {"checked by hand: <b>not</b> malicious"}, "for": {"2h"}}).
			expect(t, 200, "q-evil", "@1.0.1", "checked by hand: <b>not</b> malicious", "root@example.com")
		if page.body != "" && strings.Contains(page.body, "<b>not</b>") {
			t.Fatal("the reason is not escaped")
		}
		code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok)
		if code != 200 {
			t.Fatalf("a waiver made on the page applies at once: %d", code)
		}
		ws := in.mustCLI("firewall", "waivers", "--json")
		var list []struct {
			WaiverID string `json:"waiver_id"`
		}
		if json.Unmarshal([]byte(ws), &list) != nil || len(list) != 1 {
			t.Fatalf("waivers: %s", ws)
		}
		b.post("/admin/firewall/waivers/"+list[0].WaiverID+"/remove", url.Values{}).expect(t, 200, "No waivers in force")
		if code, _, _ := d.fwGet(fw+"/npm/q-evil/-/q-evil-1.0.1.tgz", tok); code != 403 {
			t.Fatalf("after the removal on the page: %d", code)
		}
	})

	t.Run("decisions", func(t *testing.T) {
		// Every decision reaches storage within the recorder's flush.
		want := map[string]bool{"quarantine/block/q-pkg@1.1.0": false, "malicious/block/q-evil@1.0.1": false, "malicious/waived/q-evil@1.0.1": false,
			"install_scripts/warn/q-scripts@1.0.1": false, "quarantine/block/example.com/qmod@v1.1.0": false, "quarantine/block/q-py@1.1.0": false}
		var all []map[string]any
		listAll := func() {
			all = nil
			cursor := ""
			for pages := 0; pages < 100; pages++ {
				r := d.do("GET", base+"/firewall/decisions?limit=3"+cursor, admin, "")
				if r.code != 200 {
					t.Fatalf("decisions: %d %v", r.code, r.body)
				}
				for _, x := range r.body["decisions"].([]any) {
					all = append(all, x.(map[string]any))
				}
				next, _ := r.body["next_cursor"].(string)
				if next == "" {
					break
				}
				cursor = "&cursor=" + next
			}
		}
		defer func() {
			if t.Failed() {
				t.Logf("decisions seen: %v", want)
			}
		}()
		waitFor(t, "the decisions listed", 10*time.Second, func() bool {
			listAll()
			for k := range want {
				want[k] = false
			}
			for _, x := range all {
				want[fmt.Sprintf("%s/%s/%s@%s", x["rule"], x["action"], x["name"], x["version"])] = true
			}
			for _, seen := range want {
				if !seen {
					return false
				}
			}
			return true
		})
		// The last requests' decisions are written within a flush (250 ms).
		time.Sleep(time.Second)
		listAll()
		for _, x := range all {
			if x["name"] == "example.com" {
				t.Fatalf("a module that does not exist (the go command probes example.com) was judged: %v", x)
			}
			if x["user"] != "dev@example.com" || x["client_ip"] != "127.0.0.1" || x["time"] == nil || x["ecosystem"] == nil {
				t.Fatalf("decision %v", x)
			}
			if x["name"] == "q-pkg" && (x["purl"] != "pkg:npm/q-pkg@1.1.0" || x["until"] != until) {
				t.Fatalf("held decision %v", x)
			}
		}
		if r := d.do("GET", base+"/firewall/decisions", reviewer, ""); r.code != 403 {
			t.Fatalf("a reviewer lists decisions: %d", r.code)
		}
		if r := d.do("GET", base+"/firewall/decisions?cursor=nope", admin, ""); r.code != 400 || r.body["field"] != "cursor" {
			t.Fatalf("a bad cursor: %d %v", r.code, r.body)
		}
		cli := in.mustCLI("firewall", "decisions", "--json")
		if n := strings.Count(cli, "\n"); n != len(all) || !strings.Contains(cli, `"rule":"quarantine"`) {
			t.Fatalf("firewall decisions --json: %d lines for %d decisions:\n%s", n, len(all), cli)
		}
		// The webhook receiver gets the blocked and warned events, signed;
		// the report subscription none of them.
		waitFor(t, "the firewall events delivered", 15*time.Second, func() bool {
			blocked, warned := 0, 0
			for _, dl := range recv.deliveries() {
				switch dl.Type {
				case "firewall.blocked":
					blocked++
				case "firewall.warned":
					warned++
				}
			}
			return blocked >= 4 && warned >= 1
		})
		for _, dl := range recv.deliveries() {
			if !strings.HasPrefix(dl.Type, "firewall.") {
				continue
			}
			if err := verifyWebhook(secret, map[string][]string{"Webhook-Id": {dl.ID}, "Webhook-Timestamp": {dl.Timestamp}, "Webhook-Signature": {dl.Signature}}, dl.Body, time.Now()); err != nil {
				t.Fatalf("delivery %s: %v", dl.ID, err)
			}
			var ev struct {
				Type string
				Data map[string]any
			}
			if json.Unmarshal(dl.Body, &ev) != nil || ev.Data["rule"] == nil || ev.Data["action"] == nil || ev.Data["purl"] == nil {
				t.Fatalf("event body %s", dl.Body)
			}
		}
		hooks := in.mustCLI("webhook", "list", "--json")
		var hs []struct {
			ID        string
			Events    []string
			Delivered int
		}
		if err := json.Unmarshal([]byte(hooks), &hs); err != nil {
			t.Fatalf("webhook list --json: %v\n%s", err, hooks)
		}
		found := 0
		for _, h := range hs {
			switch h.ID {
			case reportsHook:
				found++
				if h.Delivered != 1 {
					t.Fatalf("the reports subscription got %d deliveries (want the one verification)", h.Delivered)
				}
			case hookID:
				found++
				if strings.Join(h.Events, ",") != "firewall.blocked,firewall.warned" {
					t.Fatalf("the firewall subscription's events: %v", h.Events)
				}
			}
		}
		if found != 2 {
			t.Fatalf("webhook list --json lacks a subscription: %s", hooks)
		}
		if m := d.scrape()["threatd_firewall_decisions_dropped_total"]; m == nil || len(m.Metric) != 1 || m.Metric[0].GetCounter().GetValue() != 0 {
			t.Fatalf("threatd_firewall_decisions_dropped_total: %v", m)
		}
		// Counted in metrics by ecosystem, rule and action.
		m := d.scrape()["threatd_firewall_decisions_total"]
		if m == nil {
			t.Fatal("no threatd_firewall_decisions_total")
		}
		seen := map[string]bool{}
		for _, s := range m.Metric {
			l := map[string]string{}
			for _, p := range s.Label {
				l[p.GetName()] = p.GetValue()
			}
			seen[l["ecosystem"]+"/"+l["rule"]+"/"+l["action"]] = true
		}
		for _, k := range []string{"npm/quarantine/block", "pypi/quarantine/block", "go/quarantine/block", "npm/malicious/waived", "npm/install_scripts/warn"} {
			if !seen[k] {
				t.Errorf("metrics lack %s: %v", k, seen)
			}
		}
	})

	t.Run("held", func(t *testing.T) {
		r := d.do("GET", base+"/firewall/held", reviewer, "")
		if r.code != 200 {
			t.Fatalf("held: %d %v", r.code, r.body)
		}
		got := map[string]string{}
		for _, x := range r.body["held"].([]any) {
			h := x.(map[string]any)
			got[fmt.Sprintf("%s %s@%s", h["ecosystem"], h["name"], h["version"])], _ = h["until"].(string)
			// When the firewall first held it: never the zero time.
			if fs, _ := time.Parse(time.RFC3339, h["first_seen"].(string)); fs.Before(time.Now().Add(-time.Hour)) || fs.After(time.Now().Add(time.Minute)) {
				t.Errorf("held %v: first_seen %v", h["name"], h["first_seen"])
			}
		}
		for _, k := range []string{"npm q-pkg@1.1.0", "pypi q-py@1.1.0", "go example.com/qmod@v1.1.0"} {
			if got[k] != until {
				t.Errorf("held %s until %q, want %s (all: %v)", k, got[k], until, got)
			}
		}
		if _, ok := got["npm q-short-lived@2.0.0"]; ok {
			t.Error("q-short-lived 2.0.0 is past its window, yet listed")
		}
		if out := in.mustCLI("firewall", "held"); !strings.Contains(out, "q-pkg@1.1.0") || !strings.Contains(out, until) {
			t.Fatalf("firewall held:\n%s", out)
		}
		if r := d.do("GET", base+"/firewall/held", tok, ""); r.code != 403 {
			t.Fatalf("a submitter lists held versions: %d", r.code)
		}
	})
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// npmProject is an empty npm project directory.
func npmProject(t *testing.T) string {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"consumer","version":"1.0.0","private":true}`), 0o644)
	return dir
}

// npmInstalled is the version of name installed in dir ("" when none).
func npmInstalled(dir, name string) string {
	var pj struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
	if err != nil || json.Unmarshal(b, &pj) != nil {
		return ""
	}
	return pj.Version
}

// TestFirewallPolicyPostgresTwoDaemons: two daemons on one PostgreSQL
// database agree. A waiver made on one (by API) applies on the other
// within cache.freshness, and its removal too; the decisions both make
// are listed once each, and a firewall.blocked subscription receives
// each once (the outbox is shared).
func TestFirewallPolicyPostgresTwoDaemons(t *testing.T) {
	now := time.Now().UTC()
	u := newUpstreamRegistry(t)
	u.npmPackageAt(t, "pgq-pkg", "1.1.0", nil, []string{"1.0.0", "1.1.0"}, []time.Time{now.Add(-30 * 24 * time.Hour), now.Add(-time.Minute)}, nil)
	in := pgInstance(t, quiet+"  new_user_max_unverified: 0\n"+hookConfig+fwConfig(u))
	tok := in.user("pg@example.com")
	reviewer := in.user("rev@example.com", "--role", "reviewer")
	admin := in.user("adm@example.com", "--role", "admin")
	recv := newReceiver(t)
	_, secret := addWebhook(t, in, "--url", recv.srv.URL+"/hook", "--events", "firewall.blocked")
	a, b := in.serve(), in.serve()
	tarball := base + "/firewall/npm/pgq-pkg/-/pgq-pkg-1.1.0.tgz"
	// Every answer is a decision: refused (403) or waived (200).
	refused, waived := 0, 0
	get := func(d *daemon) int {
		code, _, _ := d.fwGet(tarball, tok)
		switch code {
		case 403:
			refused++
		case 200:
			waived++
		}
		return code
	}
	for _, d := range []*daemon{a, b} {
		if code, _, body := d.fwGet(tarball, tok); code != 403 || !strings.Contains(string(body), "Held by threatd") {
			t.Fatalf("the new version on a daemon: %d %s", code, body)
		}
	}
	r := a.do("POST", base+"/firewall/waivers", reviewer, `{"ecosystem":"npm","name":"pgq-*","rule":"quarantine","reason":"our own release","for":"1h"}`)
	if r.code != 201 {
		t.Fatalf("waiver on a: %d %v", r.code, r.body)
	}
	refused = 2
	eventually(t, "the waiver made on a applying on b", func() bool { return get(b) == 200 })
	if r := b.do("DELETE", base+"/firewall/waivers/"+r.body["waiver_id"].(string), reviewer, ""); r.code != 204 {
		t.Fatalf("removal on b: %d %v", r.code, r.body)
	}
	eventually(t, "the removal made on b applying on a", func() bool { return get(a) == 403 })
	// Ten refusals on each daemon.
	for i := 0; i < 10; i++ {
		for _, d := range []*daemon{a, b} {
			if code := get(d); code != 403 {
				t.Fatalf("refusal %d: %d", i, code)
			}
		}
	}
	count := func(d *daemon) (blocked, waived int) {
		cursor := ""
		for {
			r := d.do("GET", base+"/firewall/decisions?limit=7"+cursor, admin, "")
			if r.code != 200 {
				t.Fatalf("decisions: %d %v", r.code, r.body)
			}
			for _, x := range r.body["decisions"].([]any) {
				switch x.(map[string]any)["action"] {
				case "block":
					blocked++
				case "waived":
					waived++
				}
			}
			next, _ := r.body["next_cursor"].(string)
			if next == "" {
				return
			}
			cursor = "&cursor=" + next
		}
	}
	waitFor(t, "every decision listed", 10*time.Second, func() bool {
		blocked, _ := count(a)
		return blocked >= refused
	})
	time.Sleep(time.Second)
	for _, d := range []*daemon{a, b} {
		if blocked, w := count(d); blocked != refused || w != waived {
			t.Fatalf("listed %d blocked and %d waived decisions, want %d and %d", blocked, w, refused, waived)
		}
	}
	waitFor(t, "the events delivered", 20*time.Second, func() bool { return len(recv.deliveries()) >= refused })
	time.Sleep(500 * time.Millisecond)
	ids := map[string]bool{}
	for _, dl := range recv.deliveries() {
		if dl.Type != "firewall.blocked" || ids[dl.ID] {
			t.Fatalf("delivery %s %s (seen before: %v)", dl.ID, dl.Type, ids[dl.ID])
		}
		ids[dl.ID] = true
		if err := verifyWebhook(secret, map[string][]string{"Webhook-Id": {dl.ID}, "Webhook-Timestamp": {dl.Timestamp}, "Webhook-Signature": {dl.Signature}}, dl.Body, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids) != refused {
		t.Fatalf("%d events delivered, want %d", len(ids), refused)
	}
}
