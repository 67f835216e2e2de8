package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/cmd/internal/daemon"
	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/plugins"
)

func analyzeCmd() *cobra.Command {
	var previous, ecosystem string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "analyze PATH|PURL [--previous PATH] [--json]",
		Short: "Read a package archive with the analyzers (exit 1 when suspicious, 2 on an error)",
		Long: `Reads a package archive — an npm or crates.io tarball, a PyPI sdist or
wheel, a .gem, a Go module zip — with the analyzer plugins of
analysis.analyzers (the default, rules: YARA rules and install-time
execution), and says whether it is clean or suspicious (docs/analysis.md).
With --previous, the previous version's archive: a finding is new when
that version has no finding of the same rule in the same file, and only
new findings make a version suspicious. A package URL of npm, PyPI, Go,
RubyGems or crates.io (pkg:npm/x@1.2.3, pkg:golang/example.com/m@v1.2.3)
is fetched as the daemon's firewall fetches it, from the registry's
upstream (firewall.<registry>.upstream), with its previous version, the
highest lower one. The code is read, never run.

Exit status: 0 clean, 1 suspicious, 2 error (an archive over a limit or
unreadable, a missing analyzer).

  threatd analyze left-pad-1.3.1.tgz --previous left-pad-1.3.0.tgz
  threatd analyze pkg:npm/left-pad@1.3.1
  threatd analyze --json requests-2.32.3-py3-none-any.whl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return scanFailed(errors.New("analyze: name one archive\nUsage: " + cmd.UseLine()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return scanFailed(runAnalyze(cmd, args[0], previous, ecosystem, asJSON))
		},
	}
	f := cmd.Flags()
	f.StringVar(&previous, "previous", "", "the previous version's archive, to tell what this version adds")
	f.StringVar(&ecosystem, "ecosystem", "", "npm, pypi, rubygems, crates.io or go (default: from the file name)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// analysisOutput is threatd analyze --json.
type analysisOutput struct {
	Path     string `json:"path"`
	Digest   string `json:"digest"`
	Previous string `json:"previous,omitempty"`
	analysis.Result
}

func runAnalyze(cmd *cobra.Command, path, previous, ecosystem string, asJSON bool) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	log := newLogger("warn", cfg.Log.Format)
	archive, shown, shownPrevious := path, path, previous
	if strings.HasPrefix(path, "pkg:") {
		// A purl: the version and the previous one, fetched from the
		// registry's upstream.
		dir, err := os.MkdirTemp("", "threatd-analyze-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		k, err := analysis.KeyOfPurl(path)
		if err != nil {
			return badInput(err)
		}
		// The firewall's fetching (its upstreams and origins; a private
		// name from the private upstream alone), with a cache of its own.
		fetcher, err := daemon.ArchiveFetcher(cfg, log, filepath.Join(dir, "cache"))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), cfg.Analysis.Timeout)
		defer cancel()
		cur, prev, err := fetcher.Fetch(ctx, k, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", k.Purl(), err)
		}
		archive, ecosystem = cur.Path, cur.Ecosystem
		if previous == "" && prev != nil {
			previous = prev.Path
			shownPrevious = analysis.Key{Ecosystem: k.Ecosystem, Name: k.Name, Version: prev.Version}.Purl()
			fmt.Fprintf(cmd.ErrOrStderr(), "compared with %s %s (the previous version)\n", k.Name, prev.Version)
		}
	}
	target, err := analysisTarget(archive, ecosystem)
	if err != nil {
		return err
	}
	req := analysis.Request{Target: target, Limits: cfg.AnalysisLimits(), Settings: cfg.AnalysisSettings()}
	req.Threshold, _ = analysis.ParseSeverity(cfg.Analysis.ReportSeverity) // validated by config.Load
	if previous != "" {
		p, err := analysisTarget(previous, target.Ecosystem)
		if err != nil {
			return fmt.Errorf("--previous: %w", err)
		}
		req.Previous = &p
	}
	host := &plugins.Host{Dir: cfg.Plugins.Dir, Log: log}
	var named []analysis.Named
	for _, name := range cfg.Analysis.Analyzers {
		a, err := host.StartAnalyzer(name)
		if err != nil {
			return fmt.Errorf("analysis.analyzers: %w", err)
		}
		defer a.Close()
		named = append(named, analysis.Named{Name: name, Analyzer: a})
	}
	res, err := analysis.Run(cmd.Context(), named, req)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(analysisOutput{Path: shown, Digest: target.Digest, Previous: shownPrevious, Result: res}); err != nil {
			return err
		}
	} else {
		writeAnalysis(out, shown, target.Digest, res)
	}
	switch res.Verdict {
	case analysis.VerdictSuspicious:
		return &exitError{code: 1}
	case analysis.VerdictError:
		return &exitError{code: 2}
	}
	return nil
}

// analysisTarget is a local archive to analyse.
func analysisTarget(path, ecosystem string) (analysis.Target, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return analysis.Target{}, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return analysis.Target{}, err
	}
	if !fi.Mode().IsRegular() {
		return analysis.Target{}, fmt.Errorf("%s is not a file", path)
	}
	if ecosystem == "" {
		ecosystem = analysis.EcosystemOf(path)
	}
	digest, err := analysis.Digest(abs)
	if err != nil {
		return analysis.Target{}, err
	}
	return analysis.Target{Ecosystem: ecosystem, Name: filepath.Base(path), Digest: digest, Path: abs}, nil
}

// writeAnalysis prints a result for a terminal.
func writeAnalysis(w io.Writer, path, digest string, r analysis.Result) {
	fmt.Fprintf(w, "%s: %s (score %.1f)\n", path, strings.ToUpper(r.Verdict), r.Score)
	fmt.Fprintf(w, "sha256 %s; analyzers %s\n", digest, strings.Join(r.Analyzers, ", "))
	if r.Reason != "" {
		fmt.Fprintf(w, "error: %s\n", r.Reason)
	}
	for _, f := range r.Findings {
		mark := " "
		if f.New {
			mark = "+"
		}
		where := f.File
		if f.Line > 0 {
			where += ":" + strconv.Itoa(f.Line)
		}
		fmt.Fprintf(w, "%s %-8s %s  %s\n      %s\n", mark, f.Severity, f.Rule, where, f.Description)
		if f.Excerpt != "" {
			fmt.Fprintf(w, "      > %s\n", f.Excerpt)
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w, "(+ marks a finding new in this version)")
	}
}
