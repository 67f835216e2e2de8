// Package urlhaus is the source plugin of abuse.ch URLhaus's CSV export
// (docs/ingestion.md): `threatd import urlhaus csv.txt`. Each row is a
// malicious URL; it becomes a verified url report of source urlhaus whose
// upstream id is URLhaus's id, with the URLhaus page as its evidence.
//
// A file is read twice: once to check it whole (its column line, its
// quoting, every row's field count, no line over MaxLine bytes), so that a
// file that is not a URLhaus export, or is broken anywhere, is refused
// before anything is imported; then to map and yield its rows. A row that
// cannot be a report (a URL threatd cannot hold, a date that does not
// parse) is skipped with its id and the reason.
package urlhaus

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins/sourcekit"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = "urlhaus"

// Columns are the export's columns, as its last comment line names them.
var Columns = []string{"id", "dateadded", "url", "url_status", "last_online", "threat", "tags", "urlhaus_link", "reporter"}

// MaxLine bounds one line of the file: URLhaus's rows are a few hundred
// bytes; a longer line is a broken or hostile file.
const MaxLine = 64 << 10

// Source implements core.Source for URLhaus's CSV export.
type Source struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Read checks every path whole, then yields its rows.
func (s Source) Read(ctx context.Context, paths []string, settings map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	if err := sourcekit.CheckSettings(SourceName, settings); err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	for _, p := range paths {
		var ids sourcekit.Unique
		if _, err := each(ctx, p, func(f []string, line int) error {
			id := strings.TrimSpace(f[0])
			if !isID(id) {
				return nil // skipped with its reason when read
			}
			return ids.Add(p, id, fmt.Sprintf("line %d", line))
		}); err != nil {
			return err
		}
	}
	for i, p := range paths {
		b := &sourcekit.Batch{Source: SourceName, Known: known, Yield: fn}
		_, err := each(ctx, p, func(f []string, line int) error {
			label := fmt.Sprintf("%s line %d (id %s)", p, line, f[0])
			r, err := parseRow(f)
			if err != nil {
				// The id, when it is one, names the record (--full).
				it := core.SourceItem{Skipped: label, Reason: err.Error()}
				if isID(r.id) {
					it.UpstreamID = r.id
				}
				return fn(it)
			}
			return b.Add(ctx, sourcekit.Pending{ID: r.id, Modified: r.modified, Label: label, Map: func() (core.ImportRecord, error) { return r.record(now()) }})
		})
		if err == nil {
			err = b.Flush(ctx)
		}
		if err != nil {
			return err
		}
		if err := fn(core.SourceItem{FilesDone: i + 1, FilesTotal: len(paths)}); err != nil {
			return err
		}
	}
	return nil
}

// each reads the file at path, checks its column line and its rows, and
// calls fn with each row's fields and line number; it returns the rows
// read.
func each(ctx context.Context, path string, fn func(fields []string, line int) error) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lr := &lineReader{r: bufio.NewReaderSize(f, 64<<10)}
	br := bufio.NewReader(lr)
	// The header: comment lines, the last naming the columns.
	var columns string
	hdr := 0
	for {
		b, err := br.Peek(1)
		if err != nil || b[0] != '#' {
			break
		}
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		hdr++
		if c := strings.TrimSpace(strings.TrimPrefix(line, "#")); strings.HasPrefix(c, "id,") {
			columns = c
		}
	}
	if columns != strings.Join(Columns, ",") {
		if columns == "" {
			return 0, fmt.Errorf("%s: not a URLhaus CSV export: no comment line names its columns (%s)", path, strings.Join(Columns, ","))
		}
		return 0, fmt.Errorf("%s: not a URLhaus CSV export: its columns are %q, want %q", path, columns, strings.Join(Columns, ","))
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = len(Columns)
	cr.ReuseRecord = true
	cr.Comment = '#'
	n := 0
	for {
		if n%4096 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if lr.err != nil {
				return n, fmt.Errorf("%s: %w", path, lr.err)
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return n, fmt.Errorf("%s: line %d: %v (nothing was imported)", path, hdr+pe.Line, pe.Err)
			}
			return n, fmt.Errorf("%s: %w", path, err)
		}
		n++
		line, _ := cr.FieldPos(0)
		if err := fn(rec, hdr+line); err != nil {
			return n, err
		}
	}
	if lr.err != nil {
		return n, fmt.Errorf("%s: %w", path, lr.err)
	}
	return n, nil
}

