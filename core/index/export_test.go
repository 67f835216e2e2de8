package index

// Waiters returns how many record look-ups wait for a storage call (for
// tests that must know their look-ups have queued).
func (x *Index) Waiters() int {
	x.fetch.mu.Lock()
	defer x.fetch.mu.Unlock()
	n := 0
	for _, chs := range x.fetch.waiting {
		n += len(chs)
	}
	return n
}

// FetchInFlight is the bound of concurrent coalesced look-ups.
const FetchInFlight = fetchInFlight
