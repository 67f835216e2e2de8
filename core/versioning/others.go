package versioning

import "strings"

// nugetCanonical normalises v as NuGet does (NuGetVersion's normalized
// string): 1 to 4 numbers without leading zeros, padded to three, the
// fourth left out when it is 0; the release label compared without case;
// build metadata ignored. 1.0 == 1.0.0 == 1.0.0.0 == 01.0.0.
func nugetCanonical(v string) (string, bool) {
	s := v
	if i := strings.IndexByte(s, '+'); i >= 0 {
		if !validIdentifiers(s[i+1:]) {
			return "", false
		}
		s = s[:i]
	}
	label := ""
	if i := strings.IndexByte(s, '-'); i >= 0 {
		label = s[i+1:]
		s = s[:i]
		if !validIdentifiers(label) {
			return "", false
		}
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return "", false
	}
	for i, p := range parts {
		if !allDigits(p) {
			return "", false
		}
		parts[i] = trimZeros(p)
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	if len(parts) == 4 && parts[3] == "0" {
		parts = parts[:3]
	}
	out := strings.Join(parts, ".")
	if label != "" {
		out += "-" + strings.ToLower(label)
	}
	return out, true
}

// gemCanonical is Gem::Version's canonical_segments joined by dots: "-"
// reads as ".pre.", runs of digits and of letters are segments, and
// trailing zeros of the release and of the pre-release part are dropped
// (1.0.0 == 1.0 == 1; 1.0.0-rc1 == 1.0.0.pre.rc1 == 1.pre.rc.1).
func gemCanonical(v string) (string, bool) {
	if !gemPattern(v) {
		return "", false
	}
	s := strings.ReplaceAll(v, "-", ".pre.")
	var segs []string
	numeric := 0 // segments before the first string one
	sawString := false
	for i := 0; i < len(s); {
		c := s[i]
		j := i
		switch {
		case c >= '0' && c <= '9':
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			segs = append(segs, trimZeros(s[i:j]))
			if !sawString {
				numeric++
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
				j++
			}
			segs = append(segs, s[i:j])
			sawString = true
		default:
			j++
		}
		i = j
	}
	release, pre := segs[:numeric], segs[numeric:]
	for len(release) > 0 && release[len(release)-1] == "0" {
		release = release[:len(release)-1]
	}
	for len(pre) > 0 && pre[len(pre)-1] == "0" {
		pre = pre[:len(pre)-1]
	}
	if len(release)+len(pre) == 0 {
		return "0", true
	}
	return strings.Join(append(append([]string{}, release...), pre...), "."), true
}

// gemPattern is Gem::Version's ANCHORED_VERSION_PATTERN:
// [0-9]+(\.[0-9a-zA-Z]+)*(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?
func gemPattern(v string) bool {
	main, pre, hasPre := strings.Cut(v, "-")
	segs := strings.Split(main, ".")
	if !allDigits(segs[0]) {
		return false
	}
	for _, s := range segs[1:] {
		if s == "" || strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) >= 0 {
			return false
		}
	}
	return !hasPre || validIdentifiers(pre)
}

// mavenAliases are ComparableVersion's qualifier aliases; "" is the
// release itself.
var mavenAliases = map[string]string{"ga": "", "final": "", "release": "", "cr": "rc"}

