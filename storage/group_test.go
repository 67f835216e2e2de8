package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// Writes queued while another holds the writer turn run as one group
// transaction: each failing write is rolled back alone (its rows and its
// change-feed entries) and returns its own error; the others commit, in
// queue order; a caller that leaves before its group starts gets its
// context's error and its write never runs.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(SQLite, filepath.Join(t.TempDir(), "group.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var beforeSeq int64
	if err := s.db.NewRaw("SELECT coalesce(max(seq), 0) FROM changes").Scan(ctx, &beforeSeq); err != nil {
		t.Fatal(err)
	}

	const n = 12
	s.writer <- struct{}{} // hold the turn while the writes queue up
	errFail := errors.New("refused")
	var ran sync.Map
	outcomes := make([]error, n)
	var wg sync.WaitGroup
	leaveCtx, leave := context.WithCancel(ctx)
	for i := range n {
		wctx := ctx
		if i == 5 {
			wctx = leaveCtx
		}
		wg.Go(func() {
			outcomes[i] = s.write(wctx, func(ctx context.Context, tx *txn) error {
				ran.Store(i, true)
				now := time.Now().UTC()
				row := userRow{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i), Email: fmt.Sprintf("u%d@example.com", i), Name: "u", Tier: "free", Role: "submitter", CreatedAt: now, UpdatedAt: now}
				if _, err := tx.NewInsert().Model(&row).Exec(ctx); err != nil {
					return err
				}
				tx.record(core.EntityUser, row.ID, "create", now)
				if i%3 == 0 {
					return errFail // after writing: the savepoint must undo the row
				}
				return nil
			})
		})
		// Queue them in order.
		for queued(s) < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	leave()
	for !abandoned(s) {
		time.Sleep(time.Millisecond)
	}
	<-s.writer
	wg.Wait()

	var committed []string
	for i := range n {
		_, didRun := ran.Load(i)
		switch {
		case i == 5:
			if !errors.Is(outcomes[i], context.Canceled) || didRun {
				t.Fatalf("write %d: %v, ran %v; want context.Canceled, not run", i, outcomes[i], didRun)
			}
		case i%3 == 0:
			if !errors.Is(outcomes[i], errFail) {
				t.Fatalf("write %d: %v, want its own error", i, outcomes[i])
			}
		default:
			if outcomes[i] != nil {
				t.Fatalf("write %d: %v", i, outcomes[i])
			}
			committed = append(committed, fmt.Sprintf("00000000-0000-7000-8000-%012d", i))
		}
	}
	var users []string
	if err := s.db.NewRaw("SELECT id FROM users ORDER BY id").Scan(ctx, &users); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(users) != fmt.Sprint(committed) {
		t.Fatalf("users stored %v, want %v", users, committed)
	}
	var feed []string
	if err := s.db.NewRaw("SELECT entity_id FROM changes WHERE seq > ? ORDER BY seq", beforeSeq).Scan(ctx, &feed); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(feed) != fmt.Sprint(committed) {
		t.Fatalf("change feed %v, want %v in queue order", feed, committed)
	}
}

func queued(s *Store) int {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	return len(s.queue.reqs)
}

func abandoned(s *Store) bool {
	s.queue.mu.Lock()
	defer s.queue.mu.Unlock()
	for _, r := range s.queue.reqs {
		if r.state.Load() == reqAbandoned {
			return true
		}
	}
	return false
}
