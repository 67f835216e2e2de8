package firewall

import (
	"slices"
	"sync"
	"time"
)

// Event is one refusal, as the admin page lists it.
type Event struct {
	Time                    time.Time
	User                    string // the email of the token's user
	Registry, Name, Version string
	ThreatIDs               []string
}

// Recent keeps the latest refusals of this daemon in memory (the durable
// record is the log and the metrics).
type Recent struct {
	mu     sync.Mutex
	events []Event
	next   int
	total  int64
}

// NewRecent keeps the last n refusals.
func NewRecent(n int) *Recent { return &Recent{events: make([]Event, 0, max(n, 1))} }

// Add records a refusal.
func (r *Recent) Add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if len(r.events) < cap(r.events) {
		r.events = append(r.events, e)
		return
	}
	r.events[r.next] = e
	r.next = (r.next + 1) % len(r.events)
}

// List returns the kept refusals, newest first, and how many there have
// been since the daemon started.
func (r *Recent) List() ([]Event, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.events))
	out = append(out, r.events[r.next:]...)
	out = append(out, r.events[:r.next]...)
	slices.Reverse(out)
	return out, r.total
}
