package osv

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threatd/threatd/core"
)

// Bounds of a window: the results asked about in one known query. The
// source waits for each answer; with the heads cached, windows of 256
// left the machine a fifth idle on those round trips. 1,000 is what one
// look-up in storage takes (core.MaxImportedVersions) when each record
// names one package, as nearly all do.
const (
	windowRecords = 1000
	windowBytes   = 8 << 20
)

// headMode tells workers whether to read heads first. Off while most heads
// of a window are new; then one window in probeEvery reads heads again.
type headMode struct {
	on  atomic.Bool
	off int
}

const probeEvery = 16

// observe takes a window's hit count: heads stay on when at least half of
// them were known.
func (m *headMode) observe(asked, hits int) {
	switch {
	case asked > 0:
		m.on.Store(2*hits >= asked)
		m.off = 0
	case !m.on.Load():
		if m.off++; m.off >= probeEvery {
			m.on.Store(true)
			m.off = 0
		}
	}
}

// window collects results in input order, asks known about their heads in
// one query, decodes the rest in parallel and yields them all in order.
type window struct {
	known   core.Known
	heads   *headMode
	now     func() time.Time
	fn      func(core.SourceItem) error
	limits  Limits
	results []result
	bytes   int
	total   int
	done    int
}

func (w *window) flush(ctx context.Context) error {
	var asked []core.UpstreamVersion
	var at []int
	for i, r := range w.results {
		if r.head != nil {
			asked, at = append(asked, *r.head), append(at, i)
		}
	}
	unchanged := make([]bool, len(w.results))
	hits := 0
	if len(asked) > 0 {
		ans, err := w.known(ctx, asked)
		if err != nil {
			return err
		}
		for k, i := range at {
			if k < len(ans) && ans[k] {
				unchanged[i] = true
				hits++
			}
		}
	}
	if w.known != nil {
		w.heads.observe(len(asked), hits)
	}
	var todo []int
	for i, r := range w.results {
		if r.head != nil && !unchanged[i] {
			todo = append(todo, i)
		}
	}
	now := w.now()
	parallel(len(todo), func(k int) {
		r := &w.results[todo[k]]
		if r.raw == nil && r.stored != nil {
			// Its head came from the cache: the entry is read now.
			r.raw, r.err = readAll(input{size: r.entry.size, open: fromStored(r.entry, r.stored)})
			if r.err != nil {
				return
			}
		}
		r.recs, r.err = decode(r.raw, now, w.limits)
	})
	// A run of unchanged records is yielded as one count, then its
	// progress: a million of them were two million items to send and
	// count one by one.
	pending := 0
	settle := func() error {
		if pending == 0 {
			return nil
		}
		n := pending
		pending = 0
		if err := w.fn(core.SourceItem{Unchanged: n}); err != nil {
			return err
		}
		return w.fn(core.SourceItem{FilesDone: w.done, FilesTotal: max(w.total, w.done)})
	}
	for i, r := range w.results {
		if err := ctx.Err(); err != nil {
			return err
		}
		if unchanged[i] {
			pending += len(r.head.IDs)
			if r.cache != nil && r.cached != nil {
				r.cache.add(r.digest, r.cached)
			}
			w.done++
			continue
		}
		if err := settle(); err != nil {
			return err
		}
		switch {
		case r.err != nil:
			if err := w.fn(core.SourceItem{Skipped: r.name, Reason: r.err.Error()}); err != nil {
				return err
			}
			if !r.input {
				continue
			}
		default:
			for j := range r.recs {
				if err := w.fn(core.SourceItem{Record: &r.recs[j]}); err != nil {
					return err
				}
			}
		}
		if r.cache != nil && r.cached != nil {
			r.cache.add(r.digest, r.cached)
		}
		w.done++
		if err := w.fn(core.SourceItem{FilesDone: w.done, FilesTotal: max(w.total, w.done)}); err != nil {
			return err
		}
	}
	if err := settle(); err != nil {
		return err
	}
	clear(w.results)
	w.results, w.bytes = w.results[:0], 0
	return nil
}

// parallel calls f(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}
