// Package plugintest serves a storage plugin in process for tests: the
// real gRPC shims, both sides, over go-plugin's in-process connection
// (TestPluginGRPCConn), without the plugin process.
package plugintest

import (
	"context"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
)

// Storage is backend's store (open) as the daemon sees it through the
// storage protocol: configured with cfg and migrated. It is closed when
// the test ends.
func Storage(t testing.TB, backend string, open plugins.StorageOpener, cfg plugins.StorageConfig) port.Store {
	t.Helper()
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{plugins.KindStorage: plugins.StoragePlugin(backend, open)})
	raw, err := client.Dispense(plugins.KindStorage)
	if err != nil {
		t.Fatal(err)
	}
	sc := raw.(*plugins.StorageClient)
	t.Cleanup(func() {
		// The server first: the client's Close would stop it from the
		// server's own goroutine, racing a later Stop.
		server.Stop()
		_ = client.Close()
	})
	ctx := context.Background()
	if name, err := sc.Configure(ctx, cfg); err != nil || name != backend {
		t.Fatalf("configuring the %s storage plugin in process: %q %v", backend, name, err)
	}
	if _, err := sc.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return sc
}
