package core_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage/storagetest"
)

// genSource yields n package records (and one skipped input), stopping
// when the context ends; produced counts the records it handed over. With
// ask, it asks known about each window of 250 records first and yields
// those known as unchanged, as a source that reads heads does; newer makes
// every other record modified a day later.
type genSource struct {
	n          int
	ask, newer bool
	// from is the first record's number; clean leaves the skipped input
	// out.
	from     int
	clean    bool
	produced atomic.Int64
}

func (g *genSource) Read(ctx context.Context, _ []string, _ map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !g.clean {
		if err := fn(core.SourceItem{Skipped: "broken.json", Reason: "not JSON"}); err != nil {
			return err
		}
	}
	var unchanged []bool
	for i := g.from; i < g.from+g.n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := fmt.Sprintf("ingest-%05d", i)
		modified := at
		if g.newer && i%2 == 1 {
			modified = at.Add(24 * time.Hour)
		}
		if g.ask && (i-g.from)%250 == 0 {
			var heads []core.UpstreamVersion
			for j := i; j < min(i+250, g.from+g.n); j++ {
				m := at
				if g.newer && j%2 == 1 {
					m = at.Add(24 * time.Hour)
				}
				heads = append(heads, core.UpstreamVersion{Source: "gen", IDs: []string{fmt.Sprintf("GEN-ingest-%05d", j)}, Modified: m})
			}
			var err error
			if unchanged, err = known(ctx, heads); err != nil {
				return err
			}
		}
		if g.ask && unchanged[(i-g.from)%250] {
			if err := fn(core.SourceItem{Unchanged: 1}); err != nil {
				return err
			}
			continue
		}
		rec := core.ImportRecord{Threat: core.Threat{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i), ReportType: core.TypePackage,
			ResourceIdentifier: name, Registry: core.RegistryNPM, CanonicalKey: "package:npm:" + name, Source: "gen",
			UpstreamID: "GEN-" + name, UpstreamModified: &modified, VerifiedAt: &at, AllVersions: true, CreatedAt: at, UpdatedAt: at,
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

func (f *failingStore) ImportThreats(ctx context.Context, b core.ImportBatch) ([]core.ImportOutcome, error) {
	f.calls++
	if f.calls >= f.failAt {
		return nil, errDiskFull
	}
	return f.Store.ImportThreats(ctx, b)
}

// Batches are written in order by a writer that overlaps the reading; every
// outcome and skip is counted, and a second run finds everything unchanged.
func TestIngestCountsEveryOutcome(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	src := &genSource{n: 1234}
	sum, err := core.Ingest(ctx, st, src, "gen", nil, core.ImportOptions{}, nil)
	if err != nil || sum.Counts[core.ImportCreated] != 1234 || sum.Counts[core.ImportSkipped] != 1 || len(sum.Skipped) != 1 {
		t.Fatalf("first run: %+v %v", sum.Counts, err)
	}
	sum, err = core.Ingest(ctx, st, &genSource{n: 1234}, "gen", nil, core.ImportOptions{}, nil)
	if err != nil || sum.Counts[core.ImportUnchanged] != 1234 || sum.Counts[core.ImportCreated] != 0 {
		t.Fatalf("second run: %+v %v", sum.Counts, err)
	}
	if s, _ := st.Stats(ctx); s.Threats != 1234 {
		t.Fatalf("%d reports stored", s.Threats)
	}

	// A source that asks the store first: what is known at its version is
	// never handed over, what is newer is, and is applied.
	ask := &genSource{n: 1234, ask: true}
	sum, err = core.Ingest(ctx, st, ask, "gen", nil, core.ImportOptions{}, nil)
	if err != nil || sum.Counts[core.ImportUnchanged] != 1234 || ask.produced.Load() != 0 {
		t.Fatalf("asking run: %+v %v, %d records handed over", sum.Counts, err, ask.produced.Load())
	}
	newer := &genSource{n: 1234, ask: true, newer: true}
	sum, err = core.Ingest(ctx, st, newer, "gen", nil, core.ImportOptions{}, nil)
	if err != nil || sum.Counts[core.ImportUnchanged] != 617 || sum.Counts[core.ImportUpdated] != 617 || newer.produced.Load() != 617 {
		t.Fatalf("newer run: %+v %v, %d records handed over", sum.Counts, err, newer.produced.Load())
	}
}

// StoreKnown answers from the store's imported versions: known when every
// upstream id of a record is imported at its modified time or a newer one,
// for that source; in calls of at most MaxImportedVersions ids.
func TestStoreKnown(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	const n = 2500
	if _, err := core.Ingest(ctx, st, &genSource{n: n}, "gen", nil, core.ImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := func(i int) string { return fmt.Sprintf("GEN-ingest-%05d", i) }
	var recs []core.UpstreamVersion
	var want []bool
	add := func(v core.UpstreamVersion, known bool) { recs, want = append(recs, v), append(want, known) }
	for i := range n { // more ids than one call takes
		add(core.UpstreamVersion{Source: "gen", IDs: []string{id(i)}, Modified: at}, true)
	}
	add(core.UpstreamVersion{Source: "gen", IDs: []string{id(1)}, Modified: at.Add(-time.Hour)}, true) // older upstream
	add(core.UpstreamVersion{Source: "gen", IDs: []string{id(2)}, Modified: at.Add(time.Nanosecond)}, false)
	add(core.UpstreamVersion{Source: "gen", IDs: []string{id(3), id(4)}, Modified: at}, true)
	add(core.UpstreamVersion{Source: "gen", IDs: []string{id(5), "GEN-new"}, Modified: at}, false)
	add(core.UpstreamVersion{Source: "other", IDs: []string{id(6)}, Modified: at}, false)
	add(core.UpstreamVersion{Source: "gen", Modified: at}, false) // names nothing
	got, err := core.StoreKnown(st)(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("record %d %+v: known %v, want %v", i, recs[i], got[i], want[i])
			}
		}
		t.Fatalf("%d answers for %d records", len(got), len(want))
	}
	if _, err := st.ImportedVersions(ctx, core.VersionQuery{Source: "gen", IDs: make([]string, core.MaxImportedVersions+1)}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("over the bound: %v", err)
	}
}

// A storage failure ends the run with that error (not the source's
// cancellation), stops the source, and keeps the batches written before it.
func TestIngestStopsOnStorageFailure(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	src := &genSource{n: 100_000}
	_, err := core.Ingest(ctx, &failingStore{Store: st, failAt: 3}, src, "gen", nil, core.ImportOptions{}, nil)
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("err = %v, want the storage failure", err)
	}
	if n := src.produced.Load(); n >= 100_000 {
		t.Fatalf("the source read all %d records after storage failed", n)
	}
	if s, _ := st.Stats(ctx); s.Threats != 2000 {
		t.Fatalf("%d reports stored, want the 2 batches of 1,000 written before the failure", s.Threats)
	}
}

