package analysis

import (
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	env := Finding{Rule: "env", Severity: SeverityHigh, File: "index.js", Line: 3}
	script := Finding{Rule: "install_script", Severity: SeverityMedium, File: "package.json", Line: 1}
	crit := Finding{Rule: "shell", Severity: SeverityCritical, File: "setup.sh", Line: 1}

	// No previous version: every finding is new; a high one is suspicious.
	r := Judge([]Finding{script, env}, nil, false, SeverityHigh)
	if r.Verdict != VerdictSuspicious || !r.Findings[0].New || r.Findings[0].Rule != "env" || r.Strongest() != "env in index.js:3" {
		t.Fatalf("first version: %+v", r)
	}
	// The previous version had the same rule in the same file: not new,
	// not suspicious, and it weighs a fifth.
	r = Judge([]Finding{env}, []Finding{env}, true, SeverityHigh)
	if r.Verdict != VerdictClean || r.Findings[0].New || r.Score != 0.8 {
		t.Fatalf("an old finding: %+v", r)
	}
	// The same rule in another file is new.
	moved := env
	moved.File = "lib/other.js"
	if r = Judge([]Finding{moved}, []Finding{env}, true, SeverityHigh); r.Verdict != VerdictSuspicious || !r.Findings[0].New {
		t.Fatalf("a rule in a new file: %+v", r)
	}
	// Below the threshold is clean; at a lower threshold suspicious.
	if r = Judge([]Finding{script}, nil, false, SeverityHigh); r.Verdict != VerdictClean {
		t.Fatalf("medium at high: %+v", r)
	}
	if r = Judge([]Finding{script}, nil, false, SeverityMedium); r.Verdict != VerdictSuspicious {
		t.Fatalf("medium at medium: %+v", r)
	}
	// Strongest first, new before old; the score is capped at 10.
	r = Judge([]Finding{script, env, crit}, []Finding{env}, true, SeverityHigh)
	if r.Findings[0].Rule != "shell" || r.Findings[1].Rule != "install_script" || r.Findings[2].Rule != "env" || r.Score != 7+1.5+0.8 {
		t.Fatalf("order and score: %+v (%.1f)", r.Findings, r.Score)
	}
	many := []Finding{crit, {Rule: "a", Severity: SeverityCritical}, {Rule: "b", Severity: SeverityCritical}}
	if r = Judge(many, nil, false, SeverityHigh); r.Score != 10 {
		t.Fatalf("score %.1f, want 10", r.Score)
	}
	// An excerpt is bounded and on one line.
	long := Finding{Rule: "x", Severity: SeverityLow, Excerpt: strings.Repeat("é\n", 300)}
	if e := Judge([]Finding{long}, nil, false, SeverityHigh).Findings[0].Excerpt; len([]rune(e)) != MaxExcerpt || strings.Contains(e, "\n") {
		t.Fatalf("excerpt of %d runes: %q", len([]rune(e)), e)
	}
}

func TestParseSeverity(t *testing.T) {
	t.Parallel()
	if s, err := ParseSeverity(" High "); err != nil || s != SeverityHigh {
		t.Fatalf("%q %v", s, err)
	}
	if _, err := ParseSeverity("severe"); err == nil || !strings.Contains(err.Error(), "critical, high, medium, low, info") {
		t.Fatalf("unknown: %v", err)
	}
}

func TestEcosystemOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"a-1.0.0.tgz": "npm", "a-1.0-py3-none-any.whl": "pypi", "a-1.0.tar.gz": "pypi", "a-1.0.gem": "rubygems",
		"a-1.0.crate": "crates.io", "v1.0.0.zip": "go", "a.vsix": "vscode", "a.bin": ""} {
		if got := EcosystemOf(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
