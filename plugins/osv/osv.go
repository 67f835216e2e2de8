// Package osv is the OSV source: it reads OSV-format malicious-package
// reports (files, folders, and the all.zip archives OSV publishes per
// ecosystem) and maps each record to threatd reports verified by the system
// reviewer osv-import. See docs/ingestion.md for the field mapping.
package osv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/threatd/threatd/core"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = core.OSVSource

// Source implements core.Source for OSV data.
type Source struct {
	// Now is the clock used to validate timestamps (time.Now when nil).
	Now func() time.Time
	// CacheDir, when set, keeps the heads of the archives' entries
	// between runs (headcache.go): a re-import then inflates only the
	// entries whose stored bytes changed.
	CacheDir string
}

type input struct {
	name string
	// size is the content's size as an archive's entry gives it (0: not
	// known); only a hint.
	size uint64
	open func() (io.ReadCloser, error)
	// stored is an archive entry's stored bytes when the walk read them.
	stored []byte
	// zip is the archive entry the input is, when it is one and its
	// archive's heads are cached.
	zip *zipInput
}

// zipInput is an archive entry whose head may be in its archive's cache.
type zipInput struct {
	z     *zipArchive
	e     zipEntry
	heads *archiveHeads
}

// Read walks paths (files, folders, .zip archives) and yields every record.
// Inputs are streamed: a folder is walked and an archive's central directory
// read one entry at a time, so memory does not grow with their size.
//
// With known, records are first read for their head (id, modified time,
// affected packages: the upstream ids they map to), a window at a time;
// those known to be imported at that version already are yielded as
// unchanged without being decoded in full. While most of a run is new (a
// first import), heads are read for one window in 16 only.
func (s Source) Read(ctx context.Context, paths []string, settings map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	lim, err := parseSettings(settings)
	if err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	total := 0
	for _, p := range paths {
		var counted []io.Closer
		_ = walk(ctx, p, func(input) error { total++; return nil }, func(string, error) error { return nil }, func(c io.Closer) { counted = append(counted, c) }, nil)
		for _, c := range counted {
			c.Close()
		}
	}
	// Inputs are read and mapped by parallel workers, and yielded in input
	// order: parsing is the costly part of a run.
	type job struct {
		in     input
		out    chan result
		charge int64
	}
	jobs, order := make(chan job, 64), make(chan chan result, readAhead)
	// The inputs read ahead are bounded by bytes too (their stated
	// sizes): a record may be 4 MiB.
	ahead := semaphore.NewWeighted(readAheadBytes)
	var (
		workers  sync.WaitGroup
		walkErr  error
		archives []io.Closer // opened by the walk, closed once no worker reads them
		heads    headMode
	)
	heads.on.Store(known != nil)
	var cache *headCache
	if known != nil && s.CacheDir != "" {
		cache = newHeadCache(s.CacheDir)
	}
	complete := false
	defer func() { cache.finish(complete) }()
	ctx, cancel := context.WithCancel(ctx)
	walked := make(chan struct{})
	// On return: stop the walk, let the workers finish, then close archives.
	defer func() {
		cancel()
		<-walked
		workers.Wait()
		for _, c := range archives {
			c.Close()
		}
	}()
	for range max(2*runtime.GOMAXPROCS(0), 2) {
		workers.Go(func() {
			for j := range jobs {
				if err := ctx.Err(); err != nil {
					j.out <- result{err: err}
					continue
				}
				r := readInput(j.in, now(), heads.on.Load(), lim)
				r.charge = j.charge
				j.out <- r
			}
		})
	}
	go func() {
		defer close(walked)
		defer close(order)
		defer close(jobs)
		// A result channel enters order only once its job is queued, so the
		// loop below never waits for a result that nobody will send.
		enqueue := func(j *job, out chan result) error {
			if j != nil {
				select {
				case jobs <- *j:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			select {
			case order <- out:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		visit := func(in input) error {
			j := job{in: in, out: make(chan result, 1), charge: min(int64(min(in.size, maxRecordBytes))+int64(len(in.stored)), readAheadBytes)}
			if err := ahead.Acquire(ctx, j.charge); err != nil {
				return err
			}
			return enqueue(&j, j.out)
		}
		skip := func(name string, err error) error {
			out := make(chan result, 1)
			out <- result{name: name, err: err}
			return enqueue(nil, out)
		}
		keep := func(c io.Closer) { archives = append(archives, c) }
		for _, p := range paths {
			if err := walk(ctx, p, visit, skip, keep, cache.archive); err != nil {
				walkErr = err
				return
			}
		}
	}()
	w := window{known: known, heads: &heads, now: now, fn: fn, total: total, limits: lim}
	for out := range order {
		r := <-out
		ahead.Release(r.charge)
		if ctx.Err() != nil {
			break
		}
		w.results = append(w.results, r)
		w.bytes += len(r.raw) + len(r.stored)
		if len(w.results) >= windowRecords || w.bytes >= windowBytes {
			if err := w.flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	complete = walkErr == nil
	return walkErr
}

// result is what a worker made of one input.
type result struct {
	name string
	recs []core.ImportRecord
	err  error
	// input: a file or archive entry (counted for progress), not a path
	// that could not be walked.
	input bool
	// head and raw: the record read for its head only, to be decoded if
	// it is not known.
	head *core.UpstreamVersion
	raw  []byte
	// The head cache: the archive's cache, the entry's digest and its
	// head (also when it was decoded in full). An entry whose head came
	// from the cache has not been read: stored is its stored bytes,
	// inflated by content if it must be decoded.
	cache  *archiveHeads
	digest digest
	cached *core.UpstreamVersion
	stored []byte
	entry  zipEntry
	// charge is what the input took of the read-ahead's bytes.
	charge int64
}

// Bounds of what the workers read ahead of the window: inputs, and their
// stated bytes. While the source waits for a window's answer the workers
// read the next window (a queue of 256 left them idle for most of it).
const (
	readAhead      = 1024
	readAheadBytes = 32 << 20
)

// Bounds of a window: the results asked about in one known query. The
// source waits for each answer; with the heads cached, windows of 256
// left the machine a fifth idle on those round trips. 1,000 is what one
// look-up in storage takes (core.MaxImportedVersions) when each record
// names one package, as nearly all do.
const (
	windowRecords = 1000
	windowBytes   = 8 << 20
)

// headMode tells workers whether to read heads first. Off while most heads
// of a window are new; then one window in probeEvery reads heads again.
type headMode struct {
	on  atomic.Bool
	off int
}

const probeEvery = 16

// observe takes a window's hit count: heads stay on when at least half of
// them were known.
func (m *headMode) observe(asked, hits int) {
	switch {
	case asked > 0:
		m.on.Store(2*hits >= asked)
		m.off = 0
	case !m.on.Load():
		if m.off++; m.off >= probeEvery {
			m.on.Store(true)
			m.off = 0
		}
	}
}

// window collects results in input order, asks known about their heads in
// one query, decodes the rest in parallel and yields them all in order.
type window struct {
	known   core.Known
	heads   *headMode
	now     func() time.Time
	fn      func(core.SourceItem) error
	limits  Limits
	results []result
	bytes   int
	total   int
	done    int
}

func (w *window) flush(ctx context.Context) error {
	var asked []core.UpstreamVersion
	var at []int
	for i, r := range w.results {
		if r.head != nil {
			asked, at = append(asked, *r.head), append(at, i)
		}
	}
	unchanged := make([]bool, len(w.results))
	hits := 0
	if len(asked) > 0 {
		ans, err := w.known(ctx, asked)
		if err != nil {
			return err
		}
		for k, i := range at {
			if k < len(ans) && ans[k] {
				unchanged[i] = true
				hits++
			}
		}
	}
	if w.known != nil {
		w.heads.observe(len(asked), hits)
	}
	var todo []int
	for i, r := range w.results {
		if r.head != nil && !unchanged[i] {
			todo = append(todo, i)
		}
	}
	now := w.now()
	parallel(len(todo), func(k int) {
		r := &w.results[todo[k]]
		if r.raw == nil && r.stored != nil {
			// Its head came from the cache: the entry is read now.
			stored := r.stored
			r.raw, r.err = readAll(input{size: r.entry.size, open: func() (io.ReadCloser, error) { return content(r.entry, bytes.NewReader(stored)) }})
			if r.err != nil {
				return
			}
		}
		r.recs, r.err = decode(r.raw, now, w.limits)
	})
	// A run of unchanged records is yielded as one count, then its
	// progress: a million of them were two million items to send and
	// count one by one.
	pending := 0
	settle := func() error {
		if pending == 0 {
			return nil
		}
		n := pending
		pending = 0
		if err := w.fn(core.SourceItem{Unchanged: n}); err != nil {
			return err
		}
		return w.fn(core.SourceItem{FilesDone: w.done, FilesTotal: max(w.total, w.done)})
	}
	for i, r := range w.results {
		if err := ctx.Err(); err != nil {
			return err
		}
		if unchanged[i] {
			pending += len(r.head.IDs)
			if r.cache != nil && r.cached != nil {
				r.cache.add(r.digest, r.cached)
			}
			w.done++
			continue
		}
		if err := settle(); err != nil {
			return err
		}
		switch {
		case r.err != nil:
			if err := w.fn(core.SourceItem{Skipped: r.name, Reason: r.err.Error()}); err != nil {
				return err
			}
			if !r.input {
				continue
			}
		default:
			for j := range r.recs {
				if err := w.fn(core.SourceItem{Record: &r.recs[j]}); err != nil {
					return err
				}
			}
		}
		if r.cache != nil && r.cached != nil {
			r.cache.add(r.digest, r.cached)
		}
		w.done++
		if err := w.fn(core.SourceItem{FilesDone: w.done, FilesTotal: max(w.total, w.done)}); err != nil {
			return err
		}
	}
	if err := settle(); err != nil {
		return err
	}
	clear(w.results)
	w.results, w.bytes = w.results[:0], 0
	return nil
}

// parallel calls f(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

func decode(data []byte, now time.Time, lim Limits) ([]core.ImportRecord, error) {
	var v Record
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not an OSV record: %v", err)
	}
	if n := len(v.Affected); n > lim.MaxAffected {
		return nil, fmt.Errorf("%s: %d affected packages, more than import.max_affected (%d): each would become a report", v.ID, n, lim.MaxAffected)
	}
	recs, err := Map(&v, now)
	if err != nil {
		return nil, err
	}
	// Each report stores its own copy of the record's texts: refuse a
	// record whose reports would hold far more than the record itself (a
	// 469 KB record of 5,000 packages with a 90 KB details became a 1 GB
	// database).
	stored := 0
	for i := range recs {
		stored += recs[i].ApproxSize() + reportOverhead
	}
	if stored > growthFloor && stored > MaxGrowth*len(data) {
		return nil, fmt.Errorf("%s: its %d reports would store about %d MB, more than %d times the record's %d KB "+
			"(each affected package's report holds a copy of the record's text)", v.ID, len(recs), stored>>20, MaxGrowth, len(data)>>10)
	}
	return recs, nil
}

// Limits bound what one OSV record may become.
type Limits struct {
	// MaxAffected is the most affected packages a record may list
	// (import.max_affected): each becomes a report.
	MaxAffected int
}

// DefaultMaxAffected is import.max_affected's default.
const DefaultMaxAffected = 1000

// The growth guard: the reports of one record may store at most MaxGrowth
// times its bytes (each report's text, ApproxSize, plus reportOverhead for
// its rows and index entries), unless they store under growthFloor in all.
// reportOverhead is measured: a record of 1,000 packages with a short text
// grew a SQLite database by 2.4-2.5 KB a report and a PostgreSQL one by
// 3.0 KB, of which ApproxSize counts about 700 bytes.
const (
	MaxGrowth      = 20
	growthFloor    = 1 << 20
	reportOverhead = 2 << 10
)

// parseSettings reads the source's settings: max_affected (1–100,000;
// default DefaultMaxAffected). Any other setting is refused.
func parseSettings(settings map[string]string) (Limits, error) {
	lim := Limits{MaxAffected: DefaultMaxAffected}
	for k, v := range settings {
		switch k {
		case "max_affected":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100_000 {
				return lim, fmt.Errorf("import.max_affected: must be a whole number from 1 to 100000 (got %q)", v)
			}
			lim.MaxAffected = n
		default:
			return lim, fmt.Errorf("osv source: unknown setting %q", k)
		}
	}
	return lim, nil
}
