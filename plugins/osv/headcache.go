package osv

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
)

// A re-import reads every record's head (its id, modified time and
// affected packages) to ask which records are imported already, and an
// archive's entries must be inflated for that: a quarter of the machine
// in a re-import of a million records, the largest part. The head cache
// keeps, for each archive a run reads, the head of every entry by a
// SHA-256 digest of the entry's stored bytes; the next run reads an
// entry's stored bytes, hashes them, and takes the head from the cache
// when the digest is there, without inflating. Equal stored bytes are
// equal content, so a head taken from the cache is the head readHead
// would read; whether the record is imported at that version is still
// asked of the store, and a record that is not is then inflated and
// decoded as before. The cache only ever saves work: a file that is
// missing, damaged or of another version is read as if it were empty.
//
// One file per archive path, in the directory the host gives the plugin
// (plugins.CacheDirEnv), named by a digest of the path: the archive
// downloaded again to the same place finds the heads of the entries it
// still has. A file is written whole at the end of a run that read its
// archive to the end (to a temporary name, then renamed) and read
// through a memory map; its entries are sorted by digest through a
// spill, so neither writing nor reading one holds the entries in the
// plugin's heap. Files not used for headCacheKeep are removed.

// headCacheVersion is the version of a head cache file: bump it when
// readHead, or the encoding below, changes.
const headCacheVersion = 1

// headCacheMagic opens a head cache file.
const headCacheMagic = "tdosvhc\x00"

// headCacheKeep is how long a file no run has used is kept.
const headCacheKeep = 90 * 24 * time.Hour

// digestSize is the size of an entry's digest; indexEntry is an index
// entry's (the digest and where its head is).
const (
	digestSize = sha256.Size
	indexEntry = digestSize + 8
	// fileHead is the magic and the version; fileTail the entry count,
	// the index's offset and the SHA-256 of everything before it.
	fileHead = len(headCacheMagic) + 4
	fileTail = 16 + sha256.Size
)

// maxStoredBytes bounds the stored bytes of an entry read for its digest:
// a record's content is at most maxRecordBytes, and DEFLATE never grows
// content by more than a few bytes in 16 KB.
const maxStoredBytes = maxRecordBytes + maxRecordBytes/64

// digest names an archive entry's content: its stored bytes, with the
// compression method, CRC-32 and size that say how they are read.
type digest [digestSize]byte

func entryDigest(e zipEntry, stored []byte) digest {
	var hdr [14]byte
	binary.LittleEndian.PutUint16(hdr[0:], e.method)
	binary.LittleEndian.PutUint32(hdr[2:], e.crc)
	binary.LittleEndian.PutUint64(hdr[6:], e.size)
	h := sha256.New()
	h.Write(hdr[:])
	h.Write(stored)
	var d digest
	h.Sum(d[:0])
	return d
}

// headCache is the head caches of one run, by archive path.
type headCache struct {
	dir      string
	mu       sync.Mutex
	archives map[string]*archiveHeads
}

func newHeadCache(dir string) *headCache {
	return &headCache{dir: dir, archives: map[string]*archiveHeads{}}
}

// archiveHeads is one archive's cache: the file of the run before (nil
// when there is none) and the heads this run read, spilled for sorting.
type archiveHeads struct {
	file  string
	old   *headFile
	spill *spill
	added int
	err   error
}

// archive returns the cache of the archive at path (nil on a nil cache).
func (c *headCache) archive(path string) *archiveHeads {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if a, ok := c.archives[path]; ok {
		return a
	}
	sum := sha256.Sum256([]byte(path))
	a := &archiveHeads{file: filepath.Join(c.dir, fmt.Sprintf("osv-heads-%x.bin", sum[:16]))}
	old, err := openHeadFile(a.file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "osv: head cache %s not used: %v\n", a.file, err)
	}
	a.old = old
	a.spill = newSpillIn(spillChunk, c.dir)
	c.archives[path] = a
	return a
}

