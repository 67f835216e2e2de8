package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/plugins"
)

func copyStorageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "copy-storage --to-plugin P --to-dsn DSN",
		Short: "Copy every row of the configured storage into another, empty one (e.g. SQLite → PostgreSQL)",
		Long: `Copies users, tokens, reports, details, revisions, review events and the change
feed from the configured storage into the storage plugin P at DSN, which is
migrated first and must be empty. The target is written in one transaction:
all or nothing. Stop the daemons that write to the source while it runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			toPlugin, _ := cmd.Flags().GetString("to-plugin")
			toDSN, _ := cmd.Flags().GetString("to-dsn")
			return withEnv(cmd, func(e *env) error {
				ctx := cmd.Context()
				dataDir, _ := filepath.Abs(e.cfg.DataDir)
				host := &plugins.Host{Dir: e.cfg.Plugins.Dir, Log: e.log}
				// The target is new: copy-storage makes it.
				target, err := host.StartStorage(ctx, toPlugin, plugins.StorageConfig{DSN: toDSN, DataDir: dataDir, Create: true})
				if err != nil {
					return fmt.Errorf("target: %w", err)
				}
				defer target.Close()
				if _, err := target.Migrate(ctx); err != nil {
					return fmt.Errorf("target: migrate: %w", err)
				}
				sent, copied, err := copyRows(ctx, e.store, target)
				if err != nil {
					return fmt.Errorf("copy-storage: %w (the target was left unchanged)", err)
				}
				tables := make([]string, 0, len(sent))
				for t := range sent {
					tables = append(tables, t)
				}
				sort.Strings(tables)
				for _, t := range tables {
					if sent[t] != copied[t] {
						return fmt.Errorf("copy-storage: %s: %d rows read but %d written", t, sent[t], copied[t])
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%-17s %d\n", t, copied[t])
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "copied into %s storage\n", toPlugin)
				return nil
			})
		},
	}
	cmd.Flags().String("to-plugin", "", "the target storage plugin, e.g. postgres (required)")
	cmd.Flags().String("to-dsn", "", "the target's DSN (required)")
	_ = cmd.MarkFlagRequired("to-plugin")
	_ = cmd.MarkFlagRequired("to-dsn")
	return cmd
}

type batch struct {
	table string
	rows  []byte
}

// copyRows streams the source's export into the target's import and counts
// the rows on both sides.
func copyRows(ctx context.Context, src, dst interface {
	Export(context.Context, func(string, []byte) error) error
	Import(context.Context, func() (string, []byte, bool, error)) (map[string]int64, error)
}) (map[string]int64, map[string]int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan batch, 4)
	exportErr := make(chan error, 1)
	sent := map[string]int64{}
	go func() {
		defer close(batches)
		exportErr <- src.Export(ctx, func(table string, rows []byte) error {
			var items []json.RawMessage
			if err := json.Unmarshal(rows, &items); err != nil {
				return err
			}
			sent[table] += int64(len(items))
			select {
			case batches <- batch{table, rows}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	copied, err := dst.Import(ctx, func() (string, []byte, bool, error) {
		b, ok := <-batches
		if !ok {
			// The export ended: successfully, or with an error that must
			// abort the import (rolled back by the target).
			if err := <-exportErr; err != nil {
				return "", nil, false, fmt.Errorf("reading the source: %w", err)
			}
			return "", nil, false, nil
		}
		return b.table, b.rows, true, nil
	})
	if err != nil {
		cancel()
		for range batches { // let the exporter finish
		}
		return nil, nil, err
	}
	return sent, copied, nil
}
