package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/misp"
	"github.com/threatd/threatd/plugins"
)

func exportCmd() *cobra.Command {
	export := &cobra.Command{Use: "export", Short: "Write the verified reports in a standard format"}
	export.AddCommand(&cobra.Command{
		Use:   "osv DIR",
		Short: "Write the verified package reports as OSV records: DIR/<Ecosystem>/all.zip",
		Long: `Writes every verified package report as an OSV record (docs/osv.md),
one all.zip per OSV ecosystem (npm, PyPI, RubyGems, crates.io, Go, Maven,
NuGet, Packagist, VSCode) in DIR, the layout osv-scanner reads offline:

  threatd export osv ~/.cache/threatd-osv/osv-scanner
  OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY=~/.cache/threatd-osv \
    osv-scanner scan --offline-vulnerabilities -L package-lock.json

Imported reports keep their upstream id (MAL-…), community reports are
THREATD-<report id>. Every ecosystem's archive is written, empty or not;
each replaces the old one only once it is complete. The records are
rendered by the exporter plugin threatd-exporter-osv.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			return withEnv(cmd, func(e *env) error {
				pool := plugins.NewExporters(&plugins.Host{Dir: e.cfg.Plugins.Dir, Log: e.log})
				defer pool.Close()
				sel := core.NewSelections(e.store)
				for _, registry := range core.OSVRegistries {
					eco := core.OSVEcosystems[registry]
					n, err := exportOSV(cmd, pool, sel, registry, filepath.Join(dir, eco, "all.zip"), "")
					if err != nil {
						return fmt.Errorf("export osv %s: %w", eco, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d reports → %s\n", eco, n, filepath.Join(dir, eco, "all.zip"))
					if _, err := exportOSV(cmd, pool, sel, registry, filepath.Join(dir, eco, "modified_id.csv"), core.OSVModifiedFormat); err != nil {
						return fmt.Errorf("export osv %s modified_id.csv: %w", eco, err)
					}
				}
				return writeFileAtomic(filepath.Join(dir, "ecosystems.txt"), []byte(core.OSVEcosystemsText()))
			})
		},
	})
	export.AddCommand(&cobra.Command{
		Use:   "misp DIR",
		Short: "Write the verified reports as a MISP feed: DIR/manifest.json, <event uuid>.json, hashes.csv",
		Long: `Writes every verified report, and every withdrawn one with to_ids false and
a "withdrawn" tag, as a MISP feed (docs/misp.md): one event per day of
verification, manifest.json and hashes.csv, the layout MISP's
"Sync Actions → Feeds → Add feed" reads with the input source "Local" or
from a web server. The daemon serves the same files at {base}/misp/.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				svc := &misp.Service{Store: e.store, Name: "threatd", Site: localSite(e.cfg)}
				events, reports, err := svc.WriteDir(cmd.Context(), args[0])
				if err != nil {
					return fmt.Errorf("export misp: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d reports in %d events → %s\n", reports, events, filepath.Join(args[0], "manifest.json"))
				return nil
			})
		},
	})
	return export
}

// exportOSV writes one ecosystem's archive through a temporary file, and
// returns the number of reports given to the exporter.
func exportOSV(cmd *cobra.Command, pool *plugins.Exporters, sel *core.Selections, registry, path, format string) (int, error) {
	each, err := sel.All(cmd.Context(), registry)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	n := 0
	req := core.ExportRequest{
		Endpoint: "/osv/" + core.OSVEcosystems[registry] + "/" + filepath.Base(path), Query: map[string]string{"ecosystem": registry}, Service: "threatd",
		Each: func(yield func(core.ExportRecord) error) error {
			return each(func(t core.Threat) error { n++; return yield(core.ExportRecord{Threat: t}) })
		},
	}
	if format != "" {
		req.Query["format"] = format
	}
	w := &fileDocument{w: bufio.NewWriterSize(tmp, 1<<20)}
	if err := pool.Export(cmd.Context(), "osv", req, w); err != nil {
		tmp.Close()
		return n, err
	}
	if err := w.w.Flush(); err != nil {
		tmp.Close()
		return n, err
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), path)
}

// writeFileAtomic writes a file through a temporary one renamed into place.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".threatd-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// fileDocument receives an exporter's document into a file.
type fileDocument struct{ w *bufio.Writer }

func (f *fileDocument) Start(string) error          { return nil }
func (f *fileDocument) Write(p []byte) (int, error) { return f.w.Write(p) }
