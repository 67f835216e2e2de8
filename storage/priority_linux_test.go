package storage

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// niceOf is the nice value of the calling thread (the raw system call
// answers 20 - nice).
func niceOf(t *testing.T) int {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

// inBackground runs its function at nice 19 and leaves every other thread,
// the caller's among them, as it was.
func TestInBackgroundRunsAtTheLowestPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := niceOf(t)
	var inside int
	var tid int
	inBackground(func() { inside, tid = niceOf(t), syscall.Gettid() })
	if inside != 19 {
		t.Fatalf("the function ran at nice %d, want 19", inside)
	}
	if tid == syscall.Gettid() {
		t.Fatal("the function ran on the caller's thread")
	}
	if after := niceOf(t); after != before {
		t.Fatalf("the caller's thread went from nice %d to %d", before, after)
	}
}

// The thread inBackground ran on outlives the call, waiting for the next
// one: a thread that ended would send SIGKILL to each process it had
// started with a parent-death signal (a plugin of a daemon in the same
// process).
func TestInBackgroundKeepsItsThread(t *testing.T) {
	var first, second int
	inBackground(func() { first = syscall.Gettid() })
	time.Sleep(200 * time.Millisecond) // an ending thread is gone by now
	if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", first)); err != nil {
		t.Fatalf("the background thread %d ended: %v", first, err)
	}
	inBackground(func() { second = niceOf(t) })
	if second != 19 {
		t.Fatalf("the second call ran at nice %d", second)
	}
}
