// Package index is threatd's hot read path: an in-memory index of verified
// reports (canonical key → compact summary), a bounded LRU of full records,
// and a cache of authenticated principals. All three are loaded at start and
// kept current by following the storage change feed, so that a change made
// by any process on the same database shows within cache.freshness, and a
// check or a token look-up does not cross to the storage plugin.
package index

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/versioning"
)

// maxInlineVersions bounds the version list kept in an entry; a longer list
// is checked against the full record.
const maxInlineVersions = 96

// Index answers checks from memory.
type Index struct {
	store   core.Store
	mu      sync.RWMutex
	byKey   *table
	records *lru.Cache[uuid.UUID, core.Threat]
	fetch   *fetcher
	lastSeq atomic.Int64
	// Loading progress: ready is set once Load has filled the index; until
	// then loaded counts the reports read of about total.
	ready         atomic.Bool
	loaded, total atomic.Int64
	// version moves whenever a verified report is added, changed or
	// removed (not for pending reports, tokens or users).
	version atomic.Int64
	// spill, when enabled, holds every verified report as a check shows
	// it (spill.go); filledOnce is set, and firstFill holds how long it
	// took, once every report loaded at start has an entry.
	spill      *spillState
	filledOnce atomic.Bool
	firstFill  atomic.Int64
	// spillFailure is why the spill file cannot be written now (nil: it
	// can; spillhealth.go).
	spillFailure atomic.Pointer[string]
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
	return &Index{store: store, byKey: newTable(0), records: records, fetch: newFetcher(store)}
}

// TableBytes returns the bytes of the index's table: its hash slots,
// records and byte chunks, which on Linux are mapped outside the Go heap
// (and so not in the runtime's heap figures).
func (x *Index) TableBytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byKey.mem.held.Load()
}

// Len returns the number of verified reports indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byKey.len()
}

