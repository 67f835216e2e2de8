// Package ioc is what an indicator of compromise is and how one is found
// in text (docs/indicators.md): the types, origins and confidence levels,
// re-fanging and defanging, the text scanner with its guarded patterns,
// the shared-infrastructure and reference-site lists, and the ICANN
// top-level domains. Which indicators a report has (its own subject, an
// import's listed section, its prose) is core's ExtractIOCs, which runs
// this scanner.
package ioc

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"regexp"
	"sort"
	"strings"
)

// IOC types of docs/indicators.md.
const (
	URL     = "url"
	Domain  = "domain"
	IP      = "ip"
	Hash    = "hash"
	Wallet  = "wallet"
	Package = "package"
)

// Where an indicator comes from (docs/indicators.md).
const (
	// OriginAsset is the report's own subject: the package, URL, domain,
	// address, wallet, repository or image it is about.
	OriginAsset = "asset"
	// OriginOSV is an indicator the upstream OSV record lists in
	// database_specific.iocs (the section the import writes, Section).
	OriginOSV = "osv.iocs"
	// OriginPayload is an indicator stated in the report's texts.
	OriginPayload = "payload"
)

// Confidence levels, on STIX 2.1's 0–100 scale at the points of its
// "None/Low/Med/High" mapping (STIX 2.1 appendix A).
const (
	ConfidenceHigh   = 85 // the asset; indicators the upstream record lists
	ConfidenceMedium = 50 // indicators found in the report's texts
	ConfidenceLow    = 15 // a domain of shared infrastructure the report names bare
)

// Section is the heading under which an import writes the indicators the
// upstream record lists (OSV's database_specific.iocs), defanged, at the end
// of payload_description. Only an imported report's section counts as
// OriginOSV: a community report's text is OriginPayload whatever it says.
const Section = "### Indicators of compromise (defanged)"

// IOC is one indicator of compromise, re-fanged and normalised.
type IOC struct {
	Type  string `json:"type"`
	Value string `json:"value"`
	// Detail refines the type: md5/sha1/sha256 for hashes, the registry for
	// packages, ipv4/ipv6 for addresses.
	Detail string `json:"detail,omitempty"`
	// Versions are the affected versions of a package indicator, from
	// version_info; empty means every version.
	Versions []string `json:"versions,omitempty"`
	// Origin says where the indicator comes from: OriginAsset, OriginOSV or
	// OriginPayload.
	Origin string `json:"origin"`
	// Confidence is 0–100 (ConfidenceHigh, ConfidenceMedium, ConfidenceLow).
	Confidence int `json:"confidence"`
}

// Refang turns defanged text back into live indicators (spec §2.3 and the
// common variants): hxxp(s)://, hxxp(s)[:]//, hxxp(s)(:)// and
// http(s)[:]// (in any case, after a word boundary) → http(s)://,
// fxp:// → ftp://, [.] (.) {.} [dot] (dot) {dot} and " dot " → ., [:] → :,
// [/] → / and [@] [at] → @, in that order, each leftmost first. Its
// patterns are literal but for the schemes', so they are replaced by a
// byte scan and a strings.Replacer rather than regular expressions, which
// tried every position of every text (TestRefangIsThePatterns holds the
// two equal).
func Refang(s string) string {
	if containsFold(s, "hxxp") || strings.Contains(s, "[:]") {
		s = refangSchemes(s)
	}
	if containsFold(s, "fxp://") {
		s = fxpRe.ReplaceAllString(s, "ftp://")
	}
	if hasDefangedDot(s) {
		s = dotRefanger.Replace(s)
	}
	if hasDefangedBracket(s) {
		s = bracketRefanger.Replace(s)
	}
	return s
}

