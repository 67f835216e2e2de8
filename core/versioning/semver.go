package versioning

import "strings"

// semverCanonical parses v as semver the way npm's loose parser does
// (leading "v" or "=", numbers with leading zeros, a pre-release without
// its "-") and returns MAJOR.MINOR.PATCH[-PRE] with prefix before it.
// Build metadata is dropped: npm, cargo and Go never tell two versions
// apart by it (Go's +incompatible included). With prefix "v" (Go), the
// shorthands v1 and v1.2 stand for v1.0.0 and v1.2.0, as golang.org/x/mod
// reads them.
func semverCanonical(v, prefix string) (string, bool) {
	var s string
	if prefix == "" {
		s = strings.TrimLeft(v, "=v \t") // npm's loose [v=\s]*
	} else {
		s = strings.TrimPrefix(v, prefix)
	}
	if s == "" {
		return "", false
	}
	if i := strings.IndexByte(s, '+'); i >= 0 {
		if !validIdentifiers(s[i+1:]) {
			return "", false
		}
		s = s[:i]
	}
	var nums [3]string
	n := 0
	for n < 3 {
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			return "", false
		}
		nums[n] = trimZeros(s[:j])
		s = s[j:]
		n++
		if n < 3 && strings.HasPrefix(s, ".") {
			s = s[1:]
			continue
		}
		break
	}
	if n < 3 {
		if prefix == "" || (s != "" && s[0] != '-') {
			return "", false
		}
		if s != "" {
			return "", false // x/mod: a shorthand takes no pre-release
		}
		for ; n < 3; n++ {
			nums[n] = "0"
		}
	}
	pre := ""
	if s != "" {
		p := strings.TrimPrefix(s, "-")
		if prefix != "" && p == s {
			return "", false // Go: the pre-release needs its "-"
		}
		if !validIdentifiers(p) {
			return "", false
		}
		pre = canonicalPre(p)
	}
	out := prefix + nums[0] + "." + nums[1] + "." + nums[2]
	if pre != "" {
		out += "-" + pre
	}
	return out, true
}

// validIdentifiers says whether s is dot-separated non-empty runs of
// [0-9A-Za-z-] (semver's pre-release and build identifiers).
func validIdentifiers(s string) bool {
	if s == "" {
		return false
	}
	for id := range strings.SplitSeq(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
	}
	return true
}

// canonicalPre writes numeric pre-release identifiers without leading
// zeros (semver compares them as numbers); the others stay as they are
// (compared as ASCII, case included).
func canonicalPre(p string) string {
	ids := strings.Split(p, ".")
	changed := false
	for i, id := range ids {
		if len(id) > 1 && id[0] == '0' && allDigits(id) {
			ids[i], changed = trimZeros(id), true
		}
	}
	if !changed {
		return p
	}
	return strings.Join(ids, ".")
}

// trimZeros writes a run of digits without leading zeros ("0" stays).
func trimZeros(d string) string {
	for len(d) > 1 && d[0] == '0' {
		d = d[1:]
	}
	return d
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