// A rolling-window export holds at most MaxWindowRecords reports: a window
// with more is refused whole with a 400 naming since and what to do (it
// was cut to the first 10,000, which looked complete); the all selection
// streams every one.
func TestWindowSelectionRefusesRatherThanCuts(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	n := core.MaxWindowRecords + 1
	if sum, err := core.Ingest(ctx, st, &genSource{n: n}, "gen", nil, core.ImportOptions{}, nil); err != nil || sum.Counts[core.ImportCreated] != n {
		t.Fatalf("import: %+v %v", sum.Counts, err)
	}
	sel := core.NewSelections(st)
	_, err := sel.Window(ctx, "", "1", "")
	var fe *core.FieldError
	if !errors.As(err, &fe) || fe.Field != "since" || !strings.Contains(fe.Message, "more than 10000 reports") || !strings.Contains(fe.Message, "GET /threat-feed") {
		t.Fatalf("a window of %d reports: %v", n, err)
	}
	var all int
	run, err := sel.All(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(func(core.Threat) error { all++; return nil }); err != nil || all != n {
		t.Fatalf("the all selection: %d reports, %v; want %d", all, err, n)
	}
}

// Every report is attributed to the source user, verified or pending by
// trust; --full withdraws the source's live reports the files did not
// list (asked of Known or read), in pages, and nothing when an input was
// skipped without an upstream id; a second --full run withdraws nothing.
func TestIngestTrustAndFull(t *testing.T) {
	ctx := context.Background()
	st := storagetest.OpenSQLite(t)
	if _, err := core.Ingest(ctx, st, &genSource{n: 2600, clean: true}, "gen", nil, core.ImportOptions{Trust: "maybe"}, nil); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("trust maybe: %v", err)
	}
	sum, err := core.Ingest(ctx, st, &genSource{n: 2600, clean: true}, "gen", nil, core.ImportOptions{}, nil)
	if err != nil || sum.Counts[core.ImportCreated] != 2600 {
		t.Fatalf("first run: %+v %v", sum.Counts, err)
	}
	user, err := st.UserByEmail(ctx, core.SourceUserEmail("gen"))
	if err != nil || user.Name != "gen" || user.PasswordHash != "" {
		t.Fatalf("the source user: %+v %v", user, err)
	}
	pending, err := core.Ingest(ctx, st, &genSource{n: 10, from: 5000, clean: true}, "gen", nil, core.ImportOptions{Trust: core.TrustPending}, nil)
	if err != nil || pending.Counts[core.ImportCreated] != 10 {
		t.Fatalf("pending run: %+v %v", pending.Counts, err)
	}
	if l, err := st.ListPending(ctx, core.PendingQuery{Limit: 20}); err != nil || l.Total != 10 || l.Threats[0].SubmitterID != user.ID {
		t.Fatalf("the review queue after a pending import: %+v %v", l.Total, err)
	}
	live := func() int {
		n := 0
		for after := ""; ; {
			ids, err := st.ImportedIDs(ctx, core.ImportedIDQuery{Source: "gen", After: after, Limit: core.MaxImportedVersions})
			if err != nil {
				t.Fatal(err)
			}
			n += len(ids)
			if len(ids) < core.MaxImportedVersions {
				return n
			}
			after = ids[len(ids)-1]
		}
	}
	// An input skipped without an id: nothing withdrawn, and why.
	sum, err = core.Ingest(ctx, st, &genSource{n: 100, ask: true}, "gen", nil, core.ImportOptions{Full: true}, nil)
	if err != nil || sum.Counts[core.ImportWithdrawn] != 0 || !strings.Contains(sum.FullRefused, "1 input was skipped without an upstream id") || live() != 2610 {
		t.Fatalf("full run with a skipped input: %+v %q %v", sum.Counts, sum.FullRefused, err)
	}
	// Records 300..2299 listed (asked of Known: unchanged), the rest not:
	// 300 + 300 + the 10 pending withdrawn.
	sum, err = core.Ingest(ctx, st, &genSource{n: 2000, from: 300, ask: true, clean: true}, "gen", nil, core.ImportOptions{Full: true}, nil)
	if err != nil || sum.Counts[core.ImportWithdrawn] != 610 || sum.Counts[core.ImportUnchanged] != 2000 || sum.FullRefused != "" || live() != 2000 {
		t.Fatalf("full run: %+v %q %v, %d live", sum.Counts, sum.FullRefused, err, live())
	}
	sum, err = core.Ingest(ctx, st, &genSource{n: 2000, from: 300, ask: true, clean: true}, "gen", nil, core.ImportOptions{Full: true}, nil)
	if err != nil || sum.Counts[core.ImportWithdrawn] != 0 || sum.Counts[core.ImportUnchanged] != 2000 {
		t.Fatalf("second full run: %+v %v", sum.Counts, err)
	}
	// Another source's reports are not this source's to withdraw.
	if _, err := core.Ingest(ctx, st, &genSource{n: 0, clean: true}, "other", nil, core.ImportOptions{Full: true}, nil); err != nil || live() != 2000 {
		t.Fatalf("a full run of another source: %v, %d live", err, live())
	}
}
