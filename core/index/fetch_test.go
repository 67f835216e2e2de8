package index_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
)

// gatedStore is a real store whose GetThreats calls are counted and, while
// gate is open (not closed), held: the test decides when the call in flight
// returns. It does not change what the store answers.
type gatedStore struct {
	core.Store
	calls, ids atomic.Int64
	inFlight   atomic.Int64
	maxFlight  atomic.Int64
	gate       chan struct{}
	entered    chan struct{}
}

func (g *gatedStore) GetThreats(ctx context.Context, ids []string) ([]core.Threat, error) {
	g.calls.Add(1)
	g.ids.Add(int64(len(ids)))
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for m := g.maxFlight.Load(); n > m && !g.maxFlight.CompareAndSwap(m, n); m = g.maxFlight.Load() {
	}
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.gate
	return g.Store.GetThreats(ctx, ids)
}

func (g *gatedStore) GetThreat(context.Context, string) (core.Threat, error) {
	return core.Threat{}, errors.New("GetThreat called: record look-ups must go through GetThreats")
}

// Record look-ups that miss the cache while the storage calls in flight are
// at their bound (index.FetchInFlight) wait and go together in the next
// call; concurrent look-ups of one report
// share its fetch; an unknown report is not found; a caller that gives up
// is not held by the others' call.
func TestRecordLookupsCoalesce(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]core.ImportRecord, 200)
	for i := range recs {
		name := fmt.Sprintf("fetch-%03d", i)
		recs[i] = core.ImportRecord{Threat: core.Threat{ReportType: core.TypePackage, ResourceIdentifier: name, Registry: core.RegistryNPM,
			CanonicalKey: "package:npm:" + name, Source: "osv", UpstreamID: "MAL-F-" + name, UpstreamModified: &at, VerifiedAt: &at,
			AllVersions: true, Details: core.Details{ThreatDescription: "Malicious code in " + name, Tags: []string{}}}}
	}
	out, err := st.ImportThreats(ctx, core.ImportBatch{Records: recs, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{Store: st, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	idx := index.New(gs, 1000)
	if err := idx.Load(ctx); err != nil {
		t.Fatal(err)
	}

	// The first look-up goes out alone and is held.
	first := make(chan error, 1)
	go func() {
		_, err := idx.Record(ctx, uuid.MustParse(out[0].ThreatID))
		first <- err
	}()
	<-gs.entered

	// Meanwhile 199 reports (each asked for twice) and an unknown id.
	unknown := uuid.New()
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	for i := 1; i < len(out); i++ {
		for range 2 {
			wg.Go(func() {
				th, err := idx.Record(ctx, uuid.MustParse(out[i].ThreatID))
				if err == nil && (th.ID != out[i].ThreatID || th.CanonicalKey != recs[i].Threat.CanonicalKey) {
					err = fmt.Errorf("report %d: got %s %s", i, th.ID, th.CanonicalKey)
				}
				errs <- err
			})
		}
	}
	wg.Go(func() {
		if _, err := idx.Record(ctx, unknown); !errors.Is(err, core.ErrNotFound) {
			errs <- fmt.Errorf("unknown id: %v", err)
		}
	})
	// A caller that gives up returns at once, the call still held.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := idx.Record(cctx, uuid.MustParse(out[5].ThreatID))
		gaveUp <- err
	}()
	// Wait until every look-up waits: the first, 2 × 199, the unknown id
	// and the one that gives up.
	for idx.Waiters() < 1+2*199+1+1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled look-up: %v", err)
	}
	close(gs.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every id fetched once (199 reports, the unknown id, the first): at
	// most FetchInFlight calls held at once, and everything asked while they
	// were held went out together in one more call.
	c, n := gs.calls.Load(), gs.ids.Load()
	if n != 201 || c > index.FetchInFlight+1 || gs.maxFlight.Load() > index.FetchInFlight {
		t.Fatalf("%d storage calls (at most %d at once) for %d ids, want at most %d calls (%d at once) for 201", c, gs.maxFlight.Load(), n,
			index.FetchInFlight+1, index.FetchInFlight)
	}
	// Now cached: no further call.
	if _, err := idx.Record(ctx, uuid.MustParse(out[7].ThreatID)); err != nil || gs.calls.Load() != c {
		t.Fatalf("cached look-up: %v, %d calls", err, gs.calls.Load())
	}
}
