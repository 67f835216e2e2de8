package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/cmd/internal/daemon"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/blocklist"
	"github.com/threatd/threatd/core/community"
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
				signals, err := loadCommunity(cmd.Context(), e)
				if err != nil {
					return err
				}
				for _, registry := range core.OSVRegistries {
					eco := core.OSVEcosystems[registry]
					n, err := exportOSV(cmd, pool, sel, signals, registry, filepath.Join(dir, eco, "all.zip"), "")
					if err != nil {
						return fmt.Errorf("export osv %s: %w", eco, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d reports → %s\n", eco, n, filepath.Join(dir, eco, "all.zip"))
					if _, err := exportOSV(cmd, pool, sel, signals, registry, filepath.Join(dir, eco, "modified_id.csv"), core.OSVModifiedFormat); err != nil {
						return fmt.Errorf("export osv %s modified_id.csv: %w", eco, err)
					}
				}
				return writeAtomic(filepath.Join(dir, "ecosystems.txt"), func(w io.Writer) error {
					_, err := io.WriteString(w, core.OSVEcosystemsText())
					return err
				})
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
				pool := plugins.NewExporters(&plugins.Host{Dir: e.cfg.Plugins.Dir, Log: e.log})
				defer pool.Close()
				signals, err := loadCommunity(cmd.Context(), e)
				if err != nil {
					return err
				}
				events, reports, err := exportMISP(cmd.Context(), &misp.Service{Store: e.store, Exporters: pool, Name: "threatd", Site: daemon.LocalSite(e.cfg), Community: signals}, args[0])
				if err != nil {
					return fmt.Errorf("export misp: %w", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d reports in %d events → %s\n", reports, events, filepath.Join(args[0], "manifest.json"))
				return nil
			})
		},
	})
	var format, out string
	blocklistCmd := &cobra.Command{
		Use:   "blocklist --format F [--out FILE]",
		Short: "Write a block list of the domains and addresses verified reports name (rpz, hosts, domains, dnsmasq, unbound, adguard, ips)",
		Long: `Writes one block list (docs/blocklists.md) of the domains, URL hosts and
IP addresses verified reports name, the same bytes the daemon serves at
{base}/blocklists/<format>: to standard output, or with --out to FILE
(through a temporary file: a resolver reloading it meanwhile reads the
old list or the new one, never half of one).

  threatd export blocklist --format rpz --out /etc/unbound/threatd.rpz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := blocklist.CheckFormat(format); err != nil {
				return err
			}
			return withEnv(cmd, func(e *env) error {
				body, err := blocklist.Export(cmd.Context(), e.store, e.cfg.Blocklists.RPZZone, format)
				if err != nil {
					return fmt.Errorf("export blocklist: %w", err)
				}
				return writeBody(cmd, out, body)
			})
		},
	}
	blocklistCmd.Flags().StringVar(&format, "format", "", "one of "+strings.Join(blocklist.Formats, ", "))
	blocklistCmd.Flags().StringVar(&out, "out", "", "write to FILE instead of standard output")
	_ = blocklistCmd.MarkFlagRequired("format")
	export.AddCommand(blocklistCmd)
	var rulesOut string
	suricataCmd := &cobra.Command{
		Use:   "suricata [--out FILE]",
		Short: "Write Suricata rules for the domains and addresses verified reports name",
		Long: `Writes the Suricata rules (docs/blocklists.md): per domain an alert dns
(dns.query), an alert tls (tls.sni) and an alert http (http.host) rule,
per address an alert ip rule, the same bytes the daemon serves at
{base}/rules/suricata.rules: to standard output, or with --out to FILE
(through a temporary file). Each indicator's sids are kept in the
database, the same for every daemon and every export.

  threatd export suricata --out /var/lib/suricata/rules/threatd.rules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withEnv(cmd, func(e *env) error {
				rules, err := blocklist.ExportSuricata(cmd.Context(), e.store, e.cfg.Blocklists.SuricataSIDBase)
				if err != nil {
					return fmt.Errorf("export suricata: %w", err)
				}
				return writeTo(cmd, rulesOut, rules)
			})
		},
	}
	suricataCmd.Flags().StringVar(&rulesOut, "out", "", "write to FILE instead of standard output")
	export.AddCommand(suricataCmd)
	return export
}

