package storage

import (
	"runtime"
	"syscall"
)

// inBackground runs fn on an OS thread of its own at the lowest CPU
// priority (nice 19; on Linux the nice value is a thread's, not the
// process's) and waits for it. The SQLite driver is Go, so a statement's
// work runs on the calling goroutine's thread: a quick_check of a large
// database (20 s of a core at a million reports) then takes the CPU only
// when requests leave it idle. The thread is never unlocked, so it ends
// with the goroutine and its priority is never handed on.
func inBackground(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
		fn()
	}()
	<-done
}