var (
	fxpRe       = regexp.MustCompile(`(?i)\bfxp://`)
	dotRefanger = strings.NewReplacer("[.]", ".", "(.)", ".", "{.}", ".", "[dot]", ".", "(dot)", ".", "{dot}", ".", " [dot] ", ".", " dot ", ".")
	// The three last refangers in turn: a Replacer with all three is the
	// same, as none of their results makes or breaks another's match.
	bracketRefanger = strings.NewReplacer("[:]", ":", "[/]", "/", "[@]", "@", "[at]", "@")
	// The guards of the Replacers (what any match of theirs contains): a
	// Replacer copies the whole text even when nothing matches.
	hasDefangedDot     = containsAny("[.]", "(.)", "{.}", "[dot]", "(dot)", "{dot}", " dot ")
	hasDefangedBracket = containsAny("[:]", "[/]", "[@]", "[at]")
)

// refangSchemes replaces (?i)\bhxxps(?:\[:\]|\(:\)|:)//|\bhttps\[:\]// with
// https://, then (?i)\bhxxp(?:\[:\]|\(:\)|:)//|\bhttp\[:\]// with http://. One
// pass does both: no match of either overlaps one of the other, and no
// replacement makes or breaks another match.
func refangSchemes(s string) string {
	var b strings.Builder
	from := 0
	for i := 0; i < len(s); i++ {
		if s[i] != 'h' && s[i] != 'H' || i > 0 && isWord(s[i-1]) {
			continue
		}
		n, secure := schemeAt(s[i:])
		if n == 0 {
			continue
		}
		b.WriteString(s[from:i])
		if secure {
			b.WriteString("https://")
		} else {
			b.WriteString("http://")
		}
		i += n - 1
		from = i + 1
	}
	if from == 0 {
		return s
	}
	b.WriteString(s[from:])
	return b.String()
}

// schemeAt returns the length of the defanged scheme s starts with (0 for
// none) and whether it is https.
func schemeAt(s string) (n int, secure bool) {
	// foldPrefix: s starts with word (lower-case ASCII) in any case; an s
	// may be the long s (U+017F), its case fold.
	foldPrefix := func(s, word string) int {
		i := 0
		for j := 0; j < len(word); j++ {
			switch {
			case i < len(s) && (s[i] == word[j] || s[i] == word[j]-('a'-'A')):
				i++
			case word[j] == 's' && strings.HasPrefix(s[i:], "\u017f"):
				i += len("\u017f")
			default:
				return -1
			}
		}
		return i
	}
	if i := foldPrefix(s, "hxxp"); i > 0 {
		if j := foldPrefix(s[i:], "s"); j > 0 {
			for _, sep := range []string{"[:]//", "(:)//", "://"} {
				if strings.HasPrefix(s[i+j:], sep) {
					return i + j + len(sep), true
				}
			}
		}
		for _, sep := range []string{"[:]//", "(:)//", "://"} {
			if strings.HasPrefix(s[i:], sep) {
				return i + len(sep), false
			}
		}
		return 0, false
	}
	if i := foldPrefix(s, "http"); i > 0 {
		if j := foldPrefix(s[i:], "s"); j > 0 && strings.HasPrefix(s[i+j:], "[:]//") {
			return i + j + len("[:]//"), true
		}
		if strings.HasPrefix(s[i:], "[:]//") {
			return i + len("[:]//"), false
		}
	}
	return 0, false
}

