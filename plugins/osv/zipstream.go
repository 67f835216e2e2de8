package osv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
)

// zipArchive reads a zip archive one entry at a time. archive/zip's Reader
// holds every entry's header in memory (about 300 bytes each: 300 MB for a
// million-record all.zip); this walks the central directory as a stream, so
// memory stays flat whatever the number of entries.
type zipArchive struct {
	f        *os.File
	entries  uint64
	cdOffset int64
	cdSize   int64
}

// zipEntry is one central-directory record.
type zipEntry struct {
	name             string
	method           uint16
	crc              uint32
	compSize, size   uint64
	localHeaderStart int64
}

const (
	sigEOCD       = 0x06054b50
	sigEOCD64     = 0x06064b50
	sigEOCD64Loc  = 0x07064b50
	sigCentralDir = 0x02014b50
	sigLocal      = 0x04034b50
)

var errNotZip = errors.New("not a zip archive (no end of central directory)")

// openZip reads the end of central directory of the archive at path.
func openZip(path string) (*zipArchive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	z, err := readEOCD(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return z, nil
}

func readEOCD(f *os.File) (*zipArchive, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, size-tail); err != nil {
		return nil, err
	}
	pos := -1
	for i := len(buf) - 22; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == sigEOCD {
			pos = i
			break
		}
	}
	if pos < 0 {
		return nil, errNotZip
	}
	e := buf[pos:]
	z := &zipArchive{f: f,
		entries:  uint64(binary.LittleEndian.Uint16(e[10:])),
		cdSize:   int64(binary.LittleEndian.Uint32(e[12:])),
		cdOffset: int64(binary.LittleEndian.Uint32(e[16:])),
	}
	eocdAt := size - tail + int64(pos)
	if z.entries == 0xffff || z.cdSize == 0xffffffff || z.cdOffset == 0xffffffff {
		// Zip64: the locator sits just before the end of central directory.
		if eocdAt < 20 {
			return nil, errors.New("zip64 locator missing")
		}
		loc := make([]byte, 20)
		if _, err := f.ReadAt(loc, eocdAt-20); err != nil {
			return nil, err
		}
		if binary.LittleEndian.Uint32(loc) != sigEOCD64Loc {
			return nil, errors.New("zip64 locator missing")
		}
		rec := make([]byte, 56)
		if _, err := f.ReadAt(rec, int64(binary.LittleEndian.Uint64(loc[8:]))); err != nil {
			return nil, err
		}
		if binary.LittleEndian.Uint32(rec) != sigEOCD64 {
			return nil, errors.New("zip64 end of central directory missing")
		}
		z.entries = binary.LittleEndian.Uint64(rec[32:])
		z.cdSize = int64(binary.LittleEndian.Uint64(rec[40:]))
		z.cdOffset = int64(binary.LittleEndian.Uint64(rec[48:]))
	}
	if z.cdOffset < 0 || z.cdSize < 0 || z.cdOffset+z.cdSize > size {
		return nil, errors.New("central directory outside the file")
	}
	return z, nil
}

// Close closes the archive file.
func (z *zipArchive) Close() error { return z.f.Close() }

