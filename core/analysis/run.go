package analysis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// Named is an analyzer with its name (analysis.analyzers).
type Named struct {
	Name     string
	Analyzer Analyzer
}

// Request is one version to analyse, with its previous version's archive
// when the registry has one.
type Request struct {
	Target   Target
	Previous *Target
	Limits   Limits
	Settings map[string]string
	// Threshold is analysis.report_severity.
	Threshold Severity
}

// Run reads the archive (and the previous one) with every analyzer and
// judges the version (Judge). An archive an analyzer could not read whole
// gives the verdict error with its reason; so does a previous archive that
// could not be read (a diff against nothing would call everything new).
func Run(ctx context.Context, analyzers []Named, req Request) (Result, error) {
	var cur, prev []Finding
	r := Result{Findings: []Finding{}}
	for _, a := range analyzers {
		r.Analyzers = append(r.Analyzers, a.Name)
		got, err := a.Analyzer.Analyze(ctx, req.Target, req.Limits, req.Settings)
		if err != nil {
			return Result{}, fmt.Errorf("analyzer %s: %w", a.Name, err)
		}
		if got.Refused != "" {
			r.Verdict, r.Reason = VerdictError, got.Refused
			return r, nil
		}
		cur = append(cur, got.Findings...)
		if req.Previous == nil {
			continue
		}
		pgot, err := a.Analyzer.Analyze(ctx, *req.Previous, req.Limits, req.Settings)
		if err != nil {
			return Result{}, fmt.Errorf("analyzer %s, previous version: %w", a.Name, err)
		}
		if pgot.Refused != "" {
			r.Verdict, r.Reason = VerdictError, "the previous version: "+pgot.Refused
			return r, nil
		}
		prev = append(prev, pgot.Findings...)
	}
	j := Judge(cur, prev, req.Previous != nil, req.Threshold)
	j.Analyzers = r.Analyzers
	return j, nil
}

// Digest is a file's sha256, hex.
func Digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// EcosystemOf guesses an archive's ecosystem from its file name (the CLI's
// default): .tgz npm, .whl and .tar.gz PyPI, .gem RubyGems, .crate
// crates.io, .zip Go, .vsix the editor extensions' marketplace.
func EcosystemOf(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tgz"):
		return "npm"
	case strings.HasSuffix(n, ".whl"), strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tar.bz2"):
		return "pypi"
	case strings.HasSuffix(n, ".gem"):
		return "rubygems"
	case strings.HasSuffix(n, ".crate"):
		return "crates.io"
	case strings.HasSuffix(n, ".vsix"):
		return "vscode"
	case strings.HasSuffix(n, ".zip"):
		return "go"
	}
	return ""
}
