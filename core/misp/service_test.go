package misp_test

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/misp"
	pmisp "github.com/threatd/threatd/plugins/misp"
	"github.com/threatd/threatd/storage/storagetest"
)

// inProcess renders events with the MISP exporter's own code, in this
// process (the plugin process is the end-to-end tests').
type inProcess struct{}

func (inProcess) Export(_ context.Context, _ string, req core.ExportRequest, w core.ExportWriter) error {
	r, err := pmisp.RequestOf(req.Query)
	if err != nil {
		return err
	}
	if err := w.Start("application/json"); err != nil {
		return err
	}
	return pmisp.Write(w, r, func(yield func(core.ExportRecord) bool) {
		_ = req.ForEach(func(rec core.ExportRecord) error {
			if !yield(rec) {
				return context.Canceled
			}
			return nil
		})
	})
}

// countingStore counts the report pages read through it.
type countingStore struct {
	core.Store
	pages atomic.Int64
}

func (c *countingStore) QueryThreats(ctx context.Context, q core.ThreatQuery) ([]core.Threat, error) {
	c.pages.Add(1)
	return c.Store.QueryThreats(ctx, q)
}

// TestHashesFromFiles: with HashDir, hashes.csv is written once from
// every report and then read from its files: asking again reads no report;
// a verification re-reads only its own day. It equals, every time, the
// file walked from every report.
func TestHashesFromFiles(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	reporter := storagetest.NewReporter(t, st, "hashes@example.com")
	verify := func(name string) { reporter.Verified(t, "npm", name, "") }
	for _, n := range []string{"hash-a", "hash-b", "hash-c"} {
		verify(n)
	}
	cs := &countingStore{Store: st}
	svc := &misp.Service{Store: cs, Exporters: inProcess{}, Name: "threatd", Site: "https://threatd.example", HashDir: filepath.Join(t.TempDir(), "hashes")}
	walked := &misp.Service{Store: st, Exporters: inProcess{}, Name: "threatd", Site: "https://threatd.example"}
	same := func() []byte {
		t.Helper()
		var got, want bytes.Buffer
		if err := svc.WriteHashes(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if err := walked.WriteHashes(ctx, &want); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || got.Len() == 0 {
			t.Fatalf("hashes.csv from files:\n%s\nwalked from every report:\n%s", got.String(), want.String())
		}
		return got.Bytes()
	}
	first := same()
	built := cs.pages.Load()
	if built == 0 {
		t.Fatal("the first hashes.csv read no report")
	}
	for range 3 {
		same()
	}
	if n := cs.pages.Load(); n != built {
		t.Fatalf("asking again read %d report pages: hashes.csv walked the reports", n-built)
	}
	verify("hash-d")
	if after := same(); bytes.Equal(after, first) {
		t.Fatal("a verification did not reach hashes.csv")
	}
	if n := cs.pages.Load() - built; n != 1 {
		t.Fatalf("a verification re-read %d report pages, want its day's one", n)
	}
}