var (
	urlRe  = guarded{regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'\x60\)\]\}|]+`), func(s string) bool { return containsFold(s, "http") }}
	hostRe = regexp.MustCompile(`(?i)\b(?:[a-z0-9\p{L}](?:[a-z0-9\p{L}-]{0,61}[a-z0-9\p{L}])?\.)+(?:[a-z\p{L}]{2,63}|xn--[a-z0-9-]{2,59})\b`)
	ipv4Re = guarded{regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b`), hasDottedDigits}
	// ipv6Re finds candidates; netip.ParseAddr decides.
	ipv6Re   = guarded{regexp.MustCompile(`(?i)(?:^|[^0-9a-z:])([0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7})`), hasColonPair}
	purlRe   = guarded{regexp.MustCompile(`\bpkg:[a-z]+/[^\s"'<>\x60]+`), containsAny("pkg:")}
	emailish = guarded{regexp.MustCompile(`[A-Za-z0-9._%+-]+@`), containsAny("@")}
)

// IsHostText reports whether s, all of it, is what the scanner takes for a
// host name in text (labels and a top-level label, ASCII or not).
func IsHostText(s string) bool { return hostRe.FindString(s) == s }

// fileExtensions are last labels that look like TLDs but name files.
var fileExtensions = map[string]bool{
	"js": true, "json": true, "py": true, "sh": true, "exe": true, "dll": true, "txt": true, "md": true,
	"ts": true, "go": true, "rb": true, "php": true, "zip": true, "tar": true, "gz": true, "tgz": true,
	"bin": true, "log": true, "yml": true, "yaml": true, "toml": true, "lock": true, "html": true, "css": true,
	"png": true, "jpg": true, "gif": true, "svg": true, "pdf": true, "cjs": true, "mjs": true, "jar": true,
	"whl": true, "gem": true, "crate": true, "nupkg": true, "ps1": true, "bat": true, "cmd": true, "vbs": true,
	"npmrc": true, "env": true, "pem": true, "key": true, "plist": true, "so": true, "dylib": true, "node": true,
	"lnk": true, "docm": true, "xlsm": true, "msi": true, "apk": true, "dmg": true, "deb": true, "rpm": true,
	"local": true, "internal": true, "example": false,
}

// Extractor finds indicators in text, with the canonical forms of URLs
// and host names its caller defines (the duplicate keys' normalisation).
type Extractor struct {
	// CanonicalURL returns the canonical form of an http(s) URL, or an
	// error for anything that is not one.
	CanonicalURL func(string) (string, error)
	// CanonicalHost returns the canonical form of a host name, or an error
	// for anything that is not one.
	CanonicalHost func(string) (string, error)
}

// Text finds the indicators in text after re-fanging it, with the
// confidence of a report's text (ConfidenceMedium; ConfidenceLow for a
// domain of shared infrastructure named bare). The links skip accepts
// (canonical URLs: a report's sources, its package's own pages) are not
// indicators, and neither are their hosts; the names are blanked outside
// links. skip may be nil.
func (x Extractor) Text(text string, skip func(string) bool, names ...string) []IOC {
	s := Refang(text)
	seen := map[string]bool{}
	var out []IOC
	add := func(typ, value, detail string) {
		k := typ + "\x00" + value
		if !seen[k] {
			seen[k] = true
			conf := ConfidenceMedium
			if typ == Domain && IsInfrastructure(value) || typ == IP && IsInfrastructureIP(value) {
				conf = ConfidenceLow
			}
			out = append(out, IOC{Type: typ, Value: value, Detail: detail, Confidence: conf})
		}
	}
	// URLs first; their hosts are domains too.
	urlHosts := map[string]bool{}
	for _, m := range urlRe.findAll(s) {
		m = strings.TrimRight(m, ".,;:!?")
		c, err := x.CanonicalURL(m)
		if err != nil || skip != nil && skip(c) {
			continue // not a URL, or a link to the report's sources
		}
		add(URL, c, "")
		host, _ := HostPath(c)
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			host = host[i+1:]
		}
		h := host
		if hh, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
			h = hh
		}
		urlHosts[h] = true
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			add(IP, a.Unmap().String(), IPKind(a.String()))
		} else if !IsInfrastructure(h) && publicTLD(h) {
			// The host of a URL on shared infrastructure is not an
			// indicator: the URL is.
			add(Domain, h, "")
		}
	}
	// Text outside URLs, for bare domains and addresses.
	rest := withoutNames(urlRe.replaceAll(s, " "), names...)
	for _, m := range ipv4Re.findAll(rest) {
		if a, err := netip.ParseAddr(m); err == nil {
			add(IP, a.String(), "ipv4")
		}
	}
	for _, m := range ipv6Candidates(rest) {
		if a, err := netip.ParseAddr(m[1]); err == nil && a.Is6() && strings.Count(m[1], ":") >= 2 {
			add(IP, a.String(), "ipv6")
		}
	}
	var emails [][]int
	if emailish.may(rest) {
		emails = emailish.re.FindAllStringIndex(rest, -1)
	}
	for _, loc := range hostMatches(rest) {
		m := rest[loc[0]:loc[1]]
		if afterEmail(emails, loc[0]) {
			continue // the domain of an e-mail address is not itself an indicator
		}
		labels := strings.Split(strings.ToLower(m), ".")
		if fileExtensions[labels[len(labels)-1]] {
			continue // evil.js, setup.py: file names, not domains
		}
		if c, err := x.CanonicalHost(m); err == nil && publicTLD(c) {
			add(Domain, c, "")
		}
	}
	// A digest on an OSV "## Source: origin (<sha256>)" line is the digest
	// of the upstream report record, not of any file the malware uses:
	// publishing it as a file-hash indicator would be false (issue 12).
	hashes, eth, btc := hashesAndWallets(rest)
	for _, m := range hashes {
		add(Hash, strings.ToLower(m), map[int]string{32: "md5", 40: "sha1", 64: "sha256"}[len(m)])
	}
	for _, m := range eth {
		add(Wallet, strings.ToLower(m), "ethereum")
	}
	for _, m := range btc {
		add(Wallet, m, "bitcoin")
	}
	for _, m := range purlRe.findAll(rest) {
		add(Package, strings.TrimRight(m, ".,;:"), "purl")
	}
	sort.SliceStable(out, func(i, j int) bool { return iocOrder[out[i].Type] < iocOrder[out[j].Type] })
	return out
}

