package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Taker counts requests against limits: the in-memory Limiter or Shared.
type Taker interface {
	Take(key string, limit, cost int) Result
}

// SyncFunc adds deltas to the shared counters of window (the window's index
// since the Unix epoch) and returns the totals of every key counted in it.
type SyncFunc func(ctx context.Context, window int64, deltas map[string]int64) (map[string]int64, error)

// Shared is a fixed-window limiter whose counts are shared by several
// daemons through storage. Requests are decided from memory — the totals of
// the last sync plus this daemon's own unsynced requests — and a background
// loop pushes local counts and pulls the totals every sync interval, so no
// storage call sits on a request. Overshoot is bounded: another daemon's
// requests become visible here within two sync intervals, so a key can exceed
// its limit by at most what it sends to the other daemons in that time.
type Shared struct {
	window time.Duration
	now    func() time.Time
	sync   SyncFunc

	mu     sync.Mutex
	idx    int64
	global map[string]int64 // totals at the last sync
	local  map[string]int64 // this daemon's requests not yet pushed
}

// NewShared returns a shared limiter over sync.
func NewShared(window time.Duration, sync SyncFunc) *Shared {
	return &Shared{window: window, now: time.Now, sync: sync, global: map[string]int64{}, local: map[string]int64{}}
}

// Take decides from memory; see Limiter.Take.
func (s *Shared) Take(key string, limit, cost int) Result {
	now := s.now()
	idx := now.UnixNano() / int64(s.window)
	reset := time.Duration((idx+1)*int64(s.window) - now.UnixNano())
	if limit <= 0 {
		return Result{Allowed: true, Reset: reset}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roll(idx)
	used := s.global[key] + s.local[key]
	if used+int64(cost) > int64(limit) {
		return Result{Allowed: false, Limit: limit, Remaining: max(0, limit-int(used)), Reset: reset}
	}
	s.local[key] += int64(cost)
	return Result{Allowed: true, Limit: limit, Remaining: limit - int(used) - cost, Reset: reset}
}

// roll moves to window idx, forgetting the counts of an older one.
func (s *Shared) roll(idx int64) {
	if idx != s.idx {
		s.idx = idx
		s.global = map[string]int64{}
		s.local = map[string]int64{}
	}
}

// Sync pushes this daemon's counts and pulls the totals once.
func (s *Shared) Sync(ctx context.Context) error {
	s.mu.Lock()
	s.roll(s.now().UnixNano() / int64(s.window))
	idx := s.idx
	deltas := s.local
	s.local = map[string]int64{}
	s.mu.Unlock()
	totals, err := s.sync(ctx, idx, deltas)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.idx == idx { // keep the counts for the next try
			for k, v := range deltas {
				s.local[k] += v
			}
		}
		return err
	}
	if s.idx == idx {
		s.global = totals
	}
	return nil
}

// Run syncs every interval until ctx ends.
func (s *Shared) Run(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
				log.Warn("shared rate limits: sync failed; deciding from local counts until it works again", "error", err.Error())
			}
		}
	}
}

var (
	_ Taker = (*Limiter)(nil)
	_ Taker = (*Shared)(nil)
)

// Prefixed is t with every key prefixed: several limits share one set of
// counters (the shared store's) without their keys meeting.
func Prefixed(t Taker, prefix string) Taker { return prefixed{t, prefix} }

type prefixed struct {
	Taker
	prefix string
}

func (p prefixed) Take(key string, limit, cost int) Result {
	return p.Taker.Take(p.prefix+key, limit, cost)
}
