package osv

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/lanrat/extsort"
)

// pair is one record of a spill: sorted by key, then by value.
type pair struct{ key, value string }

func comparePairs(a, b pair) int {
	if c := cmp.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.value, b.value)
}

func encodePair(p pair) ([]byte, error) {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(p.key)+len(p.value)), uint64(len(p.key)))
	return append(append(b, p.key...), p.value...), nil
}

func decodePair(b []byte) (pair, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return pair{}, errors.New("spill: a damaged record")
	}
	return pair{key: string(b[w : w+int(n)]), value: string(b[w+int(n):])}, nil
}

// spillChunk is how many pairs a spill sorts in memory before it writes
// them to a temporary file. What the exporter sorts is ids (at most
// core.MaxUpstreamIDBytes, 512 bytes; 20–50 in practice), times and
// fixed-width places, never records, so a chunk holds at most about 18 MB
// and a few megabytes in practice; a few chunks are in memory at once.
var spillChunk = 1 << 15

// spill sorts pairs of any number in bounded memory (an external merge
// sort, github.com/lanrat/extsort): add them, then read them back in order
// with sorted. What the archive and modified_id.csv must see whole (every
// record name, the parts of a record with several packages, every record's
// time) goes through one, never through a map that grows with the export.
type spill struct {
	in     chan pair
	out    <-chan pair
	errc   <-chan error
	err    error
	cancel context.CancelFunc
}

func newSpill(chunk int) *spill { return newSpillIn(chunk, os.TempDir()) }

// newSpillIn is newSpill with its temporary files in dir.
func newSpillIn(chunk int, dir string) *spill {
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan pair, 256)
	sorter, out, errc := extsort.Generic(in, decodePair, encodePair, comparePairs,
		&extsort.Config{ChunkSize: chunk, NumWorkers: 1, ChanBuffSize: 1, SortedChanBuffSize: 256, TempFilesDir: dir})
	go sorter.Sort(ctx)
	return &spill{in: in, out: out, errc: errc, cancel: cancel}
}

// add adds a pair; it fails if the sort has failed (its temporary files).
func (s *spill) add(key, value string) error {
	if s.err != nil {
		return s.err
	}
	select {
	case s.in <- pair{key, value}:
		return nil
	case err := <-s.errc:
		s.err = fmt.Errorf("spill: %w", err)
		return s.err
	}
}

// sorted ends the input and calls fn with every pair in order; fn's error
// stops it.
func (s *spill) sorted(fn func(pair) error) error {
	defer s.cancel()
	if s.err != nil {
		return s.err
	}
	close(s.in)
	for p := range s.out {
		if err := fn(p); err != nil {
			return err
		}
	}
	if err := <-s.errc; err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	return nil
}

// discard abandons the sort and its temporary files.
func (s *spill) discard() { s.cancel() }
