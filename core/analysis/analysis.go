// Package analysis is package analysis (docs/analysis.md): what an analyzer
// is asked and answers, and how its findings become a verdict. Analyzers
// are plugins (threatd-analyzer-<name>): they read an archive and return
// findings; this package compares them with the previous version's,
// marks what is new, and judges the version clean or suspicious. It never
// reads an archive itself.
package analysis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Severity of a finding, from info to critical.
type Severity string

const (
	SeverityInfo     Severity = "info"
	SeverityLow      Severity = "low"
	SeverityMedium   Severity = "medium"
	SeverityHigh     Severity = "high"
	SeverityCritical Severity = "critical"
)

// severityRank orders the severities; an unknown one ranks as info.
var severityRank = map[Severity]int{SeverityInfo: 0, SeverityLow: 1, SeverityMedium: 2, SeverityHigh: 3, SeverityCritical: 4}

// Rank is s's place from info (0) to critical (4).
func (s Severity) Rank() int { return severityRank[s] }

// ParseSeverity reads a severity name (analysis.report_severity, a rule's
// meta); an unknown name is an error naming the known ones.
func ParseSeverity(s string) (Severity, error) {
	v := Severity(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := severityRank[v]; !ok {
		return "", fmt.Errorf("unknown severity %q: one of critical, high, medium, low, info", s)
	}
	return v, nil
}

// MaxExcerpt bounds a finding's excerpt, in characters.
const MaxExcerpt = 200

// Finding is one thing an analyzer saw in one file of an archive.
type Finding struct {
	// Rule names what was seen: a YARA rule's name, or one of the
	// manifest rules (install_script, setup_py, gem_extension, build_rs).
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// File is the path inside the archive; a file inside a nested
	// archive is "outer.tgz!inner/file.js".
	File string `json:"file"`
	// Line is the 1-based line of the first match (0: not a text line).
	Line        int    `json:"line"`
	Excerpt     string `json:"excerpt"`
	Description string `json:"description"`
	// New is true when the previous version has no finding of this rule
	// in this file (always true for a version with no previous one).
	New bool `json:"new"`
}

// Where is the finding's file and line: "index.js:3" ("index.js" when it
// is not a text line).
func (f Finding) Where() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}

// Verdicts.
const (
	VerdictClean      = "clean"
	VerdictSuspicious = "suspicious"
	VerdictError      = "error"
)

// Target is the archive an analyzer reads: what it is of, and where.
type Target struct {
	Ecosystem, Name, Version string
	// Digest is the archive's sha256, hex.
	Digest string
	// Path is a local file holding the archive.
	Path string
}

// Limits bound one analysis (analysis.max_*).
type Limits struct {
	MaxArchiveBytes  int64
	MaxFiles         int
	MaxFileBytes     int64
	MaxUnpackedBytes int64
}

// DefaultLimits are the documented defaults.
var DefaultLimits = Limits{MaxArchiveBytes: 256 << 20, MaxFiles: 100_000, MaxFileBytes: 32 << 20, MaxUnpackedBytes: 1 << 30}

// Result is an analysis of one version.
type Result struct {
	Verdict string `json:"verdict"`
	// Score is 0 (nothing of note) to 10 (critical findings new in this
	// version).
	Score    float64   `json:"score"`
	Findings []Finding `json:"findings"`
	// Reason says why the verdict is error.
	Reason    string   `json:"reason,omitempty"`
	Analyzers []string `json:"analyzers"`
}

// Judge compares the findings of a version with those of its previous
// version (hasPrevious false: there is none), marks the new ones, and
// gives the verdict: suspicious when a new finding is at or above
// threshold. The findings come back strongest first.
func Judge(findings, previous []Finding, hasPrevious bool, threshold Severity) Result {
	seen := map[[2]string]bool{}
	for _, f := range previous {
		seen[[2]string{f.Rule, f.File}] = true
	}
	out := make([]Finding, len(findings))
	for i, f := range findings {
		f.New = !hasPrevious || !seen[[2]string{f.Rule, f.File}]
		if len(f.Excerpt) > MaxExcerpt {
			f.Excerpt = Excerpt(f.Excerpt)
		}
		out[i] = f
	}
	SortFindings(out)
	r := Result{Verdict: VerdictClean, Findings: out}
	for _, f := range out {
		if f.New && f.Severity.Rank() >= threshold.Rank() {
			r.Verdict = VerdictSuspicious
		}
	}
	r.Score = Score(out)
	return r
}

// SortFindings orders findings strongest first: new before old, then by
// severity, rule, file and line.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if a.New != b.New {
			if a.New {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
}

// severityWeight is what a new finding of each severity adds to the
// score (a finding the previous version had adds a fifth of it).
var severityWeight = map[Severity]float64{SeverityInfo: 0, SeverityLow: 0.5, SeverityMedium: 1.5, SeverityHigh: 4, SeverityCritical: 7}

// Score sums the weights of the distinct rules found (each rule counts
// once, at its strongest finding), capped at 10.
func Score(fs []Finding) float64 {
	best := map[string]float64{}
	for _, f := range fs {
		w := severityWeight[f.Severity]
		if !f.New {
			w /= 5
		}
		best[f.Rule] = max(best[f.Rule], w)
	}
	s := 0.0
	for _, w := range best {
		s += w
	}
	return min(10, float64(int(s*10+0.5))/10)
}

// Strongest describes the strongest finding for a refusal or a report's
// description, e.g. "npm_exfil_env in index.js:3".
func (r Result) Strongest() string {
	if len(r.Findings) == 0 {
		return ""
	}
	return r.Findings[0].Rule + " in " + r.Findings[0].Where()
}

// Excerpt is s shortened to MaxExcerpt characters (runes), on one line.
func Excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= MaxExcerpt {
		return s
	}
	return string(r[:MaxExcerpt-1]) + "…"
}

// Read is what an analyzer read of one archive.
type Read struct {
	Findings []Finding
	// Refused says why the archive could not be read whole (over a limit,
	// unreadable, truncated): the verdict is then error.
	Refused string
	// Files and Bytes are the files read and their unpacked bytes.
	Files int
	Bytes int64
}

// Analyzer reads an archive (an analyzer plugin, threatd-analyzer-<name>).
// settings are the analysis settings an analyzer may use (rules_dir).
type Analyzer interface {
	Analyze(ctx context.Context, t Target, l Limits, settings map[string]string) (Read, error)
}
