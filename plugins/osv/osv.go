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
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/threatd/threatd/core"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = "osv"

// ecosystems maps OSV ecosystem names to threatd registries.
var ecosystems = map[string]string{
	"npm": core.RegistryNPM, "pypi": core.RegistryPyPI, "rubygems": core.RegistryRubyGems, "crates.io": core.RegistryCrates,
	"go": core.RegistryGo, "maven": core.RegistryMaven, "nuget": core.RegistryNuGet, "packagist": core.RegistryPackagist,
	"vscode": core.RegistryVSCode, "openvsx": core.RegistryOpenVSX,
}

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
func (s Source) Read(ctx context.Context, paths []string, _ map[string]string, fn func(core.SourceItem) error) error {
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
	type result struct {
		name string
		recs []core.ImportRecord
		err  error
		// input: a file or archive entry (counted for progress), not a
		// path that could not be walked.
		input bool
	}
	type job struct {
		in  input
		out chan result
	}
	jobs, order := make(chan job, 64), make(chan chan result, 256)
	var (
		workers  sync.WaitGroup
		walkErr  error
		archives []io.Closer // opened by the walk, closed once no worker reads them
	)
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
				recs, err := readOne(j.in, now())
				j.out <- result{name: j.in.name, recs: recs, err: err, input: true}
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
	done := 0
	for out := range order {
		r := <-out
		if ctx.Err() != nil {
			break
		}
		if r.err != nil {
			if err := fn(core.SourceItem{Skipped: r.name, Reason: r.err.Error()}); err != nil {
				return err
			}
			if !r.input {
				continue
			}
		}
		for j := range r.recs {
			if err := fn(core.SourceItem{Record: &r.recs[j]}); err != nil {
				return err
			}
		}
		done++
		if err := fn(core.SourceItem{FilesDone: done, FilesTotal: max(total, done)}); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return walkErr
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

func readOne(in input, now time.Time) ([]core.ImportRecord, error) {
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
	var v Record
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not an OSV record: %v", err)
	}
	return Map(&v, now)
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
	Package struct {
		Ecosystem string `json:"ecosystem"`
		Name      string `json:"name"`
	} `json:"package"`
	Ranges []struct {
		Events []Event `json:"events"`
	} `json:"ranges"`
	Versions []string `json:"versions"`
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
	var out []core.ImportRecord
	for i := range v.Affected {
		a := &v.Affected[i]
		if a.Package.Name == "" {
			return nil, fmt.Errorf("%s: affected[%d] has no package", v.ID, i)
		}
		registry, ok := ecosystems[strings.ToLower(strings.SplitN(a.Package.Ecosystem, ":", 2)[0])]
		if !ok {
			return nil, fmt.Errorf("%s: ecosystem %q is not supported", v.ID, a.Package.Ecosystem)
		}
		upstream := v.ID
		if len(v.Affected) > 1 {
			upstream = fmt.Sprintf("%s/%s/%s", v.ID, registry, a.Package.Name)
		}
		sub := submission(v, a, registry, published, modified)
		th, err := core.NewThreat(sub, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v.ID, err)
		}
		th.Source, th.UpstreamID = SourceName, upstream
		th.UpstreamModified = &modified
		th.VerifiedAt = &published
		th.AllVersions = allVersions(a)
		out = append(out, core.ImportRecord{Threat: th, Withdrawn: v.Withdrawn != ""})
	}
	return out, nil
}

func submission(v *Record, a *Affected, registry string, published, modified time.Time) core.Submission {
	str := func(s string) *string { return &s }
	desc := strings.TrimSpace(v.Summary)
	if desc == "" {
		desc = fmt.Sprintf("Malicious %s package %s", registry, a.Package.Name)
	}
	payload := clean(v.Details)
	if iocs := iocList(v.DatabaseSpecific); len(iocs) > 0 {
		var b strings.Builder
		b.WriteString(payload)
		b.WriteString("\n\n### Indicators of compromise (defanged)\n\n")
		for _, i := range iocs {
			b.WriteString("- " + core.Defang(i) + "\n")
		}
		payload = b.String()
	}
	var versions []string
	for _, ver := range a.Versions {
		if ver = strings.TrimSpace(ver); core.ValidVersion(ver) && !slices.Contains(versions, ver) && len(versions) < 1000 {
			versions = append(versions, ver)
		}
	}
	var refs []string
	for _, r := range v.References {
		if u := strings.TrimSpace(r.URL); (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " |") && len(refs) < 50 && !slices.Contains(refs, u) {
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
		ReportType: str(string(core.TypePackage)), ResourceIdentifier: str(a.Package.Name), Registry: str(registry),
		ThreatDescription: str(truncate(clean(desc), 20000)), PayloadDescription: str(truncate(payload, 200000)),
		OSVAdvisoryURL: str("https://osv.dev/vulnerability/" + v.ID), Tags: tags(v.DatabaseSpecific),
		FirstSeen: str(published.Format(time.RFC3339Nano)), LastSeen: str(last.Format(time.RFC3339Nano)),
		Contributors: credits,
	}
	if len(versions) > 0 {
		s.VersionInfo = str(strings.Join(versions, ", "))
	}
	if len(refs) > 0 {
		s.EvidenceReferences = str(strings.Join(refs, "|"))
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

// iocList collects every string under database_specific.iocs, objects'
// members in key order.
func iocList(ds *DatabaseSpecific) []string {
	if ds == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if s := strings.TrimSpace(x); s != "" && !seen[s] {
				seen[s] = true
				out = append(out, s)
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
	return out
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
