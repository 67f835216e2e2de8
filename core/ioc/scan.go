package ioc

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The indicator patterns run on every published change (storage keeps each
// report's STIX object ids) and on every rendering of a report, so most of
// them are guarded by a cheap scan for what any match must contain: most
// texts have no hash, wallet, IPv6 address or defanged link, and Go's
// regexp finds that out far more slowly than a byte scan (BenchmarkExtractIOCs
// in package osv, on the real reports). Each guard is a necessary condition
// of its pattern (FuzzGuards): it never changes what is found.

// guarded is a pattern with its guard.
type guarded struct {
	re  *regexp.Regexp
	may func(string) bool
}

func (g guarded) findAll(s string) []string {
	if !g.may(s) {
		return nil
	}
	return g.re.FindAllString(s, -1)
}

func (g guarded) replaceAll(s, repl string) string {
	if !g.may(s) {
		return s
	}
	return g.re.ReplaceAllString(s, repl)
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// in any case. Only for words whose letters have no non-ASCII case folds
// (not k or s: K is the Kelvin sign's fold, s the long s's).
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// hasColonPair reports whether s has two colons with at most four hex
// digits between them: what every IPv6 candidate has ("::", "1:2:").
func hasColonPair(s string) bool {
	last := -10
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == ':':
			if i-last <= 5 {
				return true
			}
			last = i
		case !isHex(s[i]):
			last = -10
		}
	}
	return false
}

// hasDottedDigits reports whether s has a digit, a dot and a digit in a
// row: what every IPv4 address has.
func hasDottedDigits(s string) bool {
	for i := 1; i+1 < len(s); i++ {
		if s[i] == '.' && '0' <= s[i-1] && s[i-1] <= '9' && '0' <= s[i+1] && s[i+1] <= '9' {
			return true
		}
	}
	return false
}

func containsAny(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
}

