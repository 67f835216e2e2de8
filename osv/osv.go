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
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/threatd/threatd/core"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = core.OSVSource

// Source implements core.Source for OSV data.
type Source struct {
	// Now is the clock used to validate timestamps (time.Now when nil).
	Now func() time.Time
}

type input struct {
	name string
	open func() (io.ReadCloser, error)
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
		_ = walk(ctx, p, func(input) error { total++; return nil }, func(string, error) error { return nil }, func(c io.Closer) { counted = append(counted, c) })
		for _, c := range counted {
			c.Close()
		}
	}
	// Inputs are read and mapped by parallel workers, and yielded in input
	// order: parsing is the costly part of a run.
	type job struct {
		in  input
		out chan result
	}
	jobs, order := make(chan job, 64), make(chan chan result, 256)
	var (
		workers  sync.WaitGroup
		walkErr  error
		archives []io.Closer // opened by the walk, closed once no worker reads them
		heads    headMode
	)
	heads.on.Store(known != nil)
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
				j.out <- readInput(j.in, now(), heads.on.Load(), lim)
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
			j := job{in: in, out: make(chan result, 1)}
			return enqueue(&j, j.out)
		}
		skip := func(name string, err error) error {
			out := make(chan result, 1)
			out <- result{name: name, err: err}
			return enqueue(nil, out)
		}
		keep := func(c io.Closer) { archives = append(archives, c) }
		for _, p := range paths {
			if err := walk(ctx, p, visit, skip, keep); err != nil {
				walkErr = err
				return
			}
		}
	}()
	w := window{known: known, heads: &heads, now: now, fn: fn, total: total, limits: lim}
	for out := range order {
		r := <-out
		if ctx.Err() != nil {
			break
		}
		w.results = append(w.results, r)
		w.bytes += len(r.raw)
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
}

// Bounds of a window: the results asked about in one known query.
const (
	windowRecords = 256
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
		r.recs, r.err = decode(r.raw, now, w.limits)
	})
	for i, r := range w.results {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case unchanged[i]:
			if err := w.fn(core.SourceItem{Unchanged: len(r.head.IDs)}); err != nil {
				return err
			}
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
		w.done++
		if err := w.fn(core.SourceItem{FilesDone: w.done, FilesTotal: max(w.total, w.done)}); err != nil {
			return err
		}
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

// walk calls visit for every JSON record under path (a file, a folder or a
// .zip archive) and skip for what cannot be read; it returns the first error
// of either, or the context's.
// Archives opened are handed to keep, to be closed once their entries are read.
func walk(ctx context.Context, path string, visit func(input) error, skip func(string, error) error, keep func(io.Closer)) error {
	fi, err := os.Stat(path)
	if err != nil {
		return skip(path, err)
	}
	if !fi.IsDir() {
		if strings.HasSuffix(strings.ToLower(path), ".zip") {
			return walkZip(ctx, path, visit, skip, keep)
		}
		return visit(fileInput(path))
	}
	// WalkDir visits each folder's entries in lexical order.
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return skip(p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		switch lower := strings.ToLower(p); {
		case d.IsDir():
		case strings.HasSuffix(lower, ".json"):
			return visit(fileInput(p))
		case strings.HasSuffix(lower, ".zip"):
			return walkZip(ctx, p, visit, skip, keep)
		}
		return nil
	})
}

func fileInput(p string) input {
	return input{name: p, open: func() (io.ReadCloser, error) { return os.Open(p) }}
}

// walkZip visits the JSON entries of an archive, in archive order.
func walkZip(ctx context.Context, path string, visit func(input) error, skip func(string, error) error, keep func(io.Closer)) error {
	z, err := openZip(path)
	if err != nil {
		return skip(path, fmt.Errorf("not a readable zip archive: %w", err))
	}
	keep(z)
	err = z.each(func(e zipEntry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasSuffix(e.name, "/") || !strings.HasSuffix(strings.ToLower(e.name), ".json") {
			return nil
		}
		return visit(input{name: path + "!" + e.name, open: func() (io.ReadCloser, error) { return z.open(e) }})
	})
	if err != nil && ctx.Err() == nil {
		return skip(path, err)
	}
	return err
}

