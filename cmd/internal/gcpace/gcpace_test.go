package gcpace_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/gcpace"
)

// GOGC for a live heap: the room between collections at least
// Headroom, never below 100, never above 1,000.
func TestGCPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 1000}, {1 << 20, 1000}, {16 << 20, 400}, {40 << 20, 160}, {64 << 20, 100}, {1 << 30, 100},
	} {
		if got := gcpace.Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

// gcPercent reads GOGC (setting it back at once).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// The pacer sets GOGC after a collection, stands aside when the
// environment sets GOGC or GOMEMLIMIT, and puts GOGC back when stopped.
// Not parallel: GOGC is the whole process's.
func TestPaceGC(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	stop := gcpace.Start()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if p := gcPercent(); p != 100 {
		t.Fatalf("with GOMEMLIMIT set, GOGC is %d, want the default 100", p)
	}
	stop()
	t.Setenv("GOMEMLIMIT", "")
	stop = gcpace.Start()
	// The test's live heap is a few MiB: GOGC goes well above 100.
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after collections", gcPercent())
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if p := gcPercent(); p != 100 {
		t.Fatalf("after stop, GOGC is %d, want 100", p)
	}
}
