package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
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
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	old, fresh := now.Add(-30*24*time.Hour), now.Add(-10*time.Minute)
	u := fakeregistry.New(t)
	u.NPMPackageAt(t, "q-pkg", "1.1.0", nil, []string{"1.0.0", "1.1.0"}, []time.Time{old, fresh}, nil)
	u.NPMPackageAt(t, "q-short-lived", "2.0.0", nil, []string{"1.0.0", "2.0.0"}, []time.Time{old, now.Add(-2 * time.Hour)}, nil)
	u.NPMPackageAt(t, "q-excluded", "1.0.1", nil, []string{"1.0.0", "1.0.1"}, []time.Time{old, fresh}, nil)
	u.NPMPackageAt(t, "q-scripts", "1.0.1", nil, []string{"1.0.0", "1.0.1"}, []time.Time{old, old.Add(time.Hour)},
		map[string]map[string]string{"1.0.0": {"test": "true"}, "1.0.1": {"test": "true", "postinstall": "node -e 0"}})
	u.NPMPackageAt(t, "q-evil", "1.0.1", nil, []string{"1.0.0", "1.0.1"}, []time.Time{old, old.Add(time.Hour)}, nil)
	u.PyPIProjectAt(t, "q-py", []string{"1.0.0", "1.1.0"}, []time.Time{old, fresh})
	u.GoModuleAt(t, "example.com/qmod", []string{"v1.0.0", "v1.1.0"}, []time.Time{old, fresh})

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
			!strings.HasPrefix(apitest.TenMinutes(refusal.Error), "Held by threatd: npm q-pkg@1.1.0 was published 10m ago; quarantine is 2d, until "+until) {
			t.Fatalf("held tarball: %d %s", code, body)
		}
		if code, _, body := d.fwGet(fw+"/npm/q-pkg/1.1.0", tok); code != 403 || !strings.Contains(string(body), "Held by threatd") {
			t.Fatalf("version document of a held version: %d %s", code, body)
		}
		// PyPI: both pages drop (HTML) or mark (JSON) the new files.
		code, _, body = d.fwGet(fw+"/pypi/simple/q-py/", tok)
		if code != 200 || !strings.Contains(string(body), `q_py-1.1.0-py3-none-any.whl#sha256=`+sha256hex(u.Files["/files/q_py-1.1.0-py3-none-any.whl"].Body)+`" data-requires-python="&gt;=3.7" data-yanked="Held by threatd: pypi q-py@1.1.0`) ||
			strings.Contains(string(body), `q_py-1.0.0-py3-none-any.whl#sha256=`+sha256hex(u.Files["/files/q_py-1.0.0-py3-none-any.whl"].Body)+`" data-requires-python="&gt;=3.7" data-yanked`) {
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
		u.GoModuleAt(t, "example.com/backdated", []string{"v1.0.0"}, []time.Time{old})
		if code, _, body := d.fwGet(fw+"/go/example.com/backdated/@v/list", tok); code != 200 || strings.TrimSpace(string(body)) != "v1.0.0" {
			t.Fatalf("backdated list: %d %q", code, body)
		}
		time.Sleep(6 * time.Second)
		u.GoModuleAt(t, "example.com/backdated", []string{"v1.0.0", "v1.1.0"}, []time.Time{old, old.Add(time.Hour)})
		if code, _, body := d.fwGet(fw+"/go/example.com/backdated/@v/v1.1.0.zip", tok); code != 403 ||
			!strings.HasPrefix(string(body), "Held by threatd: go example.com/backdated@v1.1.0 appeared ") || !strings.Contains(string(body), "(its registry dates it "+old.Add(time.Hour).UTC().Format(time.DateOnly)+")") {
			t.Fatalf("a backdated version's zip: %d %s", code, body)
		}
		if code, _, _ := d.fwGet(fw+"/go/example.com/backdated/@v/v1.0.0.zip", tok); code != 200 {
			t.Fatalf("the version listed first: %d", code)
		}
		// Overrides: q-short* is held 1 h (2.0.0 is 2 h old: served once
		// analysed, firewall.quarantine.until_analysed); q-excluded is
		// never held.
		tgz := fw + "/npm/q-short-lived/-/q-short-lived-2.0.0.tgz"
		if code, _, body := d.fwGet(tgz, tok); code != 200 && (code != 403 ||
			!strings.HasPrefix(string(body), `{"error":"Held by threatd: npm q-short-lived@2.0.0 is being analysed; its quarantine of 1h ended 1h ago, and it is held until its analysis ends, at most until `)) {
			t.Fatalf("q-short-lived 2.0.0 (2 h old, 1 h window) first seen: %d %s", code, body)
		}
		eventually(t, "q-short-lived 2.0.0 analysed and served", func() bool { code, _, _ := d.fwGet(tgz, tok); return code == 200 })
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
		pinLockfile(t, pinned, "q-pkg", "1.1.0", d.base+fw+"/npm/q-pkg/-/q-pkg-1.1.0.tgz", u.Files["/q-pkg/-/q-pkg-1.1.0.tgz"].Body)
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
`, fakeregistry.Integrity(u.Files["/q-pkg/-/q-pkg-1.1.0.tgz"].Body), d.base+fw+"/npm/q-pkg/-/q-pkg-1.1.0.tgz")
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

	f := &quarantineFixture{now, old, fresh, u, in, tok, reviewer, admin, recv, hookID, secret, reportsHook, d, fw, until}
	t.Run("waivers", func(t *testing.T) { quarantineWaivers(t, f) })
	t.Run("web", func(t *testing.T) { quarantineWeb(t, f) })
	t.Run("decisions", func(t *testing.T) { quarantineDecisions(t, f) })
	t.Run("held", func(t *testing.T) { quarantineHeld(t, f) })
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
