package main_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// fwConfig is the firewall of an instance that fronts the upstream u, with
// @acme/* private on npm, fetched from private when it is given.
func fwConfig(u *fakeregistry.Registry, private ...*fakeregistry.Registry) string {
	priv := ""
	if len(private) > 0 {
		priv = fmt.Sprintf("    private_upstream: %q\n", private[0].Srv.URL)
	}
	return fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n%s  pypi:\n    upstream: %q\n  go:\n    upstream: %q\n  private:\n    npm: [\"@acme/*\"]\n",
		u.Srv.URL, priv, u.Srv.URL+"/simple", u.Srv.URL)
}

// fwReport submits a package report and verifies it; returns its id.
func fwReport(t *testing.T, in *instance, d *daemon, tok, registry, name, versions string) string {
	t.Helper()
	body := fmt.Sprintf(`{"report_type":"package","resource_identifier":%q,"registry":%q,"threat_description":"Steals credentials at install time","severity_level":"critical","version_info":%q}`,
		name, registry, versions)
	id := d.submit(tok, body)
	in.mustCLI("review", "verify", id)
	return id
}

// soleExposure waits until the report's exposures are one, and it is as
// want says (GET /exposure as the admin token).
func (d *daemon) soleExposure(t *testing.T, what, admin, threatID string, want func(e map[string]any) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		r := d.do("GET", base+"/exposure?threat_id="+threatID, admin, "")
		if r.code != 200 || r.body["count"].(float64) != 1 {
			return false
		}
		return want(r.body["exposures"].([]any)[0].(map[string]any))
	})
}

// client runs a real package manager command in dir with env, returning
// its combined output and whether it succeeded.
func client(t *testing.T, dir string, env []string, name string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not finish within 3 minutes:\n%s", name, args, out)
	}
	return string(out), err == nil
}

func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (CI requires it)", name)
		}
		t.Skipf("%s is not installed: the firewall's %s test needs it", name, name)
	}
	return p
}

// fwGet sends a GET to the firewall with the token (Bearer) and returns status and body.
func (d *daemon) fwGet(path, token string, header ...string) (int, http.Header, []byte) {
	d.t.Helper()
	return apitest.Get(d.t, d.client, d.base, path, token, header...)
}

func (in *instance) certFile() string { return filepath.Join(in.dir, "data", "tls", "cert.pem") }

