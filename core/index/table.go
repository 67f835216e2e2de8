package index

import (
	"hash/maphash"
	"slices"
	"strings"
	"unsafe"

	"github.com/threatd/threatd/core"
)

// table maps canonical keys to report summaries without a single Go pointer
// per report: a million reports are a few large allocations (records, hash
// slots, byte chunks) that the garbage collector neither scans nor counts
// object by object. A map[string]*entry of the same size held ~130 bytes per
// report in a million small objects and made every GC cycle mark them all.
//
// Keys and version lists live in append-only byte chunks; a record points to
// its bytes by chunk and offset. Slots are open-addressed with linear
// probing and backward-shift deletion (no tombstones): each holds 32 bits
// of the key's hash and the record's index plus one (0 = empty). Bytes of
// replaced or removed records are garbage until compact rewrites the
// chunks. table is not safe for concurrent use; Index guards it.
type table struct {
	seed maphash.Seed
	// mem holds slots, recs and chunks outside the collected heap
	// (offheap.go).
	mem     *arena
	slots   []uint64
	used    int // occupied slots
	recs    []rec
	free    []uint32 // indexes of removed records, for reuse
	chunks  [][]byte
	live    int // bytes of chunks referenced by records
	garbage int // bytes of chunks no longer referenced
	// compactions counts rewrites of the chunks (for tests).
	compactions int
	// gen numbers puts: a record's gen is the number of the put that made
	// it, so that a spill entry read from storage before a change is not
	// attached to the record the change made (spill.go).
	gen uint32
	// The spill entries (spill.go): how many records have one, their
	// bytes, and the bytes of entries no record points to any more.
	spillEntries            int
	spillLive, spillGarbage int64
	// The records per class (report type and registry): classes names
	// each class once, perClass counts its live records, so that a total
	// by type or ecosystem costs a few additions, not a count of rows.
	classes  []class
	classOf  map[class]uint16
	perClass []int
	// images maps the repository path of container reports, without
	// their registry host ("library/nginx"), to their keys: an image is
	// matched by the path a client asks a registry for, whatever host the
	// report names.
	images map[string][]string
}

// imagePath is the path a container key is matched by ("" for a key of
// another type).
func imagePath(key string) string {
	ref, ok := strings.CutPrefix(key, "container:")
	if !ok {
		return ""
	}
	p, _, _ := core.ContainerRepository(ref)
	return core.ImagePath(p)
}

// addImage notes a container report's key under its path.
func (t *table) addImage(key string) {
	p := imagePath(key)
	if p == "" || slices.Contains(t.images[p], key) {
		return
	}
	if t.images == nil {
		t.images = map[string][]string{}
	}
	t.images[p] = append(t.images[p], key)
}

// dropImage forgets a container report's key.
func (t *table) dropImage(key string) {
	p := imagePath(key)
	if p == "" {
		return
	}
	keys := slices.DeleteFunc(t.images[p], func(k string) bool { return k == key })
	if len(keys) == 0 {
		delete(t.images, p)
	} else {
		t.images[p] = keys
	}
}

// class is a report type and registry.
type class struct{ typ, registry string }

// rec is one report's summary: 64 bytes, no pointers.
type rec struct {
	id         [16]byte
	verifiedAt int64 // unix microseconds
	chunk      uint32
	off        uint32
	keyLen     uint32
	verLen     uint32
	flags      uint8
	class      uint16 // index into table.classes
	gen        uint32
	// The report's spill entry (spillLen 0: none).
	spillLen uint32
	spillOff int64
}

const (
	flagAllVersions uint8 = 1 << iota
	// flagVersionsElsewhere: the version list was too long to keep inline.
	flagVersionsElsewhere
	flagLive
)

const chunkSize = 1 << 20

func newTable(hint int) *table {
	t := &table{seed: maphash.MakeSeed()}
	t.mem = newArena(t)
	n := 16
	for n*3/4 < hint {
		n *= 2
	}
	t.slots = sliceOf[uint64](t.mem, n)
	t.recs = sliceOf[rec](t.mem, hint)[:0]
	return t
}

func (t *table) len() int { return t.used }

func (t *table) hash(key string) uint64 { return maphash.String(t.seed, key) }

// str returns the stored bytes [off, off+n) of chunk c as a string that
// aliases the chunk: valid until the next compact (which frees the chunk),
// never to be kept beyond the Index's lock.
func (t *table) str(c, off, n uint32) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&t.chunks[c][off], int(n))
}

func (t *table) key(r *rec) string { return t.str(r.chunk, r.off, r.keyLen) }

func (t *table) versions(r *rec) string { return t.str(r.chunk, r.off+r.keyLen, r.verLen) }

// find returns the slot holding key, or -1.
func (t *table) find(key string) int {
	h := t.hash(key)
	mask := uint64(len(t.slots) - 1)
	tag := h >> 32
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return -1
		}
		if s>>32 == tag && t.key(&t.recs[uint32(s)-1]) == key {
			return int(i)
		}
	}
}

// get returns the record under key.
func (t *table) get(key string) (*rec, bool) {
	i := t.find(key)
	if i < 0 {
		return nil, false
	}
	return &t.recs[uint32(t.slots[i])-1], true
}

