package index

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestTableAgainstMap drives the table and a map with the same random puts
// and removes (with growth, slot reuse and compaction along the way) and
// checks that they agree after every step, the totals by type and registry
// too (a replaced report may change its class).
func TestTableAgainstMap(t *testing.T) {
	type want struct {
		id       [16]byte
		at       int64
		versions string
		flags    uint8
		typ, reg string
	}
	types, registries := []string{"package", "url", "container"}, []string{"", "npm", "pypi", "ghcr"}
	tb := newTable(0)
	model := map[string]want{}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, 5000)
	for i := range keys {
		keys[i] = fmt.Sprintf("package:npm:pkg-%d-%s", i, string(make([]byte, i%300)))
	}
	for step := range 200_000 {
		k := keys[rng.IntN(len(keys))]
		switch rng.IntN(3) {
		case 0, 1:
			w := want{at: int64(step), versions: fmt.Sprintf("1.0.%d, 2.0.%d", step, rng.IntN(9)), flags: uint8(rng.IntN(2)),
				typ: types[rng.IntN(len(types))], reg: registries[rng.IntN(len(registries))]}
			w.id[0], w.id[1], w.id[2] = byte(step), byte(step>>8), byte(step>>16)
			tb.put(k, w.id, w.at, w.versions, w.flags, w.typ, w.reg)
			model[k] = w
		case 2:
			w, ok := model[k]
			id := w.id
			if rng.IntN(4) == 0 {
				id[15] = 1 // another report under the same key: not removed
			}
			removed := tb.remove(k, id)
			if removed != (ok && id == w.id) {
				t.Fatalf("step %d: remove(%q) = %v, model has %v", step, k, removed, ok)
			}
			if removed {
				delete(model, k)
			}
		}
		if tb.len() != len(model) {
			t.Fatalf("step %d: len %d, model %d", step, tb.len(), len(model))
		}
		if step%997 == 0 || step > 199_000 {
			for _, k := range keys {
				r, ok := tb.get(k)
				w, wok := model[k]
				if ok != wok {
					t.Fatalf("step %d: get(%q) found=%v, model %v", step, k, ok, wok)
				}
				if ok && (r.id != w.id || r.verifiedAt != w.at || tb.versions(r) != w.versions || r.flags&^flagLive != w.flags || tb.key(r) != k) {
					t.Fatalf("step %d: get(%q) = %+v %q, want %+v", step, k, *r, tb.versions(r), w)
				}
			}
			n := 0
			for i := range tb.recs {
				if tb.recs[i].flags&flagLive != 0 {
					n++
				}
			}
			if n != len(model) {
				t.Fatalf("step %d: %d live records, model has %d", step, n, len(model))
			}
			for _, typ := range append([]string{""}, types...) {
				for _, reg := range append(registries, "rubygems") {
					want := 0
					for _, w := range model {
						if (typ == "" || w.typ == typ) && (reg == "" || w.reg == reg) {
							want++
						}
					}
					if got := tb.count(typ, reg); got != want {
						t.Fatalf("step %d: count(%q, %q) = %d, model has %d", step, typ, reg, got, want)
					}
				}
			}
		}
	}
	if tb.compactions == 0 {
		t.Fatal("the run never compacted the chunks: the test does not cover compaction")
	}
	if tb.live+tb.garbage > 2*tb.live+8*chunkSize {
		t.Fatalf("garbage %d not bounded by live %d", tb.garbage, tb.live)
	}
	if held, arrays := tb.mem.held.Load(), tb.arrayBytes(); runtime.GOOS == "linux" && held != arrays {
		t.Fatalf("the arena holds %d bytes, the table's arrays are %d", held, arrays)
	}
}

// TestRecordSize: a report's record stays 64 bytes, its class and
// generation in what was padding, with its spill entry (a million reports
// are 64 MB of records).
func TestRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(rec{}); n != 64 {
		t.Fatalf("rec is %d bytes, want 64", n)
	}
}

func TestImagePaths(t *testing.T) {
	tb := newTable(0)
	a, b := [16]byte{1}, [16]byte{2}
	tb.put("container:docker.io/library/nginx:1.25", a, 1, "", 0, "container", "dockerhub")
	tb.put("container:ghcr.io/nginx@sha256:"+strings.Repeat("a", 64), b, 1, "", 0, "container", "ghcr")
	tb.put("package:npm/x", [16]byte{3}, 1, "", 0, "package", "npm")
	if got := tb.images["library/nginx"]; len(got) != 2 || len(tb.images) != 1 {
		t.Fatalf("images %v", tb.images)
	}
	tb.remove("container:docker.io/library/nginx:1.25", a)
	tb.remove("container:ghcr.io/nginx@sha256:"+strings.Repeat("a", 64), b)
	if len(tb.images) != 0 {
		t.Fatalf("after removal: %v", tb.images)
	}
}

// arrayBytes is what the table's arrays take: the arena must hold exactly
// these, every array it replaced freed.
func (t *table) arrayBytes() int64 {
	n := int64(cap(t.slots))*8 + int64(cap(t.recs))*int64(unsafe.Sizeof(rec{}))
	for _, c := range t.chunks {
		n += int64(cap(c))
	}
	return n
}

// TestTableMemory: the table's arrays are outside the collected heap (the
// heap grows by a small part of them for a table of 200,000 records), the
// arena holds exactly the arrays in use after slots, records and chunks
// were replaced, and it is emptied once the table is collected.
func TestTableMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the arrays are kept outside the collected heap on Linux only")
	}
	keys := make([]string, 200_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("package:npm:pkg-%d", i)
	}
	// The table lives in this function only, so that it can be collected
	// after it returns.
	mem := func() *arena {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tb := newTable(0) // grown from nothing: slots and records replaced on the way
		for i, k := range keys {
			tb.put(k, [16]byte{byte(i), byte(i >> 8), byte(i >> 16)}, int64(i), "1.0.0", 0, "package", "npm")
		}
		for round := range 6 { // replaced records' bytes: compactions
			for i, k := range keys {
				tb.put(k, [16]byte{byte(i), byte(i >> 8), byte(i >> 16), byte(round)}, int64(i), "1.0.0, 1.0.1", 0, "package", "npm")
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if tb.compactions == 0 {
			t.Fatal("no compaction: the test does not cover freed chunks")
		}
		arrays := tb.arrayBytes()
		if held := tb.mem.held.Load(); held != arrays {
			t.Fatalf("the arena holds %d bytes, the table's arrays are %d: replaced arrays were not freed", held, arrays)
		}
		if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > arrays/8 {
			t.Fatalf("the heap grew by %d bytes for %d bytes of arrays: they are in the collected heap", grown, arrays)
		}
		if r, ok := tb.get(keys[123_456]); !ok || r.verifiedAt != 123_456 || tb.versions(r) != "1.0.0, 1.0.1" {
			t.Fatalf("after compactions: %+v, %v", r, ok)
		}
		return tb.mem
	}()
	for range 100 {
		runtime.GC()
		if mem.held.Load() == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the table was collected, its arena still holds %d bytes", mem.held.Load())
}
