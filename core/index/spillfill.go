package index

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// FillSpill writes an entry for every indexed report that has none, in
// passes over the index, until ctx ends. It waits for Load. After a pass
// it waits for the follower to ask for one, or for spillRescan: a report
// storage did not return as verified (changed meanwhile) is asked for
// once a pass, not again and again. A failed storage call is retried
// after a second, a failed write after a pause that doubles up to five
// minutes (a full disk; spillhealth.go); hooks hear of both.
func (x *Index) FillSpill(ctx context.Context, hooks SpillHooks) {
	if x.spill == nil {
		return
	}
	started := time.Now()
	for !x.ready.Load() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Whoever else hears of the reports read (hooks.Read) gets their
	// stored indicators too.
	read := x.store.GetThreats
	if hooks.Read != nil {
		read = x.store.GetThreatsWithIOCs
	}
	cursor := 0
	var retry spillRetry
	// The reads of the next spillAhead batches run while this one is
	// rendered and written: storage and the daemon work at once (a fill
	// one call at a time kept each waiting for the other, and one read
	// ahead still left a core idle: docs/performance.md).
	var ahead []*spillRead
	defer func() {
		for _, r := range ahead {
			<-r.done
		}
	}()
	for {
		if x.spill.cur.Load() == nil {
			return // closed
		}
		x.maybeRewriteSpill()
		var r *spillRead
		if len(ahead) > 0 && ahead[0].from == cursor {
			r, ahead = ahead[0], ahead[1:]
		} else {
			for _, a := range ahead {
				<-a.done // a batch tried again: the reads ahead are not the next ones
			}
			ahead = nil
			r = x.readSpillBatch(ctx, cursor, read)
		}
		<-r.done
		if r.err == nil {
			last := r
			if len(ahead) > 0 {
				last = ahead[len(ahead)-1]
			}
			for len(ahead) < spillAhead && !last.wrapped {
				last = x.readSpillBatch(ctx, last.next, read)
				ahead = append(ahead, last)
			}
		}
		err := r.err
		if err == nil {
			if hooks.Read != nil && len(r.ts) > 0 {
				hooks.Read(r.ts)
			}
			err = x.writeEntries(r.ts, r.want)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			pause := x.spillFailed(&retry, err, hooks)
			// A report that cannot be rendered is left without an entry;
			// a failed call to storage or write is tried again.
			var skipped renderError
			if !errors.As(err, &skipped) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
				continue // the same batch again
			}
		} else if len(r.want) > 0 {
			x.spillWrote(&retry, hooks)
		}
		cursor = r.next
		if !r.wrapped {
			continue
		}
		if !x.filledOnce.Load() {
			x.firstFill.Store(time.Since(started).Milliseconds())
			x.filledOnce.Store(true)
			if hooks.Filled != nil {
				hooks.Filled(x.SpillStats())
			}
		}
		// The follower writes the entries of changed reports; a pass now
		// and then catches any it could not.
		select {
		case <-ctx.Done():
			return
		case <-x.spill.wake:
		case <-time.After(spillRescan):
		}
	}
}

// spillAhead is how many batches the fill reads ahead of the one it
// writes.
const spillAhead = 2

// spillRead is one batch of the fill being read from storage: the reports
// without an entry from record index from on (want), and what storage
// returned for them (ts); done is closed once ts and err are set.
type spillRead struct {
	from, next int
	wrapped    bool
	want       map[uuid.UUID]pending
	ts         []core.Threat
	err        error
	done       chan struct{}
}

// readSpillBatch chooses the next batch from record index from and reads
// it from storage with read in the background.
func (x *Index) readSpillBatch(ctx context.Context, from int, read func(context.Context, []string) ([]core.Threat, error)) *spillRead {
	batch, next, wrapped := x.unspilled(from, x.spill.batchSize())
	r := &spillRead{from: from, next: next, wrapped: wrapped, want: make(map[uuid.UUID]pending, len(batch)), done: make(chan struct{})}
	if len(batch) == 0 {
		close(r.done)
		return r
	}
	ids := make([]string, len(batch))
	for i, p := range batch {
		ids[i] = p.id.String()
		r.want[p.id] = p
	}
	go func() {
		defer close(r.done)
		r.ts, r.err = read(ctx, ids)
	}()
	return r
}

// unspilled returns up to n records without an entry, scanning from record
// index from; next is where to go on, wrapped whether the scan reached the
// end (and next is 0).
func (x *Index) unspilled(from, n int) (out []pending, next int, wrapped bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	t := x.byKey
	// Bound the records scanned under the lock as well as those returned.
	stop := min(len(t.recs), from+64*n)
	i := from
	for ; i < stop && len(out) < n; i++ {
		r := &t.recs[i]
		if r.flags&flagLive == 0 || r.spillLen != 0 {
			continue
		}
		// The key is copied: it is used after the lock, when a compact may
		// have freed the chunk it is in.
		out = append(out, pending{key: strings.Clone(t.key(r)), id: r.id, gen: r.gen})
	}
	if i >= len(t.recs) {
		return out, 0, true
	}
	return out, i, false
}
