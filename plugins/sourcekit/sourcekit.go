// Package sourcekit is what the file sources (urlhaus, threatfox,
// datadog) share: their settings check, a JSON object read member by
// member (Object: the datadog manifest, the ThreatFox export), a reader
// that bounds one JSON
// value's bytes, and the window of upstream records asked of Known before
// they are mapped and yielded.
package sourcekit

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/threatd/threatd/core"
)

// CheckSettings refuses a setting the source does not take (max_affected
// is the OSV source's, passed to every source, and ignored).
func CheckSettings(source string, settings map[string]string) error {
	for k := range settings {
		if k != "max_affected" {
			return fmt.Errorf("%s source: unknown setting %q", source, k)
		}
	}
	return nil
}

// Capped counts the bytes read through it since Mark and refuses to read
// more than Max (plus the decoder's read-ahead) for one value: a JSON
// decoder buffers a whole value, so a hostile file's huge value is
// refused before it is held.
type Capped struct {
	R    io.Reader
	Max  int64
	What string // "an IOC's entry", for the error
	n    int64
	mark int64
}

func (c *Capped) Read(p []byte) (int, error) {
	if c.Over() {
		return 0, fmt.Errorf("%s is longer than %d bytes (nothing was imported)", c.What, c.Max)
	}
	n, err := c.R.Read(p)
	c.n += int64(n)
	return n, err
}

// Mark starts a value.
func (c *Capped) Mark() { c.mark = c.n }

// Over says whether the value since Mark is longer than allowed.
func (c *Capped) Over() bool { return c.n-c.mark > c.Max+64<<10 }

// Unique refuses a file that gives one upstream id twice: its two
// records would both be new to storage in one batch (or the second
// would silently replace the first), so the file is refused whole in the
// check before anything is imported. The zero value is ready.
type Unique struct {
	seen map[string]string
}

// Add records id at where ("line 12"); a second sight is the error.
func (u *Unique) Add(path, id, where string) error {
	if u.seen == nil {
		u.seen = map[string]string{}
	}
	if first, ok := u.seen[id]; ok {
		return fmt.Errorf("%s: the id %q appears twice (%s and %s): a file lists each upstream record once (nothing was imported)", path, id, first, where)
	}
	u.seen[id] = where
	return nil
}

// Pending is one upstream record read but not yet mapped.
type Pending struct {
	// ID is its upstream id, Modified its upstream version.
	ID       string
	Modified time.Time
	// Label names it in a skip ("file line 12 (id 7)").
	Label string
	// Map makes its record (an error skips it, with the reason).
	Map func() (core.ImportRecord, error)
}

// Window is the records asked of Known at once.
const Window = 1000

// Batch gathers pending records and, a window at a time, yields those
// Known does not already have at their version (mapped, or skipped with
// the reason) and counts the rest as unchanged.
type Batch struct {
	Source string
	Known  core.Known
	Yield  func(core.SourceItem) error
	items  []Pending
}

// Add queues one record, flushing a full window.
func (b *Batch) Add(ctx context.Context, p Pending) error {
	b.items = append(b.items, p)
	if len(b.items) == Window {
		return b.Flush(ctx)
	}
	return nil
}

// Flush yields what is queued.
func (b *Batch) Flush(ctx context.Context) error {
	if len(b.items) == 0 {
		return nil
	}
	defer func() { b.items = b.items[:0] }()
	skip := make([]bool, len(b.items))
	if b.Known != nil {
		vs := make([]core.UpstreamVersion, len(b.items))
		for i, p := range b.items {
			vs[i] = core.UpstreamVersion{Source: b.Source, IDs: []string{p.ID}, Modified: p.Modified}
		}
		var err error
		if skip, err = b.Known(ctx, vs); err != nil {
			return err
		}
	}
	unchanged := 0
	for i, p := range b.items {
		if skip[i] {
			unchanged++
			continue
		}
		rec, err := p.Map()
		if err != nil {
			if err := b.Yield(core.SourceItem{Skipped: p.Label, Reason: err.Error(), UpstreamID: p.ID}); err != nil {
				return err
			}
			continue
		}
		if err := b.Yield(core.SourceItem{Record: &rec}); err != nil {
			return err
		}
	}
	if unchanged > 0 {
		return b.Yield(core.SourceItem{Unchanged: unchanged})
	}
	return nil
}
