package main_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/testbin"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/osv"
	"github.com/threatd/threatd/storage/storagetest"
)

// TestStorageContract runs the storage contract against the real SQLite
// plugin process on a real SQLite file.
func TestStorageContract(t *testing.T) {
	host := &plugins.Host{Dir: testbin.PluginDir(t), Log: slog.New(slog.DiscardHandler)}
	dir := t.TempDir()
	backend := storagetest.PluginBackend(host, "sqlite", func(_ *testing.T, db string) string {
		return filepath.Join(dir, db+".db")
	})
	storagetest.Run(t, backend)
	t.Run("Paging", func(t *testing.T) { storagetest.RunPaging(t, backend, host) })
}

// BenchmarkPluginRoundTrip is the cost the in-memory index avoids: one report
// look-up through the real plugin process (compare core/index BenchmarkCheck).
func BenchmarkPluginRoundTrip(b *testing.B) {
	ctx := context.Background()
	st := benchStore(b)
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

// BenchmarkGetThreats is the read a check makes when it hits reports outside
// the record cache: 64 real OSV reports (every details field the sample
// has) in one GetThreats call through the plugin process.
func BenchmarkGetThreats(b *testing.B) {
	sample := osvSample(b)
	ctx := context.Background()
	st := benchStore(b)
	batch := slices.Clone(sample[:64])
	core.DeriveAll(batch)
	out, err := st.ImportThreats(ctx, core.ImportBatch{Records: batch, Actor: "osv-import"})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(out))
	for i, o := range out {
		ids[i] = o.ThreatID
	}
	for b.Loop() {
		got, err := st.GetThreats(ctx, ids)
		if err != nil || len(got) != len(ids) {
			b.Fatalf("%d reports, %v", len(got), err)
		}
	}
}

// osvSample reads the 300 real OSV reports of the shared sample.
func osvSample(b *testing.B) []core.ImportRecord {
	var sample []core.ImportRecord
	err := osv.Source{}.Read(context.Background(), []string{coretest.Reference(b, "osv-malicious-sample")}, nil, nil,
		func(it core.SourceItem) error {
			if it.Record != nil {
				sample = append(sample, *it.Record)
			}
			return nil
		})
	if err != nil || len(sample) != 300 {
		b.Fatalf("sample: %d records, %v", len(sample), err)
	}
	return sample
}

// BenchmarkImportOSV measures ingestion into SQLite through the plugin
// process, in the batches `threatd import` uses: records cloned from the
// real OSV sample with fresh names, so every record is a new report, each
// batch derived (core.DeriveAll) as the import does before it writes.
func BenchmarkImportOSV(b *testing.B) {
	sample := osvSample(b)
	ctx := context.Background()
	st := benchStore(b)
	const perIter = 5000
	round := 0
	records := 0
	start := time.Now()
	for b.Loop() {
		round++
		batch := make([]core.ImportRecord, 0, 500)
		for i := range perIter {
			r := sample[i%len(sample)]
			base := []rune(r.Threat.ResourceIdentifier)
			name := fmt.Sprintf("%s-bench-%d-%d", string(base[:min(len(base), 50)]), round, i)
			key, err := core.CanonicalKey(core.TypePackage, r.Threat.Registry, name)
			if err != nil {
				b.Fatal(err)
			}
			r.Threat.ResourceIdentifier, r.Threat.CanonicalKey = name, key
			r.Threat.Details.PackageName = name
			r.Threat.UpstreamID = fmt.Sprintf("%s-%d-%d", r.Threat.UpstreamID, round, i)
			batch = append(batch, r)
			if len(batch) == 500 {
				core.DeriveAll(batch)
				out, err := st.ImportThreats(ctx, core.ImportBatch{Records: batch, Actor: "osv-import"})
				if err != nil || out[0].Result != core.ImportCreated {
					b.Fatalf("%v %+v", err, out[0])
				}
				batch = batch[:0]
			}
		}
		records += perIter
	}
	b.ReportMetric(float64(records)/time.Since(start).Seconds(), "records/s")
}

// benchStore starts the real SQLite plugin on a fresh, migrated database.
func benchStore(b *testing.B) *plugins.StorageClient {
	b.Helper()
	host := &plugins.Host{Dir: testbin.PluginDir(b), Log: slog.New(slog.DiscardHandler)}
	dir := b.TempDir()
	st, err := host.StartStorage(context.Background(), "sqlite", plugins.StorageConfig{DSN: filepath.Join(dir, "bench.db"), DataDir: dir, Create: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return st
}
