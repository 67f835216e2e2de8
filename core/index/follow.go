package index

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threatd/threatd/core"
)

// Follower applies the storage change feed to the index and the principal
// cache.
type Follower struct {
	Store      core.Store
	Index      *Index
	Principals *Principals
	Log        *slog.Logger
	// Subscribers hear, in order, of each page the follower read: the
	// reports a page of changes named once the index has applied it, and
	// every published change after the follower's first catch-up, with
	// its report and stored indicators (core.ChangeBatch). The one
	// fan-out of the change feed: a subscriber must not block.
	Subscribers []Subscriber

	// feedPos is the position in the published feed the subscribers have
	// heard up to (set at the first catch-up: what was published before
	// the daemon started is not told again).
	feedPos    core.FeedEvent
	feedPosSet bool

	// early is the feed position of the principal cache while the index
	// loads (taken at the first Catch, when earlySet): token and user
	// changes must not wait for the index. Catch is not called concurrently.
	early    atomic.Int64
	earlySet bool

	// caughtUp is when a catch-up last reached the end of the feed (Unix
	// nanoseconds; 0 before the first).
	caughtUp atomic.Int64

	pokes chan chan struct{}
	once  sync.Once
}

// Lag is how long ago the follower last reached the end of the change feed
// (the staleness bound of the index and caches: cache.freshness when all is
// well, growing while storage does not answer); ok is false before the
// first catch-up.
func (f *Follower) Lag() (lag time.Duration, ok bool) {
	at := f.caughtUp.Load()
	if at == 0 {
		return 0, false
	}
	return time.Since(time.Unix(0, at)), true
}

func (f *Follower) init() { f.once.Do(func() { f.pokes = make(chan chan struct{}) }) }

// Sync asks the running follower to catch up now and waits until a catch
// that started after the call has finished: a change this daemon has just
// committed (a review decision on the web site, a revoked token) is then in
// the index and the principal cache. It returns ctx's error when Run is not
// running or does not finish in time.
func (f *Follower) Sync(ctx context.Context) error {
	f.init()
	done := make(chan struct{})
	select {
	case f.pokes <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run polls the feed every interval until ctx ends. Choose interval at most
// half of cache.freshness. It may start before the index is loaded.
func (f *Follower) Run(ctx context.Context, interval time.Duration) {
	f.init()
	t := time.NewTicker(interval)
	defer t.Stop()
	var waiting []chan struct{}
	for {
		started := time.Now()
		if err := f.Catch(ctx); err != nil && ctx.Err() == nil {
			f.Log.Warn("change feed: catching up failed; retrying", "error", err.Error(), "seq", f.Index.LastSeq())
		} else if err == nil {
			f.caughtUp.Store(started.UnixNano())
		}
		for _, w := range waiting {
			close(w)
		}
		waiting = waiting[:0]
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case w := <-f.pokes:
			waiting = append(waiting, w)
		}
	}
}

// Subscriber is told of what the follower read (Follower.Subscribers).
type Subscriber interface {
	ReportsChanged(b core.ChangeBatch)
}

// publishedPage is how many published changes one read takes.
const publishedPage = 1000

// tell hands b to every subscriber.
func (f *Follower) tell(b core.ChangeBatch) {
	for _, s := range f.Subscribers {
		s.ReportsChanged(b)
	}
}

// published reads the published changes after the subscribers' position
// and tells them, a page at a time. It reads nothing without subscribers.
func (f *Follower) published(ctx context.Context) error {
	if len(f.Subscribers) == 0 {
		return nil
	}
	if !f.feedPosSet {
		pos, err := f.Store.LastFeedEvent(ctx, time.Now().Add(24*time.Hour))
		if err != nil {
			return err
		}
		f.feedPos, f.feedPosSet = pos, true
		return nil
	}
	for {
		items, err := f.Store.Feed(ctx, core.FeedQuery{AfterAt: f.feedPos.At, AfterSeq: f.feedPos.Seq, Limit: publishedPage})
		if err != nil {
			return err
		}
		if len(items) > 0 {
			f.feedPos = items[len(items)-1].Event
			f.tell(core.ChangeBatch{Published: items})
		}
		if len(items) < publishedPage {
			return nil
		}
	}
}

// Catch applies every change committed since the index's position. While
// the index is still loading, it applies token and user changes only, from
// the feed position of its first call; once the index is loaded, everything
// from the position the index was loaded at (token and user changes again:
// an invalidation applied twice is harmless).
func (f *Follower) Catch(ctx context.Context) error {
	if ready, _, _ := f.Index.Progress(); ready {
		if err := f.drain(ctx, &f.Index.lastSeq, true); err != nil {
			return err
		}
		return f.published(ctx)
	}
	if !f.earlySet {
		st, err := f.Store.Stats(ctx)
		if err != nil {
			return err
		}
		f.early.Store(st.LastSeq)
		f.earlySet = true
	}
	if err := f.drain(ctx, &f.early, false); err != nil {
		return err
	}
	return f.published(ctx)
}

// drain applies the changes after pos, advancing it; threat changes only
// when threats is set.
func (f *Follower) drain(ctx context.Context, pos *atomic.Int64, threats bool) error {
	for {
		changes, err := f.Store.Changes(ctx, core.ChangeQuery{After: pos.Load(), Limit: 1000})
		if err != nil {
			return err
		}
		// The page's reports in one storage call, as they are now: applying
		// the latest state once per report is what applying each change
		// in turn would end with.
		var ids []string
		if threats {
			seen := make(map[string]bool)
			for _, ch := range changes {
				if ch.Entity == core.EntityThreat && !seen[ch.EntityID] {
					seen[ch.EntityID] = true
					ids = append(ids, ch.EntityID)
				}
			}
			if err := f.Index.applyAll(ctx, ids); err != nil {
				return err
			}
		}
		for _, ch := range changes {
			switch ch.Entity {
			case core.EntityToken:
				f.Principals.InvalidateToken(ch.EntityID)
				if ch.Op == "create" {
					f.Principals.NewTokens()
				}
			case core.EntityUser:
				f.Principals.InvalidateUser(ch.EntityID)
			}
			pos.Store(ch.Seq)
		}
		// The others told once the index's position has moved past the
		// page (telling them reads storage: the position, and the
		// threatd_change_feed_seq metric, would lag the index meanwhile).
		if len(ids) > 0 {
			f.tell(core.ChangeBatch{Changed: ids})
		}
		if len(changes) < 1000 {
			return nil
		}
	}
}