// Count returns the number of verified reports indexed of type typ in
// registry ("" = any): a few additions, whatever the number of reports.
func (x *Index) Count(typ core.ReportType, registry string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byKey.count(string(typ), registry)
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
	fresh := newTable(int(st.Threats))
	err = x.store.EachVerifiedSummary(ctx, func(batch []core.Summary) error {
		for _, s := range batch {
			if _, err := putSummary(fresh, s); err != nil {
				return err
			}
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

// putSummary adds or replaces s in t and returns the report's id.
func putSummary(t *table, s core.Summary) (uuid.UUID, error) {
	id, err := uuid.Parse(s.ID)
	if err != nil {
		return id, fmt.Errorf("index: report id %q: %w", s.ID, err)
	}
	var flags uint8
	if s.AllVersions {
		flags |= flagAllVersions
	}
	// The list is kept in canonical form (core/versioning), so that a
	// check compares each entry with one canonical query.
	versions := ""
	if s.ReportType == core.TypePackage {
		versions = versioning.CanonicalList(s.Registry, s.VersionInfo)
	}
	if len(versions) > maxInlineVersions {
		flags |= flagVersionsElsewhere
		versions = ""
	}
	t.put(s.CanonicalKey, id, s.VerifiedAt.UnixMicro(), versions, flags, string(s.ReportType), s.Registry)
	return id, nil
}

// Put indexes (or re-indexes) a verified report.
func (x *Index) Put(s core.Summary) error {
	x.mu.Lock()
	id, err := putSummary(x.byKey, s)
	x.mu.Unlock()
	if err != nil {
		return err
	}
	x.records.Remove(id)
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
	if x.byKey.remove(key, uid) {
		x.version.Add(1)
	}
	x.mu.Unlock()
	x.records.Remove(uid)
}

// Result is the answer to a check.
type Result struct {
	// Count is the number of verified reports that match.
	Count int
	// Latest is the most recently verified of them (zero when Count is 0,
	// and when CheckQuery read Answer instead).
	Latest core.Threat
	// ID and Registry are Latest's, from the index.
	ID       uuid.UUID
	Registry string
	// Answer is Latest as the spill's renderer wrote it, when CheckQuery
	// read it from the spill. Contact then says the report has a contact
	// e-mail, which Answer leaves out, and Submitter is its submitter's id
	// ("" for an import).
	Answer    []byte
	Contact   bool
	Submitter string
	// Entry holds Answer's buffer: Release gives it back for the next
	// check once Answer is no longer used (a caller that never does
	// leaves it to the collector).
	Entry Entry
}

// Entry is a spill entry's buffer, taken from a pool by CheckQuery.
type Entry struct{ b *[]byte }

// Release gives the buffer back: the Result's Answer must not be used
// after. Releasing an Entry twice, or a copy of one released, is a bug.
func (e Entry) Release() {
	if e.b != nil {
		hitBufs.Put(e.b)
	}
}

// hitBufs holds the buffers check answers read spill entries into: at
// half of the checks hits, a new buffer for each entry was one byte in
// six the daemon allocated under the check load, and its collector's
// work with it (docs/performance.md). Entries beyond hitPooledMax are
// read into a buffer of their own.
var hitBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// hitPooledMax is the largest entry read into a pooled buffer.
const hitPooledMax = 64 << 10

// CheckQuery answers a resolved check-malicious query: its keys
// (core.CheckKeys), then the verified reports under them, the latest read
// from the spill when it holds it (Answer), else as a report (Latest).
func (x *Index) CheckQuery(ctx context.Context, q core.CheckQuery) (Result, error) {
	keys, err := core.CheckKeys(q)
	if err != nil {
		return Result{}, err
	}
	hits, sp, err := x.hits(ctx, keys, q.Version)
	if err != nil || len(hits) == 0 {
		return Result{}, err
	}
	h := slices.MinFunc(hits, newestFirst)
	res := Result{Count: len(hits), ID: h.id, Registry: h.registry}
	if sp != nil && h.spillLen != 0 {
		// An entry that cannot be read (the file rewritten or closed
		// meanwhile) leaves the answer to storage.
		var pooled *[]byte
		var buf []byte
		if h.spillLen <= hitPooledMax {
			pooled = hitBufs.Get().(*[]byte)
			if cap(*pooled) < int(h.spillLen) {
				*pooled = make([]byte, 0, h.spillLen)
			}
			buf = *pooled
		}
		contact, sub, body, err := readEntry(sp, h.id, h.spillOff, h.spillLen, buf)
		if err == nil && len(body) > 0 {
			res.Answer, res.Contact, res.Submitter, res.Entry = body, contact, sub, Entry{pooled}
			return res, nil
		}
		Entry{pooled}.Release()
	}
	if res.Latest, err = x.Record(ctx, h.id); err != nil {
		return Result{}, err
	}
	return res, nil
}

// hit is a matching report in the index.
type hit struct {
	id         uuid.UUID
	verifiedAt int64
	registry   string
	// The report's spill entry (spillLen 0: none).
	spillLen uint32
	spillOff int64
}

// newestFirst orders hits most recently verified first (ties: the larger
// id first), the order of check-malicious's details and OSV queries.
func newestFirst(a, b hit) int {
	if a.verifiedAt != b.verifiedAt {
		return cmp.Compare(b.verifiedAt, a.verifiedAt)
	}
	return bytes.Compare(b.id[:], a.id[:])
}

// hits returns the verified reports under keys that affect version, and
// the spill file their entries are in.
func (x *Index) hits(ctx context.Context, keys []string, version string) ([]hit, *spill, error) {
	var (
		out []hit
		// elsewhere: package reports whose version list is in the record.
		elsewhere []hit
		sp        *spill
	)
	// The version as each registry's client compares it, prepared once
	// per registry (a check without an ecosystem spans several).
	var queries [4]struct {
		registry string
		q        versioning.Query
	}
	nq := 0
	query := func(registry string) versioning.Query {
		for i := range nq {
			if queries[i].registry == registry {
				return queries[i].q
			}
		}
		q := versioning.NewQuery(registry, version)
		if nq < len(queries) {
			queries[nq].registry, queries[nq].q = registry, q
			nq++
		}
		return q
	}
	x.mu.RLock()
	if x.spill != nil {
		sp = x.spill.cur.Load()
	}
	for _, k := range keys {
		r, ok := x.byKey.get(k)
		if !ok {
			continue
		}
		h := hit{id: r.id, verifiedAt: r.verifiedAt, registry: x.byKey.classes[r.class].registry, spillLen: r.spillLen, spillOff: r.spillOff}
		switch {
		case r.flags&flagAllVersions != 0 || !strings.HasPrefix(k, "package:"):
		case r.flags&flagVersionsElsewhere != 0:
			if version != "" {
				elsewhere = append(elsewhere, h)
				continue
			}
		case version == "":
		case x.byKey.versions(r) == "":
		case !query(h.registry).In(x.byKey.versions(r)):
			continue
		}
		out = append(out, h)
	}
	x.mu.RUnlock()
	for _, h := range elsewhere {
		t, err := x.Record(ctx, h.id)
		if err != nil {
			return nil, nil, err
		}
		if versioning.Matches(h.registry, t.Details.VersionInfo, version) {
			out = append(out, h)
		}
	}
	return out, sp, nil
}

// ImageKeys are the keys of the verified container reports of the
// repository path path ("library/nginx"), whatever registry host they
// name.
func (x *Index) ImageKeys(path string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Clone(x.byKey.images[path])
}

// Matches returns every verified report under keys that affects version,
// most recently verified first (the OSV query API).
func (x *Index) Matches(ctx context.Context, keys []string, version string) ([]core.Threat, error) {
	hits, _, err := x.hits(ctx, keys, version)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(hits, newestFirst)
	out := make([]core.Threat, 0, len(hits))
	for _, h := range hits {
		t, err := x.Record(ctx, h.id)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Record returns a full report from the LRU, or from storage on a miss
// (coalesced with the misses of concurrent requests).
func (x *Index) Record(ctx context.Context, id uuid.UUID) (core.Threat, error) {
	if t, ok := x.records.Get(id); ok {
		return t, nil
	}
	t, err := x.fetch.get(ctx, id)
	if err != nil {
		return core.Threat{}, err
	}
	if t.Status == core.StatusVerified {
		x.records.Add(id, t)
	}
	return t, nil
}

// applyAll updates the index for changed reports: one storage call for up
// to core.MaxGetThreats of them. A report no longer stored is left alone.
func (x *Index) applyAll(ctx context.Context, threatIDs []string) error {
	for len(threatIDs) > 0 {
		n := min(len(threatIDs), core.MaxGetThreats)
		ts, err := x.store.GetThreats(ctx, threatIDs[:n])
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := x.applyOne(t); err != nil {
				return err
			}
		}
		x.spillChanged(ts)
		threatIDs = threatIDs[n:]
	}
	return nil
}

// applyOne indexes t as it is now stored.
func (x *Index) applyOne(t core.Threat) error {
	if t.Status != core.StatusVerified {
		x.Remove(t.CanonicalKey, t.ID)
		return nil
	}
	return x.Put(core.SummaryOf(t))
}
