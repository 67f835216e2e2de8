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

// BenchmarkPluginRoundTrip is the cost the in-memory index avoids: one report
// look-up through the real plugin process (compare core/index BenchmarkCheck).
func BenchmarkPluginRoundTrip(b *testing.B) {
	host := &plugins.Host{Dir: testbin.PluginDir(b), Log: slog.New(slog.DiscardHandler)}
	dir := b.TempDir()
	ctx := context.Background()
	st, err := host.StartStorage(ctx, "sqlite", plugins.StorageConfig{DSN: filepath.Join(dir, "bench.db"), DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	acc := core.NewAccounts(st)
	u, _ := acc.AddUser(ctx, core.NewUser{Email: "bench@example.com"})
	s := core.Submission{ReportType: ptr("ip"), ResourceIdentifier: ptr("192.0.2.1"), ThreatDescription: ptr("x")}
	th, err := core.NewReports(st, core.Limits{}).Submit(ctx, core.Principal{User: u}, s)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := st.GetThreat(ctx, th.ID); err != nil {
			b.Fatal(err)
		}
	}
}

func ptr(s string) *string { return &s }
