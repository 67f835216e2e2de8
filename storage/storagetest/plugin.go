package storagetest

import (
	"context"
	"testing"

	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
)

// PluginBackend runs the suite through a real storage plugin process:
// threatd-storage-<plugin> from host's directory, on the database dsn names.
func PluginBackend(host *plugins.Host, plugin string, dsn func(t *testing.T, db string) string) Backend {
	return func(t *testing.T, db string, settings map[string]string) (port.Store, error) {
		st, err := host.StartStorage(context.Background(), plugin, plugins.StorageConfig{DSN: dsn(t, db), DataDir: t.TempDir(), Settings: settings, Create: true})
		if err != nil {
			return nil, err
		}
		if _, err := st.Migrate(context.Background()); err != nil {
			_ = st.Close()
			return nil, err
		}
		return st, nil
	}
}
