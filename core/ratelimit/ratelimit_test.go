package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestFixedWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 10, 0, time.UTC)
	l := NewWithClock(time.Minute, func() time.Time { return now })
	for i := 1; i <= 3; i++ {
		r := l.Take("k", 3, 1)
		if !r.Allowed || r.Remaining != 3-i || r.Limit != 3 {
			t.Fatalf("take %d: %+v", i, r)
		}
		if r.ResetSeconds() != 50 {
			t.Fatalf("reset = %d, want 50", r.ResetSeconds())
		}
	}
	if r := l.Take("k", 3, 1); r.Allowed || r.Remaining != 0 {
		t.Fatalf("4th take allowed: %+v", r)
	}
	if r := l.Take("other", 3, 1); !r.Allowed {
		t.Fatal("keys are not independent")
	}
	now = now.Add(50 * time.Second) // next window
	if r := l.Take("k", 3, 1); !r.Allowed || r.Remaining != 2 || r.ResetSeconds() != 60 {
		t.Fatalf("new window: %+v reset %d", r, r.ResetSeconds())
	}
}

func TestCostAndUnlimited(t *testing.T) {
	l := New(time.Minute)
	if r := l.Take("k", 10, 7); !r.Allowed || r.Remaining != 3 {
		t.Fatalf("%+v", r)
	}
	if r := l.Take("k", 10, 4); r.Allowed || r.Remaining != 3 {
		t.Fatalf("over-cost request allowed or counted: %+v", r)
	}
	for range 1000 {
		if !l.Take("u", 0, 1).Allowed {
			t.Fatal("limit 0 must mean unlimited")
		}
	}
}

func TestConcurrentExact(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	l := NewWithClock(time.Minute, func() time.Time { return now })
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 20 {
				if l.Take("k", 100, 1).Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 100 {
		t.Fatalf("allowed %d of 1000 concurrent requests, want exactly 100", allowed.Load())
	}
}