// maxRecordBytes bounds one OSV file.
const maxRecordBytes = 4 << 20

// readInput reads one input; withHead, it only reads the record's head
// when it has one, and keeps the bytes for decode.
func readInput(in input, now time.Time, withHead bool, lim Limits) result {
	res := result{name: in.name, input: true}
	data, err := readAll(in)
	if err != nil {
		res.err = err
		return res
	}
	if withHead {
		if h, ok := readHead(data); ok {
			res.head, res.raw = h, data
			return res
		}
	}
	res.recs, res.err = decode(data, now, lim)
	return res
}

func readAll(in input) ([]byte, error) {
	r, err := in.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxRecordBytes)
	}
	return data, nil
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

// head is what a record's head read decodes: enough to name its import
// records (the fields Map names them from).
type head struct {
	ID       string `json:"id"`
	Modified string `json:"modified"`
	Affected []struct {
		Package Package `json:"package"`
	} `json:"affected"`
}

// readHead returns the upstream ids and modified time of a record, as Map
// would name its import records; false when Map would reject it (Map then
// says why).
func readHead(data []byte) (*core.UpstreamVersion, bool) {
	var h head
	if json.Unmarshal(data, &h) != nil || h.ID == "" || len(h.Affected) == 0 {
		return nil, false
	}
	modified, err := stamp(h.ID, "modified", h.Modified)
	if err != nil {
		return nil, false
	}
	ids := make([]string, len(h.Affected))
	for i, a := range h.Affected {
		id, err := upstreamID(h.ID, len(h.Affected), i, a.Package)
		if err != nil {
			return nil, false
		}
		ids[i] = id
	}
	return &core.UpstreamVersion{Source: SourceName, IDs: ids, Modified: modified}, true
}

// upstreamID names the import record of affected package i of n in record
// id: the record's id, qualified by registry and name when it has several.
func upstreamID(id string, n, i int, p Package) (string, error) {
	if p.Name == "" {
		return "", fmt.Errorf("%s: affected[%d] has no package", id, i)
	}
	registry, err := registryOf(id, p)
	if err != nil {
		return "", err
	}
	if n > 1 {
		return id + "/" + registry + "/" + p.Name, nil
	}
	return id, nil
}

// registryOf maps a package's OSV ecosystem to a threatd registry: OSV's
// ecosystems (core.OSVEcosystems), and OpenVSX, which threatd reads too
// (docs/ingestion.md) though the OSV schema does not list it.
func registryOf(id string, p Package) (string, error) {
	eco := strings.SplitN(p.Ecosystem, ":", 2)[0]
	registry, ok := core.RegistryOfOSVEcosystem(eco)
	if !ok && strings.EqualFold(eco, "openvsx") {
		registry, ok = core.RegistryOpenVSX, true
	}
	if !ok {
		return "", fmt.Errorf("%s: ecosystem %q is not supported", id, p.Ecosystem)
	}
	return registry, nil
}

// Record is what threatd reads of an OSV record (the OSV schema's field
// names; the rest is ignored). It is decoded with encoding/json: the
// protobuf bindings' protojson decoding was the costliest step of a
// re-import at a million records.
type Record struct {
	ID         string      `json:"id"`
	Summary    string      `json:"summary"`
	Details    string      `json:"details"`
	Published  string      `json:"published"`
	Modified   string      `json:"modified"`
	Withdrawn  string      `json:"withdrawn"`
	Affected   []Affected  `json:"affected"`
	References []Reference `json:"references"`
	Credits    []struct {
		Name string `json:"name"`
	} `json:"credits"`
	DatabaseSpecific *DatabaseSpecific `json:"database_specific"`
}

// Affected is one affected package of a record.
type Affected struct {
	Package Package `json:"package"`
	Ranges  []struct {
		Events []Event `json:"events"`
	} `json:"ranges"`
	Versions []string `json:"versions"`
}

// Package is an affected package.
type Package struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
}

