// Package ratelimit counts requests in fixed windows aligned to the clock
// (every minute on the minute by default), as the RateLimit-* headers of
// docs/api/README.md ("Rate limits") describe them: a limit, what remains of it, and the seconds
// until the window resets.
package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

const shards = 64

// Limiter is a concurrency-safe fixed-window counter keyed by string.
type Limiter struct {
	window time.Duration
	now    func() time.Time
	seed   maphash.Seed
	shards [shards]shard
}

type shard struct {
	mu     sync.Mutex
	start  int64 // window index the counts belong to
	counts map[string]int
}

// Result is the outcome of one Take.
type Result struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is the time until the current window ends.
	Reset time.Duration
}

// New returns a limiter with the given window length.
func New(window time.Duration) *Limiter {
	return NewWithClock(window, time.Now)
}

// NewWithClock returns a limiter reading time from now (for tests).
func NewWithClock(window time.Duration, now func() time.Time) *Limiter {
	l := &Limiter{window: window, now: now, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].counts = make(map[string]int)
	}
	return l
}

// Take counts cost requests against key under limit and reports whether they
// are allowed. A limit of 0 or less means unlimited. Requests over the limit
// are not counted, so a client that backs off regains its budget next window.
// A negative cost gives back requests taken earlier in the window (a
// reservation that turned out not to count).
func (l *Limiter) Take(key string, limit, cost int) Result {
	now := l.now()
	idx := now.UnixNano() / int64(l.window)
	reset := time.Duration((idx+1)*int64(l.window) - now.UnixNano())
	if limit <= 0 {
		return Result{Allowed: true, Limit: 0, Remaining: 0, Reset: reset}
	}
	s := &l.shards[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start != idx {
		// A new window: every count in this shard belonged to the old one.
		s.start = idx
		clear(s.counts)
	}
	used := s.counts[key]
	if cost < 0 {
		// A refund of requests taken before (never below zero).
		s.counts[key] = max(used+cost, 0)
		return Result{Allowed: true, Limit: limit, Remaining: limit - s.counts[key], Reset: reset}
	}
	if used+cost > limit {
		return Result{Allowed: false, Limit: limit, Remaining: max(0, limit-used), Reset: reset}
	}
	used += cost
	s.counts[key] = used
	return Result{Allowed: true, Limit: limit, Remaining: limit - used, Reset: reset}
}

// ResetSeconds is Reset rounded up to whole seconds, at least 1, as the
// Retry-After and RateLimit-Reset headers want it.
func (r Result) ResetSeconds() int {
	s := int((r.Reset + time.Second - 1) / time.Second)
	return max(s, 1)
}
