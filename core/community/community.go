// Package community keeps, in each daemon, what the community says of
// verified reports besides their content (docs/api/records.md, "Community
// signals"): their sighting counts, from which their confidence follows.
// Records are rendered with it as they are answered, so that a sighting
// never rewrites a report or the index's copy of its record.
//
// A View loads every report's counts once, then re-reads those changed
// since its last look (storage keeps when each report's counts changed),
// so that the daemons sharing a database see each other's sightings within
// a poll. It holds the reports that have sightings only.
package community

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// Store is where the counts are read.
type Store interface {
	SightingCountsPage(ctx context.Context, q core.SightingCountsQuery) ([]core.SightingCounts, error)
	CountSightings(ctx context.Context, threatIDs []string) ([]core.SightingCounts, error)
}

// Overlap is how far back a look re-reads before the latest change it has
// seen: a change committed up to this long after its time (a slow
// transaction, another daemon's clock running behind) is still found.
const Overlap = 10 * time.Second

// page bounds the counts read at once.
const page = 5000

// counts are a report's counts as the view keeps them.
type counts struct {
	seen, falsePositive, expired, votes int64
	lastSeen, updatedAt                 time.Time
	disputed                            bool
}

// View is the daemon's copy of the community signals.
type View struct {
	store Store
	log   *slog.Logger

	mu     sync.RWMutex
	counts map[uuid.UUID]counts
	// latest is the latest change time read (the next look starts
	// Overlap before it); loaded is set once every report's were read.
	latest time.Time
	loaded bool
	// gen counts the changes applied (renderings cached by it are redone).
	gen atomic.Uint64
}

// Generation grows with every change of the view (0 for a nil view).
func (v *View) Generation() uint64 {
	if v == nil {
		return 0
	}
	return v.gen.Load()
}

// New is an empty view over store: Run (or Load) fills it.
func New(store Store, log *slog.Logger) *View {
	return &View{store: store, log: log, counts: map[uuid.UUID]counts{}}
}

// Run loads the view, then looks for changes every interval until ctx
// ends; a failed look is logged and tried again at the next.
func (v *View) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := v.Catch(ctx); err != nil && ctx.Err() == nil {
			v.log.Warn("community signals: reading sighting counts failed; retrying", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Catch reads every report's counts the first time, then those changed
// since the latest change it read, less Overlap.
func (v *View) Catch(ctx context.Context) error {
	v.mu.RLock()
	since, loaded := v.latest, v.loaded
	v.mu.RUnlock()
	switch {
	case !loaded:
		since = time.Time{}
	case since.IsZero():
		since = time.Unix(0, 0)
	default:
		since = since.Add(-Overlap)
	}
	q := core.SightingCountsQuery{Since: since, Limit: page}
	for {
		rows, err := v.store.SightingCountsPage(ctx, q)
		if err != nil {
			return err
		}
		v.set(rows)
		if len(rows) < page {
			break
		}
		last := rows[len(rows)-1]
		q.After = last.ThreatID
		if !q.Since.IsZero() {
			q.Since = last.UpdatedAt
		}
	}
	v.mu.Lock()
	v.loaded = true
	v.mu.Unlock()
	return nil
}

// Refresh reads the counts of these reports now (after this daemon has
// stored sightings of them), at most core.MaxGetThreats at once.
func (v *View) Refresh(ctx context.Context, threatIDs ...string) error {
	if v == nil || len(threatIDs) == 0 {
		return nil
	}
	rows, err := v.store.CountSightings(ctx, threatIDs)
	if err != nil {
		return err
	}
	v.set(rows)
	return nil
}

func (v *View) set(rows []core.SightingCounts) {
	if len(rows) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range rows {
		if r.UpdatedAt.After(v.latest) {
			v.latest = r.UpdatedAt
		}
		id, err := uuid.Parse(r.ThreatID)
		if err != nil {
			continue
		}
		c, had := v.counts[id]
		if !r.Any() {
			if had {
				delete(v.counts, id)
				v.gen.Add(1)
			}
			continue
		}
		// Counts only grow: a look that read an older row (another
		// daemon's slower transaction) does not take them back.
		if r.UpdatedAt.Before(c.updatedAt) {
			continue
		}
		n := counts{seen: r.Seen, falsePositive: r.FalsePositive, expired: r.Expired, votes: r.Votes, disputed: r.Disputed,
			lastSeen: r.LastSeen.UTC(), updatedAt: r.UpdatedAt.UTC()}
		if had && n == c {
			continue
		}
		v.counts[id] = n
		v.gen.Add(1)
	}
}

// Of is what the community says of the verified report id now (a nil view
// says nothing: no sightings, the base confidence).
func (v *View) Of(id uuid.UUID) core.Community {
	var c counts
	if v != nil {
		v.mu.RLock()
		c = v.counts[id]
		v.mu.RUnlock()
	}
	out := core.Community{
		Sightings: core.SightingCounts{ThreatID: id.String(), Seen: c.seen, FalsePositive: c.falsePositive, Expired: c.expired,
			LastSeen: c.lastSeen, UpdatedAt: c.updatedAt, Votes: c.votes, Disputed: c.disputed},
		Disputed:  c.disputed,
		ChangedAt: c.updatedAt,
	}
	out.Confidence = core.Confidence(core.ConfidenceInput{Seen: c.seen, Votes: int(c.votes), Disputed: c.disputed})
	return out
}

// OfThreat is Of for a report (the base for one whose id is not a UUID).
func (v *View) OfThreat(t core.Threat) core.Community {
	id, err := uuid.Parse(t.ID)
	if err != nil {
		v = nil
	}
	c := v.Of(id)
	c.Sightings.ThreatID = t.ID
	return c
}
