package index

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// fetchBatch bounds the ids of one coalesced look-up (one GetThreats call).
const fetchBatch = 256

// fetchInFlight bounds the coalesced look-ups in flight at once. One: on a
// CPU-bound machine every extra call in flight means smaller batches and
// more per-call cost (gRPC, statement) per record. 4 in flight measured no
// better on SQLite at a million reports (15.1-18.4k checks/s with 10 % hits
// against 17.2-20.9k with 1, alternating runs on one database).
const fetchInFlight = 1

// fetchTimeout bounds one coalesced look-up: it serves several requests, so
// it cannot take any one request's deadline.
const fetchTimeout = 30 * time.Second

// fetcher coalesces concurrent record look-ups into batched storage calls:
// while fetchInFlight GetThreats calls are in flight, the ids asked for
// meanwhile queue up and go together in the next, and concurrent look-ups
// of one id share a single fetch. Under a harsh mix of hits on uncached records the storage
// plugin sees a few large calls instead of one round trip per request; a
// look-up with nothing in flight goes out at once.
type fetcher struct {
	store core.Store

	mu      sync.Mutex
	waiting map[uuid.UUID][]chan fetched
	queue   []uuid.UUID
	running int // runners, at most fetchInFlight
}

type fetched struct {
	t   core.Threat
	err error
}

func newFetcher(store core.Store) *fetcher {
	return &fetcher{store: store, waiting: make(map[uuid.UUID][]chan fetched)}
}

// get returns the report id, fetching it with whatever else is asked for.
func (f *fetcher) get(ctx context.Context, id uuid.UUID) (core.Threat, error) {
	ch := make(chan fetched, 1)
	f.mu.Lock()
	if _, queued := f.waiting[id]; !queued {
		f.queue = append(f.queue, id)
	}
	f.waiting[id] = append(f.waiting[id], ch)
	if f.running < fetchInFlight && len(f.queue) > 0 {
		f.running++
		go f.run()
	}
	f.mu.Unlock()
	select {
	case r := <-ch:
		return r.t, r.err
	case <-ctx.Done():
		// The fetch goes on for the others; ch is buffered.
		return core.Threat{}, ctx.Err()
	}
}

// run issues batched calls until the queue is empty.
func (f *fetcher) run() {
	for {
		f.mu.Lock()
		if len(f.queue) == 0 {
			f.running--
			f.mu.Unlock()
			return
		}
		n := min(len(f.queue), fetchBatch)
		ids := make([]string, n)
		batch := make([]uuid.UUID, n)
		copy(batch, f.queue)
		f.queue = f.queue[n:]
		if len(f.queue) == 0 {
			f.queue = nil
		}
		f.mu.Unlock()

		for i, id := range batch {
			ids[i] = id.String()
		}
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		ts, err := f.store.GetThreats(ctx, ids)
		cancel()
		found := make(map[uuid.UUID]core.Threat, len(ts))
		for _, t := range ts {
			if id, perr := uuid.Parse(t.ID); perr == nil {
				found[id] = t
			}
		}

		f.mu.Lock()
		for _, id := range batch {
			r := fetched{err: err}
			if err == nil {
				var ok bool
				if r.t, ok = found[id]; !ok {
					r.err = core.NotFound("threat", id.String())
				}
			}
			for _, ch := range f.waiting[id] {
				ch <- r
			}
			delete(f.waiting, id)
		}
		f.mu.Unlock()
	}
}
