// Command threatd-storage-sqlite is the SQLite storage plugin: the daemon
// starts it from plugins.dir; it is not meant to be run by hand.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/storage"
)

func main() {
	plugins.ServeStorage("sqlite", func(_ context.Context, cfg plugins.StorageConfig) (core.Store, error) {
		path := cfg.DSN
		if path == "" {
			path = filepath.Join(cfg.DataDir, "threatd.db")
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
		}
		opts, err := storage.OptionsFromSettings(cfg.Settings, os.Getenv)
		if err != nil {
			return nil, err
		}
		st, err := storage.Open(storage.SQLite, path, opts)
		if err != nil {
			return nil, err
		}
		slog.Info("storage configured", "backend", "sqlite", "path", path)
		return st, nil
	})
}