// Event is one event of an affected range.
type Event struct {
	Introduced   string `json:"introduced"`
	Fixed        string `json:"fixed"`
	LastAffected string `json:"last_affected"`
	Limit        string `json:"limit"`
}

// Reference is one reference link of a record.
type Reference struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// DatabaseSpecific is what threatd reads of database_specific.
type DatabaseSpecific struct {
	Origins []struct {
		Source string `json:"source"`
	} `json:"malicious-packages-origins"`
	IOCs any `json:"iocs"`
}

// stamp parses an OSV timestamp (RFC 3339).
func stamp(id, field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s %q is not an RFC 3339 time", id, field, s)
	}
	return t.UTC(), nil
}

// Map turns one OSV record into import records, one per affected package.
func Map(v *Record, now time.Time) ([]core.ImportRecord, error) {
	if v.ID == "" {
		return nil, fmt.Errorf("no id")
	}
	if len(v.Affected) == 0 {
		return nil, fmt.Errorf("%s: no affected package", v.ID)
	}
	if v.Published == "" || v.Modified == "" {
		return nil, fmt.Errorf("%s: published and modified are required", v.ID)
	}
	published, err := stamp(v.ID, "published", v.Published)
	if err != nil {
		return nil, err
	}
	modified, err := stamp(v.ID, "modified", v.Modified)
	if err != nil {
		return nil, err
	}
	if v.Withdrawn != "" {
		if _, err := stamp(v.ID, "withdrawn", v.Withdrawn); err != nil {
			return nil, err
		}
	}
	// The record's own fields (its long texts above all) are computed once
	// and shared by the reports of all its affected packages: a record with
	// a 200 KB details and 10,000 affected entries once took 3 GB, copying
	// the text per package.
	shared := recordFields(v, published, modified)
	out := make([]core.ImportRecord, 0, len(v.Affected))
	for i := range v.Affected {
		a := &v.Affected[i]
		upstream, err := upstreamID(v.ID, len(v.Affected), i, a.Package)
		if err != nil {
			return nil, err
		}
		registry, _ := registryOf(v.ID, a.Package)
		sub := packageFields(shared, v, a, registry)
		var payload string
		if len(out) > 0 {
			// The shared payload was validated with the first package's
			// report: validate only what differs (a 200 KB text checked
			// 10,000 times took seconds).
			payload, sub.PayloadDescription = out[0].Threat.Details.PayloadDescription, nil
		}
		th, err := core.NewThreat(sub, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v.ID, err)
		}
		if len(out) > 0 {
			th.Details.PayloadDescription = payload
		}
		th.Source, th.UpstreamID = SourceName, upstream
		th.UpstreamModified = &modified
		th.VerifiedAt = &published
		th.AllVersions = allVersions(a)
		out = append(out, core.ImportRecord{Threat: th, Withdrawn: v.Withdrawn != ""})
	}
	return out, nil
}

// recordFields are the fields of the reports of v that do not depend on the
// affected package.
func recordFields(v *Record, published, modified time.Time) core.Submission {
	str := func(s string) *string { return &s }
	payload := truncate(clean(v.Details), maxPayload)
	if iocs, more := iocList(v.DatabaseSpecific); len(iocs) > 0 {
		var b strings.Builder
		b.WriteString("\n\n" + core.IOCSection + "\n\n")
		if more > 0 {
			fmt.Fprintf(&b, "(the first %d of %d: threatd imports at most %d per record; %d skipped)\n\n", len(iocs), len(iocs)+more, MaxIOCs, more)
		}
		for _, i := range iocs {
			b.WriteString("- " + core.Defang(i) + "\n")
		}
		// The indicators are what a consumer acts on: a long details text
		// is cut to make room for them, never the other way round.
		section := truncate(b.String(), maxIOCSection)
		payload = truncate(payload, maxPayload-utf8.RuneCountInString(section)) + section
	}
	var refs []string
	seenRef := map[string]bool{}
	for _, r := range v.References {
		if u := strings.TrimSpace(r.URL); (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " |") &&
			len(u) <= core.MaxIdentifierBytes && len(refs) < 50 && !seenRef[u] {
			seenRef[u] = true
			refs = append(refs, u)
		}
	}
	var credits []string
	for _, c := range v.Credits {
		if n := strings.TrimSpace(c.Name); n != "" && len(credits) < 100 && len([]rune(n)) <= 256 {
			credits = append(credits, n)
		}
	}
	last := modified
	if last.Before(published) {
		last = published
	}
	s := core.Submission{
		PayloadDescription: str(payload),
		OSVAdvisoryURL:     str("https://osv.dev/vulnerability/" + v.ID), Tags: tags(v.DatabaseSpecific),
		FirstSeen: str(published.Format(time.RFC3339Nano)), LastSeen: str(last.Format(time.RFC3339Nano)),
		Contributors: credits,
	}
	if desc := strings.TrimSpace(v.Summary); desc != "" {
		s.ThreatDescription = str(truncate(clean(desc), 20000))
	}
	if len(refs) > 0 {
		s.EvidenceReferences = str(strings.Join(refs, "|"))
	}
	return s
}