var iocOrder = map[string]int{URL: 0, Domain: 1, IP: 2, Hash: 3, Wallet: 4, Package: 5}

// afterEmail reports whether an e-mail match ends at pos. The matches are in
// text order, so a binary search keeps a text with thousands of addresses
// and host names linear-logarithmic, not quadratic.
func afterEmail(emails [][]int, pos int) bool {
	i := sort.Search(len(emails), func(i int) bool { return emails[i][1] >= pos })
	return i < len(emails) && emails[i][1] == pos
}

// IPKind is "ipv6" for an IPv6 address (bracketed or not), else "ipv4".
func IPKind(s string) string {
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil && a.Is6() {
		return "ipv6"
	}
	return "ipv4"
}

// Defang renders an indicator safe to print (spec §2.3): http(s):// becomes
// hxxp(s):// and each dot of the host (or of a bare domain or address)
// becomes [.]. Refang undoes it.
func Defang(ioc string) string {
	scheme, rest, hasScheme := strings.Cut(ioc, "://")
	if !hasScheme {
		return strings.ReplaceAll(ioc, ".", "[.]")
	}
	host, path, _ := strings.Cut(rest, "/")
	out := strings.Replace(strings.ToLower(scheme), "http", "hxxp", 1) + "://" + strings.ReplaceAll(host, ".", "[.]")
	if path != "" || strings.HasSuffix(rest, "/") {
		out += "/" + path
	}
	return out
}

// Searchable says whether an indicator is kept for look-ups by value
// (the web site's search, check-malicious?match=indicators): at medium
// confidence or more, so that a bare domain of shared infrastructure a
// report mentions (ConfidenceLow) never makes that domain a hit.
func Searchable(ioc IOC) bool {
	return ioc.Confidence >= ConfidenceMedium && ioc.Value != ""
}

// Key is the look-up key of an indicator: a hash of its type and
// normalised value (fixed length, whatever the value's).
func Key(iocType, value string) string {
	h := sha256.Sum256([]byte(iocType + "\x00" + value))
	return hex.EncodeToString(h[:16])
}
