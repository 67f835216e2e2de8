package index

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/record"
)

// The spill is a file of every verified report as a check shows it,
// written by the daemon itself: a hit on a report that is not in the LRU of
// full records reads its answer with one positioned read of a local file
// instead of a storage call (a gRPC round trip and four B-tree look-ups in
// SQLite). A million reports take about 1 GB of disk there, and none of the
// daemon's memory but 16 bytes a report in the index: the file's pages are
// the operating system's page cache.
//
// The file is a cache of storage, never a source: it is created empty at
// start and unlinked at once (nothing to clean up, nothing stale after a
// restart), filled in the background from storage once the index is loaded,
// and kept current by the follower, which writes each changed report as it
// applies it. A report whose entry is not written yet is read from storage
// as before.
//
// Each entry is the report's id (16 bytes); then 1 when the report has a
// contact e-mail (which the rendering leaves out), 2 when it has none but
// a submitter (whose record counts in its confidence), each followed by a
// length byte and the submitter's id, else 0; then the rendered record. A
// read checks the id.

// spillBatch bounds the reports of one fill call (one GetThreats call), and
// spillBatchBytes their size by the entries' mean size (reports of 200 KB
// come 5 at a time: the fill runs beside the readers just after start, and
// with 4 MiB batches the daemon and its plugins went past the 512 MB of
// TestReadAmplificationIsBounded); spillFirstBatch is the first call's,
// before there is a mean.
const (
	spillBatch      = 256
	spillBatchBytes = 1 << 20
	spillFirstBatch = 8
)

// spillFlushBytes is how much of a batch's entries is written at once.
const spillFlushBytes = 1 << 20

// spillRescan is how often an idle fill looks for reports without an entry.
const spillRescan = 30 * time.Second

// spillCompactMin is the garbage (bytes of replaced reports) below which
// the spill is never rewritten.
const spillCompactMin = 64 << 20

// spill is the open file. Entries are appended under mu; reads are
// positioned and need no lock.
type spill struct {
	f  *os.File
	mu sync.Mutex
	// end is where the next entry goes.
	end int64
}

// spillState is the Index's part of the spill.
type spillState struct {
	dir string
	// render appends a report as a check shows it to a viewer who may
	// not see its contact e-mail: record.AppendPublicJSON (tests set
	// another).
	render func([]byte, core.Threat) ([]byte, error)
	cur    atomic.Pointer[spill]
	// wake is signalled when the follower could not write the entries of
	// the reports it indexed.
	wake chan struct{}
	// meanSize is the running mean of the entries' size.
	meanSize atomic.Int64
}

// EnableSpill makes the index keep a spill file in dir: each verified
// report's public record (core/record), as check-malicious answers with
// it. It is called before Load; FillSpill then fills the file.
func (x *Index) EnableSpill(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("index spill: %w", err)
	}
	s := &spillState{dir: dir, render: record.AppendPublicJSON, wake: make(chan struct{}, 1)}
	sp, err := s.open()
	if err != nil {
		return err
	}
	s.cur.Store(sp)
	x.spill = s
	return nil
}