// add keeps the head of an entry read this run. A cache that cannot be
// written is dropped, never the run.
func (a *archiveHeads) add(d digest, h *core.UpstreamVersion) {
	if a.err != nil {
		return
	}
	if err := a.spill.add(string(d[:]), string(encodeHead(h))); err != nil {
		a.err = err
		return
	}
	a.added++
}

// finish ends the run: with complete, each archive's heads replace its
// file; files no run has used for headCacheKeep are removed. Failures
// are reported on stderr: the cache is an aid, not the import.
func (c *headCache) finish(complete bool) {
	if c == nil {
		return
	}
	for _, a := range c.archives {
		if a.old != nil {
			// The file read was used: it is kept (and its successor
			// written) even if it cannot be replaced below.
			now := time.Now()
			_ = os.Chtimes(a.file, now, now)
		}
		switch {
		case !complete || a.err != nil:
			a.spill.discard()
		default:
			if err := writeHeadFile(a.file, a.spill); err != nil {
				fmt.Fprintf(os.Stderr, "osv: head cache %s not written: %v\n", a.file, err)
			}
		}
		if a.err != nil {
			fmt.Fprintf(os.Stderr, "osv: head cache %s not written: %v\n", a.file, a.err)
		}
		a.old.close()
	}
	c.archives = nil
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "osv-heads-") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		keep := headCacheKeep
		if !strings.HasSuffix(name, ".bin") {
			keep = 24 * time.Hour // a temporary file a run left
		}
		if time.Since(fi.ModTime()) > keep {
			_ = os.Remove(filepath.Join(c.dir, name))
		}
	}
}

