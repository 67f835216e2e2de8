package core_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage/storagetest"
)

// genSource yields n package records (and one skipped input), stopping
// when the context ends; produced counts what it handed over.
type genSource struct {
	n        int
	produced atomic.Int64
}

func (g *genSource) Read(ctx context.Context, _ []string, _ map[string]string, fn func(core.SourceItem) error) error {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := fn(core.SourceItem{Skipped: "broken.json", Reason: "not JSON"}); err != nil {
		return err
	}
	for i := range g.n {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := fmt.Sprintf("ingest-%05d", i)
		rec := core.ImportRecord{Threat: core.Threat{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i), ReportType: core.TypePackage,
			ResourceIdentifier: name, Registry: core.RegistryNPM, CanonicalKey: "package:npm:" + name, Source: "gen",
			UpstreamID: "GEN-" + name, UpstreamModified: &at, VerifiedAt: &at, AllVersions: true, CreatedAt: at, UpdatedAt: at,
			Details: core.Details{ThreatDescription: "Malicious code in " + name, Tags: []string{}}}}
		if err := fn(core.SourceItem{Record: &rec}); err != nil {
			return err
		}
		g.produced.Add(1)
	}
	return nil
}

// failingStore is a real store whose ImportThreats fails from call failAt on.
type failingStore struct {
	core.Store
	calls, failAt int
}

var errDiskFull = errors.New("disk full")

func (f *failingStore) ImportThreats(ctx context.Context, recs []core.ImportRecord, actor string) ([]core.ImportOutcome, error) {
	f.calls++
	if f.calls >= f.failAt {
		return nil, errDiskFull
	}
	return f.Store.ImportThreats(ctx, recs, actor)
}

// Batches are written in order by a writer that overlaps the reading; every
// outcome and skip is counted, and a second run finds everything unchanged.
func TestIngestCountsEveryOutcome(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	src := &genSource{n: 1234}
	sum, err := core.Ingest(ctx, st, src, "gen", nil, nil, nil)
	if err != nil || sum.Counts[core.ImportCreated] != 1234 || sum.Counts[core.ImportSkipped] != 1 || len(sum.Skipped) != 1 {
		t.Fatalf("first run: %+v %v", sum.Counts, err)
	}
	sum, err = core.Ingest(ctx, st, &genSource{n: 1234}, "gen", nil, nil, nil)
	if err != nil || sum.Counts[core.ImportUnchanged] != 1234 || sum.Counts[core.ImportCreated] != 0 {
		t.Fatalf("second run: %+v %v", sum.Counts, err)
	}
	if s, _ := st.Stats(ctx); s.Threats != 1234 {
		t.Fatalf("%d reports stored", s.Threats)
	}
}

// A storage failure ends the run with that error (not the source's
// cancellation), stops the source, and keeps the batches written before it.
func TestIngestStopsOnStorageFailure(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	src := &genSource{n: 100_000}
	_, err := core.Ingest(ctx, &failingStore{Store: st, failAt: 3}, src, "gen", nil, nil, nil)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("err = %v, want the storage failure", err)
	}
	if n := src.produced.Load(); n >= 100_000 {
		t.Fatalf("the source read all %d records after storage failed", n)
	}
	if s, _ := st.Stats(ctx); s.Threats != 1000 {
		t.Fatalf("%d reports stored, want the 2 batches of 500 written before the failure", s.Threats)
	}
}