// each calls fn for every entry, in archive order.
func (z *zipArchive) each(fn func(zipEntry) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(z.f, z.cdOffset, z.cdSize), 64<<10)
	fixed := make([]byte, 46)
	for n := uint64(0); n < z.entries; n++ {
		if _, err := io.ReadFull(r, fixed); err != nil {
			return fmt.Errorf("central directory entry %d: %w", n, err)
		}
		if binary.LittleEndian.Uint32(fixed) != sigCentralDir {
			return fmt.Errorf("central directory entry %d: bad signature", n)
		}
		e := zipEntry{
			method:           binary.LittleEndian.Uint16(fixed[10:]),
			crc:              binary.LittleEndian.Uint32(fixed[16:]),
			compSize:         uint64(binary.LittleEndian.Uint32(fixed[20:])),
			size:             uint64(binary.LittleEndian.Uint32(fixed[24:])),
			localHeaderStart: int64(binary.LittleEndian.Uint32(fixed[42:])),
		}
		nameLen, extraLen, commentLen := int(binary.LittleEndian.Uint16(fixed[28:])), int(binary.LittleEndian.Uint16(fixed[30:])), int(binary.LittleEndian.Uint16(fixed[32:]))
		varPart := make([]byte, nameLen+extraLen+commentLen)
		if _, err := io.ReadFull(r, varPart); err != nil {
			return fmt.Errorf("central directory entry %d: %w", n, err)
		}
		e.name = string(varPart[:nameLen])
		parseZip64Extra(&e, varPart[nameLen:nameLen+extraLen])
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// parseZip64Extra reads the 64-bit sizes and offset that replace 0xffffffff.
func parseZip64Extra(e *zipEntry, extra []byte) {
	for len(extra) >= 4 {
		id, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if 4+n > len(extra) {
			return
		}
		field := extra[4 : 4+n]
		extra = extra[4+n:]
		if id != 0x0001 {
			continue
		}
		next := func() (uint64, bool) {
			if len(field) < 8 {
				return 0, false
			}
			v := binary.LittleEndian.Uint64(field)
			field = field[8:]
			return v, true
		}
		if e.size == 0xffffffff {
			if v, ok := next(); ok {
				e.size = v
			}
		}
		if e.compSize == 0xffffffff {
			if v, ok := next(); ok {
				e.compSize = v
			}
		}
		if e.localHeaderStart == 0xffffffff {
			if v, ok := next(); ok {
				e.localHeaderStart = int64(v)
			}
		}
	}
}

// open returns the entry's content, checked against its CRC-32 at the end.
func (z *zipArchive) open(e zipEntry) (io.ReadCloser, error) {
	start, err := z.dataStart(e)
	if err != nil {
		return nil, err
	}
	return content(e, io.NewSectionReader(z.f, start, int64(e.compSize)))
}

// dataStart is where the entry's stored bytes begin, after its local
// header.
func (z *zipArchive) dataStart(e zipEntry) (int64, error) {
	hdr := make([]byte, 30)
	if _, err := z.f.ReadAt(hdr, e.localHeaderStart); err != nil {
		return 0, fmt.Errorf("local header: %w", err)
	}
	n, err := localHeaderSize(hdr)
	if err != nil {
		return 0, err
	}
	return e.localHeaderStart + n, nil
}

// localHeaderSize is the size of the local header whose first 30 bytes
// are hdr: those, the name and the extra field.
func localHeaderSize(hdr []byte) (int64, error) {
	if binary.LittleEndian.Uint32(hdr) != sigLocal {
		return 0, errors.New("local header: bad signature")
	}
	return 30 + int64(binary.LittleEndian.Uint16(hdr[26:])) + int64(binary.LittleEndian.Uint16(hdr[28:])), nil
}

// fromStored opens e's content from its stored bytes.
func fromStored(e zipEntry, stored []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return content(e, bytes.NewReader(stored)) }
}

// stored returns the entry's stored (compressed) bytes; an entry that
// says it stores more than max is refused.
func (z *zipArchive) stored(e zipEntry, max uint64) ([]byte, error) {
	if e.compSize > max {
		return nil, fmt.Errorf("stores %d bytes, more than %d", e.compSize, max)
	}
	start, err := z.dataStart(e)
	if err != nil {
		return nil, err
	}
	b := make([]byte, e.compSize)
	if _, err := z.f.ReadAt(b, start); err != nil {
		return nil, fmt.Errorf("entry data: %w", err)
	}
	return b, nil
}

// contentsRead counts the entries whose content was read (the head
// cache's tests).
var contentsRead atomic.Int64