// writeBody writes body to standard output, or with out to that file
// through a temporary file (a reader meanwhile sees the old file or the
// new one, never half of one).
func writeBody(cmd *cobra.Command, out string, body []byte) error {
	return writeTo(cmd, out, bytes.NewReader(body))
}

// writeTo is writeBody for what writes itself.
func writeTo(cmd *cobra.Command, out string, body io.WriterTo) error {
	if out == "" {
		_, err := body.WriteTo(cmd.OutOrStdout())
		return err
	}
	return writeAtomic(out, func(w io.Writer) error {
		_, err := body.WriteTo(w)
		return err
	})
}

// loadCommunity reads the community signals (sighting counts) once, for
// a command that exports records.
func loadCommunity(ctx context.Context, e *env) (*community.View, error) {
	v := community.New(e.store, e.log)
	if err := v.Catch(ctx); err != nil {
		return nil, fmt.Errorf("reading the sighting counts: %w", err)
	}
	return v, nil
}

// exportOSV writes one ecosystem's archive (or with format, another of its
// files) through a temporary file, and returns the number of reports given
// to the exporter.
func exportOSV(cmd *cobra.Command, pool *plugins.Exporters, sel *core.Selections, signals *community.View, registry, path, format string) (int, error) {
	each, err := sel.All(cmd.Context(), registry)
	if err != nil {
		return 0, err
	}
	n := 0
	req := core.ExportRequest{
		Endpoint: "/osv/" + core.OSVEcosystems[registry] + "/" + filepath.Base(path), Query: map[string]string{"ecosystem": registry}, Service: "threatd",
		Each: func(yield func(core.ExportRecord) error) error {
			return each(func(t core.Threat) error { n++; return yield(core.NewExportRecord(t, signals.OfThreat(t))) })
		},
	}
	if format != "" {
		req.Query["format"] = format
	}
	err = writeAtomic(path, func(w io.Writer) error { return pool.Export(cmd.Context(), "osv", req, &fileDocument{w: w}) })
	return n, err
}

// exportMISP writes the MISP feed into dir in one pass over the reports:
// an event file per day (rendered by the MISP exporter plugin), their
// hashes.csv lines as they come, then manifest.json; each file through a
// temporary one (a MISP reading the folder meanwhile sees old or new
// files, never half-written ones). It returns the events and reports
// written.
func exportMISP(ctx context.Context, svc *misp.Service, dir string) (events, reports int, err error) {
	f, err := svc.Feed(ctx)
	if err != nil {
		return 0, 0, err
	}
	manifest := map[string]misp.ManifestEntry{}
	err = writeAtomic(filepath.Join(dir, "hashes.csv"), func(hashes io.Writer) error {
		hw := bufio.NewWriter(hashes)
		err := f.Walk(ctx, svc.Store, svc.Exporters, time.Time{}, time.Time{}, func(e *misp.Event) error {
			events++
			reports += e.Reports
			m, err := e.Manifest()
			if err != nil {
				return err
			}
			manifest[e.UUID] = m
			lines, err := e.Hashes()
			if err != nil {
				return err
			}
			for _, l := range lines {
				hw.WriteString(l + "\n")
			}
			return writeAtomic(filepath.Join(dir, e.UUID+".json"), func(w io.Writer) error {
				_, err := w.Write(e.File)
				return err
			})
		})
		if err != nil {
			return err
		}
		return hw.Flush()
	})
	if err == nil {
		err = writeAtomic(filepath.Join(dir, "manifest.json"), func(w io.Writer) error { return writeJSONTo(w, manifest) })
	}
	return events, reports, err
}

// writeJSONTo writes v as the daemon serves it (no newline after it).
func writeJSONTo(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// writeAtomic writes path (and its folder) through a temporary file that
// fill writes and that is renamed into place once complete: a reader sees
// the old file or the new one, never half of one.
func writeAtomic(path string, fill func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := fill(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
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
type fileDocument struct{ w io.Writer }

func (f *fileDocument) Start(string) error          { return nil }
func (f *fileDocument) Write(p []byte) (int, error) { return f.w.Write(p) }
