package osv

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/threatd/threatd/core"
)

// ModifiedIndex collects an ecosystem's modified_id.csv, as OSV's own
// bucket has it beside each all.zip: one "<modified>,<id>" line per record
// (the reports of a record with several packages joined, at their latest
// modified time), newest first. The lines are sorted on disk (spill), so
// memory stays flat whatever the number of records. WriteTo or Discard it.
type ModifiedIndex struct {
	byID *spill // id → timeKey NUL modified
	err  error
}

// Add adds a verified report (others are left out, as from all.zip).
func (m *ModifiedIndex) Add(t core.Threat) {
	if !Exportable(t) || m.err != nil {
		return
	}
	if m.byID == nil {
		m.byID = newSpill(spillChunk)
	}
	// The record's time, without rendering the record.
	at := modifiedOf(t).UTC()
	m.err = m.byID.add(RecordID(t), at.Format(timeKeyLayout)+"\x00"+osvTime(at))
}

// WriteTo writes the lines, newest first (the same time: by id).
func (m *ModifiedIndex) WriteTo(w io.Writer) (int64, error) {
	defer m.Discard()
	if m.err != nil {
		return 0, m.err
	}
	cw := &countWriter{w: bufio.NewWriter(w)}
	if m.byID == nil {
		return 0, nil
	}
	// Each id's latest time (the last of its pairs), newest first: the key
	// is the time with its bytes inverted, so that ascending is descending.
	newest := newSpill(spillChunk)
	defer newest.discard()
	var id, latest string
	have := false
	emit := func() error {
		if !have {
			return nil
		}
		key, mod, _ := strings.Cut(latest, "\x00")
		return newest.add(descending(key), id+"\x00"+mod)
	}
	err := m.byID.sorted(func(p pair) error {
		if have && p.key != id {
			if err := emit(); err != nil {
				return err
			}
		}
		id, latest, have = p.key, p.value, true
		return nil
	})
	if err == nil {
		err = emit()
	}
	if err != nil {
		return 0, err
	}
	err = newest.sorted(func(p pair) error {
		i := strings.LastIndexByte(p.value, 0)
		_, err := fmt.Fprintf(cw, "%s,%s\n", p.value[i+1:], p.value[:i])
		return err
	})
	if err != nil {
		return cw.n, err
	}
	return cw.n, cw.w.Flush()
}

// Discard releases the temporary files of an index that will not be
// written.
func (m *ModifiedIndex) Discard() {
	if m.byID != nil {
		m.byID.discard()
	}
}

// descending maps s to a string whose ascending order is s's descending
// one: every byte inverted, then 0xff, so that a prefix sorts after the
// longer strings it begins.
func descending(s string) string {
	b := make([]byte, len(s)+1)
	for i := 0; i < len(s); i++ {
		b[i] = ^s[i]
	}
	b[len(s)] = 0xff
	return string(b)
}

// countWriter buffers writes to w and counts the bytes written.
type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// timeKeyLayout formats modified_id.csv's sort keys: UTC, fixed width, so
// that byte order is time order.
const timeKeyLayout = "2006-01-02T15:04:05.000000000"
