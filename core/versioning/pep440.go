package versioning

import "strings"

// pep440 is a parsed PEP 440 version.
type pep440 struct {
	epoch   string
	release []string // numbers without leading zeros
	pre     string   // "a", "b" or "rc" and a number: "rc1"
	post    string   // a number, or "" for none
	dev     string   // a number, or "" for none
	local   string   // lower-case, "." separated, numbers without leading zeros
}

// parsePEP440 parses v as PEP 440 allows it to be written (its
// "normalization" section: case, a leading v, the alternative spellings
// of pre-, post- and dev-releases, and the separators -_. between them).
func parsePEP440(v string) (pep440, bool) {
	var p pep440
	s := strings.ToLower(strings.TrimSpace(v))
	s = strings.TrimPrefix(s, "v")
	// Epoch.
	if i := strings.IndexByte(s, '!'); i >= 0 {
		if !allDigits(s[:i]) {
			return p, false
		}
		p.epoch = trimZeros(s[:i])
		s = s[i+1:]
	}
	// Local label.
	if i := strings.IndexByte(s, '+'); i >= 0 {
		local := s[i+1:]
		s = s[:i]
		if local == "" {
			return p, false
		}
		parts := strings.FieldsFunc(local, func(r rune) bool { return r == '.' || r == '-' || r == '_' })
		if len(parts) == 0 || strings.Count(local, ".")+strings.Count(local, "-")+strings.Count(local, "_")+1 != len(parts) {
			return p, false
		}
		for i, part := range parts {
			for j := 0; j < len(part); j++ {
				if c := part[j]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
					return p, false
				}
			}
			if allDigits(part) {
				parts[i] = trimZeros(part)
			}
		}
		p.local = strings.Join(parts, ".")
	}
	// Release: N(.N)*
	for {
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			return p, false
		}
		p.release = append(p.release, trimZeros(s[:j]))
		s = s[j:]
		if len(s) > 1 && s[0] == '.' && s[1] >= '0' && s[1] <= '9' {
			s = s[1:]
			continue
		}
		break
	}
	// Pre-release: [-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?N?
	if rest, label, ok := cutLabel(s, []string{"alpha", "a", "beta", "b", "preview", "pre", "c", "rc"}); ok {
		n, r := number(rest, true)
		switch label {
		case "alpha":
			label = "a"
		case "beta":
			label = "b"
		case "c", "pre", "preview":
			label = "rc"
		}
		p.pre, s = label+n, r
	}
	// Post-release: -N, or [-_.]?(post|rev|r)[-_.]?N?
	if len(s) > 1 && s[0] == '-' && s[1] >= '0' && s[1] <= '9' {
		n, r := number(s[1:], false)
		p.post, s = n, r
	} else if rest, _, ok := cutLabel(s, []string{"post", "rev", "r"}); ok {
		p.post, s = number(rest, true)
	}
	// Dev-release: [-_.]?dev[-_.]?N?
	if rest, _, ok := cutLabel(s, []string{"dev"}); ok {
		p.dev, s = number(rest, true)
	}
	return p, s == ""
}

// cutLabel cuts an optional separator and one of labels (the longest that
// fits first) from the start of s.
func cutLabel(s string, labels []string) (rest, label string, ok bool) {
	if s != "" && (s[0] == '-' || s[0] == '_' || s[0] == '.') {
		s = s[1:]
	}
	for _, l := range labels {
		if strings.HasPrefix(s, l) {
			return s[len(l):], l, true
		}
	}
	return "", "", false
}

// number cuts an optional separator (when sep) and a run of digits from
// s; an absent number is 0, as PEP 440 normalises "1.0a" to "1.0a0".
func number(s string, sep bool) (n, rest string) {
	t := s
	if sep && t != "" && (t[0] == '-' || t[0] == '_' || t[0] == '.') {
		t = t[1:]
	}
	j := 0
	for j < len(t) && t[j] >= '0' && t[j] <= '9' {
		j++
	}
	if j == 0 {
		return "0", s
	}
	return trimZeros(t[:j]), t[j:]
}

// canonical writes the version as pip compares it: the release without
// trailing zeros (1.0.0 == 1.0 == 1), the epoch only when it is not 0,
// and the local label when withLocal.
func (p pep440) canonical(withLocal bool) string {
	var b strings.Builder
	if p.epoch != "" && p.epoch != "0" {
		b.WriteString(p.epoch)
		b.WriteByte('!')
	}
	rel := p.release
	for len(rel) > 1 && rel[len(rel)-1] == "0" {
		rel = rel[:len(rel)-1]
	}
	b.WriteString(strings.Join(rel, "."))
	b.WriteString(p.pre)
	if p.post != "" {
		b.WriteString(".post" + p.post)
	}
	if p.dev != "" {
		b.WriteString(".dev" + p.dev)
	}
	if withLocal && p.local != "" {
		b.WriteString("+" + p.local)
	}
	return b.String()
}

// localFree is the canonical form without the local label, "" when there
// is none.
func (p pep440) localFree() string {
	if p.local == "" {
		return ""
	}
	return p.canonical(false)
}
