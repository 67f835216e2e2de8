package blocklist

import (
	"slices"
	"sync"
)

// Set is the block lists' content for every verified report: each name and
// address with the number of reports that list it, changed report by
// report (a verification, a revision, a withdrawal), so that a change costs
// the report's own entries and not a pass over every report. It holds the
// reports that list something only.
type Set struct {
	mu       sync.RWMutex
	byReport map[string]Hosts
	domains  map[string]int
	ips      map[string]int
	// gen moves with every change of the lists' content (a report whose
	// entries did not change does not move it).
	gen uint64
}

// NewSet is an empty set.
func NewSet() *Set {
	return &Set{byReport: map[string]Hosts{}, domains: map[string]int{}, ips: map[string]int{}}
}

// Put sets the entries of the verified report id (Of of it), replacing
// those it had; an empty h removes it.
func (s *Set) Put(id string, h Hosts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.byReport[id]
	if had && slices.Equal(old.Domains, h.Domains) && slices.Equal(old.IPs, h.IPs) {
		return
	}
	changed := false
	if had {
		changed = s.drop(old) || changed
		delete(s.byReport, id)
	}
	if !h.Empty() {
		s.byReport[id] = h
		for _, d := range h.Domains {
			if s.domains[d]++; s.domains[d] == 1 {
				changed = true
			}
		}
		for _, a := range h.IPs {
			if s.ips[a]++; s.ips[a] == 1 {
				changed = true
			}
		}
	}
	if changed {
		s.gen++
	}
}

// Remove takes the report id (withdrawn, or no longer verified) off.
func (s *Set) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.byReport[id]
	if !had {
		return
	}
	delete(s.byReport, id)
	if s.drop(old) {
		s.gen++
	}
}

// drop takes one report's entries off the counts and says whether a name
// or address left the lists.
func (s *Set) drop(h Hosts) bool {
	gone := false
	for _, d := range h.Domains {
		if s.domains[d]--; s.domains[d] <= 0 {
			delete(s.domains, d)
			gone = true
		}
	}
	for _, a := range h.IPs {
		if s.ips[a]--; s.ips[a] <= 0 {
			delete(s.ips, a)
			gone = true
		}
	}
	return gone
}

// Generation moves whenever a name or address joins or leaves the lists.
func (s *Set) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// Snapshot is the lists' content now: the domains in the order Render
// writes them (parents before their subdomains: by reversed labels) and
// the addresses in address order, with the generation they are of.
func (s *Set) Snapshot() (domains, ips []string, gen uint64) {
	s.mu.RLock()
	domains = make([]string, 0, len(s.domains))
	for d := range s.domains {
		domains = append(domains, d)
	}
	ips = make([]string, 0, len(s.ips))
	for a := range s.ips {
		ips = append(ips, a)
	}
	gen = s.gen
	s.mu.RUnlock()
	SortDomains(domains)
	SortIPs(ips)
	return domains, ips, gen
}

// Len is the number of domains and of addresses on the lists.
func (s *Set) Len() (domains, ips int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.domains), len(s.ips)
}
