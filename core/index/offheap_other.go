//go:build !linux

package index

// allocate returns n bytes of the collected heap: elsewhere than Linux the
// arrays stay there.
func allocate(n int) []byte { return make([]byte, n) }

// release leaves the bytes to the collector.
func release([]byte) {}
