package index

import (
	"context"
	"log/slog"
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
}

// Run polls the feed every interval until ctx ends. Choose interval at most
// half of cache.freshness.
func (f *Follower) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := f.Catch(ctx); err != nil && ctx.Err() == nil {
			f.Log.Warn("change feed: catching up failed; retrying", "error", err.Error(), "seq", f.Index.LastSeq())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Catch applies every change committed since the index's position.
func (f *Follower) Catch(ctx context.Context) error {
	for {
		changes, err := f.Store.Changes(ctx, f.Index.LastSeq(), 1000)
		if err != nil {
			return err
		}
		for _, ch := range changes {
			switch ch.Entity {
			case core.EntityThreat:
				if err := f.Index.apply(ctx, ch.EntityID); err != nil {
					return err
				}
			case core.EntityToken:
				f.Principals.InvalidateToken(ch.EntityID)
				if ch.Op == "create" {
					f.Principals.NewTokens()
				}
			case core.EntityUser:
				f.Principals.InvalidateUser(ch.EntityID)
			}
			f.Index.lastSeq.Store(ch.Seq)
		}
		if len(changes) < 1000 {
			return nil
		}
	}
}
