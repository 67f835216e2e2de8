package index

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// arena holds the table's pointer-free arrays (hash slots, records, byte
// chunks) outside the collected heap where the system allows it
// (offheap_linux.go: anonymous memory maps). The collector paces itself
// by the live heap: with a million reports' arrays (about 100 MB) in it,
// the default GOGC let the daemon's heap grow by as much again before
// collecting. Out of it, they count once, in the resident memory they
// touch.
//
// Every array is freed explicitly when the table replaces it (grow,
// compact, a record array outgrown), and whatever is left when the table
// is collected (runtime.AddCleanup). So nothing may keep a slice or a
// string of the table's memory beyond the Index's lock: a key read under
// the lock and used after it is copied (unspilled).
type arena struct {
	// live maps the first byte of each allocation to its length.
	live map[*byte]int
	// held counts the bytes allocated and not freed (read by tests while
	// the collector may free the rest).
	held atomic.Int64
}

// newArena returns an arena whose memory is freed when owner is collected.
func newArena(owner *table) *arena {
	a := &arena{live: map[*byte]int{}}
	runtime.AddCleanup(owner, func(a *arena) { a.freeAll() }, a)
	return a
}

// bytes returns n zeroed bytes (nil for 0).
func (a *arena) bytes(n int) []byte {
	if n == 0 {
		return nil
	}
	b := allocate(n)
	a.live[&b[0]] = len(b)
	a.held.Add(int64(len(b)))
	return b[:n:n]
}

// free releases the allocation that starts at p.
func (a *arena) free(p *byte) {
	n, ok := a.live[p]
	if !ok {
		panic("index: arena: free of memory it did not allocate")
	}
	delete(a.live, p)
	release(unsafe.Slice(p, n))
	a.held.Add(-int64(n))
}

func (a *arena) freeAll() {
	for p, n := range a.live {
		release(unsafe.Slice(p, n))
		a.held.Add(-int64(n))
	}
	clear(a.live)
}

// sliceOf returns a zeroed slice of n T's (whose type must hold no Go
// pointer), with capacity n.
func sliceOf[T any](a *arena, n int) []T {
	var zero T
	b := a.bytes(n * int(unsafe.Sizeof(zero)))
	if b == nil {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// freeSlice frees a slice sliceOf returned.
func freeSlice[T any](a *arena, s []T) {
	if cap(s) == 0 {
		return
	}
	a.free((*byte)(unsafe.Pointer(unsafe.SliceData(s))))
}
