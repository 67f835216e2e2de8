//go:build !linux

package storage

// inBackground runs fn (at normal priority: the per-thread nice value is
// Linux's).
func inBackground(fn func()) { fn() }