// mavenCanonical is ComparableVersion's canonical form, which decides its
// equality: case ignored; "." separates items, "-" and a change between
// digits and letters start a nested list; numbers without leading zeros;
// a, b and m before a digit read as alpha, beta and milestone; ga, final
// and release as the release itself, cr as rc; then, innermost list
// first, trailing zeros, empty qualifiers and empty lists are dropped
// (1.0 == 1.0.0 == 1; 1.0-FINAL == 1.0; 1.0-RC1 == 1.0-rc-1; 1-1 != 1.1).
func mavenCanonical(v string) string {
	s := strings.ToLower(strings.TrimSpace(v))
	type item struct {
		text    string
		numeric bool
	}
	lists := [][]item{nil}
	add := func(tok string, numeric, beforeDigit bool) {
		if numeric {
			tok = trimZeros(tok)
		} else {
			if beforeDigit {
				switch tok {
				case "a":
					tok = "alpha"
				case "b":
					tok = "beta"
				case "m":
					tok = "milestone"
				}
			}
			if a, ok := mavenAliases[tok]; ok {
				tok = a
			}
		}
		lists[len(lists)-1] = append(lists[len(lists)-1], item{tok, numeric})
	}
	nest := func() { lists = append(lists, nil) }
	start, digit := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		isDigit := c >= '0' && c <= '9'
		switch {
		case c == '.' || c == '-':
			if i == start {
				add("0", true, false)
			} else {
				add(s[start:i], digit, false)
			}
			start = i + 1
			if c == '-' {
				nest()
			}
			digit = false
		case i > start && isDigit != digit:
			add(s[start:i], digit, isDigit)
			start = i
			nest()
			digit = isDigit
		default:
			digit = isDigit
		}
	}
	if start < len(s) {
		add(s[start:], digit, false)
	}
	// Normalise, innermost first: drop trailing null items (a nested
	// list, the last item of its parent, is null once empty).
	null := func(it item) bool { return it.text == "" || (it.numeric && it.text == "0") }
	var b []string
	for k := len(lists) - 1; k >= 0; k-- {
		l := lists[k]
		for len(l) > 0 && null(l[len(l)-1]) {
			l = l[:len(l)-1]
		}
		lists[k] = l
		if len(l) == 0 && k > 0 && k == len(lists)-1 {
			lists = lists[:k] // an empty nested list is dropped from its parent
		}
	}
	for k, l := range lists {
		texts := make([]string, len(l))
		for i, it := range l {
			texts[i] = it.text
		}
		if k > 0 && len(b) > 0 {
			b = append(b, "-")
		}
		b = append(b, strings.Join(texts, "."))
	}
	if out := strings.Join(b, ""); out != "" {
		return out
	}
	return "0"
}

// composerStability maps Composer's stability spellings to one name.
var composerStability = map[string]string{"stable": "", "beta": "beta", "b": "beta", "rc": "rc", "alpha": "alpha", "a": "alpha", "patch": "patch", "pl": "patch", "p": "patch"}

// composerCanonical normalises v as Composer's VersionParser::normalize
// does (lower-cased): a leading v dropped, 1 to 4 numbers padded to four,
// the stability spelled one way with its number, -dev kept. dev-<branch>
// versions are kept lower-cased.
func composerCanonical(v string) (string, bool) {
	s := strings.ToLower(v)
	if strings.HasPrefix(s, "dev-") {
		return s, len(s) > 4
	}
	s = strings.TrimPrefix(s, "v")
	var nums []string
	for len(nums) < 4 {
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			if len(nums) == 0 {
				return "", false
			}
			s = "." + s // the dot was not followed by a number
			break
		}
		nums = append(nums, trimZeros(s[:j]))
		s = s[j:]
		if len(s) > 1 && s[0] == '.' && s[1] >= '0' && s[1] <= '9' && len(nums) < 4 {
			s = s[1:]
			continue
		}
		break
	}
	for len(nums) < 4 {
		nums = append(nums, "0")
	}
	out := strings.Join(nums, ".")
	dev := false
	if t, ok := strings.CutSuffix(s, "dev"); ok {
		if u, ok := strings.CutSuffix(t, "."); ok {
			t = u
		} else {
			t = strings.TrimSuffix(t, "-")
		}
		s, dev = t, true
	}
	if s != "" {
		if s[0] == '.' || s[0] == '-' || s[0] == '_' {
			s = s[1:]
		}
		label := ""
		for _, l := range []string{"stable", "beta", "alpha", "patch", "rc", "pl", "b", "a", "p"} {
			if strings.HasPrefix(s, l) {
				label = l
				break
			}
		}
		if label == "" {
			return "", false
		}
		rest := s[len(label):]
		var n strings.Builder
		for _, part := range strings.FieldsFunc(rest, func(r rune) bool { return r == '.' || r == '-' }) {
			if !allDigits(part) {
				return "", false
			}
			if n.Len() > 0 {
				n.WriteByte('.')
			}
			n.WriteString(trimZeros(part))
		}
		if st := composerStability[label]; st != "" {
			out += "-" + st + n.String()
		}
	}
	if dev {
		out += "-dev"
	}
	return out, true
}
