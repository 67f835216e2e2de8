// Sightings written in batches (docs/api/sightings.md): what the daemon
// itself sees of verified reports (firewall blocks, scan findings), counted
// in memory and written once a second at most whatever the number of
// requests (Seen), and people's sightings, stored in group commits
// (Writer).

package community

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
)

// SeenStore is where the daemon's own sightings go.
type SeenStore interface {
	AddSeen(ctx context.Context, seen []SeenCount) error
}

// Bounds of a Seen: distinct report, source and day keys counted between
// two writes (past it, more of them wait for the next write), and how
// often it writes.
const (
	maxPending = 1 << 16
	flushEvery = time.Second
)

// Seen counts seen sightings and writes them.
type Seen struct {
	store   SeenStore
	log     *slog.Logger
	mu      sync.Mutex
	pending map[key]SeenCount
	dropped int64
	done    chan struct{}
	// wrote is signalled after each write (tests).
	wrote chan struct{}
}

type key struct{ threat, source, day string }

// NewSeen starts counting into store until ctx ends (what is counted then is
// written before it stops).
func NewSeen(ctx context.Context, store SeenStore, log *slog.Logger) *Seen {
	s := &Seen{store: store, log: log, pending: map[key]SeenCount{}, done: make(chan struct{}), wrote: make(chan struct{}, 1)}
	go s.run(ctx)
	return s
}

// Add counts one sighting of each report from source at at. It never
// blocks on storage.
func (s *Seen) Add(threatIDs []string, source string, at time.Time) {
	if s == nil || len(threatIDs) == 0 {
		return
	}
	day := at.UTC().Format(time.DateOnly)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range threatIDs {
		k := key{id, source, day}
		c, ok := s.pending[k]
		if !ok && len(s.pending) >= maxPending {
			s.dropped++
			continue
		}
		c.ThreatID, c.Source = id, source
		c.Count++
		if at.After(c.At) {
			c.At = at
		}
		s.pending[k] = c
	}
}

// Wait waits, up to limit, until what was counted before ctx ended is written.
func (s *Seen) Wait(limit time.Duration) {
	if s == nil {
		return
	}
	select {
	case <-s.done:
	case <-time.After(limit):
	}
}

func (s *Seen) flush(ctx context.Context) {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return
	}
	batch := make([]SeenCount, 0, len(s.pending))
	for _, c := range s.pending {
		batch = append(batch, c)
	}
	clear(s.pending)
	dropped := s.dropped
	s.dropped = 0
	s.mu.Unlock()
	if dropped > 0 {
		s.log.Warn("sightings: more distinct reports were seen in a second than are counted; some sightings were not counted", "dropped", dropped)
	}
	if err := s.store.AddSeen(ctx, batch); err != nil {
		s.log.Warn("sightings: writing seen sightings failed", "count", len(batch), "error", err.Error())
	}
	select {
	case s.wrote <- struct{}{}:
	default:
	}
}

func (s *Seen) run(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flush(context.WithoutCancel(ctx))
			return
		case <-tick.C:
			s.flush(ctx)
		}
	}
}

// BatchStore is where people's sightings go.
type BatchStore interface {
	AddSightings(ctx context.Context, b SightingBatch) ([]string, error)
}

// Writer stores people's sightings in group commits: a request waits for
// the transaction that carries its sighting with the others that arrived
// meanwhile (up to MaxSightingBatch), and gets its own outcome.
type Writer struct {
	store BatchStore
	in    chan pendingSighting
	// disputeVotes is community.dispute_votes.
	disputeVotes int
	// stored, when set, is told of the reports of each stored batch
	// before its requests are answered (the daemon's copy of the counts
	// reads theirs again: one read a batch, not one a request).
	stored func(ctx context.Context, threatIDs []string)
}

type pendingSighting struct {
	s    Sighting
	done chan error
}

// NewWriter starts a writer until ctx ends; disputeVotes counted
// false-positive votes put a verified report in dispute (0: never);
// stored (nil: nothing) hears of each batch's reports once it is stored.
func NewWriter(ctx context.Context, store BatchStore, disputeVotes int, stored func(ctx context.Context, threatIDs []string)) *Writer {
	w := &Writer{store: store, in: make(chan pendingSighting, MaxSightingBatch), disputeVotes: disputeVotes, stored: stored}
	go w.run(ctx)
	return w
}

// Add stores s, waiting for its transaction: core.ErrNotFound when its
// report is not verified, core.ErrConflict for a second vote.
func (w *Writer) Add(ctx context.Context, s Sighting) error {
	p := pendingSighting{s: s, done: make(chan error, 1)}
	select {
	case w.in <- p:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Linger is how long, under load (a batch stored less than 10 Lingers
// before), a sighting waits for others to share its transaction: at 2,000
// a second, batches of about ten instead of one, each a storage
// transaction and a read of its reports' counts.
const Linger = 5 * time.Millisecond

func (w *Writer) run(ctx context.Context) {
	var last time.Time
	linger := time.NewTimer(Linger)
	linger.Stop()
	for {
		var batch []pendingSighting
		select {
		case <-ctx.Done():
			return
		case p := <-w.in:
			batch = append(batch, p)
		}
		// Whatever else is waiting joins this transaction; under load,
		// what comes within Linger too.
		wait := time.Since(last) < 10*Linger
		if wait {
			linger.Reset(Linger)
		}
	more:
		for len(batch) < MaxSightingBatch {
			if wait {
				select {
				case p := <-w.in:
					batch = append(batch, p)
				case <-linger.C:
					wait = false
					break more
				}
				continue
			}
			select {
			case p := <-w.in:
				batch = append(batch, p)
			default:
				break more
			}
		}
		// (Go 1.23 timers: a stopped or reset timer delivers no stale
		// tick.)
		linger.Stop()
		last = time.Now()
		ss := make([]Sighting, len(batch))
		for i, p := range batch {
			ss[i] = p.s
		}
		outcomes, err := w.store.AddSightings(context.WithoutCancel(ctx), SightingBatch{Sightings: ss, DisputeVotes: w.disputeVotes})
		if err == nil && w.stored != nil {
			var ids []string
			had := map[string]bool{}
			for i, o := range outcomes {
				if o == SightingAdded && !had[ss[i].ThreatID] {
					had[ss[i].ThreatID] = true
					ids = append(ids, ss[i].ThreatID)
				}
			}
			if len(ids) > 0 {
				w.stored(context.WithoutCancel(ctx), ids)
			}
		}
		for i, p := range batch {
			switch {
			case err != nil:
				p.done <- err
			case outcomes[i] == SightingNotFound:
				p.done <- core.NotFound("verified report", p.s.ThreatID)
			case outcomes[i] == SightingConflict:
				p.done <- &core.ConflictError{What: "false-positive vote", Key: p.s.ThreatID,
					Message: "you have already reported " + p.s.ThreatID + " as a false positive"}
			default:
				p.done <- nil
			}
		}
	}
}
