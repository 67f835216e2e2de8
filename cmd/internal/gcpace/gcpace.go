// Package gcpace paces the Go collector of threatd's long-running
// processes: the daemon (threatd serve) and its storage plugins.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The daemon's heap is small once it has started (about 40 MB live at a
// million reports: the index's tables are outside it), and a request
// allocates a few kilobytes. With GOGC's default, 100 % of the live heap,
// the collector ran about four times a second under 25,000 checks a
// second, 9 % of the machine (docs/performance.md). The storage plugin's
// is smaller still, and each report it reads allocates its row, its
// copy and its message: its collector and the scavenger returning the
// freed pages to the system (and the faults taking them back) were a
// fifth of its CPU while the index spill filled. The pacer keeps the
// room between two collections at least Headroom: after each collection
// it sets GOGC to what gives the live heap that much room, never below
// 100 (a larger heap keeps the default) nor above 1,000. The collected
// heap then peaks at about the live heap plus 64 MiB.

// Headroom is the least room the pacer leaves between collections.
const Headroom = 64 << 20

// gcPercentMax bounds GOGC for a tiny live heap.
const gcPercentMax = 1000

// Percent is the GOGC that leaves a live heap of live bytes at least
// Headroom of room, between 100 and gcPercentMax.
func Percent(live uint64) int {
	if live == 0 {
		return gcPercentMax
	}
	return int(min(max(Headroom*100/live, 100), gcPercentMax))
}

// gcPacer sets GOGC after each collection (a cleanup of an object made
// unreachable for it runs once the collection that found it is over).
type gcPacer struct {
	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
}

// Start paces the collector, unless GOGC or GOMEMLIMIT is set in the
// environment (the operator's choice stands; the daemon passes both to
// its plugins). The returned function stops it and puts GOGC back to 100.
func Start() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	p := &gcPacer{percent: 100, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	p.collected()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.stopped = true
		debug.SetGCPercent(100)
	}
}

// collected sets GOGC for the live heap the last collection left, and
// waits for the next one.
func (p *gcPacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() == metrics.KindUint64 {
		// A change under a tenth is left alone: the pacer's goal moves
		// with every call.
		if want := Percent(p.sample[0].Value.Uint64()); want*10 < p.percent*9 || want*10 > p.percent*11 {
			debug.SetGCPercent(want)
			p.percent = want
		}
	}
	// 64 bytes with no pointers: never one of the tiny allocator's
	// blocks, which a cleanup may outlive.
	runtime.AddCleanup(new([64]byte), (*gcPacer).collected, p)
}
