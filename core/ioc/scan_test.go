package ioc

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The patterns as they were before their guards and word tests: what the
// guarded forms must find, match for match.
var (
	plainHashRe = regexp.MustCompile(`(?i)\b(?:[0-9a-f]{64}|[0-9a-f]{40}|[0-9a-f]{32})\b`)
	plainEthRe  = regexp.MustCompile(`\b0x[0-9a-fA-F]{40}\b`)
	// sourceDigestRe matches the digest of an OSV "## Source:" line.
	sourceDigestRe = regexp.MustCompile(`(?mi)^(\s*#+\s*Source:[^\n(]*)\(\s*[0-9a-f]{64}\s*\)`)
	plainBtcRe     = regexp.MustCompile(`\b(?:bc1[02-9ac-hj-np-z]{25,87}|[13][1-9A-HJ-NP-Za-km-z]{25,34})\b`)
)

// plainRefangers are Refang's patterns, applied in turn.
var plainRefangers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(?i)\bhxxps(?:\[:\]|\(:\)|:)//|\bhttps\[:\]//`), "https://"},
	{regexp.MustCompile(`(?i)\bhxxp(?:\[:\]|\(:\)|:)//|\bhttp\[:\]//`), "http://"},
	{regexp.MustCompile(`(?i)\bfxp://`), "ftp://"},
	{regexp.MustCompile(`\[\.\]|\(\.\)|\{\.\}|\[dot\]|\(dot\)|\{dot\}| \[dot\] | dot `), "."},
	{regexp.MustCompile(`\[:\]`), ":"},
	{regexp.MustCompile(`\[/\]`), "/"},
	{regexp.MustCompile(`\[@\]|\[at\]`), "@"},
}

func plainRefang(s string) string {
	for _, r := range plainRefangers {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

// TestRefangIsThePatterns: the letters of the schemes have no case folds
// but those refangSchemes knows (the long s).
func TestRefangIsThePatterns(t *testing.T) {
	for _, c := range "hxtp" {
		if f := unicode.SimpleFold(c); f != unicode.ToUpper(c) || unicode.SimpleFold(f) != c {
			t.Fatalf("%q folds to %q", c, f)
		}
	}
	if f := unicode.SimpleFold('S'); f != 's' || unicode.SimpleFold(f) != '\u017f' {
		t.Fatalf("s folds differently: %q", f)
	}
	for _, s := range []string{
		"hxxps://a HXXPS[:]//b hXxPs(:)//c hxxp://d hxxp[:]//e http[:]//f https[:]//g hxxp\u017f://h xhxxp://i _hxxps://j",
		"éhxxps://k hxxps:/l hxxpsx://m [[/]] [[:]/] [/[@]] [a[at]t] ( dot ) [dot] . dot dot  [dot] [.] (.) {.} {dot} (dot)",
	} {
		checkGuards(t, s)
	}
}

func plainWithoutNames(text string, names ...string) string {
	var alts []string
	for _, n := range names {
		if n = strings.TrimSpace(n); len(n) >= 3 {
			alts = append(alts, regexp.QuoteMeta(n))
		}
	}
	if len(alts) == 0 {
		return text
	}
	slices.SortStableFunc(alts, func(a, b string) int { return len(b) - len(a) })
	re, err := regexp.Compile(`(?i)` + strings.Join(alts, "|"))
	if err != nil {
		return text // a name that is not valid UTF-8
	}
	return re.ReplaceAllString(text, " ")
}

// checkGuards fails when a guard refuses a text its pattern matches, or a
// word test disagrees with the pattern it replaces.
func checkGuards(t *testing.T, s string) {
	t.Helper()
	all := []guarded{urlRe, ipv4Re, ipv6Re, purlRe, emailish}
	if got, want := Refang(s), plainRefang(s); got != want {
		t.Fatalf("Refang(%q) = %q, want %q", s, got, want)
	}
	for _, g := range all {
		if g.re.MatchString(s) && !g.may(s) {
			t.Fatalf("the guard of %s refuses %q, which it matches", g.re, s)
		}
	}
	if got, want := hostMatches(s), hostRe.FindAllStringIndex(s, -1); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("host names of %q: %v, want %v", s, got, want)
	}
	hashes, eth, btc := hashesAndWallets(s)
	wantHashes := plainHashRe.FindAllString(sourceDigestRe.ReplaceAllString(s, "$1"), -1)
	if !slices.Equal(hashes, wantHashes) {
		t.Fatalf("hashes of %q: %q, want %q", s, hashes, wantHashes)
	}
	if want := plainEthRe.FindAllString(s, -1); !slices.Equal(eth, want) {
		t.Fatalf("ethereum wallets of %q: %q, want %q", s, eth, want)
	}
	if want := plainBtcRe.FindAllString(s, -1); !slices.Equal(btc, want) {
		t.Fatalf("bitcoin wallets of %q: %q, want %q", s, btc, want)
	}
}

var guardSeeds = []string{
	"hxxps://evil[.]example[.]com/a and HXXP[:]//x(.)y https[:]//a[.]b fxp://f mail[@]x[at]y a[/]b one dot two",
	"see 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08 and d41d8cd98f00b204e9800998ecf8427e_x",
	"## Source: ghsa-malware (0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef)\nmore",
	"  ### Source: x y (\n 0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef )",
	"0xAbCdEf0123456789aBcDeF0123456789AbCdEf01 0x0123456789abcdef0123456789abcdef01234567x",
	"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2 3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",
	"2001:db8::1 fe80::1%eth0 ::ffff:10.0.0.1 Source: a:b 10.0.0.1 1.2.3",
	"pkg:npm/evil@1.0.0 user@example.com http://x.y HTTP://Z.W",
	"Kelvin \u212a and long \u017f: hxxp\u017f://x",
	"bc100000000000000000000000000000 and 1234567891abcdef1234567891abcdef", // hex digits that are an address too
	"evil.example.com. _x.com x_.y.com a..b.com .com. -a-.b-.cc 1.2.3.4 ÉVIL.exämple.de é.com_ \xe2\x82.co.uk\xff",
	"# x\n  \n ##\n Source: a b (\n" + strings.Repeat("ab", 32) + " )\n#Source:(" + strings.Repeat("AB", 32) + ")\n ſOURCE: (" + strings.Repeat("0", 64) + ")",
	"x ## Source: a (" + strings.Repeat("ab", 32) + ")\n## Source: a (b) (" + strings.Repeat("ab", 32) + ")\n# # Source: (" + strings.Repeat("ab", 32) + ")\nSource: (" + strings.Repeat("ab", 32) + ")",
	"see a.bc, d-e.f.gh; xn--80ak6aa92e.com(x) mail@host.example.org end.",
}

func TestGuards(t *testing.T) {
	for _, s := range guardSeeds {
		checkGuards(t, s)
	}
}

func FuzzGuards(f *testing.F) {
	for _, s := range guardSeeds {
		f.Add(s, "evil-pkg", "Evil_Pkg")
	}
	f.Fuzz(func(t *testing.T, s, a, b string) {
		checkGuards(t, s)
		if got, want := withoutNames(s, a, b), plainWithoutNames(s, a, b); got != want {
			t.Fatalf("withoutNames(%q, %q, %q) = %q, want %q", s, a, b, got, want)
		}
	})
}
