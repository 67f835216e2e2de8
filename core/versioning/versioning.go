// Package versioning compares package versions as each ecosystem's own
// client does: PEP 440 for PyPI (pip's ==), semver for npm, Go, crates.io
// and the editor marketplaces, NuGet's, RubyGems' and Composer's own
// normalisation, and Maven's ComparableVersion. check-malicious, scan,
// the OSV query API and the registry firewall all match a report's
// version_info through it, so that a spelling the client treats as the
// same version (npm's v1.0.1, PyPI's 1.0.01 or 1.0.1.0, Go's
// v2.0.0+incompatible) is the same version here too.
//
// Every comparison goes through a canonical form: two versions are the
// same for a registry when their canonical forms are equal. A version the
// registry's grammar does not accept keeps a fallback form (trimmed, and
// lower-cased where the registry ignores case), so that exact spellings
// still match. It imports no threatd package.
package versioning

import (
	"fmt"
	"strings"
)

// The registries, as core names them.
const (
	npm       = "npm"
	pypi      = "pypi"
	rubygems  = "rubygems"
	crates    = "crates.io"
	golang    = "go"
	maven     = "maven"
	nuget     = "nuget"
	packagist = "packagist"
	vscode    = "vscode"
	openvsx   = "openvsx"
	actions   = "github-actions"
)

// Canonical is the form in which registry's client compares v: two
// versions are the same version of a package when their canonical forms
// are equal. A version registry's grammar does not accept is returned
// trimmed (lower-cased where the registry ignores case).
func Canonical(registry, v string) string {
	full, _ := canonical(registry, v)
	return full
}

// canonical returns v's canonical form and, for a PyPI version with a
// local label, the form without it ("" otherwise): pip's ==1.0.1 selects
// 1.0.1+local, so a report of 1.0.1 blocks it.
func canonical(registry, v string) (full, public string) {
	v = strings.TrimSpace(v)
	// The common case, numbers and dots already in canonical form, costs
	// no parse and no allocation.
	if n := plainRelease(v); n > 0 {
		switch registry {
		case npm, crates, vscode, openvsx:
			if n == 3 {
				return v, ""
			}
		case pypi:
			for strings.HasSuffix(v, ".0") {
				v = v[:len(v)-2]
			}
			return v, ""
		}
	}
	switch registry {
	case npm, crates, vscode, openvsx:
		if c, ok := semverCanonical(v, ""); ok {
			return c, ""
		}
	case golang:
		if c, ok := semverCanonical(v, "v"); ok {
			return c, ""
		}
	case pypi:
		if p, ok := parsePEP440(v); ok {
			return p.canonical(true), p.localFree()
		}
		return strings.ToLower(v), ""
	case nuget:
		if c, ok := nugetCanonical(v); ok {
			return c, ""
		}
		return strings.ToLower(v), ""
	case rubygems:
		if c, ok := gemCanonical(v); ok {
			return c, ""
		}
	case maven:
		return mavenCanonical(v), ""
	case packagist:
		if c, ok := composerCanonical(v); ok {
			return c, ""
		}
		return strings.ToLower(v), ""
	case actions:
		// A tag that is semver, with or without its v (workflows write
		// v35.7.7, OSV 35.7.7); a branch, a short tag (v4) or a commit
		// as written, a commit's hex in lower case.
		release, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), "-")
		if strings.Count(release, ".") == 2 {
			if c, ok := semverCanonical(v, "v"); ok {
				return c, ""
			}
		}
		if isHex(v) {
			return strings.ToLower(v), ""
		}
	}
	return v, ""
}

// isHex says whether v is a commit id: 7 to 64 hex digits.
func isHex(v string) bool {
	if len(v) < 7 || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i] | 0x20; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// plainRelease returns how many numbers v holds when it is numbers
// without leading zeros separated by single dots, else 0.
func plainRelease(v string) int {
	n, start := 1, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '.':
			if i == start {
				return 0
			}
			n, start = n+1, i+1
		case c < '0' || c > '9':
			return 0
		case c == '0' && i == start && i+1 < len(v) && v[i+1] != '.':
			return 0 // a leading zero
		}
	}
	if start == len(v) {
		return 0
	}
	return n
}

// Check returns nil when v is a version registry's client can select, or an
// error saying why not: a report that names it would never match a
// version the client installs.
func Check(registry, v string) error {
	v = strings.TrimSpace(v)
	var ok bool
	var want string
	switch registry {
	case npm:
		_, ok = semverCanonical(v, "")
		want = "an npm version is semver: MAJOR.MINOR.PATCH, e.g. 1.0.1 or 1.0.1-beta.2"
	case crates, vscode, openvsx:
		_, ok = semverCanonical(v, "")
		want = "a " + registry + " version is semver: MAJOR.MINOR.PATCH, e.g. 1.0.1"
	case golang:
		_, ok = semverCanonical(v, "v")
		want = "a Go module version is semver, e.g. v1.0.1 or 1.0.1"
	case pypi:
		_, ok = parsePEP440(v)
		want = "a PyPI version follows PEP 440, e.g. 1.0.1, 2.0rc1 or 1.0.post1"
	case nuget:
		_, ok = nugetCanonical(v)
		want = "a NuGet version is 1 to 4 numbers with an optional -label, e.g. 1.0.1 or 1.0.1-beta"
	case rubygems:
		_, ok = gemCanonical(v)
		want = "a RubyGems version is numbers and letters separated by dots, e.g. 1.0.1 or 1.0.1.pre"
	case packagist:
		_, ok = composerCanonical(v)
		want = "a Composer version is 1 to 4 numbers with an optional stability, e.g. 1.0.1 or 1.0.1-beta2"
	default:
		return nil
	}
	if !ok {
		return fmt.Errorf("%q is not a version %s can install (%s)", v, registry, want)
	}
	return nil
}

// Query is one version asked about in one registry, ready to be looked up
// in canonical lists.
type Query struct {
	full, public string
}

// NewQuery prepares v (as a client or a document spells it) for lookups in
// registry's canonical lists.
func NewQuery(registry, v string) Query {
	full, public := canonical(registry, v)
	return Query{full: full, public: public}
}

// In reports whether the canonical list (CanonicalList's form) names the
// queried version.
func (q Query) In(list string) bool {
	for e := range strings.SplitSeq(list, ",") {
		if e == q.full || (q.public != "" && e == q.public) {
			return true
		}
	}
	return false
}

// CanonicalList is a comma-separated version list (a report's
// version_info) with each version in its canonical form, for Query.In.
func CanonicalList(registry, list string) string {
	var b strings.Builder
	b.Grow(len(list))
	first := true
	for e := range strings.SplitSeq(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(Canonical(registry, e))
	}
	return b.String()
}

// Matches reports whether the comma-separated list names v as registry's
// client compares versions. An empty list or an empty v matches every
// version.
func Matches(registry, list, v string) bool {
	if strings.TrimSpace(list) == "" || strings.TrimSpace(v) == "" {
		return true
	}
	q := NewQuery(registry, v)
	for e := range strings.SplitSeq(list, ",") {
		if e = strings.TrimSpace(e); e != "" && q.In(Canonical(registry, e)) {
			return true
		}
	}
	return false
}
