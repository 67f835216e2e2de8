package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/threatd/threatd/cmd/internal/priority"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins"
)

func importCmd() *cobra.Command {
	var full bool
	var trust string
	cmd := &cobra.Command{
		Use:   "import SOURCE [--full] [--trust verified|pending] PATH...",
		Short: "Ingest reports once with a source plugin (e.g. `threatd import osv ./osv-data all.zip`)",
		Long: `Runs the source plugin threatd-source-SOURCE over files, folders or archives
and applies its records as reports attributed to the source user SOURCE,
verified by the system reviewer SOURCE-import (or, with --trust pending,
pending review): new records are imported, newer upstream versions update
ours as revisions, withdrawn ones withdraw ours, known ones are unchanged,
and records that match a live community report are attached to it. With
--full the files are the source's whole list: its reports they no longer
list are withdrawn once every file is read (and a report so withdrawn
that a later import lists again is restored). Works with no sources
configured.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return errors.New("name a source and what to import: threatd import osv PATH... (files, folders or all.zip archives)")
			case 1:
				return fmt.Errorf("name what to import: threatd import %s PATH... (files, folders or all.zip archives)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			source, paths := args[0], args[1:]
			if err := core.CheckTrust("--trust", trust); err != nil {
				return err
			}
			// A path that is not there is a mistake, not a record to skip:
			// refused before anything is written.
			for i, p := range paths {
				if _, err := os.Stat(p); err != nil {
					return fmt.Errorf("import %s: %w", source, err)
				}
				if abs, err := filepath.Abs(p); err == nil {
					paths[i] = abs
				}
			}
			return withEnv(cmd, func(e *env) error {
				// The storage writer is an import's bound, and the source
				// plugin and the indicators derived here shared the cores
				// with it evenly. From here this process, and the source
				// plugin it starts, run at a lower priority than storage
				// (started before, so it keeps its own): the readers take
				// the CPU the writer leaves (docs/performance.md).
				if err := priority.Lower(priority.Batch); err != nil {
					e.log.Debug("import: priority not lowered", "err", err)
				}
				src, err := (&plugins.Host{Dir: e.cfg.Plugins.Dir, Log: e.log, CacheDir: e.cfg.PluginCacheDir()}).StartSource(source)
				if err != nil {
					return err
				}
				defer src.Close()
				report := progressReporter(cmd)
				start := time.Now()
				opts := core.ImportOptions{Settings: e.cfg.Import.Settings(), Full: full, Trust: trust}
				sum, err := core.Ingest(cmd.Context(), e.store, src, source, paths, opts, report)
				report(core.ImportProgress{FilesTotal: -1})
				if err != nil {
					return fmt.Errorf("import %s: %w (batches already written stay; the run can be repeated safely)", source, err)
				}
				printSummary(cmd, sum, time.Since(start))
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&full, "full", false, "the files are the source's whole list: withdraw its reports they no longer list")
	cmd.Flags().StringVar(&trust, "trust", core.TrustVerified, "verified (new reports are published) or pending (they wait for review)")
	return cmd
}

// progressReporter draws a bar on a terminal and plain lines otherwise.
// A call with FilesTotal -1 finishes it.
func progressReporter(cmd *cobra.Command) func(core.ImportProgress) {
	fi, err := os.Stderr.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	var bar *progressbar.ProgressBar
	last := time.Time{}
	return func(p core.ImportProgress) {
		if p.FilesTotal < 0 {
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			return
		}
		if tty {
			if bar == nil {
				bar = progressbar.NewOptions(p.FilesTotal, progressbar.OptionSetWriter(cmd.ErrOrStderr()),
					progressbar.OptionSetDescription("importing"), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
					progressbar.OptionSetItsString("files"), progressbar.OptionThrottle(100*time.Millisecond))
			}
			_ = bar.Set(p.FilesDone)
			return
		}
		if time.Since(last) >= time.Second || p.FilesDone == p.FilesTotal {
			last = time.Now()
			fmt.Fprintf(cmd.ErrOrStderr(), "progress: %d/%d files, %d records\n", p.FilesDone, p.FilesTotal, p.Records)
		}
	}
}

func printSummary(cmd *cobra.Command, sum core.ImportSummary, took time.Duration) {
	out := cmd.OutOrStdout()
	total := 0
	for _, k := range []string{core.ImportCreated, core.ImportUpdated, core.ImportUnchanged, core.ImportWithdrawn, core.ImportAttached, core.ImportRestored, core.ImportSkipped} {
		fmt.Fprintf(out, "%-10s %d\n", k, sum.Counts[k])
		total += sum.Counts[k]
	}
	sort.Strings(sum.Skipped)
	for _, s := range sum.Skipped {
		fmt.Fprintf(out, "  skipped %s\n", strings.ReplaceAll(s, "\n", " "))
	}
	if sum.FullRefused != "" {
		fmt.Fprintln(out, sum.FullRefused)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%d records in %s\n", total, took.Round(time.Millisecond))
}
