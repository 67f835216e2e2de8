package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bun"
)

// Group commit on SQLite. SQLite has one writer at a time, so write
// transactions queue for the writer turn; each then paid its own BEGIN,
// COMMIT and WAL frames (a submission touches a dozen pages: the reports,
// details, events and change tables and their indexes), and the turn passed
// from goroutine to goroutine once per write. Instead, the goroutine that
// gets the turn runs every write queued meanwhile (up to maxGroup) in one
// transaction, each inside its own savepoint: a write that fails is rolled
// back to its savepoint alone and returns its error as before, and the
// others commit together. The order of the writes in the group is their
// queue order, and their change-feed entries follow it.

// maxGroup bounds the writes of one group transaction.
const maxGroup = 32

// writeReq is one write waiting in the queue.
type writeReq struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx *txn) error
	state atomic.Int32 // reqQueued, then reqTaken by a group or reqAbandoned by its caller
	done  chan error   // the write's outcome, once its group has committed or failed
}

const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type writeQueue struct {
	mu   sync.Mutex
	reqs []*writeReq
}

func (q *writeQueue) push(r *writeReq) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	q.mu.Unlock()
}

// take removes up to n queued requests, skipping abandoned ones, and marks
// them taken.
func (q *writeQueue) take(n int) []*writeReq {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*writeReq
	i := 0
	for ; i < len(q.reqs) && len(out) < n; i++ {
		if r := q.reqs[i]; r.state.CompareAndSwap(reqQueued, reqTaken) {
			out = append(out, r)
		}
	}
	q.reqs = append(q.reqs[:0], q.reqs[i:]...)
	return out
}

// writeGrouped queues fn and waits for its outcome, running a group itself
// whenever it gets the writer turn first.
func (s *Store) writeGrouped(ctx context.Context, fn func(ctx context.Context, tx *txn) error) error {
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.queue.push(r)
	for {
		select {
		case err := <-r.done:
			return err
		case s.writer <- struct{}{}:
			s.runGroup(s.queue.take(maxGroup))
			<-s.writer
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
				return ctx.Err()
			}
			// A group has taken it: its outcome decides.
			return <-r.done
		}
	}
}

// runGroup runs reqs in one transaction and hands each its outcome. The
// transaction is not tied to any one caller's context: a caller that leaves
// must not roll back the others' writes.
func (s *Store) runGroup(reqs []*writeReq) {
	if len(reqs) == 0 {
		return
	}
	outcome := make([]error, len(reqs))
	err := s.db.RunInTx(context.WithoutCancel(reqs[0].ctx), nil, func(gctx context.Context, btx bun.Tx) error {
		tx := &txn{Tx: btx}
		if len(reqs) == 1 {
			// Alone: the transaction is the write's, as without grouping.
			if outcome[0] = reqs[0].fn(reqs[0].ctx, tx); outcome[0] != nil {
				return errRolledBack
			}
			return s.appendChanges(gctx, tx)
		}
		for i, r := range reqs {
			if outcome[i] = r.ctx.Err(); outcome[i] != nil {
				continue
			}
			if _, err := btx.ExecContext(gctx, "SAVEPOINT w"); err != nil {
				return err
			}
			// Not the caller's context: SQLite answers an interrupted write
			// by rolling back the whole transaction, the others' writes too.
			mark, feedMark, objMark, unmappedMark := len(tx.changes), len(tx.feed), len(tx.published), len(tx.unmapped)
			if outcome[i] = r.fn(context.WithoutCancel(r.ctx), tx); outcome[i] != nil {
				tx.changes, tx.feed = tx.changes[:mark], tx.feed[:feedMark]
				tx.published, tx.unmapped = tx.published[:objMark], tx.unmapped[:unmappedMark]
				if _, err := btx.ExecContext(gctx, "ROLLBACK TO SAVEPOINT w"); err != nil {
					return fmt.Errorf("roll back a failed write: %w", err)
				}
			}
			if _, err := btx.ExecContext(gctx, "RELEASE SAVEPOINT w"); err != nil {
				return err
			}
		}
		return s.appendChanges(gctx, tx)
	})
	for i, r := range reqs {
		switch {
		case err == nil || errors.Is(err, errRolledBack):
			r.done <- outcome[i]
		case outcome[i] != nil:
			// Failed on its own; the group's failure changes nothing for it.
			r.done <- outcome[i]
		default:
			r.done <- err
		}
	}
}

// errRolledBack rolls back the transaction of a lone write that failed.
var errRolledBack = errors.New("write failed")
