package scan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/versioning"
)

// keyMatcher answers like the index for a few reports: by canonical key,
// and version through core/versioning (or every version).
type keyMatcher map[string][]core.Threat

func (m keyMatcher) Matches(_ context.Context, keys []string, version string) ([]core.Threat, error) {
	var out []core.Threat
	for _, k := range keys {
		for _, t := range m[k] {
			if t.AllVersions || versioning.Matches(t.Registry, t.Details.VersionInfo, version) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func report(t *testing.T, id, registry, name, versions string, all bool) (string, core.Threat) {
	t.Helper()
	typ := core.TypePackage
	if registry == "" {
		typ = core.TypeContainer
	}
	key, err := core.CanonicalKey(typ, registry, name)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return key, core.Threat{ID: id, CanonicalKey: key, ReportType: typ, Registry: registry, ResourceIdentifier: name, AllVersions: all,
		VerifiedAt: &at, Details: core.Details{VersionInfo: versions, ThreatDescription: "Steals tokens from " + name, SeverityLevel: core.SeverityHigh}}
}

func testMatcher(t *testing.T) keyMatcher {
	m := keyMatcher{}
	for _, r := range []struct {
		id, registry, name, versions string
		all                          bool
	}{
		{"11111111-1111-4111-8111-111111111111", core.RegistryNPM, "evil-pkg", "1.0.1", false},
		{"22222222-2222-4222-8222-222222222222", core.RegistryPyPI, "evil-pkg", "", true},
		{"33333333-3333-4333-8333-333333333333", core.RegistryGo, "github.com/evil/pkg", "1.0.1", false},
		{"44444444-4444-4444-8444-444444444444", core.RegistryPackagist, "acme/evil", "1.0.1", false},
		{"55555555-5555-4555-8555-555555555555", core.RegistryPyPI, "django", "4.2.0", false},
		{"66666666-6666-4666-8666-666666666666", "", "evil/image:latest", "", false},
		{"77777777-7777-4777-8777-777777777777", core.RegistryCrates, "evil-crate", "0.1.2", false},
		{"88888888-8888-4888-8888-888888888888", core.RegistryRubyGems, "evil-gem", "1.0.1", false},
	} {
		k, th := report(t, r.id, r.registry, r.name, r.versions, r.all)
		m[k] = append(m[k], th)
	}
	return m
}

func parseFixture(t *testing.T, name string) File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	format, err := Detect(name, data, "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(name, data, format)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Every fixture's planted package is found at its line; versions of other
// reports, unpinned requirements of one-version reports and duplicates
// are not findings.
func TestCheckFindsPlantedPackages(t *testing.T) {
	m := testMatcher(t)
	want := map[string][]string{
		"package-lock-v3.json": {"evil-pkg@1.0.1:30"}, "package-lock-v1.json": {"evil-pkg@1.0.1:22"},
		"yarn-v1.lock": {"evil-pkg@1.0.1:12"}, "yarn-berry.lock": {"evil-pkg@1.0.1:17"},
		"pnpm-lock-v9.yaml": {"evil-pkg@1.0.1:23"}, "pnpm-lock-v5.yaml": {"evil-pkg@1.0.1:17"},
		// Django>=4.2 pins nothing: the 4.2.0 report does not make it malicious.
		"requirements.txt": {"evil_pkg@1.0.1:5"}, "poetry.lock": {"evil-pkg@1.0.1:13"},
		// Go's v1.0.1 matches the report's 1.0.1 (OSV writes Go versions without "v").
		"go.mod": {"github.com/evil/pkg@v1.0.1:7"}, "go.sum": {"github.com/evil/pkg@v1.0.1:1"},
		"Cargo.lock": {"evil-crate@0.1.2:5"}, "Gemfile.lock": {"evil-gem@1.0.1:10"},
		"composer.lock":      {"acme/evil@v1.0.1:7"},
		"bom-1.5.cdx.json":   {"evil-pkg@1.0.1:22", "evil-pkg@1.0.1:30", "evil/image:latest@:36"},
		"sbom-2.3.spdx.json": {"evil-pkg@1.0.1:12"},
	}
	for name, w := range want {
		res, err := Check(context.Background(), m, []File{parseFixture(t, name)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range res.Findings {
			got = append(got, f.Name+"@"+f.Version+":"+itoa(f.Line))
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: findings %v, want %v", name, got, w)
		}
	}
	// An unpinned requirement is malicious when a report names every version.
	f, err := Parse("requirements.txt", []byte("evil-pkg>=0.1\nDjango>=4\n"), Requirements)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := Check(context.Background(), m, []File{f})
	if len(res.Findings) != 1 || res.Findings[0].Name != "evil-pkg" || res.Packages != 2 {
		t.Fatalf("unpinned: %+v", res)
	}
	// A package listed twice is checked, and found, once.
	f, _ = Parse("go.sum", []byte("github.com/evil/pkg v1.0.1 h1:A=\ngithub.com/evil/pkg v1.0.1 h1:A=\n"), GoSum)
	res, _ = Check(context.Background(), m, []File{f})
	if len(res.Findings) != 1 || res.Packages != 1 || res.Findings[0].Line != 1 {
		t.Fatalf("duplicates: %+v", res)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Formats that are not recognised, and files that are not what they say,
// are errors that name the problem and the line.
func TestUnreadableFiles(t *testing.T) {
	if _, err := Detect("notes.txt", []byte("hello world\n"), ""); err == nil || !strings.Contains(err.Error(), `"notes.txt"`) || !strings.Contains(err.Error(), "package-lock.json") {
		t.Fatalf("unknown format: %v", err)
	}
	if _, err := Detect("x", []byte("{}"), "maven"); err == nil || !strings.Contains(err.Error(), `format "maven" is not one scan reads`) {
		t.Fatalf("unknown hint: %v", err)
	}
	if f, err := Detect("", []byte("{}"), "application/vnd.cyclonedx+json"); err != nil || f != CycloneDX {
		t.Fatalf("media type: %v %v", f, err)
	}
	for _, tc := range []struct {
		format Format
		data   string
		want   string
	}{
		{NPMLock, "{\n  \"lockfileVersion\": 3,\n  \"packages\": {\n    \"node_modules/a\": {\"version\": 1}\n  }\n}", "line 4"},
		{NPMLock, "{\n  \"lockfileVersion\": 3,\n  \"packages\": {,}\n}", "line 3"},
		{NPMLock, `{"lockfileVersion": 9, "packages": {}}`, "lockfileVersion 9"},
		{NPMLock, `{"name": "x"}`, "no lockfileVersion"},
		{YarnLock, "a@1:\n  version \"1\"\nnot a header\n", "line 3"},
		{PNPMLock, "packages: [1", "yaml"},
		{GoSum, "github.com/a/b v1.0.0\n", "line 1"},
		{GoMod, "module x\nrequire (\n  bad\n)\n", "go.mod:3"},
		{CycloneDX, `{"bomFormat": "SPDX", "specVersion": "1.5"}`, "bomFormat"},
		{SPDX, `{"spdxVersion": "SPDX-3.0"}`, ""},
		{ComposerLock, `{"content-hash": "x"}`, "no packages"},
		{GemfileLock, "    rack (1.0)\n", "no GEM"},
	} {
		_, err := Parse("f", []byte(tc.data), tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f is not a valid "+string(tc.format)) {
			t.Errorf("%s %q: %v, want an error with %q", tc.format, tc.data, err, tc.want)
		}
	}
}

// The SARIF log has one rule per threat id, results at the package's
// line, and fingerprints that do not move with the line.
func TestSARIF(t *testing.T) {
	m := testMatcher(t)
	readBack := false
	run := func(lockfile string) map[string]any {
		f, err := Parse("app/go.sum", []byte(lockfile), GoSum)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Check(context.Background(), m, []File{f})
		if err != nil {
			t.Fatal(err)
		}
		a := res.Answer(core.Principal{}, "https://threatd.test:8443", nil)
		if readBack {
			// As threatd scan --server has it: the answer read from JSON.
			raw, _ := json.Marshal(a)
			a = Answer{}
			if err := json.Unmarshal(raw, &a); err != nil {
				t.Fatal(err)
			}
		}
		log, err := a.SARIF("v1.2.3", "https://threatd.test:8443")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := log.Write(&buf); err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	a := run("github.com/evil/pkg v1.0.1 h1:A=\n")
	b := run("golang.org/x/text v0.14.0 h1:D=\n\ngithub.com/evil/pkg v1.0.1 h1:A=\n")
	get := func(doc map[string]any, path ...any) any {
		var v any = doc
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v
	}
	id := "33333333-3333-4333-8333-333333333333"
	if get(a, "version") != "2.1.0" || get(a, "runs", 0, "tool", "driver", "rules", 0, "id") != id ||
		get(a, "runs", 0, "results", 0, "ruleId") != id ||
		get(a, "runs", 0, "results", 0, "locations", 0, "physicalLocation", "artifactLocation", "uri") != "app/go.sum" ||
		get(a, "runs", 0, "results", 0, "locations", 0, "physicalLocation", "region", "startLine") != 1.0 ||
		get(b, "runs", 0, "results", 0, "locations", 0, "physicalLocation", "region", "startLine") != 3.0 ||
		get(a, "runs", 0, "tool", "driver", "rules", 0, "helpUri") != "https://threatd.test:8443/threats/"+id ||
		get(a, "runs", 0, "tool", "driver", "rules", 0, "properties", "security-severity") != "8.0" {
		t.Fatalf("SARIF: %v", a)
	}
	fa := get(a, "runs", 0, "results", 0, "partialFingerprints", FingerprintKey)
	if fa == nil || fa != get(b, "runs", 0, "results", 0, "partialFingerprints", FingerprintKey) {
		t.Fatalf("fingerprints moved with the line: %v %v", fa, get(b, "runs", 0, "results", 0, "partialFingerprints"))
	}
	readBack = true
	if c := run("github.com/evil/pkg v1.0.1 h1:A=\n"); fmt.Sprint(get(c, "runs", 0, "tool")) != fmt.Sprint(get(a, "runs", 0, "tool")) {
		t.Fatalf("the rules of an answer read back from JSON differ:\n%v\n%v", get(c, "runs", 0, "tool"), get(a, "runs", 0, "tool"))
	}
	clean := run("golang.org/x/text v0.14.0 h1:D=\n")
	if r, ok := get(clean, "runs", 0, "results").([]any); !ok || len(r) != 0 {
		t.Fatalf("a clean log's results must be []: %v", get(clean, "runs", 0))
	}
}

// Hostile input never panics a parser, and whatever is read has a line
// inside the file.
func FuzzParse(f *testing.F) {
	entries, _ := os.ReadDir("testdata")
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join("testdata", e.Name()))
		f.Add(e.Name(), data)
	}
	f.Add("package-lock.json", []byte(`{"lockfileVersion":2,"packages":{"node_modules/\u0061":{"version":"1"}}}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		format, err := Detect(name, data, "")
		if err != nil {
			return
		}
		file, err := Parse(name, data, format)
		if err != nil {
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, p := range file.Packages {
			if p.Line < 0 || p.Line > lines {
				t.Fatalf("%s: line %d of %d", p.Name, p.Line, lines)
			}
		}
	})
}

// A lockfile nested as deep as JSON allows is read whole, with its lines,
// and the line index stays linear in the file (one node per package).
func TestDeepNesting(t *testing.T) {
	const depth = 4000
	var b strings.Builder
	b.WriteString(`{"lockfileVersion": 1, "dependencies": {`)
	for i := range depth {
		fmt.Fprintf(&b, "\n\"p%d\": {\"version\": \"1.0.%d\", \"dependencies\": {", i, i)
	}
	b.WriteString("}")
	for range depth {
		b.WriteString("}}")
	}
	b.WriteString("}")
	data := []byte(b.String())
	f, err := Parse("package-lock.json", data, NPMLock)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Packages) != depth || f.Packages[depth-1].Line != depth+1 || f.Packages[0].Line != 2 {
		t.Fatalf("%d packages, last at line %d", len(f.Packages), f.Packages[len(f.Packages)-1].Line)
	}
	if n := len(objectLines(data).nodes); n != 2*depth+1 {
		t.Fatalf("%d nodes recorded for %d packages", n, depth)
	}
}

// Text output never passes a file's control characters to the terminal.
func TestTextIsPrintable(t *testing.T) {
	a := Answer{Skipped: []FileSkipped{{File: "yarn.lock", Skipped: Skipped{Name: "x\x1b]0;pwned\x07\u202e", Line: 3, Reason: "r"}}}}
	var b bytes.Buffer
	if err := a.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, "x<U+001B>]0;pwned<U+0007><U+202E>") {
		t.Fatalf("%q", got)
	}
}
