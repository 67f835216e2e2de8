package api

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
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
	entries map[core.LatestFilter]*latestEntry
}

// latestEntry is one selection's reports and, once asked for, its
// query-latest body as every caller sees it who may not see contact
// e-mails (not a reviewer, not the submitter of one of them): at 2,000
// requests a second, encoding 100 records each time was most of the cost.
type latestEntry struct {
	threats []core.Threat
	once    sync.Once
	body    []byte
	err     error
}

// publicBody returns the entry's query-latest body for such a caller,
// rendering it once.
func (e *latestEntry) publicBody() ([]byte, error) {
	e.once.Do(func() {
		var b bytes.Buffer
		// As c.JSON writes it: json.Encoder, HTML escaped, a final newline.
		e.err = json.NewEncoder(&b).Encode(latestBody(e.threats, core.Principal{}))
		e.body = b.Bytes()
	})
	return e.body, e.err
}

// latestBody is the query-latest response for viewer.
func latestBody(threats []core.Threat, viewer core.Principal) map[string]any {
	return map[string]any{"threats": records(threats, viewer), "count": len(threats)}
}

// seesContacts says whether viewer sees a contact e-mail of threats.
func seesContacts(threats []core.Threat, viewer core.Principal) bool {
	return slices.ContainsFunc(threats, func(t core.Threat) bool { return t.ShowsContactTo(viewer) })
}

// entry returns the cache entry of f (a fresh, uncached one while the index
// loads).
func (c *latestCache) entry(ctx context.Context, f core.LatestFilter, idx *index.Index, store core.PublishedStore) (*latestEntry, error) {
	ready, _, _ := idx.Progress()
	if !ready {
		threats, err := store.LatestVerified(ctx, f)
		return &latestEntry{threats: threats}, err
	}
	version := idx.Version()
	c.mu.Lock()
	if c.version != version || c.entries == nil {
		c.version, c.entries = version, map[core.LatestFilter]*latestEntry{}
	}
	e, ok := c.entries[f]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	threats, err := store.LatestVerified(ctx, f)
	if err != nil {
		return nil, err
	}
	e = &latestEntry{threats: threats}
	c.mu.Lock()
	if c.version == version && len(c.entries) < 1024 {
		if prev, ok := c.entries[f]; ok {
			e = prev // a concurrent request got there first: share its body
		} else {
			c.entries[f] = e
		}
	}
	c.mu.Unlock()
	return e, nil
}