// encodeHead encodes a head: its modified time (seconds and nanoseconds)
// and its upstream ids.
func encodeHead(h *core.UpstreamVersion) []byte {
	b := binary.AppendVarint(nil, h.Modified.Unix())
	b = binary.AppendUvarint(b, uint64(h.Modified.Nanosecond()))
	b = binary.AppendUvarint(b, uint64(len(h.IDs)))
	for _, id := range h.IDs {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	return b
}

// decodeCachedHead reads what encodeHead wrote; false when b is not that.
func decodeCachedHead(b []byte) (*core.UpstreamVersion, bool) {
	sec, n := binary.Varint(b)
	if n <= 0 {
		return nil, false
	}
	b = b[n:]
	nsec, n := binary.Uvarint(b)
	if n <= 0 || nsec >= 1e9 {
		return nil, false
	}
	b = b[n:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count == 0 || count > uint64(len(b)) {
		return nil, false
	}
	b = b[n:]
	ids := make([]string, count)
	for i := range ids {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return nil, false
		}
		ids[i] = string(b[n : n+int(l)])
		b = b[n+int(l):]
	}
	return &core.UpstreamVersion{Source: SourceName, IDs: ids, Modified: time.Unix(sec, int64(nsec)).UTC()}, true
}

// headFile is a head cache file read through a memory map: the magic and
// version, the heads, the index (each digest and its head's offset, in
// digest order), the entry count and the index's offset, and the SHA-256
// of all of it.
type headFile struct {
	data   []byte
	unmap  func()
	index  []byte
	blobTo int
	count  int
}

// openHeadFile maps the file at path; nil without an error when there is
// none, nil with the reason when it cannot be used.
func openHeadFile(path string) (*headFile, error) {
	data, unmap, err := mapFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := checkHeadFile(data)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

// checkHeadFile checks data's magic, version, layout and digest.
func checkHeadFile(data []byte) (*headFile, error) {
	if len(data) < fileHead+fileTail || string(data[:len(headCacheMagic)]) != headCacheMagic {
		return nil, errors.New("not a head cache file")
	}
	if v := binary.LittleEndian.Uint32(data[len(headCacheMagic):]); v != headCacheVersion {
		return nil, fmt.Errorf("version %d, not %d", v, headCacheVersion)
	}
	body := len(data) - sha256.Size
	if sum := sha256.Sum256(data[:body]); !bytes.Equal(sum[:], data[body:]) {
		return nil, errors.New("damaged (its digest does not match)")
	}
	count := binary.LittleEndian.Uint64(data[body-16:])
	at := binary.LittleEndian.Uint64(data[body-8:])
	if at < uint64(fileHead) || at > uint64(body-16) || (uint64(body-16)-at)%indexEntry != 0 || (uint64(body-16)-at)/indexEntry != count {
		return nil, errors.New("damaged (its index)")
	}
	return &headFile{data: data, index: data[at : body-16], blobTo: int(at), count: int(count)}, nil
}

// lookup returns the head kept for d (false on a nil file).
func (f *headFile) lookup(d digest) (*core.UpstreamVersion, bool) {
	if f == nil || f.count == 0 {
		return nil, false
	}
	at := func(i int) []byte { return f.index[i*indexEntry : i*indexEntry+digestSize] }
	// Digests are uniform: the entry is near where its first 8 bytes
	// place it, and the search starts from a few entries either side (a
	// binary search over the whole index touched 20 pages a look-up).
	guess, _ := bits.Mul64(binary.BigEndian.Uint64(d[:8]), uint64(f.count))
	lo, hi := int(guess), int(guess)+1
	for step := 8; lo > 0 && bytes.Compare(at(lo), d[:]) > 0; step *= 2 {
		hi, lo = lo, max(lo-step, 0)
	}
	for step := 8; hi < f.count && bytes.Compare(at(hi), d[:]) <= 0; step *= 2 {
		lo, hi = hi, min(hi+step, f.count)
	}
	i := lo + sort.Search(hi-lo, func(k int) bool { return bytes.Compare(at(lo+k), d[:]) >= 0 })
	if i == f.count || !bytes.Equal(at(i), d[:]) {
		return nil, false
	}
	off := binary.LittleEndian.Uint64(f.index[i*indexEntry+digestSize:])
	if off < uint64(fileHead) || off >= uint64(f.blobTo) {
		return nil, false
	}
	return decodeCachedHead(f.data[off:f.blobTo])
}

func (f *headFile) close() {
	if f != nil && f.unmap != nil {
		f.unmap()
		f.unmap = nil
	}
}

// writeHeadFile writes the heads of s, sorted by digest, to path: the
// heads go to the file as they come and the index to a second temporary
// file, appended after them.
func writeHeadFile(path string, s *spill) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "osv-heads-*.tmp")
	if err != nil {
		s.discard()
		return err
	}
	idx, err := os.CreateTemp(filepath.Dir(path), "osv-heads-*.tmp")
	if err != nil {
		s.discard()
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	defer func() {
		idx.Close()
		os.Remove(idx.Name())
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	out := bufio.NewWriterSize(io.MultiWriter(tmp, sum), 256<<10)
	ix := bufio.NewWriterSize(idx, 256<<10)
	var hdr [fileHead]byte
	copy(hdr[:], headCacheMagic)
	binary.LittleEndian.PutUint32(hdr[len(headCacheMagic):], headCacheVersion)
	out.Write(hdr[:])
	at, count, last := uint64(fileHead), uint64(0), ""
	var entry [indexEntry]byte
	err = s.sorted(func(p pair) error {
		if p.key == last && count > 0 {
			return nil // the same entry twice (an archive named twice)
		}
		last = p.key
		copy(entry[:], p.key)
		binary.LittleEndian.PutUint64(entry[digestSize:], at)
		if _, err := ix.Write(entry[:]); err != nil {
			return err
		}
		if _, err := out.WriteString(p.value); err != nil {
			return err
		}
		at += uint64(len(p.value))
		count++
		return nil
	})
	if err != nil {
		return err
	}
	if err := ix.Flush(); err != nil {
		return err
	}
	if _, err := idx.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(out, idx); err != nil {
		return err
	}
	var tail [16]byte
	binary.LittleEndian.PutUint64(tail[0:], count)
	binary.LittleEndian.PutUint64(tail[8:], at)
	out.Write(tail[:])
	if err := out.Flush(); err != nil {
		return err
	}
	if _, err := tmp.Write(sum.Sum(nil)); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
