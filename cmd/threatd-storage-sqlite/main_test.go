package main_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/storage/storagetest"
)

// TestStorageContract runs the storage contract against the real SQLite
// plugin process on a real SQLite file.
func TestStorageContract(t *testing.T) {
	host := &plugins.Host{Dir: testbin.PluginDir(t), Log: slog.New(slog.DiscardHandler)}
	dir := t.TempDir()
	storagetest.Run(t, func(t *testing.T, db string, settings map[string]string) (core.Store, error) {
		st, err := host.StartStorage(context.Background(), "sqlite", plugins.StorageConfig{
			DSN: filepath.Join(dir, db+".db"), DataDir: dir, Settings: settings,
		})
		if err != nil {
			return nil, err
		}
		if _, err := st.Migrate(context.Background()); err != nil {
			_ = st.Close()
			return nil, err
		}
		return st, nil
	})
}
