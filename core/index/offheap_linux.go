//go:build linux

package index

import (
	"fmt"
	"syscall"
)

// allocate maps n bytes of anonymous memory: zeroed, outside the collected
// heap, resident only once touched.
func allocate(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		// As the runtime does when the system refuses it memory.
		panic(fmt.Sprintf("index: mapping %d bytes: %v", n, err))
	}
	return b
}

// release unmaps what allocate returned.
func release(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic(fmt.Sprintf("index: unmapping %d bytes: %v", len(b), err))
	}
}