// withoutNames blanks every case-insensitive occurrence of the names in
// text, the longest name first where two start at one place. ASCII text
// and names are scanned directly; anything else through a pattern, for
// Unicode's case folds.
func withoutNames(text string, names ...string) string {
	var keep []string
	for _, n := range names {
		if n = strings.TrimSpace(n); len(n) >= 3 {
			keep = append(keep, n)
		}
	}
	if len(keep) == 0 {
		return text
	}
	// Longest first, so that a name containing another is blanked whole.
	slices.SortStableFunc(keep, func(a, b string) int { return len(b) - len(a) })
	if !isASCII(text) || !isASCII(strings.Join(keep, "")) {
		alts := make([]string, len(keep))
		for i, n := range keep {
			alts[i] = regexp.QuoteMeta(n)
		}
		re, err := regexp.Compile(`(?i)` + strings.Join(alts, "|"))
		if err != nil {
			return text
		}
		return re.ReplaceAllString(text, " ")
	}
	lower := strings.ToLower(text)
	var first [256]bool // the first bytes of the names
	for i := range keep {
		keep[i] = strings.ToLower(keep[i])
		first[keep[i][0]] = true
	}
	var b strings.Builder
	from := 0
	for i := 0; i < len(lower); {
		if !first[lower[i]] {
			i++
			continue
		}
		matched := 0
		for _, n := range keep {
			if strings.HasPrefix(lower[i:], n) {
				matched = len(n)
				break
			}
		}
		if matched == 0 {
			i++
			continue
		}
		if from == 0 { // the first name found
			b.Grow(len(text))
		}
		b.WriteString(text[from:i])
		b.WriteByte(' ')
		i += matched
		from = i
	}
	if from == 0 {
		return text
	}
	b.WriteString(text[from:])
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// ipv6Candidates are ipv6Re's matches in s, with their submatches.
func ipv6Candidates(s string) [][]string {
	if !ipv6Re.may(s) {
		return nil
	}
	return ipv6Re.re.FindAllStringSubmatch(s, -1)
}

// isWord is \b's idea of a word byte: ASCII letters, digits and _.
func isWord(c byte) bool { return isAlnum(c) || c == '_' }

// words are the [start, end) spans of s's maximal runs of word bytes. The
// hash and wallet patterns start and end at \b, so each of their matches
// is a whole word: a word is tested instead of the text searched.
func words(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		if !isWord(s[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isWord(s[j]) {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

func allOf(w string, in func(byte) bool) bool {
	for i := 0; i < len(w); i++ {
		if !in(w[i]) {
			return false
		}
	}
	return true
}

// isHashWord is a match of hashRe: 32, 40 or 64 hex digits.
func isHashWord(w string) bool {
	return (len(w) == 32 || len(w) == 40 || len(w) == 64) && allOf(w, isHex)
}

// isEthWord is a match of ethRe: 0x and 40 hex digits.
func isEthWord(w string) bool {
	return len(w) == 42 && w[0] == '0' && w[1] == 'x' && allOf(w[2:], isHex)
}

// isBtcWord is a match of btcRe: bc1 and 25 to 87 bech32 letters, or 1 or
// 3 and 25 to 34 base58 letters.
func isBtcWord(w string) bool {
	if strings.HasPrefix(w, "bc1") && len(w) >= 28 && len(w) <= 90 {
		return allOf(w[3:], func(c byte) bool {
			return c == '0' || '2' <= c && c <= '9' || c == 'a' || 'c' <= c && c <= 'h' || 'j' <= c && c <= 'n' || 'p' <= c && c <= 'z'
		})
	}
	return (w != "" && (w[0] == '1' || w[0] == '3')) && len(w) >= 26 && len(w) <= 35 && allOf(w[1:], func(c byte) bool {
		return '1' <= c && c <= '9' || 'A' <= c && c <= 'H' || 'J' <= c && c <= 'N' || 'P' <= c && c <= 'Z' || 'a' <= c && c <= 'k' || 'm' <= c && c <= 'z'
	})
}

// hashesAndWallets finds hashRe's, ethRe's and btcRe's matches in s, in
// text order each, but for the digests of OSV "## Source:" lines (see
// Extractor.Text).
func hashesAndWallets(s string) (hashes, eth, btc []string) {
	for _, w := range words(s) {
		word := s[w[0]:w[1]]
		switch {
		case isHashWord(word):
			if len(word) != 64 || !isSourceDigest(s, w[0], w[1]) {
				hashes = append(hashes, word)
			}
		case isEthWord(word):
			eth = append(eth, word)
		}
		// Apart from the hashes: 32 hex digits may be a bc1 or base58
		// address too, as btcRe reads them.
		if isBtcWord(word) {
			btc = append(btc, word)
		}
	}
	return hashes, eth, btc
}

// isSpace is \s: the white space of Go's patterns.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// isSourceDigest reports whether the 64 hex digits at s[from:to] are the
// digest of one of sourceDigestRe's matches, (?mi)^(\s*#+\s*Source:[^\n(]*)
// \(\s*[0-9a-f]{64}\s*\), without running it over the whole text (a third
// of the indicator extraction of an OSV report, every one of which has
// such a line). Each part of the pattern is read outward from the digest:
// white space and its parentheses; before "(", "Source:" (in any case,
// the long s too) on the same line with no "(" between; before that white
// space, at least one #, and white space back to the start of a line.
// None of the pattern's matches can overlap another's digest, so which
// matches the whole text has does not decide this one (FuzzGuards holds
// it to the pattern).
func isSourceDigest(s string, from, to int) bool {
	i := from
	for i > 0 && isSpace(s[i-1]) {
		i--
	}
	j := to
	for j < len(s) && isSpace(s[j]) {
		j++
	}
	if i == 0 || s[i-1] != '(' || j == len(s) || s[j] != ')' {
		return false
	}
	// "Source:" on the line of "(", with no "(" between; before it on
	// that line only white space and #s, so it is the line's first other
	// character.
	ls := strings.LastIndexByte(s[:i-1], '\n') + 1
	p := ls
	for p < i-1 && (isSpace(s[p]) || s[p] == '#') {
		p++
	}
	rest := s[p : i-1]
	if strings.IndexByte(rest, '(') >= 0 {
		return false
	}
	switch {
	case strings.HasPrefix(rest, "\u017f"):
		rest = rest[len("\u017f"):]
	case rest != "" && (rest[0] == 's' || rest[0] == 'S'):
		rest = rest[1:]
	default:
		return false
	}
	// "ource:" has no letter with a fold outside ASCII: EqualFold is (?i).
	if len(rest) < len("ource:") || !strings.EqualFold(rest[:len("ource:")], "ource:") {
		return false
	}
	// Before it: white space, #s, white space to a line's start.
	for p > 0 && isSpace(s[p-1]) {
		p--
	}
	if p == 0 || s[p-1] != '#' {
		return false
	}
	for p > 0 && s[p-1] == '#' {
		p--
	}
	for p > 0 && isSpace(s[p-1]) {
		if s[p-1] == '\n' {
			return true
		}
		p--
	}
	return p == 0
}

// isHostRune is a rune hostRe's matches are made of: ASCII letters and
// digits, '-', '.' and any letter (\p{L}; the case folds of a-z, the
// Kelvin sign and the long s, are letters too).
func isHostRune(r rune) bool {
	if r < utf8.RuneSelf {
		return isAlnum(byte(r)) || r == '-' || r == '.'
	}
	return unicode.IsLetter(r)
}

// hostMatches is hostRe.FindAllStringIndex(s, -1), found faster. A match is
// made of host runes only, so it lies inside one maximal run of them, and
// it has a dot with a label after it, so only the runs with such a dot are
// searched. Each is searched with one rune of the text on either side:
// \b, the only thing the pattern reads outside its match, sees the text's
// own neighbours. Searching the whole text ran the backtracking pattern
// at every word of it: half of the indicator extraction of an import
// (FuzzGuards holds the two equal).
func hostMatches(s string) [][]int {
	var out [][]int
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isHostRune(r) {
			i += n
			continue
		}
		// dotted: the run has a dot between two runes that are not dots,
		// as every match has before its last label.
		start, dotted, afterLabel, afterDot := i, false, false, false
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isHostRune(r) {
				break
			}
			if r == '.' {
				afterDot, afterLabel = afterLabel, false
			} else {
				dotted = dotted || afterDot
				afterDot, afterLabel = false, true
			}
			i += n
		}
		if !dotted {
			continue
		}
		from, to := start, i
		if from > 0 {
			_, n := utf8.DecodeLastRuneInString(s[:from])
			from -= n
		}
		if to < len(s) {
			_, n := utf8.DecodeRuneInString(s[to:])
			to += n
		}
		for _, m := range hostRe.FindAllStringIndex(s[from:to], -1) {
			out = append(out, []int{m[0] + from, m[1] + from})
		}
	}
	return out
}