// TestFirewall: the real npm, pip and go commands install through the
// firewall from an upstream served here; what verified reports name is
// refused with the threat id in the client's output, what is clean
// installs, a withdrawal unblocks, and private names are never blocked.
func TestFirewall(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	u.NPMPackage(t, "fw-clean", "1.0.0", "1.0.0")
	u.NPMPackage(t, "fw-evil", "1.0.1", "1.0.0", "1.0.1")
	u.NPMPackage(t, "fw-all", "2.0.0", "1.0.0", "2.0.0")
	// The public registry holds a decoy of the internal package (a newer
	// version, as dependency-confusion attacks publish); the private one
	// holds the real package.
	u.NPMPackage(t, "@acme/internal", "9.9.9", "9.9.9")
	private := fakeregistry.New(t)
	private.NPMPackage(t, "@acme/internal", "1.0.0", "1.0.0")
	u.PyPIProject(t, "fw-clean-py", "1.0.0")
	u.PyPIProject(t, "fw-evil-py", "1.0.0", "1.0.1")
	u.GoModule(t, "example.com/fwclean", "v1.0.0")
	u.GoModule(t, "example.com/fwevil", "v1.0.0", "v1.0.1")

	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+fwConfig(u, private))
	tok := in.user("dev@example.com")
	d := in.serve()
	fw := base + "/firewall"
	npmEvil := fwReport(t, in, d, tok, "npm", "fw-evil", "1.0.1")
	npmAll := fwReport(t, in, d, tok, "npm", "fw-all", "")
	fwReport(t, in, d, tok, "npm", "@acme/internal", "")
	pyEvil := fwReport(t, in, d, tok, "pypi", "fw-evil-py", "1.0.1")
	goEvil := fwReport(t, in, d, tok, "go", "example.com/fwevil", "1.0.1") // as OSV names Go versions
	eventually(t, "the reports in the index", func() bool {
		code, _, _ := d.fwGet(fw+"/npm/fw-all", tok)
		return code == 403
	})

	t.Run("anonymous", func(t *testing.T) {
		for _, p := range []string{"/npm/fw-clean", "/pypi/simple/fw-clean-py/", "/go/example.com/fwclean/@v/list"} {
			code, _, body := d.fwGet(fw+p, "")
			if code != 401 || !strings.Contains(string(body), "Authorization required") {
				t.Errorf("anonymous GET %s: %d %s", p, code, body)
			}
			code, _, body = d.fwGet(fw+p, "thd_notatoken")
			if code != 401 || !strings.Contains(string(body), "Invalid API token") {
				t.Errorf("bad token GET %s: %d %s", p, code, body)
			}
		}
	})

	t.Run("npm document", func(t *testing.T) {
		code, _, body := d.fwGet(fw+"/npm/fw-evil", tok, "Accept", "application/vnd.npm.install-v1+json")
		if code != 200 {
			t.Fatalf("fw-evil document: %d %s", code, body)
		}
		var doc struct {
			DistTags map[string]string `json:"dist-tags"`
			Versions map[string]struct {
				Dist struct{ Tarball string } `json:"dist"`
			} `json:"versions"`
			Time map[string]string `json:"time"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Versions["1.0.1"]; ok || doc.Time["1.0.1"] != "" || doc.DistTags["latest"] != "1.0.0" || len(doc.Versions) != 1 {
			t.Fatalf("1.0.1 not removed or latest not moved: %s", body)
		}
		if want := d.base + fw + "/npm/fw-evil/-/fw-evil-1.0.0.tgz"; doc.Versions["1.0.0"].Dist.Tarball != want {
			t.Fatalf("tarball %q, want %q", doc.Versions["1.0.0"].Dist.Tarball, want)
		}
		// The malicious tarball fetched directly: the 403 of the contract.
		code, hdr, body := d.fwGet(fw+"/npm/fw-evil/-/fw-evil-1.0.1.tgz", tok)
		var refusal struct {
			Error     string         `json:"error"`
			ThreatIDs []string       `json:"threat_ids"`
			Details   map[string]any `json:"details"`
		}
		if code != 403 || json.Unmarshal(body, &refusal) != nil || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Fatalf("malicious tarball: %d %s", code, body)
		}
		if !strings.HasPrefix(refusal.Error, "Blocked by threatd: npm fw-evil@1.0.1 is malicious") || !strings.Contains(refusal.Error, npmEvil) ||
			len(refusal.ThreatIDs) != 1 || refusal.ThreatIDs[0] != npmEvil || refusal.Details["id"] != npmEvil || refusal.Details["status"] != "verified" {
			t.Fatalf("refusal: %s", body)
		}
		// Version documents: a tag the upstream resolves to a blocked
		// version is refused; a clean one points at the firewall.
		if code, _, body := d.fwGet(fw+"/npm/fw-evil/latest", tok); code != 403 || !strings.Contains(string(body), npmEvil) {
			t.Fatalf("fw-evil/latest (1.0.1 upstream): %d %s", code, body)
		}
		code, _, body = d.fwGet(fw+"/npm/fw-evil/1.0.0", tok)
		if code != 200 || !strings.Contains(string(body), `"tarball":"`+d.base+fw+"/npm/fw-evil/-/fw-evil-1.0.0.tgz") {
			t.Fatalf("fw-evil/1.0.0: %d %s", code, body)
		}
		// A package reported for every version: its document is refused.
		code, _, body = d.fwGet(fw+"/npm/fw-all", tok)
		if code != 403 || !strings.Contains(string(body), npmAll) {
			t.Fatalf("fw-all: %d %s", code, body)
		}
		// An upstream 404 passes through unchanged.
		code, _, body = d.fwGet(fw+"/npm/fw-nonexistent", tok)
		if code != 404 || !strings.Contains(string(body), "upstream: /fw-nonexistent not found") {
			t.Fatalf("unknown package: %d %s", code, body)
		}
	})

	t.Run("npm", func(t *testing.T) {
		needTool(t, "npm")
		env := npmEnv(t, in, d, tok)
		project := func() string {
			dir := t.TempDir()
			_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"consumer","version":"1.0.0","private":true}`), 0o644)
			return dir
		}
		installed := func(dir, name string) string {
			b, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
			if err != nil {
				return ""
			}
			var pj struct{ Version string }
			_ = json.Unmarshal(b, &pj)
			return pj.Version
		}

		dir := project()
		if out, ok := client(t, dir, env, "npm", "install", "fw-clean"); !ok || installed(dir, "fw-clean") != "1.0.0" {
			t.Fatalf("npm install fw-clean:\n%s", out)
		}
		hits := u.HitsOf("/fw-clean")
		if out, ok := client(t, project(), env, "npm", "install", "--prefer-online", "fw-clean"); !ok {
			t.Fatalf("npm install fw-clean again:\n%s", out)
		}
		if u.HitsOf("/fw-clean") != hits {
			t.Errorf("the second install fetched the document from the upstream again (%d → %d requests): the cache did not serve it", hits, u.HitsOf("/fw-clean"))
		}
		// latest was the malicious 1.0.1: npm picks the clean 1.0.0.
		dir = project()
		if out, ok := client(t, dir, env, "npm", "install", "fw-evil"); !ok || installed(dir, "fw-evil") != "1.0.0" {
			t.Fatalf("npm install fw-evil (latest malicious) installed %q:\n%s", installed(dir, "fw-evil"), out)
		}
		// A lockfile that pins the malicious version: npm ci fails with the threat id.
		pinned := project()
		pinLockfile(t, pinned, "fw-evil", "1.0.1", d.base+fw+"/npm/fw-evil/-/fw-evil-1.0.1.tgz", u.Files["/fw-evil/-/fw-evil-1.0.1.tgz"].Body)
		out, ok := client(t, pinned, env, "npm", "ci")
		if ok || !strings.Contains(out, npmEvil) || !strings.Contains(out, "Blocked by threatd: npm fw-evil@1.0.1 is malicious") {
			t.Fatalf("npm ci with a lockfile pinning fw-evil@1.0.1 (ok=%v):\n%s", ok, out)
		}
		// npm audit on that lockfile lists it.
		out, ok = client(t, pinned, env, "npm", "audit", "--audit=true", "--package-lock-only")
		if ok || !strings.Contains(out, "fw-evil") || !strings.Contains(out, npmEvil) || !strings.Contains(out, "critical") || strings.Contains(out, "/threats/***") {
			t.Fatalf("npm audit (ok=%v):\n%s", ok, out)
		}
		// The link it prints opens the report's page.
		link := regexp.MustCompile(`https://\S+/threats/threat_id_[0-9a-f-]{36}`).FindString(out)
		if link == "" {
			t.Fatalf("npm audit prints no link to the report:\n%s", out)
		}
		if r := d.raw("GET", strings.TrimPrefix(link, d.base), ""); r.code != 200 || !strings.Contains(string(r.body), "fw-evil") {
			t.Fatalf("the link npm audit prints, %s: %d", link, r.code)
		}
		// Every version reported: npm fails, naming the report.
		out, ok = client(t, project(), env, "npm", "install", "fw-all")
		if ok || !strings.Contains(out, npmAll) {
			t.Fatalf("npm install fw-all (ok=%v):\n%s", ok, out)
		}
		// A private name is never blocked by a public report, and comes
		// from the private upstream, never the public decoy.
		dir = project()
		if out, ok := client(t, dir, env, "npm", "install", "@acme/internal"); !ok || installed(dir, "@acme/internal") != "1.0.0" {
			t.Fatalf("npm install @acme/internal:\n%s", out)
		}
	})

	t.Run("pip", func(t *testing.T) {
		pip := pipInstaller(t, in, d, tok)
		pyVersion := func(target, pkg string) string {
			b, _ := os.ReadFile(filepath.Join(target, pkg, "__init__.py"))
			return strings.TrimSpace(string(b))
		}
		if out, ok, target := pip("fw-clean-py"); !ok || pyVersion(target, "fw_clean_py") != `VERSION = "1.0.0"` {
			t.Fatalf("pip install fw-clean-py:\n%s", out)
		}
		if out, ok, target := pip("fw-evil-py"); !ok || pyVersion(target, "fw_evil_py") != `VERSION = "1.0.0"` {
			t.Fatalf("pip install fw-evil-py (1.0.1 malicious) installed %q:\n%s", pyVersion(target, "fw_evil_py"), out)
		}
		out, ok, _ := pip("fw-evil-py==1.0.1")
		if ok || !strings.Contains(out, pyEvil) || !strings.Contains(out, "403") {
			t.Fatalf("pip install fw-evil-py==1.0.1 (ok=%v):\n%s", ok, out)
		}
		// Over HTTP/1.1 (pip's protocol) the reason phrase is the refusal,
		// and the answer carries what every answer to a token carries.
		h1 := in.httpsClient()
		h1.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		req, _ := http.NewRequest("GET", d.base+fw+"/pypi/simple/fw-evil-py/fw_evil_py-1.0.1-py3-none-any.whl", nil)
		req.SetBasicAuth("__token__", tok)
		res, err := h1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.ProtoMajor != 1 || res.StatusCode != 403 || !strings.HasPrefix(res.Status, "403 Blocked by threatd: pypi fw-evil-py@1.0.1 is malicious") ||
			res.Header.Get("RateLimit-Limit") == "" || res.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(string(b), `"threat_ids":["`+pyEvil+`"]`) {
			t.Fatalf("HTTP/1.1 refusal: %s %v %s", res.Status, res.Header, b)
		}
		// PEP 691 JSON: the file of 1.0.1 is marked yanked with the refusal, links point back.
		code, _, body := d.fwGet(fw+"/pypi/simple/fw-evil-py/", tok, "Accept", "application/vnd.pypi.simple.v1+json")
		if code != 200 || !strings.Contains(string(body), `"url":"`+d.base+fw+"/pypi/simple/fw-evil-py/fw_evil_py-1.0.0-py3-none-any.whl") ||
			!strings.Contains(string(body), "Blocked by threatd: pypi fw-evil-py@1.0.1 is malicious") {
			t.Fatalf("project page: %d %s", code, body)
		}
	})

	t.Run("go", func(t *testing.T) {
		goBin := needTool(t, "go")
		env := goEnv(t, in, d, tok, t.TempDir(), d.base+fw+"/go")
		mod := func() string { return goModDir(t) }
		if out, ok := client(t, mod(), env, goBin, "get", "example.com/fwclean@v1.0.0"); !ok {
			t.Fatalf("go get example.com/fwclean@v1.0.0:\n%s", out)
		}
		out, ok := client(t, mod(), env, goBin, "list", "-m", "-versions", "example.com/fwevil")
		if !ok || strings.TrimSpace(out) != "example.com/fwevil v1.0.0" {
			t.Fatalf("go list -m -versions example.com/fwevil (ok=%v):\n%s", ok, out)
		}
		dir := mod()
		if out, ok := client(t, dir, env, goBin, "get", "example.com/fwevil@latest"); !ok || !strings.Contains(readFile(t, filepath.Join(dir, "go.mod")), "example.com/fwevil v1.0.0") {
			t.Fatalf("go get example.com/fwevil@latest:\n%s", out)
		}
		out, ok = client(t, mod(), env, goBin, "get", "example.com/fwevil@v1.0.1")
		if ok || !strings.Contains(out, goEvil) || !strings.Contains(out, "Blocked by threatd: go example.com/fwevil@v1.0.1 is malicious") {
			t.Fatalf("go get example.com/fwevil@v1.0.1 (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("withdrawal unblocks", func(t *testing.T) {
		in.mustCLI("review", "reject", npmEvil, "--note", "false positive")
		eventually(t, "fw-evil 1.0.1 unblocked", func() bool {
			code, _, _ := d.fwGet(fw+"/npm/fw-evil/-/fw-evil-1.0.1.tgz", tok)
			return code == 200
		})
		_, _, body := d.fwGet(fw+"/npm/fw-evil", tok)
		if !strings.Contains(string(body), `"latest":"1.0.1"`) {
			t.Fatalf("after the withdrawal latest is not 1.0.1 again: %s", body)
		}
	})

	t.Run("reporting", func(t *testing.T) {
		m := d.scrape()["threatd_firewall_blocks_total"]
		if m == nil || len(m.Metric) == 0 {
			t.Fatalf("no threatd_firewall_blocks_total in /metrics")
		}
		log := d.logText()
		if !strings.Contains(log, `"msg":"firewall blocked a package"`) || !strings.Contains(log, `"user":"dev@example.com"`) || !strings.Contains(log, npmAll) {
			t.Fatalf("no block logged with the user and the threat id:\n%s", log)
		}
		if strings.Contains(log, tok) {
			t.Fatal("the token is in the log")
		}
		// The admin page lists the blocks; a submitter may not see it.
		in.user("root@example.com", "--role", "admin")
		in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "root@example.com")
		in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "dev@example.com")
		admin := in.browser(d)
		admin.get("/login?next=/admin/firewall")
		admin.post("/login", url.Values{"email": {"root@example.com"}, "password": {"correct horse battery"}, "next": {"/admin/firewall"}}).
			expect(t, 200, "Firewall blocks", "dev@example.com", "fw-evil", "1.0.1", npmEvil, "fw-all", "every version", npmAll, "fw-evil-py", goEvil)
		dev := in.browser(d)
		dev.get("/login")
		dev.post("/login", url.Values{"email": {"dev@example.com"}, "password": {"correct horse battery"}, "next": {"/admin/firewall"}}).
			expect(t, 403, "for administrators")
	})

	t.Run("upstream down", func(t *testing.T) {
		u.Srv.Close()
		code, _, body := d.fwGet(fw+"/npm/fw-never-fetched", tok)
		if code != 502 || !strings.Contains(string(body), "did not answer") {
			t.Fatalf("upstream down: %d %s", code, body)
		}
	})
}

