package versioning

import (
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Compare orders two versions of registry as its client does, for the
// registries package analysis reads: semver for npm, Go and crates.io,
// PEP 440 for PyPI, RubyGems' segments (a segment with a letter starts
// a prerelease). It is -1, 0 or +1; a version the grammar does not accept
// orders below every one it accepts.
func Compare(registry, a, b string) int {
	switch registry {
	case npm, crates, vscode, openvsx:
		return semverCompare("v"+strings.TrimPrefix(strings.TrimSpace(a), "v"), "v"+strings.TrimPrefix(strings.TrimSpace(b), "v"))
	case golang:
		return semverCompare(strings.TrimSpace(a), strings.TrimSpace(b))
	case pypi:
		pa, oka := parsePEP440(a)
		pb, okb := parsePEP440(b)
		if oka != okb {
			return boolCompare(oka, okb)
		}
		if !oka {
			return strings.Compare(a, b)
		}
		return pa.compare(pb)
	}
	return segmentCompare(a, b)
}

// Previous is the highest of versions below v in registry's order ("":
// none is).
func Previous(registry string, versions []string, v string) string {
	best := ""
	for _, x := range versions {
		if Compare(registry, x, v) >= 0 {
			continue
		}
		if best == "" || Compare(registry, x, best) > 0 {
			best = x
		}
	}
	return best
}

func semverCompare(a, b string) int {
	va, vb := semver.IsValid(a), semver.IsValid(b)
	if va != vb {
		return boolCompare(va, vb)
	}
	if !va {
		return strings.Compare(a, b)
	}
	return semver.Compare(a, b)
}

func boolCompare(a, b bool) int {
	if a == b {
		return 0
	}
	if a {
		return 1
	}
	return -1
}

// numCompare compares two runs of digits by value.
func numCompare(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// compare orders PEP 440 versions: epoch, release, then a development
// release below a prerelease below the release below a post-release.
func (p pep440) compare(q pep440) int {
	if c := numCompare(p.epoch, q.epoch); c != 0 {
		return c
	}
	for i := 0; i < max(len(p.release), len(q.release)); i++ {
		x, y := "0", "0"
		if i < len(p.release) {
			x = p.release[i]
		}
		if i < len(q.release) {
			y = q.release[i]
		}
		if c := numCompare(x, y); c != 0 {
			return c
		}
	}
	rank := func(v pep440) (int, string) {
		switch {
		case v.pre == "" && v.post == "" && v.dev != "":
			return 0, v.dev
		case v.pre != "":
			return 1, v.pre
		case v.post != "":
			return 3, v.post
		}
		return 2, ""
	}
	ra, la := rank(p)
	rb, lb := rank(q)
	if ra != rb {
		if ra < rb {
			return -1
		}
		return 1
	}
	if la != lb {
		// "a1" < "b1" < "rc1", then by number.
		ka, na := splitLabel(la)
		kb, nb := splitLabel(lb)
		if ka != kb {
			return strings.Compare(ka, kb)
		}
		return numCompare(na, nb)
	}
	return 0
}

func splitLabel(s string) (kind, num string) {
	i := strings.IndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' })
	if i < 0 {
		return s, "0"
	}
	return s[:i], s[i:]
}

// segmentCompare orders dotted versions segment by segment: numbers by
// value, a segment with a letter (a prerelease) below any number.
func segmentCompare(a, b string) int {
	sa, sb := strings.Split(strings.TrimSpace(a), "."), strings.Split(strings.TrimSpace(b), ".")
	for i := 0; i < max(len(sa), len(sb)); i++ {
		x, y := "0", "0"
		if i < len(sa) {
			x = sa[i]
		}
		if i < len(sb) {
			y = sb[i]
		}
		_, ex := strconv.ParseUint(x, 10, 64)
		_, ey := strconv.ParseUint(y, 10, 64)
		switch {
		case ex == nil && ey == nil:
			if c := numCompare(x, y); c != 0 {
				return c
			}
		case ex == nil:
			return 1
		case ey == nil:
			return -1
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return 0
}
