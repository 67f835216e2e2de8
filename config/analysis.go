package config

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/threatd/threatd/core/analysis"
)

// validateAnalysis checks the analysis section.
func (c Config) validateAnalysis(add func(error)) {
	a := c.Analysis
	if len(a.Analyzers) == 0 {
		add(bad("analysis.analyzers", "must name at least one analyzer plugin (the default is [rules])"))
	}
	for i, n := range a.Analyzers {
		if !pluginName.MatchString(n) {
			add(bad(fmt.Sprintf("analysis.analyzers[%d]", i), "must be a plugin name (got %q)", n))
		}
	}
	if _, err := analysis.ParseSeverity(a.ReportSeverity); err != nil {
		add(bad("analysis.report_severity", "%v", err))
	}
	if a.MaxArchiveBytes < 1024 || a.MaxArchiveBytes > 4<<30 {
		add(bad("analysis.max_archive_bytes", "must be between 1KiB and 4GiB (got %d)", a.MaxArchiveBytes))
	}
	if a.MaxFiles < 1 || a.MaxFiles > 10_000_000 {
		add(bad("analysis.max_files", "must be between 1 and 10000000 (got %d)", a.MaxFiles))
	}
	if a.MaxFileBytes < 1024 || a.MaxFileBytes > 1<<30 {
		add(bad("analysis.max_file_bytes", "must be between 1KiB and 1GiB (got %d)", a.MaxFileBytes))
	}
	if a.Timeout < time.Second || a.Timeout > time.Hour {
		add(bad("analysis.timeout", "must be between 1s and 1h (got %s)", a.Timeout))
	}
	if a.Workers < 0 || a.Workers > 256 {
		add(bad("analysis.workers", "must be from 0 (half the CPUs) to 256 (got %d)", a.Workers))
	}
	// Every daemon holds the unfinished analyses in memory for the
	// firewall (at most analysis.MaxHolds of them, suspects included).
	if a.MaxQueued < 1 || a.MaxQueued > analysis.MaxHolds/2 {
		add(bad("analysis.max_queued", "must be from 1 to %d (got %d)", analysis.MaxHolds/2, a.MaxQueued))
	}
	if a.MaxWait < 0 || a.MaxWait > 30*24*time.Hour {
		add(bad("analysis.max_wait", "must be between 0 and 720h (got %s)", a.MaxWait))
	}
}

// AnalysisWorkers is analysis.workers, 0 read as half the CPUs.
func (c Config) AnalysisWorkers() int {
	if c.Analysis.Workers > 0 {
		return c.Analysis.Workers
	}
	return max(runtime.NumCPU()/2, 1)
}

// AnalysisLimits are the limits of one analysis; the unpacked bytes are
// bounded at 1 GiB.
func (c Config) AnalysisLimits() analysis.Limits {
	return analysis.Limits{MaxArchiveBytes: int64(c.Analysis.MaxArchiveBytes), MaxFiles: c.Analysis.MaxFiles,
		MaxFileBytes: int64(c.Analysis.MaxFileBytes), MaxUnpackedBytes: analysis.DefaultLimits.MaxUnpackedBytes}
}

// AnalysisSettings are the settings the analyzer plugins get: the rules
// directory (absolute) and the timeout in seconds.
func (c Config) AnalysisSettings() map[string]string {
	s := map[string]string{"timeout": strconv.Itoa(int(c.Analysis.Timeout.Seconds()))}
	if c.Analysis.RulesDir != "" {
		dir, err := filepath.Abs(c.Analysis.RulesDir)
		if err != nil {
			dir = c.Analysis.RulesDir
		}
		s["rules_dir"] = dir
	}
	return s
}