// store appends key and versions to the chunks and returns where.
func (t *table) store(key, versions string) (chunk, off uint32) {
	n := len(key) + len(versions)
	last := len(t.chunks) - 1
	if last < 0 || cap(t.chunks[last])-len(t.chunks[last]) < n {
		t.chunks = append(t.chunks, t.mem.bytes(max(chunkSize, n))[:0])
		last++
	}
	c := t.chunks[last]
	off = uint32(len(c))
	c = append(c, key...)
	c = append(c, versions...)
	t.chunks[last] = c
	t.live += n
	return uint32(last), off
}

// class returns the index of the class of type typ in registry, adding it
// when new.
func (t *table) class(typ, registry string) uint16 {
	k := class{typ, registry}
	if c, ok := t.classOf[k]; ok {
		return c
	}
	if t.classOf == nil {
		t.classOf = map[class]uint16{}
	}
	c := uint16(len(t.classes))
	t.classes = append(t.classes, k)
	t.classOf[k] = c
	t.perClass = append(t.perClass, 0)
	return c
}

// count returns the live records of type typ in registry ("" = any).
func (t *table) count(typ, registry string) int {
	n := 0
	for c, k := range t.classes {
		if (typ == "" || k.typ == typ) && (registry == "" || k.registry == registry) {
			n += t.perClass[c]
		}
	}
	return n
}

// put sets key's record, replacing any record under the same key; typ and
// registry are the report's type and registry.
func (t *table) put(key string, id [16]byte, verifiedAt int64, versions string, flags uint8, typ, registry string) {
	if (t.used+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	c, off := t.store(key, versions)
	class := t.class(typ, registry)
	t.gen++
	r := rec{id: id, verifiedAt: verifiedAt, chunk: c, off: off, keyLen: uint32(len(key)), verLen: uint32(len(versions)), flags: flags | flagLive, class: class, gen: t.gen}
	t.perClass[class]++
	t.addImage(key)
	if i := t.find(key); i >= 0 {
		old := &t.recs[uint32(t.slots[i])-1]
		t.drop(old)
		t.perClass[old.class]--
		*old = r
		t.maybeCompact()
		return
	}
	var ri uint32
	if n := len(t.free); n > 0 {
		ri = t.free[n-1]
		t.free = t.free[:n-1]
		t.recs[ri] = r
	} else {
		if len(t.recs) == cap(t.recs) {
			t.growRecs()
		}
		t.recs = append(t.recs, r)
		ri = uint32(len(t.recs) - 1)
	}
	t.insert(t.hash(key), ri)
}

// insert places record ri, whose key hashes to h, in the first free slot.
func (t *table) insert(h uint64, ri uint32) {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if t.slots[i] == 0 {
			t.slots[i] = h>>32<<32 | uint64(ri+1)
			t.used++
			return
		}
	}
}

// drop counts a record's bytes, and its spill entry's, as garbage.
func (t *table) drop(r *rec) {
	n := int(r.keyLen + r.verLen)
	t.live -= n
	t.garbage += n
	if r.spillLen != 0 {
		t.spillLive -= int64(r.spillLen)
		t.spillGarbage += int64(r.spillLen)
		t.spillEntries--
	}
}

// remove deletes key's record when its id is id; it reports whether it did.
func (t *table) remove(key string, id [16]byte) bool {
	i := t.find(key)
	if i < 0 {
		return false
	}
	ri := uint32(t.slots[i]) - 1
	r := &t.recs[ri]
	if r.id != id {
		return false
	}
	t.drop(r)
	t.perClass[r.class]--
	t.dropImage(key)
	*r = rec{}
	t.free = append(t.free, ri)
	// Backward-shift deletion: move later members of the probe run into
	// the hole when their home slot allows it.
	mask := len(t.slots) - 1
	hole := i
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		home := int(t.hash(t.key(&t.recs[uint32(t.slots[j])-1]))) & mask
		if (j-home)&mask >= (j-hole)&mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.slots[hole] = 0
	t.used--
	t.maybeCompact()
	return true
}

// growRecs doubles the records' room (the append after it stays in
// the arena).
func (t *table) growRecs() {
	old := t.recs
	t.recs = sliceOf[rec](t.mem, max(2*cap(old), 1024))[:len(old)]
	copy(t.recs, old)
	freeSlice(t.mem, old)
}

// grow doubles the slots and re-places every record.
func (t *table) grow() {
	old := t.slots
	t.slots = sliceOf[uint64](t.mem, len(old)*2)
	t.used = 0
	for _, s := range old {
		if s != 0 {
			ri := uint32(s) - 1
			t.insert(t.hash(t.key(&t.recs[ri])), ri)
		}
	}
	freeSlice(t.mem, old)
}

// maybeCompact rewrites the chunks once garbage outweighs live bytes (and is
// worth a copy), so that a long-running daemon that sees many revisions does
// not grow without bound.
func (t *table) maybeCompact() {
	if t.garbage < 8*chunkSize || t.garbage < t.live {
		return
	}
	t.compact()
}

func (t *table) compact() {
	old := t.chunks
	t.chunks, t.live, t.garbage = nil, 0, 0
	t.compactions++
	for i := range t.recs {
		r := &t.recs[i]
		if r.flags&flagLive == 0 {
			continue
		}
		src := old[r.chunk][r.off : r.off+r.keyLen+r.verLen]
		r.chunk, r.off = t.store(unsafe.String(unsafe.SliceData(src), len(src)), "")
	}
	for _, c := range old {
		freeSlice(t.mem, c)
	}
}
