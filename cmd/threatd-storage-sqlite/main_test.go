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
	storagetest.Run(t, func(t *testing.T, db string) core.Store {
		st, err := host.StartStorage(context.Background(), "sqlite", plugins.StorageConfig{
			DSN: filepath.Join(dir, db+".db"), DataDir: dir,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	})
}
