package storage

import (
	"runtime"
	"sync"
	"syscall"
)

// inBackground runs fn on an OS thread of its own at the lowest CPU
// priority (nice 19; on Linux the nice value is a thread's, not the
// process's) and waits for it. The SQLite driver is Go, so a statement's
// work runs on the calling goroutine's thread: a quick_check of a large
// database (20 s of a core at a million reports) then takes the CPU only
// when requests leave it idle.
//
// The threads are never unlocked, so their priority is never handed on,
// and they never end either: they wait for the next call. A thread that
// ended would take with it every process it had started with a
// parent-death signal (the kernel's "parent" there is the thread): a
// plugin started by a daemon in the same process was killed when a
// quick check's thread ended.
func inBackground(fn func()) {
	w := backgroundWorker()
	done := make(chan struct{})
	w <- func() {
		defer close(done)
		fn()
	}
	<-done
	background.mu.Lock()
	background.idle = append(background.idle, w)
	background.mu.Unlock()
}

// background holds the threads inBackground made that are idle.
var background struct {
	mu   sync.Mutex
	idle []chan func()
}

// backgroundWorker is an idle background thread, or a new one: a
// goroutine locked to its thread at nice 19, running what it is sent.
func backgroundWorker() chan func() {
	background.mu.Lock()
	if n := len(background.idle); n > 0 {
		w := background.idle[n-1]
		background.idle = background.idle[:n-1]
		background.mu.Unlock()
		return w
	}
	background.mu.Unlock()
	w := make(chan func())
	go func() {
		runtime.LockOSThread()
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
		for f := range w {
			f()
		}
	}()
	return w
}
