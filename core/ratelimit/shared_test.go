package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// memoryCounters stands in for storage: the shared table of counters.
type memoryCounters struct {
	mu sync.Mutex
	m  map[int64]map[string]int64
}

func (c *memoryCounters) sync(_ context.Context, w int64, d map[string]int64) (map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[int64]map[string]int64{}
	}
	if c.m[w] == nil {
		c.m[w] = map[string]int64{}
	}
	for k, v := range d {
		c.m[w][k] += v
	}
	out := map[string]int64{}
	for k, v := range c.m[w] {
		out[k] = v
	}
	return out, nil
}

func TestSharedAcrossDaemons(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC)
	clock := func() time.Time { return now }
	var store memoryCounters
	a, b := NewShared(time.Minute, store.sync), NewShared(time.Minute, store.sync)
	a.now, b.now = clock, clock
	ctx := context.Background()
	allowed := 0
	for range 6 {
		if a.Take("k", 10, 1).Allowed {
			allowed++
		}
	}
	a.Sync(ctx)
	b.Sync(ctx)
	// b now knows a's 6: it allows 4 more, not 10.
	for range 10 {
		if b.Take("k", 10, 1).Allowed {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("allowed %d across two synced daemons, want 10", allowed)
	}
	b.Sync(ctx)
	a.Sync(ctx)
	if r := a.Take("k", 10, 1); r.Allowed || r.Remaining != 0 {
		t.Fatalf("a after sync: %+v", r)
	}
	// A new window starts from zero.
	now = now.Add(time.Minute)
	if r := a.Take("k", 10, 1); !r.Allowed || r.Remaining != 9 {
		t.Fatalf("new window: %+v", r)
	}
}
