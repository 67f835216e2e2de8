package main_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/storage/pgtest"
	"github.com/threatd/threatd/storage/storagetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// TestStorageContract runs the storage contract against the real PostgreSQL
// plugin process on a real, throwaway PostgreSQL server.
func TestStorageContract(t *testing.T) {
	pg := pgtest.Server(t)
	host := &plugins.Host{Dir: testbin.PluginDir(t), Log: slog.New(slog.DiscardHandler)}
	dsns := map[string]string{}
	storagetest.Run(t, func(t *testing.T, db string, settings map[string]string) (core.Store, error) {
		dsn, ok := dsns[db]
		if !ok {
			dsn = pg.Database(t, db)
			dsns[db] = dsn
		}
		st, err := host.StartStorage(context.Background(), "postgres", plugins.StorageConfig{DSN: dsn, DataDir: t.TempDir(), Settings: settings})
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
