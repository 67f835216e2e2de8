package feed_test

import (
	"context"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/storage/storagetest"
)

// heldStore is a real SQLite store whose AddUsage waits until released,
// so that a read can run while a flush is on its way to storage.
type heldStore struct {
	core.OperationsStore
	entered, release chan struct{}
}

func (s heldStore) AddUsage(ctx context.Context, deltas []core.UsageDelta) error {
	close(s.entered)
	<-s.release
	return s.OperationsStore.AddUsage(ctx, deltas)
}

// A token's paid calls read while a flush writes them are neither missed
// (taken from the pending counts, not yet in storage) nor counted twice.
func TestUsageTodayDuringFlush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	held := heldStore{OperationsStore: storagetest.OpenSQLite(t), entered: make(chan struct{}), release: make(chan struct{})}
	u := feed.NewUsage(held)
	for range 3 {
		u.Count("tok-1", "/threat-feed")
	}
	flushed := make(chan error, 1)
	go func() { flushed <- u.Flush(ctx) }()
	<-held.entered
	read := make(chan map[string]int64, 1)
	go func() {
		got, err := u.Today(ctx, "tok-1")
		if err != nil {
			t.Error(err)
		}
		read <- got
	}()
	select {
	case got := <-read:
		t.Fatalf("Today answered %v while the flush of 3 calls was on its way to storage", got)
	case <-time.After(200 * time.Millisecond):
	}
	close(held.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if got := <-read; got["/threat-feed"] != 3 {
		t.Fatalf("paid calls during a flush: %v, want 3", got)
	}
	u.Count("tok-1", "/threat-feed")
	if got, err := u.Today(ctx, "tok-1"); err != nil || got["/threat-feed"] != 4 {
		t.Fatalf("after the flush and one more call: %v %v, want 4", got, err)
	}
}
