package api

import (
	"context"
	"sync"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
)

// latestCache keeps the answer to each query-latest selection (and the
// STIX export of it) until a verified report changes: the follower moves the
// index's Version on every verification, revision or withdrawal (not on
// submissions of pending reports), so an entry is as fresh as check-malicious
// (cache.freshness) and a popular selection costs one bounded storage read
// per change instead of one per request. Entries are few (report type ×
// ecosystem × severity) and replaced, never grown.
type latestCache struct {
	mu      sync.Mutex
	version int64
	entries map[core.LatestFilter][]core.Threat
}

// get returns the reports of f, from the cache when no verified report changed.
func (c *latestCache) get(ctx context.Context, f core.LatestFilter, idx *index.Index, store core.Store) ([]core.Threat, error) {
	ready, _, _ := idx.Progress()
	if !ready {
		return store.LatestVerified(ctx, f)
	}
	version := idx.Version()
	c.mu.Lock()
	if c.version != version || c.entries == nil {
		c.version, c.entries = version, map[core.LatestFilter][]core.Threat{}
	}
	threats, ok := c.entries[f]
	c.mu.Unlock()
	if ok {
		return threats, nil
	}
	threats, err := store.LatestVerified(ctx, f)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.version == version && len(c.entries) < 1024 {
		c.entries[f] = threats
	}
	c.mu.Unlock()
	return threats, nil
}
