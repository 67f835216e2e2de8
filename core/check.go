package core

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/threatd/threatd/core/ioc"
)

// CheckQuery is one "is this malicious?" question (docs/api/check-malicious.md).
type CheckQuery struct {
	ReportType         ReportType
	ResourceIdentifier string
	Ecosystem          string // packages: optional registry; "" = every registry
	Version            string // packages: optional; "" = any version
}

// CheckKeys validates a query and returns every canonical key whose verified
// report answers it: the identifier's own key (for a package without an
// ecosystem, one per registry where the name is valid), plus, for a url or
// domain, the domain reports of its host and parent domains.
func CheckKeys(q CheckQuery) ([]string, error) {
	if q.ReportType == TypePackage && q.Ecosystem == "" {
		var keys []string
		var firstErr error
		for _, reg := range PackageRegistries {
			k, err := CanonicalKey(TypePackage, reg, q.ResourceIdentifier)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			return nil, firstErr
		}
		return keys, nil
	}
	if q.ReportType == TypePackage && !IsPackageRegistry(q.Ecosystem) {
		return nil, Invalid("ecosystem", "must be a package registry (%s) for package checks", strings.Join(PackageRegistries, ", "))
	}
	k, err := CanonicalKey(q.ReportType, q.Ecosystem, q.ResourceIdentifier)
	if err != nil {
		return nil, err
	}
	keys := []string{k}
	var host string
	switch q.ReportType {
	case TypeURL:
		u, _ := url.Parse(strings.TrimPrefix(k, "url:"))
		if _, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err != nil {
			host = u.Hostname()
		}
	case TypeDomain:
		host = strings.TrimPrefix(k, "domain:")
		keys = keys[:0]
	}
	// The host and its parents, down to (not into) its public suffix: a
	// report of co.uk or github.io names only that name, never every
	// name registered under it.
	// The host is canonical (lower case): its suffix is found once, and
	// each parent is a tail of it.
	suffix := ""
	if host != "" {
		suffix = ioc.PublicSuffix(host)
	}
	for d := host; ; {
		i := strings.IndexByte(d, '.')
		if i < 0 || d != host && d == suffix {
			break
		}
		keys = append(keys, "domain:"+d)
		d = d[i+1:]
	}
	return keys, nil
}
