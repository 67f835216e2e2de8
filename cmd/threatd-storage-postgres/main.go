// Command threatd-storage-postgres is the PostgreSQL storage plugin: the
// daemon starts it from plugins.dir when storage.plugin is postgres.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/threatd/threatd/cmd/internal/gcpace"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/storage"
)

func main() {
	defer gcpace.Start()()
	plugins.ServeStorage("postgres", func(ctx context.Context, cfg plugins.StorageConfig) (port.Store, error) {
		opts, err := storage.OptionsFromSettings(cfg.Settings, os.Getenv)
		if err != nil {
			return nil, err
		}
		st, err := storage.Open(storage.Postgres, cfg.DSN, opts)
		if err != nil {
			return nil, err
		}
		if err := st.Health(ctx); err != nil {
			_ = st.Close()
			return nil, err
		}
		slog.Info("storage configured", "backend", "postgres")
		return st, nil
	})
}