// open creates a new, unlinked spill file.
func (s *spillState) open() (*spill, error) {
	f, err := os.CreateTemp(s.dir, "spill-*")
	if err != nil {
		return nil, fmt.Errorf("index spill: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("index spill: %w", err)
	}
	return &spill{f: f}, nil
}

// CloseSpill closes the spill file (checks read storage again).
func (x *Index) CloseSpill() {
	if x.spill == nil {
		return
	}
	x.mu.Lock()
	sp := x.spill.cur.Swap(nil)
	x.mu.Unlock()
	if sp != nil {
		sp.f.Close()
	}
}

// SpillStats says how many reports have an entry in the spill, of how many
// indexed, the entries' bytes (live, and garbage awaiting a rewrite), and
// whether (and how long after FillSpill started) the first pass over the
// reports ended.
type SpillStats struct {
	Entries, Of     int
	Live, Garbage   int64
	FilledOnce      bool
	FirstFillMillis int64
}

// SpillStats returns the spill's figures.
func (x *Index) SpillStats() SpillStats {
	if x.spill == nil {
		return SpillStats{}
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	t := x.byKey
	return SpillStats{Entries: t.spillEntries, Of: t.len(), Live: t.spillLive, Garbage: t.spillGarbage,
		FilledOnce: x.filledOnce.Load(), FirstFillMillis: x.firstFill.Load()}
}

// appendEntries writes entries and returns where each starts.
func (sp *spill) appendEntries(buf []byte, sizes []int) ([]int64, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if _, err := sp.f.WriteAt(buf, sp.end); err != nil {
		return nil, err
	}
	offs := make([]int64, len(sizes))
	at := sp.end
	for i, n := range sizes {
		offs[i] = at
		at += int64(n)
	}
	sp.end = at
	return offs, nil
}

// entry appends one entry for t to buf, the record rendered in place. On
// an error the caller cuts buf back to where the entry began.
func (s *spillState) entry(buf []byte, id uuid.UUID, t core.Threat) ([]byte, error) {
	buf = append(buf, id[:]...)
	sub := t.SubmitterID
	switch {
	case len(sub) > 255:
		return buf, fmt.Errorf("index spill: submitter id of %d bytes", len(sub))
	case t.Details.ContactEmail != "":
		buf = append(buf, 1, byte(len(sub)))
		buf = append(buf, sub...)
	case sub != "":
		buf = append(buf, 2, byte(len(sub)))
		buf = append(buf, sub...)
	default:
		buf = append(buf, 0)
	}
	return s.render(buf, t)
}

// entryBufs holds the buffers writeEntries renders a batch's entries into:
// a buffer grown from nothing for every batch was two thirds of the bytes
// the daemon allocated during the fill, and the collector's work with them
// (BenchmarkWriteEntries). A new one has room for the batch at the
// entries' mean size, up to a flush and one large entry: the follower's
// write of one changed report does not pay for a MiB.
var entryBufs = sync.Pool{New: func() any { return new([]byte) }}

// entryBufMax is the largest buffer entryBufs keeps: one grown by a
// report far larger than the rest is left to the collector.
const entryBufMax = 4 * spillFlushBytes

// pending is a report the fill reads: its key, id and the rec's generation
// when it was chosen.
type pending struct {
	key string
	id  uuid.UUID
	gen uint32
}

// writeEntries renders and appends ts (reports chosen as want) and points
// their records at the entries, unless a record changed since it was
// chosen (its generation moved) or already has an entry.
func (x *Index) writeEntries(ts []core.Threat, want map[uuid.UUID]pending) error {
	s := x.spill
	sp := s.cur.Load()
	if sp == nil {
		return nil
	}
	pooled := entryBufs.Get().(*[]byte)
	buf := (*pooled)[:0]
	if want := min(len(ts)*int(max(s.meanSize.Load(), 1024)), spillFlushBytes) + 64<<10; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	defer func() {
		if cap(buf) <= entryBufMax {
			*pooled = buf[:0]
			entryBufs.Put(pooled)
		}
	}()
	var (
		sizes    = make([]int, 0, len(ts))
		ps       = make([]pending, 0, len(ts))
		offs     = make([]int64, 0, len(ts))
		firstErr error
	)
	// Entries go to the file a MiB at a time: a page of large reports is
	// not copied into one buffer the size of the page.
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		at, err := sp.appendEntries(buf, sizes[len(offs):])
		if err != nil {
			return spillWriteError{err}
		}
		offs = append(offs, at...)
		buf = buf[:0]
		return nil
	}
	for _, t := range ts {
		id, err := uuid.Parse(t.ID)
		if err != nil {
			continue
		}
		p, ok := want[id]
		if !ok || t.Status != core.StatusVerified {
			continue
		}
		n := len(buf)
		if buf, err = s.entry(buf, id, t); err != nil {
			buf = buf[:n]
			firstErr = cmp.Or(firstErr, error(renderError{t.ID, err}))
			continue
		}
		sizes = append(sizes, len(buf)-n)
		ps = append(ps, p)
		s.noteSize(len(buf) - n)
		if len(buf) >= spillFlushBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if len(ps) == 0 {
		return firstErr
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if s.cur.Load() != sp {
		return firstErr // rewritten meanwhile: these entries are in the old file
	}
	t := x.byKey
	for i, p := range ps {
		r, ok := t.get(p.key)
		if !ok || r.id != p.id || r.gen != p.gen || r.spillLen != 0 {
			t.spillGarbage += int64(sizes[i])
			continue
		}
		r.spillOff, r.spillLen = offs[i], uint32(sizes[i])
		t.spillLive += int64(sizes[i])
		t.spillEntries++
	}
	return firstErr
}

// renderError is a report whose entry could not be written: it is left
// without one (its checks read storage), and the fill goes on.
type renderError struct {
	id  string
	err error
}

func (e renderError) Error() string { return fmt.Sprintf("index spill: report %s: %v", e.id, e.err) }
func (e renderError) Unwrap() error { return e.err }

// noteSize keeps a running mean of the entries' size, by which the fill
// sizes its batches.
func (s *spillState) noteSize(n int) {
	old := s.meanSize.Load()
	if old == 0 {
		s.meanSize.Store(int64(n))
		return
	}
	s.meanSize.Store(old + (int64(n)-old)/16)
}

// batchSize is how many reports the fill asks storage for at once: up to
// spillBatch, and about spillBatchBytes of them by the entries' mean size
// across the batches in flight (a few at first, until there is one).
func (s *spillState) batchSize() int {
	mean := s.meanSize.Load()
	if mean <= 0 {
		return spillFirstBatch
	}
	// The reads ahead (spillAhead) and the batch being written share the
	// bound: spillBatchBytes in all, not a batch's worth each.
	return int(max(1, min(spillBatch, spillBatchBytes/(mean*(spillAhead+1)))))
}

// spillChanged writes the entries of reports the follower has just indexed
// (ts, as GetThreats returned them); on failure the fill writes them.
func (x *Index) spillChanged(ts []core.Threat) {
	if x.spill == nil {
		return
	}
	want := make(map[uuid.UUID]pending, len(ts))
	x.mu.RLock()
	for _, t := range ts {
		id, err := uuid.Parse(t.ID)
		if err != nil {
			continue
		}
		if r, ok := x.byKey.get(t.CanonicalKey); ok && r.spillLen == 0 && r.id == id {
			want[id] = pending{key: t.CanonicalKey, id: id, gen: r.gen}
		}
	}
	x.mu.RUnlock()
	if len(want) == 0 {
		return
	}
	if err := x.writeEntries(ts, want); err != nil {
		x.spill.signal()
	}
}

// signal wakes the fill.
func (s *spillState) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// maybeRewriteSpill starts a new, empty file once garbage outweighs live
// entries (and is worth it): every record loses its entry and the fill
// writes them again.
func (x *Index) maybeRewriteSpill() {
	s := x.spill
	x.mu.RLock()
	t := x.byKey
	worth := t.spillGarbage >= spillCompactMin && t.spillGarbage > t.spillLive
	x.mu.RUnlock()
	if !worth {
		return
	}
	sp, err := s.open()
	if err != nil {
		return // the old file serves on
	}
	x.mu.Lock()
	if s.cur.Load() == nil { // closed meanwhile
		x.mu.Unlock()
		sp.f.Close()
		return
	}
	t = x.byKey
	for i := range t.recs {
		r := &t.recs[i]
		r.spillOff, r.spillLen = 0, 0
	}
	t.spillLive, t.spillGarbage, t.spillEntries = 0, 0, 0
	old := s.cur.Swap(sp)
	x.mu.Unlock()
	if old != nil {
		// A read that took its position before the swap fails on the
		// closed file and falls back to storage.
		old.f.Close()
	}
}

// errSpillEntry is a spill entry that is not the report asked for.
var errSpillEntry = errors.New("index spill: entry does not match its report")

// readEntry reads the entry of report id at off (n bytes) from sp into
// buf (grown when it is too small): whether the report has a contact
// e-mail, its submitter's id, and the rendered record, which is buf's.
func readEntry(sp *spill, id [16]byte, off int64, n uint32, buf []byte) (contact bool, submitter string, body []byte, err error) {
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := sp.f.ReadAt(buf, off); err != nil {
		return false, "", nil, err
	}
	if n < 17 || [16]byte(buf[:16]) != id {
		return false, "", nil, errSpillEntry
	}
	rest := buf[17:]
	switch buf[16] {
	case 0:
		return false, "", rest, nil
	case 1, 2:
		if len(rest) < 1 || 1+int(rest[0]) > len(rest) {
			return false, "", nil, errSpillEntry
		}
		sl := int(rest[0])
		return buf[16] == 1, string(rest[1 : 1+sl]), rest[1+sl:], nil
	}
	return false, "", nil, errSpillEntry
}
