// Package rules is the default analyzer's reading of an archive
// (docs/analysis.md): every text file of it, and of the archives nested
// in it, is scanned by a YARA engine (cmd/threatd-analyzer-rules, libyara
// through cgo) with threatd's own rule set (Shipped) and the operator's
// .yar files; beside the rules, install-time execution is read from each
// ecosystem's manifest. This package holds no cgo: the engine is given.
package rules

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/plugins/archive"
)

// Match is one rule an engine matched in one file.
type Match struct {
	Rule, Severity, Description string
	// PathInclude and PathExclude restrict the rule to files whose names
	// match these comma-separated globs (GuardDog's meta).
	PathInclude, PathExclude string
	// Scope "install" (threatd's meta): the rule's severity holds in what
	// runs at install (InstallTime); elsewhere its finding is medium.
	Scope string
	// Offset and Length locate the rule's earliest string match (Offset
	// -1: the rule matched on its condition alone).
	Offset int64
	Length int
}

// Engine scans one file's bytes with a compiled rule set.
type Engine interface {
	Scan(data []byte) ([]Match, error)
}

// Source is one rule file: its text, or (Path) a file on disk, whose
// includes are read from beside it.
type Source struct{ Name, Text, Path string }

//go:embed yara/*.yar
var shipped embed.FS

// Shipped is threatd's own rule set (yara/*.yar), written for threatd from
// published techniques.
func Shipped() []Source {
	var out []Source
	entries, _ := fs.ReadDir(shipped, "yara")
	for _, e := range entries {
		b, _ := fs.ReadFile(shipped, "yara/"+e.Name())
		out = append(out, Source{Name: "threatd/" + e.Name(), Text: string(b)})
	}
	return out
}

// Dir reads the .yar and .yara files of an operator's rules directory
// (analysis.rules_dir), unchanged, in name order.
func Dir(dir string) ([]Source, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("analysis.rules_dir: %w", err)
	}
	var out []Source
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || ext != ".yar" && ext != ".yara" {
			continue
		}
		out = append(out, Source{Name: e.Name(), Path: filepath.Join(dir, e.Name())})
	}
	return out, nil
}

// Analyzer reads archives with an engine.
type Analyzer struct {
	// Engine returns the engine for a rules directory ("" = the shipped
	// rules alone), compiled once per directory by the caller.
	Engine func(rulesDir string) (Engine, error)
	// Timeout bounds one archive (analysis.timeout).
	Timeout time.Duration
}

// Analyze reads t's archive within l: every text file scanned by the
// rules, and the manifest's install-time execution.
func (a *Analyzer) Analyze(ctx context.Context, t analysis.Target, l analysis.Limits, settings map[string]string) (analysis.Read, error) {
	eng, err := a.Engine(settings["rules_dir"])
	if err != nil {
		return analysis.Read{}, err
	}
	timeout := a.Timeout
	if n, err := strconv.Atoi(settings["timeout"]); err == nil && n > 0 {
		timeout = time.Duration(n) * time.Second // analysis.timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var r analysis.Read
	var manifests []archive.File
	var scoped []int // findings of install-scoped rules
	eco := strings.ToLower(t.Ecosystem)
	stats, err := archive.Walk(t.Path, l, func(p string) bool { return !read(eco, p) }, func(f archive.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if isManifest(eco, f.Path) {
			manifests = append(manifests, f)
		}
		if !scanned(f.Path, f.Data) {
			return nil
		}
		data := f.Data // whole: the walk bounds it by analysis.max_file_bytes
		ms, err := eng.Scan(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		for _, m := range ms {
			if !appliesTo(m, f.Path) {
				continue
			}
			if m.Scope == "install" {
				scoped = append(scoped, len(r.Findings))
			}
			r.Findings = append(r.Findings, finding(f.Path, data, m))
		}
		return nil
	})
	r.Files, r.Bytes = stats.Files, stats.Bytes
	var refused *archive.Refused
	switch {
	case errors.As(err, &refused):
		r.Refused = refused.Reason
		r.Findings = nil
		return r, nil
	case errors.Is(err, context.DeadlineExceeded):
		r.Refused = fmt.Sprintf("the analysis ran past analysis.timeout (%s)", timeout)
		r.Findings = nil
		return r, nil
	case err != nil:
		return r, err
	}
	install := installTime(manifests)
	for _, i := range scoped {
		if !install(r.Findings[i].File) && r.Findings[i].Severity.Rank() > analysis.SeverityMedium.Rank() {
			r.Findings[i].Severity = analysis.SeverityMedium
			r.Findings[i].Description += " (in code that does not run at install)"
		}
	}
	r.Findings = append(r.Findings, manifestFindings(manifests)...)
	return r, nil
}

// finding is a match as a finding: its line and excerpt read from data.
func finding(file string, data []byte, m Match) analysis.Finding {
	sev, err := analysis.ParseSeverity(m.Severity)
	if err != nil {
		sev = analysis.SeverityMedium // a rule that names none (GuardDog's name none)
	}
	f := analysis.Finding{Rule: m.Rule, Severity: sev, File: file, Description: m.Description}
	if f.Description == "" {
		f.Description = "YARA rule " + m.Rule
	}
	if m.Offset >= 0 && m.Offset <= int64(len(data)) {
		f.Line = bytes.Count(data[:m.Offset], []byte("\n")) + 1
		start := bytes.LastIndexByte(data[:m.Offset], '\n') + 1
		// The excerpt starts at the match, with a little of its line
		// before it: minified files have one line.
		from := max(start, int(m.Offset)-40)
		to := min(len(data), int(m.Offset)+max(m.Length, 0)+160)
		// The first line end past the match ends it.
		if nl := bytes.IndexByte(data[m.Offset:to], '\n'); nl > m.Length {
			to = int(m.Offset) + nl
		}
		f.Excerpt = analysis.Excerpt(strings.ToValidUTF8(string(data[from:to]), "?"))
	}
	return f
}
