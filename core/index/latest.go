package index

import (
	"context"
	"sync"

	"github.com/threatd/threatd/core"
)

// Latest keeps each selection of the latest verified reports (query-latest
// and its STIX export, the web site's home page) until a verified report
// changes: the follower moves the index's Version on every verification,
// revision or withdrawal (not on submissions of pending reports), so an
// entry is as fresh as check-malicious (cache.freshness) and a popular
// selection costs one bounded storage read per change instead of one per
// request. Entries are few (report type × ecosystem × severity × count) and
// replaced, never grown.
type Latest struct {
	idx   *Index
	store core.PublishedStore

	mu      sync.Mutex
	version int64
	entries map[core.LatestFilter]*LatestEntry
}

// NewLatest returns an empty cache over idx and store.
func NewLatest(idx *Index, store core.PublishedStore) *Latest {
	return &Latest{idx: idx, store: store}
}

// LatestEntry is one selection's reports and, once asked for, a rendering
// of them shared by every caller who sees the same thing (the API's
// query-latest body for callers who may not see contact e-mails: at 2,000
// requests a second, encoding 100 records each time was most of the cost).
type LatestEntry struct {
	Threats []core.Threat
	mu      sync.Mutex
	// gen is the generation of what else the rendering depends on (the
	// community signals) when body was rendered.
	gen      uint64
	rendered bool
	body     []byte
	err      error
}

// Rendered returns render(e.Threats), computed once per entry and
// generation gen of whatever else render reads (the community signals: a
// new generation renders again): every caller must pass the same render.
func (e *LatestEntry) Rendered(gen uint64, render func([]core.Threat) ([]byte, error)) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.rendered || e.gen != gen {
		e.body, e.err = render(e.Threats)
		e.gen, e.rendered = gen, true
	}
	return e.body, e.err
}

// Entry returns the cache entry of f (a fresh, uncached one while the index
// loads).
func (c *Latest) Entry(ctx context.Context, f core.LatestFilter) (*LatestEntry, error) {
	ready, _, _ := c.idx.Progress()
	if !ready {
		threats, err := c.store.LatestVerified(ctx, f)
		return &LatestEntry{Threats: threats}, err
	}
	version := c.idx.Version()
	c.mu.Lock()
	if c.version != version || c.entries == nil {
		c.version, c.entries = version, map[core.LatestFilter]*LatestEntry{}
	}
	e, ok := c.entries[f]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	threats, err := c.store.LatestVerified(ctx, f)
	if err != nil {
		return nil, err
	}
	e = &LatestEntry{Threats: threats}
	c.mu.Lock()
	if c.version == version && len(c.entries) < 1024 {
		if prev, ok := c.entries[f]; ok {
			e = prev // a concurrent request got there first: share its rendering
		} else {
			c.entries[f] = e
		}
	}
	c.mu.Unlock()
	return e, nil
}