// TestFirewallPostgresTwoDaemons: on PostgreSQL, a verification made
// through one daemon blocks on the other within cache.freshness (and a
// withdrawal unblocks there), for the real npm command too.
func TestFirewallPostgresTwoDaemons(t *testing.T) {
	t.Parallel()
	u := fakeregistry.New(t)
	u.NPMPackage(t, "pg-evil", "1.0.1", "1.0.0", "1.0.1")
	u.GoModule(t, "example.com/pgevil", "v1.0.0", "v1.0.1")
	in := pgInstance(t, quiet+"  new_user_max_unverified: 0\n"+fwConfig(u))
	tok := in.user("pg@example.com")
	a, b := in.serve(), in.serve()
	fw := base + "/firewall"
	tarball := fw + "/npm/pg-evil/-/pg-evil-1.0.1.tgz"
	for _, d := range []*daemon{a, b} {
		if code, _, body := d.fwGet(tarball, tok); code != 200 {
			t.Fatalf("before any report: %d %s", code, body)
		}
	}
	id := a.submit(tok, `{"report_type":"package","resource_identifier":"pg-evil","registry":"npm","threat_description":"Steals credentials","version_info":"1.0.1"}`)
	goID := a.submit(tok, `{"report_type":"package","resource_identifier":"example.com/pgevil","registry":"go","threat_description":"Backdoor","version_info":"v1.0.1"}`)
	// Verified through daemon a's web of reviewers: here the CLI, a third process.
	in.mustCLI("review", "verify", id)
	in.mustCLI("review", "verify", goID)
	for _, d := range []*daemon{a, b} {
		eventually(t, "the verifications blocking on every daemon", func() bool {
			code, _, _ := d.fwGet(tarball, tok)
			goCode, _, _ := d.fwGet(fw+"/go/example.com/pgevil/@v/v1.0.1.info", tok)
			return code == 403 && goCode == 403
		})
		code, _, body := d.fwGet(fw+"/go/example.com/pgevil/@v/list", tok)
		if code != 200 || strings.TrimSpace(string(body)) != "v1.0.0" {
			t.Fatalf("go list on a daemon: %d %q", code, body)
		}
		code, hdr, body := d.fwGet(fw+"/go/example.com/pgevil/@v/v1.0.1.zip", tok)
		if code != 403 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") || !strings.Contains(string(body), goID) {
			t.Fatalf("go zip of the blocked version: %d %s %s", code, hdr.Get("Content-Type"), body)
		}
	}
	if _, err := exec.LookPath("npm"); err == nil {
		env := npmEnv(t, in, b, tok)
		dir := t.TempDir()
		pinLockfile(t, dir, "pg-evil", "1.0.1", b.base+tarball, u.Files["/pg-evil/-/pg-evil-1.0.1.tgz"].Body)
		if out, ok := client(t, dir, env, "npm", "ci"); ok || !strings.Contains(out, id) {
			t.Fatalf("npm ci through the second daemon (ok=%v):\n%s", ok, out)
		}
		in.mustCLI("review", "reject", id, "--note", "false positive")
		eventually(t, "the withdrawal unblocking", func() bool {
			code, _, _ := b.fwGet(tarball, tok)
			return code == 200
		})
		if out, ok := client(t, dir, env, "npm", "ci"); !ok {
			t.Fatalf("npm ci after the withdrawal:\n%s", out)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("npm is not installed (CI requires it)")
	}
}
