// Package osv is the OSV source: it reads OSV-format malicious-package
// reports (files, folders, and the all.zip archives OSV publishes per
// ecosystem) and maps each record to threatd reports verified by the system
// reviewer osv-import. See docs/ingestion.md for the field mapping.
package osv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
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
