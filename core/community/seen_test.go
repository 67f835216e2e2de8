package community

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

type countingStore struct {
	mu     sync.Mutex
	calls  int
	counts map[string]int64
}

func (c *countingStore) AddSeen(_ context.Context, seen []SeenCount) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	for _, s := range seen {
		c.counts[s.ThreatID+"/"+s.Source] += s.Count
	}
	return nil
}

// TestBatched: 10,000 sightings from 8 goroutines are one write, with
// their sums.
func TestBatched(t *testing.T) {
	st := &countingStore{counts: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	s := NewSeen(ctx, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var wg sync.WaitGroup
	now := time.Now()
	for range 8 {
		wg.Go(func() {
			for range 1250 {
				s.Add([]string{"a", "b"}, SightingSourceFirewall, now)
			}
		})
	}
	wg.Wait()
	cancel()
	s.Wait(5 * time.Second)
	if st.calls > 2 || st.counts["a/firewall"] != 10000 || st.counts["b/firewall"] != 10000 {
		t.Fatalf("%d writes, counts %v", st.calls, st.counts)
	}
}

type outcomeStore struct{ outcomes []string }

func (o outcomeStore) AddSightings(_ context.Context, b SightingBatch) ([]string, error) {
	return o.outcomes[:len(b.Sightings)], nil
}

// TestWriterOutcomes: each request gets its own outcome, as the typed
// errors the API answers 404 and 409 for.
func TestWriterOutcomes(t *testing.T) {
	for outcome, check := range map[string]func(error) bool{
		SightingAdded:    func(err error) bool { return err == nil },
		SightingNotFound: func(err error) bool { var ne *core.NotFoundError; return errors.As(err, &ne) },
		SightingConflict: func(err error) bool { var ce *core.ConflictError; return errors.As(err, &ce) },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		w := NewWriter(ctx, outcomeStore{[]string{outcome}}, 3, nil)
		if err := w.Add(ctx, Sighting{ThreatID: "t"}); !check(err) {
			t.Errorf("%s: %v", outcome, err)
		}
		cancel()
	}
}
