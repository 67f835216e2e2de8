package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
)

// writeTree writes u's files under prefix into dir, as a static server
// serves them: a path ending in / is its directory's index.html.
func writeTree(u *fakeregistry.Registry, t *testing.T, dir, prefix string) {
	t.Helper()
	u.Mu.Lock()
	defer u.Mu.Unlock()
	for p, f := range u.Files {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		name := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			name = filepath.Join(name, "index.html")
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, f.Body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pythonHTTPServer serves dir with `python3 -m http.server` on 127.0.0.1
// and returns its base URL: the static index the PyPI bypass was found
// with.
func pythonHTTPServer(t *testing.T, dir string) string {
	t.Helper()
	python := needTool(t, "python3")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", dir, "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`port (\d+)`).FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p
	case <-time.After(20 * time.Second):
		t.Fatal("python3 -m http.server did not start")
	}
	return ""
}

// TestFirewallBypasses: each way through the firewall that was found when
// it was attacked is closed, shown with the real clients where one
// applies: pip against a static http.server index, go against a static
// file-server GOPROXY, npm with a lockfile whose resolved URL is crafted
// against an upstream that normalises paths; plus version spellings,
// private names without a private upstream, links and redirects to other
// hosts, and the upstream's headers.
func TestFirewallBypasses(t *testing.T) {
	t.Parallel()
	// npm: an upstream that resolves paths as static servers do.
	u := fakeregistry.New(t)
	u.Normalize = true
	u.NPMPackage(t, "atk-evil", "1.0.1", "1.0.0", "1.0.1")
	u.NPMPackage(t, "atk-good", "1.0.0", "1.0.0")
	u.NPMPackage(t, "@acme/internal", "9.9.9", "9.9.9") // a public decoy
	// An internal service the upstream's documents point at.
	var internalHits atomic.Int64
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		fmt.Fprint(w, "INTERNAL SECRET")
	}))
	t.Cleanup(internal.Close)
	ssrfDoc, _ := json.Marshal(map[string]any{"name": "atk-ssrf", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{"name": "atk-ssrf", "version": "1.0.0", "dist": map[string]any{"tarball": internal.URL + "/atk-ssrf/-/atk-ssrf-1.0.0.tgz"}}}})
	u.Put("/atk-ssrf", "application/json", 300, ssrfDoc)
	u.NPMPackage(t, "atk-redirect", "1.0.0", "1.0.0")
	u.Mu.Lock()
	u.Files["/atk-redirect/-/atk-redirect-1.0.0.tgz"] = fakeregistry.File{Status: http.StatusFound, Header: map[string]string{"Location": internal.URL + "/secret"}}
	// A tarball served as a web page, with a redirect header.
	f := u.Files["/atk-good/-/atk-good-1.0.0.tgz"]
	f.ContentType, f.Header = "text/html", map[string]string{"Location": internal.URL + "/elsewhere"}
	u.Files["/atk-good/-/atk-good-1.0.0.tgz"] = f
	u.Mu.Unlock()

	// PyPI: a static index served by python3 -m http.server.
	py := fakeregistry.New(t)
	py.PyPIProject(t, "atk-evil-py", "1.0.0", "1.0.1")
	py.PyPIProject(t, "pyver", "1.0.0", "1.0.1.0") // pip's ==1.0.1 selects 1.0.1.0
	pyDir := t.TempDir()
	writeTree(py, t, pyDir, "/")
	pyBase := pythonHTTPServer(t, pyDir)

	// Go: a static module proxy served by http.FileServer, with a sumdb
	// directory beside the modules.
	gm := fakeregistry.New(t)
	gm.GoModule(t, "example.com/atkevil", "v1.0.0", "v1.0.1")
	gm.GoModule(t, "example.com/incompat", "v1.0.0", "v2.0.0+incompatible")
	gm.Put("/sumdb/sum.golang.org/supported", "text/plain", 60, nil)
	goDir := t.TempDir()
	writeTree(gm, t, goDir, "/")
	goSrv := httptest.NewServer(http.FileServer(http.Dir(goDir)))
	t.Cleanup(goSrv.Close)

	// Static upstreams give no publish times (no PEP 691 page, hand-made
	// documents): these tests are about bypasses, so versions without a
	// time are let through (quarantine.missing_time: allow).
	conf := fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n  pypi:\n    upstream: %q\n  go:\n    upstream: %q\n  private:\n    npm: [\"@acme/*\"]\n  quarantine:\n    missing_time: allow\n",
		u.Srv.URL, pyBase+"/simple", goSrv.URL)
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n"+conf)
	tok := in.user("attacker@example.com")
	d := in.serve()
	fw := base + "/firewall"
	npmEvil := fwReport(t, in, d, tok, "npm", "atk-evil", "v1.0.1") // npm's v1.0.1 is 1.0.1
	pyEvil := fwReport(t, in, d, tok, "pypi", "atk-evil-py", "1.0.1")
	pyVer := fwReport(t, in, d, tok, "pypi", "pyver", "1.0.1")
	goEvil := fwReport(t, in, d, tok, "go", "example.com/atkevil", "1.0.1")
	goIncompat := fwReport(t, in, d, tok, "go", "example.com/incompat", "2.0.0")
	eventually(t, "the reports in the index", func() bool {
		code, _, _ := d.fwGet(fw+"/go/example.com/incompat/@v/v2.0.0+incompatible.info", tok)
		return code == 403
	})

	t.Run("pip: a name the firewall cannot judge is refused", func(t *testing.T) {
		for _, p := range []string{"/pypi/simple/atk-evil-py%3F/", "/pypi/simple/atk-evil-py%3F/atk_evil_py-1.0.1-py3-none-any.whl",
			"/pypi/simple/atk-evil-py%23/atk_evil_py-1.0.1-py3-none-any.whl", "/pypi/simple/%2e%2e/atk_evil_py-1.0.1-py3-none-any.whl"} {
			code, _, body := d.fwGet(fw+p, tok)
			if code != 400 || !strings.Contains(string(body), "cannot judge") {
				t.Errorf("GET %s: %d %.300s, want 400 naming what cannot be judged", p, code, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/pypi/simple/%2e%2e/files/atk_evil_py-1.0.1-py3-none-any.whl", tok); code == 200 {
			t.Errorf("a path of no known shape: 200 %.100q", body)
		}
		python := needTool(t, "python3")
		host := strings.TrimPrefix(d.base, "https://")
		creds := "https://__token__:" + tok + "@" + host + fw + "/pypi/simple/"
		pip := func(args ...string) (string, bool, string) {
			dest := t.TempDir()
			out, ok := client(t, dest, pipEnv, python, append([]string{"-m", "pip", "download", "--no-deps", "--isolated", "-d", dest, "--cert", in.certFile()}, args...)...)
			return out, ok, dest
		}
		wheels := func(dir string) []string {
			m, _ := filepath.Glob(filepath.Join(dir, "*.whl"))
			return m
		}
		// The page of a name with ? (the upstream would have answered
		// for atk-evil-py): pip finds nothing there, never the wheel.
		out, ok, dest := pip("--no-index", "--find-links", creds+"atk-evil-py%3F/", "atk-evil-py==1.0.1")
		if ok || len(wheels(dest)) > 0 {
			t.Fatalf("pip download through atk-evil-py%%3F (ok=%v, %v):\n%s", ok, wheels(dest), out)
		}
		out, ok, dest = pip("--index-url", creds, "atk-evil-py==1.0.1")
		if ok || len(wheels(dest)) > 0 || !strings.Contains(out, pyEvil) {
			t.Fatalf("pip download atk-evil-py==1.0.1 (ok=%v):\n%s", ok, out)
		}
		if out, ok, dest = pip("--index-url", creds, "atk-evil-py"); !ok || len(wheels(dest)) != 1 || !strings.Contains(wheels(dest)[0], "1.0.0") {
			t.Fatalf("pip download atk-evil-py (the clean 1.0.0): %v\n%s", wheels(dest), out)
		}
		// pip's ==1.0.1 selects 1.0.1.0 (PEP 440): the report of 1.0.1 refuses it.
		out, ok, dest = pip("--index-url", creds, "pyver==1.0.1")
		if ok || len(wheels(dest)) > 0 || !strings.Contains(out, pyVer) {
			t.Fatalf("pip download pyver==1.0.1 with only 1.0.1.0 upstream (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("go: a path the upstream would resolve elsewhere is refused", func(t *testing.T) {
		for _, p := range []string{"/go/sumdb/%2e%2e/example.com/atkevil/@v/v1.0.1.zip", "/go/sumdb/%2e%2e/example.com/atkevil/@v/list",
			"/go/sumdb/..%2fexample.com%2fatkevil%2f@v%2fv1.0.1.zip", "/go/example.com/incompat/@v/..%2f..%2fatkevil%2f@v%2fv1.0.1.zip"} {
			code, hdr, body := d.fwGet(fw+p, tok)
			if code == 200 || strings.Contains(string(body), "v1.0.1") && code == 200 {
				t.Errorf("GET %s: %d %s %.200q: the upstream's resolution served", p, code, hdr.Get("Content-Type"), body)
			}
			if strings.Contains(p, "sumdb") && (code != 400 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain")) {
				t.Errorf("GET %s: %d %s, want 400 text/plain", p, code, hdr.Get("Content-Type"))
			}
		}
		goBin := needTool(t, "go")
		home := t.TempDir()
		env := func(proxy string) []string { return goEnv(t, in, d, tok, home, proxy) }
		mod := func() string { return goModDir(t) }
		// GOPROXY set to a path that climbs out of /sumdb/ (the go command
		// resolves the dot segments itself; either way nothing is served).
		out, ok := client(t, mod(), env(d.base+fw+"/go/sumdb/%2e%2e"), goBin, "mod", "download", "-json", "example.com/atkevil@v1.0.1")
		if ok || strings.Contains(out, `"Zip"`) || !strings.Contains(out, "Blocked by threatd") && !strings.Contains(out, "cannot judge") {
			t.Fatalf("go mod download through a GOPROXY with %%2e%%2e (ok=%v):\n%s", ok, out)
		}
		if _, err := os.Stat(filepath.Join(home, "mod", "cache", "download", "example.com", "atkevil", "@v", "v1.0.1.zip")); err == nil {
			t.Fatal("the blocked zip reached the module cache")
		}
		proxy := env(d.base + fw + "/go")
		out, ok = client(t, mod(), proxy, goBin, "list", "-m", "-versions", "example.com/atkevil")
		if !ok || strings.TrimSpace(out) != "example.com/atkevil v1.0.0" {
			t.Fatalf("go list -m -versions example.com/atkevil (ok=%v):\n%s", ok, out)
		}
		out, ok = client(t, mod(), proxy, goBin, "get", "example.com/atkevil@v1.0.1")
		if ok || !strings.Contains(out, goEvil) {
			t.Fatalf("go get example.com/atkevil@v1.0.1 (ok=%v):\n%s", ok, out)
		}
		// A report of Go 2.0.0 blocks v2.0.0+incompatible.
		out, ok = client(t, mod(), proxy, goBin, "get", "example.com/incompat@v2.0.0+incompatible")
		if ok || !strings.Contains(out, goIncompat) || !strings.Contains(out, "Blocked by threatd") {
			t.Fatalf("go get example.com/incompat@v2.0.0+incompatible (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("npm: a lockfile's resolved URL crafted to climb out", func(t *testing.T) {
		for _, p := range []string{"/npm/-/%2e%2e/atk-evil/-/atk-evil-1.0.1.tgz", "/npm/-/..%2fatk-evil%2f-%2fatk-evil-1.0.1.tgz",
			"/npm/-/..;/atk-evil/-/atk-evil-1.0.1.tgz", "/npm/atk-good/-/..%2f..%2fatk-evil%2f-%2fatk-evil-1.0.1.tgz", "/npm/%2e%2e/atk-evil/-/atk-evil-1.0.1.tgz"} {
			code, _, body := d.fwGet(fw+p, tok)
			if code == 200 {
				t.Errorf("GET %s: 200 %.100q: served", p, body)
			}
		}
		if code, _, body := d.fwGet(fw+"/npm/atk-evil/-/atk-evil-1.0.1.tgz", tok); code != 403 || !strings.Contains(string(body), npmEvil) {
			t.Fatalf("atk-evil 1.0.1 (reported as v1.0.1): %d %s", code, body)
		}
		needTool(t, "npm")
		npmenv := npmEnv(t, in, d, tok)
		dir := t.TempDir()
		// (npm resolves %2e%2e itself; an encoded slash it sends as it is.)
		pinLockfile(t, dir, "atk-evil", "1.0.1", d.base+fw+"/npm/-/..%2fatk-evil%2f-%2fatk-evil-1.0.1.tgz", u.Files["/atk-evil/-/atk-evil-1.0.1.tgz"].Body)
		out, ok := client(t, dir, npmenv, "npm", "ci")
		if ok || !strings.Contains(out, "cannot judge") {
			t.Fatalf("npm ci with a crafted resolved URL (ok=%v):\n%s", ok, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "atk-evil", "package.json")); err == nil {
			t.Fatal("the blocked tarball was installed")
		}
	})

	t.Run("private names need a private upstream", func(t *testing.T) {
		code, _, body := d.fwGet(fw+"/npm/@acme%2finternal", tok)
		if code != 404 || !strings.Contains(string(body), "firewall.npm.private_upstream is not set") {
			t.Fatalf("a private name without a private upstream: %d %s", code, body)
		}
		if code, _, _ := d.fwGet(fw+"/npm/@acme/internal/-/internal-9.9.9.tgz", tok); code != 404 {
			t.Fatalf("the public decoy's tarball: %d, want 404", code)
		}
		needTool(t, "npm")
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"consumer","version":"1.0.0","private":true}`), 0o644)
		out, ok := client(t, dir, npmEnv(t, in, d, tok), "npm", "install", "@acme/internal")
		if ok || !strings.Contains(out, "private_upstream") {
			t.Fatalf("npm install @acme/internal with no private upstream (ok=%v):\n%s", ok, out)
		}
	})

	t.Run("documents and redirects cannot send the firewall elsewhere", func(t *testing.T) {
		code, _, body := d.fwGet(fw+"/npm/atk-ssrf/-/atk-ssrf-1.0.0.tgz", tok)
		if code != 502 || strings.Contains(string(body), "INTERNAL") || !strings.Contains(string(body), "does not fetch from") {
			t.Fatalf("a tarball on another host: %d %s", code, body)
		}
		code, _, body = d.fwGet(fw+"/npm/atk-redirect/-/atk-redirect-1.0.0.tgz", tok)
		if code != 502 || strings.Contains(string(body), "INTERNAL") {
			t.Fatalf("a redirect to another host: %d %s", code, body)
		}
		if n := internalHits.Load(); n != 0 {
			t.Fatalf("the internal service was asked %d times", n)
		}
	})

	t.Run("the upstream's type and Location never reach the client", func(t *testing.T) {
		code, hdr, body := d.fwGet(fw+"/npm/atk-good/-/atk-good-1.0.0.tgz", tok)
		if code != 200 || hdr.Get("Content-Type") != "application/octet-stream" || hdr.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(hdr.Get("Content-Security-Policy"), "sandbox") || hdr.Get("Location") != "" || len(body) == 0 {
			t.Fatalf("a tarball the upstream served as text/html with a Location: %d %v", code, hdr)
		}
		if internalHits.Load() != 0 {
			t.Fatal("the Location was followed")
		}
	})
}