// sequential reads entries' stored bytes in archive order through one
// buffer: a positioned read per entry (two, with its local header) was a
// tenth of a re-import's machine in system calls.
type sequential struct {
	f   *os.File
	r   *bufio.Reader
	pos int64 // the file offset of r's next byte
	hdr [30]byte
}

func newSequential(f *os.File) *sequential {
	return &sequential{f: f, r: bufio.NewReaderSize(&offsetReader{f: f}, 256<<10)}
}

// offsetReader reads a file from off on.
type offsetReader struct {
	f   *os.File
	off int64
}

func (o *offsetReader) Read(p []byte) (int, error) {
	n, err := o.f.ReadAt(p, o.off)
	o.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// stored returns e's stored bytes, false when it cannot say (or s is
// nil): e is behind what was read, stores more than max, or is not where
// the central directory says (the caller then reads it as usual, and
// fails there with the reason).
func (s *sequential) stored(e zipEntry, max uint64) ([]byte, bool) {
	if s == nil || e.localHeaderStart < s.pos || e.compSize > max {
		return nil, false
	}
	if gap := e.localHeaderStart - s.pos; gap > int64(s.r.Size()) {
		s.r.Reset(&offsetReader{f: s.f, off: e.localHeaderStart})
	} else if _, err := s.r.Discard(int(gap)); err != nil {
		s.pos = math.MaxInt64
		return nil, false
	}
	s.pos = e.localHeaderStart
	if _, err := io.ReadFull(s.r, s.hdr[:]); err != nil {
		s.pos = math.MaxInt64
		return nil, false
	}
	size, err := localHeaderSize(s.hdr[:])
	if err != nil {
		s.pos = math.MaxInt64
		return nil, false
	}
	b := make([]byte, e.compSize)
	if _, err := s.r.Discard(int(size) - len(s.hdr)); err != nil {
		s.pos = math.MaxInt64
		return nil, false
	}
	if _, err := io.ReadFull(s.r, b); err != nil {
		s.pos = math.MaxInt64
		return nil, false
	}
	s.pos += size + int64(len(b))
	return b, true
}

// content reads an entry's content from its stored bytes, checked
// against its CRC-32 at the end.
func content(e zipEntry, raw io.Reader) (io.ReadCloser, error) {
	contentsRead.Add(1)
	var rc io.ReadCloser
	switch e.method {
	case 0:
		rc = io.NopCloser(raw)
	case 8:
		rc = newInflater(raw)
	default:
		return nil, fmt.Errorf("compression method %d is not supported", e.method)
	}
	return &crcReader{rc: rc, want: e.crc, size: e.size, h: crc32.NewIEEE()}, nil
}

// inflater is a pooled DEFLATE reader: a decompressor holds about 40 KB of
// tables, too much to allocate again for each of a million small entries.
type inflater struct {
	br *bufio.Reader
	fr io.ReadCloser
}

var inflaters sync.Pool

func newInflater(r io.Reader) *inflater {
	if x, ok := inflaters.Get().(*inflater); ok {
		x.br.Reset(r)
		if err := x.fr.(flate.Resetter).Reset(x.br, nil); err == nil {
			return x
		}
	}
	br := bufio.NewReaderSize(r, 16<<10)
	return &inflater{br: br, fr: flate.NewReader(br)}
}

func (x *inflater) Read(p []byte) (int, error) { return x.fr.Read(p) }

func (x *inflater) Close() error {
	err := x.fr.Close()
	x.br.Reset(nil)
	inflaters.Put(x)
	return err
}

// crcReader checks an entry's CRC-32 and size when its content ends.
type crcReader struct {
	rc   io.ReadCloser
	h    hash.Hash32
	want uint32
	size uint64
	n    uint64
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.h.Write(p[:n])
	c.n += uint64(n)
	if err == io.EOF && (c.h.Sum32() != c.want || c.n != c.size) {
		return n, errors.New("zip entry is corrupt (checksum or size mismatch)")
	}
	return n, err
}

func (c *crcReader) Close() error { return c.rc.Close() }
