// Package index is threatd's hot read path: an in-memory index of verified
// reports (canonical key → compact summary), a bounded LRU of full records,
// and a cache of authenticated principals. All three are loaded at start and
// kept current by following the storage change feed, so that a change made
// by any process on the same database shows within cache.freshness, and a
// check or a token look-up does not cross to the storage plugin.
package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/threatd/threatd/core"
)

// maxInlineVersions bounds the version list kept in an entry; a longer list
// is checked against the full record.
const maxInlineVersions = 96

// entry is the summary of one verified report: ~100 bytes plus its key.
type entry struct {
	id         uuid.UUID
	verifiedAt int64 // unix microseconds
	registry   string
	versions   string
	// versionsElsewhere means the list was too long to keep inline.
	versionsElsewhere bool
	// allVersions: every version is affected, whatever the list says.
	allVersions bool
}

// Index answers checks from memory.
type Index struct {
	store   core.Store
	mu      sync.RWMutex
	byKey   map[string]*entry
	records *lru.Cache[uuid.UUID, core.Threat]
	lastSeq atomic.Int64
	// Loading progress: ready is set once Load has filled the index; until
	// then loaded counts the reports read of about total.
	ready         atomic.Bool
	loaded, total atomic.Int64
	// version moves whenever a verified report is added, changed or
	// removed (not for pending reports, tokens or users).
	version atomic.Int64
}

// Version changes whenever the set of verified reports or one of them
// changes: answers derived from verified reports stay valid while it holds.
func (x *Index) Version() int64 { return x.version.Load() }

// Progress says whether the index is loaded and, while it loads, how many
// verified reports it has read of about how many reports are stored.
func (x *Index) Progress() (ready bool, loaded, total int64) {
	return x.ready.Load(), x.loaded.Load(), x.total.Load()
}

// New returns an empty index over store with an LRU of recordCap records.
func New(store core.Store, recordCap int) *Index {
	records, _ := lru.New[uuid.UUID, core.Threat](max(recordCap, 16))
	return &Index{store: store, byKey: make(map[string]*entry), records: records}
}

// Len returns the number of verified reports indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byKey)
}

// LastSeq is the change-feed position the index reflects.
func (x *Index) LastSeq() int64 { return x.lastSeq.Load() }

// Load fills the index with every verified report. Changes committed while it
// loads are replayed by Follow from the feed position taken before loading.
func (x *Index) Load(ctx context.Context) error {
	st, err := x.store.Stats(ctx)
	if err != nil {
		return err
	}
	x.total.Store(st.Threats)
	fresh := make(map[string]*entry, st.Threats)
	err = x.store.EachVerifiedSummary(ctx, func(batch []core.Summary) error {
		for _, s := range batch {
			e, err := newEntry(s)
			if err != nil {
				return err
			}
			fresh[s.CanonicalKey] = e
		}
		x.loaded.Add(int64(len(batch)))
		return nil
	})
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.byKey = fresh
	x.mu.Unlock()
	x.lastSeq.Store(st.LastSeq)
	x.version.Add(1)
	x.ready.Store(true)
	return nil
}

func newEntry(s core.Summary) (*entry, error) {
	id, err := uuid.Parse(s.ID)
	if err != nil {
		return nil, fmt.Errorf("index: report id %q: %w", s.ID, err)
	}
	e := &entry{id: id, verifiedAt: s.VerifiedAt.UnixMicro(), registry: s.Registry, allVersions: s.AllVersions}
	if len(s.VersionInfo) > maxInlineVersions {
		e.versionsElsewhere = true
	} else {
		e.versions = strings.Clone(s.VersionInfo)
	}
	return e, nil
}

// Put indexes (or re-indexes) a verified report.
func (x *Index) Put(s core.Summary) error {
	e, err := newEntry(s)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.byKey[s.CanonicalKey] = e
	x.mu.Unlock()
	x.records.Remove(e.id)
	x.version.Add(1)
	return nil
}

// Remove drops the report id from the index if key still points to it.
func (x *Index) Remove(key, id string) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return
	}
	x.mu.Lock()
	if e, ok := x.byKey[key]; ok && e.id == uid {
		delete(x.byKey, key)
		x.version.Add(1)
	}
	x.mu.Unlock()
	x.records.Remove(uid)
}

// Result is the answer to a check.
type Result struct {
	// Count is the number of verified reports that match.
	Count int
	// Latest is the most recently verified of them (zero when Count is 0).
	Latest core.Threat
}

// Check answers a query: the verified reports under keys that affect version.
func (x *Index) Check(ctx context.Context, keys []string, version string) (Result, error) {
	type hit struct {
		e   *entry
		key string
	}
	var hits []hit
	x.mu.RLock()
	for _, k := range keys {
		if e, ok := x.byKey[k]; ok {
			hits = append(hits, hit{e, k})
		}
	}
	x.mu.RUnlock()
	var (
		res    Result
		latest *entry
	)
	for _, h := range hits {
		if h.e.allVersions {
			// matches every version
		} else if h.e.versionsElsewhere && version != "" && strings.HasPrefix(h.key, "package:") {
			t, err := x.Record(ctx, h.e.id)
			if err != nil {
				return Result{}, err
			}
			if !core.VersionMatches(t.Details.VersionInfo, version) {
				continue
			}
		} else if strings.HasPrefix(h.key, "package:") && !core.VersionMatches(h.e.versions, version) {
			continue
		}
		res.Count++
		if latest == nil || h.e.verifiedAt > latest.verifiedAt || h.e.verifiedAt == latest.verifiedAt && bytes.Compare(h.e.id[:], latest.id[:]) > 0 {
			latest = h.e
		}
	}
	if latest == nil {
		return res, nil
	}
	t, err := x.Record(ctx, latest.id)
	if err != nil {
		return Result{}, err
	}
	res.Latest = t
	return res, nil
}

// Record returns a full report from the LRU, or from storage on a miss.
func (x *Index) Record(ctx context.Context, id uuid.UUID) (core.Threat, error) {
	if t, ok := x.records.Get(id); ok {
		return t, nil
	}
	t, err := x.store.GetThreat(ctx, id.String())
	if err != nil {
		return core.Threat{}, err
	}
	if t.Status == core.StatusVerified {
		x.records.Add(id, t)
	}
	return t, nil
}

// apply updates the index for one changed report.
func (x *Index) apply(ctx context.Context, threatID string) error {
	t, err := x.store.GetThreat(ctx, threatID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if t.Status != core.StatusVerified {
		x.Remove(t.CanonicalKey, t.ID)
		return nil
	}
	var at time.Time
	if t.VerifiedAt != nil {
		at = *t.VerifiedAt
	}
	return x.Put(core.Summary{ID: t.ID, CanonicalKey: t.CanonicalKey, ReportType: t.ReportType, Registry: t.Registry,
		Severity: t.Details.SeverityLevel, VerifiedAt: at, VersionInfo: t.Details.VersionInfo, AllVersions: t.AllVersions})
}
