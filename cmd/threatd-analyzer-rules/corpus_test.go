package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/plugins/rules"
)

// corpusCase is one case of testdata/corpus.
type corpusCase struct{ label, ecosystem, name, dir string }

func corpus(t *testing.T) []corpusCase {
	t.Helper()
	var out []corpusCase
	dirs, err := filepath.Glob("testdata/corpus/*/*/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, d := range dirs {
		parts := strings.Split(filepath.ToSlash(d), "/")
		out = append(out, corpusCase{label: parts[2], ecosystem: parts[3], name: parts[4], dir: d})
	}
	return out
}

// analyse runs the analyzer as the daemon's request would, and judges.
func analyse(t *testing.T, a *rulesAnalyzer, ecosystem, archive, previous string) analysis.Result {
	t.Helper()
	req := analysis.Request{Target: analysis.Target{Ecosystem: ecosystem, Path: archive}, Limits: analysis.DefaultLimits, Threshold: analysis.SeverityHigh}
	if previous != "" {
		req.Previous = &analysis.Target{Ecosystem: ecosystem, Path: previous}
	}
	res, err := analysis.Run(context.Background(), []analysis.Named{{Name: "rules", Analyzer: a}}, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type rulesAnalyzer = rules.Analyzer

// TestCorpus: every malicious case (inert samples written from published
// incidents, CASE.txt names each) is suspicious, with a new finding at or
// above high; every benign one (the usual traps: native builds, binary
// and browser downloaders at install, compilers, HTTP clients, update
// checkers) is clean.
func TestCorpus(t *testing.T) {
	t.Parallel()
	a := newAnalyzer()
	cases := corpus(t)
	for _, c := range cases {
		t.Run(c.label+"/"+c.ecosystem+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			archive := pack(t, c.ecosystem, c.name, caseFiles(t, c.dir))
			res := analyse(t, a, c.ecosystem, archive, "")
			want := analysis.VerdictClean
			if c.label == "malicious" {
				want = analysis.VerdictSuspicious
			}
			if res.Verdict != want {
				t.Errorf("%s: %s (score %.1f), want %s; findings %+v", c.dir, res.Verdict, res.Score, want, res.Findings)
			}
			for _, f := range res.Findings {
				t.Logf("%s %s %s:%d %q", f.Severity, f.Rule, f.File, f.Line, f.Excerpt)
			}
		})
	}
}
