package core

import (
	"net/netip"
	"regexp"
	"sort"
	"strings"
)

// IOC types of CONTRACT.md §7.
const (
	IOCURL     = "url"
	IOCDomain  = "domain"
	IOCIP      = "ip"
	IOCHash    = "hash"
	IOCWallet  = "wallet"
	IOCPackage = "package"
)

// IOC is one indicator of compromise, re-fanged and normalised.
type IOC struct {
	Type  string `json:"type"`
	Value string `json:"value"`
	// Detail refines the type: md5/sha1/sha256 for hashes, the registry for
	// packages, ipv4/ipv6 for addresses.
	Detail string `json:"detail,omitempty"`
}

// refangers undo the defanging conventions seen in threat reports (spec §2.3
// and the common variants).
var refangers = []struct {
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

// Refang turns defanged text back into live indicators: hxxps:// → https://,
// [.] (.) [dot] → ., [:] → :.
func Refang(s string) string {
	for _, r := range refangers {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

var (
	urlRe  = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'\x60\)\]\}|]+`)
	hostRe = regexp.MustCompile(`(?i)\b(?:[a-z0-9\p{L}](?:[a-z0-9\p{L}-]{0,61}[a-z0-9\p{L}])?\.)+(?:[a-z\p{L}]{2,63}|xn--[a-z0-9-]{2,59})\b`)
	ipv4Re = regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b`)
	// ipv6Re finds candidates; netip.ParseAddr decides.
	ipv6Re = regexp.MustCompile(`(?i)(?:^|[^0-9a-z:])([0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7})`)
	// sourceDigestRe matches the digest of an OSV "## Source:" line.
	sourceDigestRe = regexp.MustCompile(`(?mi)^(\s*#+\s*Source:[^\n(]*)\(\s*[0-9a-f]{64}\s*\)`)
	hashRe         = regexp.MustCompile(`(?i)\b(?:[0-9a-f]{64}|[0-9a-f]{40}|[0-9a-f]{32})\b`)
	ethRe          = regexp.MustCompile(`\b0x[0-9a-fA-F]{40}\b`)
	btcRe          = regexp.MustCompile(`\b(?:bc1[02-9ac-hj-np-z]{25,87}|[13][1-9A-HJ-NP-Za-km-z]{25,34})\b`)
	purlRe         = regexp.MustCompile(`\bpkg:[a-z]+/[^\s"'<>\x60]+`)
	emailish       = regexp.MustCompile(`[A-Za-z0-9._%+-]+@`)
)

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

// ExtractIOCs finds the indicators in a report: its own resource, then
// everything re-fanged from payload_description (and threat_description).
// Values are normalised as for duplicate keys and listed once each.
func ExtractIOCs(t Threat) []IOC {
	seen := map[string]bool{}
	var out []IOC
	add := func(typ, value, detail string) {
		k := typ + "\x00" + value
		if value == "" || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, IOC{Type: typ, Value: value, Detail: detail})
	}
	// The report's own resource.
	if c, err := CanonicalIdentifier(t.ReportType, t.Registry, t.ResourceIdentifier); err == nil {
		switch t.ReportType {
		case TypePackage:
			add(IOCPackage, t.ResourceIdentifier, t.Registry)
		case TypeURL:
			add(IOCURL, c, "")
		case TypeDomain:
			add(IOCDomain, c, "")
		case TypeIP:
			add(IOCIP, c, ipKind(c))
		case TypeWallet:
			add(IOCWallet, c, "")
		case TypeRepository:
			add(IOCURL, "https://"+c, "repository")
		case TypeContainer:
			add(IOCPackage, c, "container")
		}
	}
	for _, ioc := range ExtractText(t.Details.PayloadDescription + "\n" + t.Details.ThreatDescription) {
		if ioc.Type == IOCDomain && t.ReportType == TypePackage && strings.EqualFold(ioc.Value, t.ResourceIdentifier) {
			continue // a dotted package name (vtex.google) is not its own domain
		}
		add(ioc.Type, ioc.Value, ioc.Detail)
	}
	return out
}

// ExtractText finds indicators in free text after re-fanging it.
func ExtractText(text string) []IOC {
	s := Refang(text)
	seen := map[string]bool{}
	var out []IOC
	add := func(typ, value, detail string) {
		k := typ + "\x00" + value
		if !seen[k] {
			seen[k] = true
			out = append(out, IOC{Type: typ, Value: value, Detail: detail})
		}
	}
	// URLs first; their hosts are domains too.
	urlHosts := map[string]bool{}
	for _, m := range urlRe.FindAllString(s, -1) {
		m = strings.TrimRight(m, ".,;:!?")
		c, err := canonicalHTTPURL("", m)
		if err != nil {
			continue
		}
		add(IOCURL, c, "")
		host := strings.TrimPrefix(strings.TrimPrefix(c, "https://"), "http://")
		host, _, _ = strings.Cut(host, "/")
		if i := strings.LastIndexByte(host, '@'); i >= 0 {
			host = host[i+1:]
		}
		h := host
		if hh, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
			h = hh
		}
		urlHosts[h] = true
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			add(IOCIP, a.Unmap().String(), ipKind(a.String()))
		} else if !IsInfrastructure(h) && publicTLD(h) {
			// The host of a URL on shared infrastructure is not an
			// indicator: the URL is.
			add(IOCDomain, h, "")
		}
	}
	// Text outside URLs, for bare domains and addresses.
	rest := urlRe.ReplaceAllString(s, " ")
	for _, m := range ipv4Re.FindAllString(rest, -1) {
		if a, err := netip.ParseAddr(m); err == nil {
			add(IOCIP, a.String(), "ipv4")
		}
	}
	for _, m := range ipv6Re.FindAllStringSubmatch(rest, -1) {
		if a, err := netip.ParseAddr(m[1]); err == nil && a.Is6() && strings.Count(m[1], ":") >= 2 {
			add(IOCIP, a.String(), "ipv6")
		}
	}
	emails := emailish.FindAllStringIndex(rest, -1)
	for _, loc := range hostRe.FindAllStringIndex(rest, -1) {
		m := rest[loc[0]:loc[1]]
		if afterEmail(emails, loc[0]) {
			continue // the domain of an e-mail address is not itself an indicator
		}
		labels := strings.Split(strings.ToLower(m), ".")
		if fileExtensions[labels[len(labels)-1]] {
			continue // evil.js, setup.py: file names, not domains
		}
		if c, err := canonicalHost("", m); err == nil && publicTLD(c) {
			add(IOCDomain, c, "")
		}
	}
	// A digest on an OSV "## Source: origin (<sha256>)" line is the digest
	// of the upstream report record, not of any file the malware uses:
	// publishing it as a file-hash indicator would be false (issue 12).
	for _, m := range hashRe.FindAllString(sourceDigestRe.ReplaceAllString(rest, "$1"), -1) {
		add(IOCHash, strings.ToLower(m), map[int]string{32: "md5", 40: "sha1", 64: "sha256"}[len(m)])
	}
	for _, m := range ethRe.FindAllString(rest, -1) {
		add(IOCWallet, strings.ToLower(m), "ethereum")
	}
	for _, m := range btcRe.FindAllString(rest, -1) {
		add(IOCWallet, m, "bitcoin")
	}
	for _, m := range purlRe.FindAllString(rest, -1) {
		add(IOCPackage, strings.TrimRight(m, ".,;:"), "purl")
	}
	sort.SliceStable(out, func(i, j int) bool { return iocOrder[out[i].Type] < iocOrder[out[j].Type] })
	return out
}

var iocOrder = map[string]int{IOCURL: 0, IOCDomain: 1, IOCIP: 2, IOCHash: 3, IOCWallet: 4, IOCPackage: 5}

// afterEmail reports whether an e-mail match ends at pos. The matches are in
// text order, so a binary search keeps a text with thousands of addresses
// and host names linear-logarithmic, not quadratic.
func afterEmail(emails [][]int, pos int) bool {
	i := sort.Search(len(emails), func(i int) bool { return emails[i][1] >= pos })
	return i < len(emails) && emails[i][1] == pos
}

func ipKind(s string) string {
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