// lineReader refuses a line longer than MaxLine, and counts lines.
type lineReader struct {
	r     *bufio.Reader
	run   int
	lines int
	err   error
}

func (l *lineReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			l.run = 0
			l.lines++
			continue
		}
		if l.run++; l.run > MaxLine {
			l.err = fmt.Errorf("line %d is longer than %d bytes (nothing was imported)", l.lines+1, MaxLine)
			return 0, l.err
		}
	}
	return n, err
}

// row is one row's fields, checked.
type row struct {
	id, url, status, threat, link, reporter string
	tags                                    []string
	added, modified                         time.Time
}

// isID says whether s is a URLhaus id: 1 to 20 digits.
func isID(s string) bool { return s != "" && len(s) <= 20 && strings.Trim(s, "0123456789") == "" }

// parseRow reads a row's fields: its id, times and URL (r.id is set
// whatever the error).
func parseRow(f []string) (row, error) {
	r := row{id: strings.TrimSpace(f[0]), url: strings.TrimSpace(f[2]), status: f[3], threat: f[5], link: strings.TrimSpace(f[7]), reporter: f[8]}
	if !isID(r.id) {
		return r, fmt.Errorf("id %q is not a URLhaus id (digits)", f[0])
	}
	var err error
	if r.added, err = time.Parse(time.DateTime, f[1]); err != nil {
		return r, fmt.Errorf("dateadded %q is not a UTC time of the form 2006-01-02 15:04:05", f[1])
	}
	r.modified = r.added
	if f[4] != "" {
		last, err := time.Parse(time.DateTime, f[4])
		if err != nil {
			return r, fmt.Errorf("last_online %q is not a UTC time of the form 2006-01-02 15:04:05", f[4])
		}
		if last.After(r.modified) {
			r.modified = last
		}
	}
	for t := range strings.SplitSeq(f[6], ",") {
		if t = strings.TrimSpace(t); t != "" && t != "None" && len(r.tags) < 20 {
			r.tags = append(r.tags, strings.ToLower(t))
		}
	}
	return r, nil
}

// record is the row as an imported report.
func (r row) record(now time.Time) (core.ImportRecord, error) {
	str := func(s string) *string { return &s }
	desc := "URLhaus: " + strings.ReplaceAll(strings.TrimSpace(r.threat), "_", " ")
	if strings.TrimSpace(r.threat) == "" {
		desc = "URLhaus: malicious URL"
	}
	payload := fmt.Sprintf("Listed by URLhaus (id %s) as %s, status %s when exported, reported by %s.", r.id, r.threat, r.status, r.reporter)
	sub := core.Submission{ReportType: str(string(core.TypeURL)), ResourceIdentifier: str(r.url), ThreatDescription: str(desc),
		PayloadDescription: str(payload), Tags: append([]string{"urlhaus"}, r.tags...)}
	if strings.HasPrefix(r.link, "https://urlhaus.abuse.ch/") && len(r.link) <= core.MaxIdentifierBytes {
		sub.EvidenceReferences = str(r.link)
	}
	th, err := core.NewImportedThreat(sub, now)
	if err != nil {
		return core.ImportRecord{}, err
	}
	th.Source, th.UpstreamID = SourceName, r.id
	added, modified := r.added, r.modified
	th.UpstreamModified, th.VerifiedAt = &modified, &added
	return core.ImportRecord{Threat: th}, nil
}
