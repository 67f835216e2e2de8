package main_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
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
	dsns := map[string]string{} // the same name reopens the same database
	backend := storagetest.PluginBackend(host, "postgres", func(t *testing.T, db string) string {
		if _, ok := dsns[db]; !ok {
			dsns[db] = pg.Database(t, db)
		}
		return dsns[db]
	})
	storagetest.Run(t, backend)
	t.Run("Paging", func(t *testing.T) { storagetest.RunPaging(t, backend, host) })
}
