package blocklist

import (
	"slices"
	"strconv"
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
	// version is the version of each report in byReport: Suricata rules
	// name a report and move their rev with it.
	version map[string]int
	// gen moves with every change of the lists' content (a report whose
	// entries did not change does not move it); rgen with every change of
	// a listing report (a new version too).
	gen, rgen uint64
}

// NewSet is an empty set.
func NewSet() *Set {
	return &Set{byReport: map[string]Hosts{}, version: map[string]int{}, domains: map[string]int{}, ips: map[string]int{}}
}

// Put sets the entries of the verified report id at version (Of of it),
// replacing those it had; an empty h removes it.
func (s *Set) Put(id string, version int, h Hosts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.byReport[id]
	if had && slices.Equal(old.Domains, h.Domains) && slices.Equal(old.IPs, h.IPs) {
		if s.version[id] != version {
			s.version[id] = version
			s.rgen++
		}
		return
	}
	if had || !h.Empty() {
		s.rgen++
	}
	changed := false
	if had {
		changed = s.drop(old) || changed
		delete(s.byReport, id)
		delete(s.version, id)
	}
	if !h.Empty() {
		s.byReport[id] = h
		s.version[id] = version
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
	delete(s.version, id)
	s.rgen++
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

// RuleGeneration moves whenever the lists' content or a listing report
// changes (the Suricata rules name reports).
func (s *Set) RuleGeneration() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rgen
}

// Listed is one name or address on the lists with the report its rules
// name: of the reports that list it, the one with the least id (the same
// on every daemon), and that report's version.
type Listed struct {
	// Indicator is "domain:<name>" or "ip:<address>".
	Indicator string
	Value     string
	Domain    bool
	ThreatID  string
	Version   int
}

// Basis is what the indicator's rules are made from: their rev moves
// when it changes.
func (l Listed) Basis() string { return l.ThreatID + ":" + strconv.Itoa(l.Version) }

// Listing is every name and address with the report its rules name, the
// domains first (in SortDomains order), then the addresses (in SortIPs
// order), and the RuleGeneration it is of: one pass over the listing
// reports.
func (s *Set) Listing() ([]Listed, uint64) {
	s.mu.RLock()
	owner := make(map[string]string, len(s.domains)+len(s.ips))
	take := func(key, id string) {
		if o, ok := owner[key]; !ok || id < o {
			owner[key] = id
		}
	}
	for id, h := range s.byReport {
		for _, d := range h.Domains {
			take("domain:"+d, id)
		}
		for _, a := range h.IPs {
			take("ip:"+a, id)
		}
	}
	domains := make([]string, 0, len(s.domains))
	for d := range s.domains {
		domains = append(domains, d)
	}
	ips := make([]string, 0, len(s.ips))
	for a := range s.ips {
		ips = append(ips, a)
	}
	versions := make(map[string]int, len(owner))
	for _, id := range owner {
		versions[id] = s.version[id]
	}
	gen := s.rgen
	s.mu.RUnlock()
	SortDomains(domains)
	SortIPs(ips)
	out := make([]Listed, 0, len(domains)+len(ips))
	for _, d := range domains {
		key := "domain:" + d
		id := owner[key]
		out = append(out, Listed{Indicator: key, Value: d, Domain: true, ThreatID: id, Version: versions[id]})
	}
	for _, a := range ips {
		key := "ip:" + a
		id := owner[key]
		out = append(out, Listed{Indicator: key, Value: a, ThreatID: id, Version: versions[id]})
	}
	return out, gen
}