// packageFields completes shared with the fields of one affected package.
func packageFields(shared core.Submission, v *Record, a *Affected, registry string) core.Submission {
	str := func(s string) *string { return &s }
	s := shared
	s.ReportType, s.ResourceIdentifier, s.Registry = str(string(core.TypePackage)), str(a.Package.Name), str(registry)
	if s.ThreatDescription == nil {
		s.ThreatDescription = str(truncate(clean(fmt.Sprintf("Malicious %s package %s", registry, a.Package.Name)), 20000))
	}
	var versions []string
	seen := map[string]bool{}
	for _, ver := range a.Versions {
		if ver = strings.TrimSpace(ver); core.ValidVersion(ver) && !seen[ver] && len(versions) < 1000 {
			seen[ver] = true
			versions = append(versions, ver)
		}
	}
	if len(versions) > 0 {
		s.VersionInfo = str(strings.Join(versions, ", "))
	}
	return s
}

// allVersions: a range introduced at 0 with no fix affects every version.
func allVersions(a *Affected) bool {
	for _, r := range a.Ranges {
		zero, fixed := false, false
		for _, e := range r.Events {
			if e.Introduced == "0" {
				zero = true
			}
			if e.Fixed != "" || e.LastAffected != "" || e.Limit != "" {
				fixed = true
			}
		}
		if zero && !fixed {
			return true
		}
	}
	return false
}

// tags are the upstream origins of the report (e.g. ghsa-malware, checkmarx).
func tags(ds *DatabaseSpecific) []string {
	out := []string{"malicious-package"}
	if ds == nil {
		return out
	}
	for _, o := range ds.Origins {
		src := strings.TrimSpace(o.Source)
		if src != "" && len(src) <= 64 && !slices.Contains(out, src) && len(out) < 50 {
			out = append(out, src)
		}
	}
	return out
}

// Bounds of an imported payload_description (characters): the submit
// limit, of which the indicators section may take up to maxIOCSection.
const (
	maxPayload    = 200_000
	maxIOCSection = 150_000
)

// MaxIOCs bounds the indicators imported from one record's
// database_specific.iocs; the rest are counted and named as skipped in the
// report's payload.
const MaxIOCs = 10_000

// iocList collects every string under database_specific.iocs, objects'
// members in key order, once each (linear: a record with 380,000 of them
// once took minutes), at most MaxIOCs; more counts the ones left out.
func iocList(ds *DatabaseSpecific) (out []string, more int) {
	if ds == nil {
		return nil, 0
	}
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if s := strings.TrimSpace(x); s != "" && !seen[s] {
				seen[s] = true
				if len(out) < MaxIOCs {
					out = append(out, s)
				} else {
					more++
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(ds.IOCs)
	return out, more
}

// clean removes control characters other than newlines and tabs (and
// makes the text valid UTF-8); text that needs neither is returned as is.
func clean(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// truncate keeps the first n characters of s.
func truncate(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
