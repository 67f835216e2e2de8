package firewall

import (
	"sync"
	"time"
)

// FactsPerDocument bounds the versions of one listing whose publish times
// the firewall reads one by one (Maven's .poms, NuGet's registration
// leaves, Go's .info files): the newest of them (Ordered, else the
// document's order, last newest). An older one is past any quarantine
// window in practice, and is not held in the listing (Facts.Unjudged); a
// request for it alone reads its own time and is held if it is young.
// Without the bound a maven-metadata.xml of 3,000 versions cost 3,000
// upstream requests.
const FactsPerDocument = 64

// Ordered is an adapter whose listings are not in publish order (Go's
// @v/list): Order gives versions oldest first, by the registry's own
// ordering.
type Ordered interface {
	Order(versions []string) []string
}

// AuthorTimes is a FactSource whose publish times are the author's, not
// the registry's: Go's .info Time is the commit's, which a publisher sets
// (a version tagged now on a commit dated a year ago). A version that
// appears after the firewall first listed its package is held from when
// it appeared, whatever time it gives (Listings). Listed says whether a
// version is one listings name (Go's pseudo-versions never are: their
// time is in their name, and they are asked for directly).
type AuthorTimes interface {
	Listed(version string) bool
}

// Listings remember, in the daemon, when each package's version list was
// first seen and when each of its versions first appeared in a list or a
// request: a version that appears after its package was first listed
// was pushed then. Memory only, bounded by packages; a package forgotten
// (or a daemon restarted) is listed anew, and its versions are then taken
// at their registry times.
type Listings struct {
	mu       sync.Mutex
	packages map[string]*listed
	max      int
}

type listed struct {
	at       time.Time
	versions map[string]time.Time
}

// listingGrace is how long after a package's first listing a version
// seen is still taken as listed then.
const listingGrace = 5 * time.Second

// maxListings bounds the packages Listings remember; maxListed the
// versions of one.
const (
	maxListings = 50000
	maxListed   = 10000
)

// NewListings remembers up to maxListings packages.
func NewListings() *Listings {
	return &Listings{packages: map[string]*listed{}, max: maxListings}
}

// Appeared notes versions of a package seen at now (a listing: listing
// true; a request for one version: false) and returns, for each version
// that appeared after the package was first listed, when it appeared. A
// request before any listing notes nothing: which versions the package
// had is not known.
func (l *Listings) Appeared(registry, name string, versions []string, listing bool, now time.Time) map[string]time.Time {
	if l == nil {
		return nil
	}
	k := registry + "\x00" + name
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.packages[k]
	if !ok {
		if !listing {
			return nil
		}
		if len(l.packages) >= l.max {
			evictHalf(l.packages)
		}
		p = &listed{at: now, versions: map[string]time.Time{}}
		l.packages[k] = p
	}
	var out map[string]time.Time
	for _, v := range versions {
		seen, ok := p.versions[v]
		if !ok {
			if len(p.versions) >= maxListed {
				continue
			}
			seen = now
			p.versions[v] = now
		}
		// Seen in the package's first listing (or just after it: the
		// same listing read by concurrent requests): as old as its
		// registry says.
		if seen.After(p.at.Add(listingGrace)) {
			if out == nil {
				out = map[string]time.Time{}
			}
			out[v] = seen
		}
	}
	return out
}
