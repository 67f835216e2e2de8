//go:build !linux

package priority

// Lower does nothing where the nice value is not a thread's.
func Lower(nice int) error { return nil }
