package core

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// IOC types of docs/indicators.md.
const (
	IOCURL     = "url"
	IOCDomain  = "domain"
	IOCIP      = "ip"
	IOCHash    = "hash"
	IOCWallet  = "wallet"
	IOCPackage = "package"
)

// Where an indicator comes from (docs/indicators.md).
const (
	// OriginAsset is the report's own subject: the package, URL, domain,
	// address, wallet, repository or image it is about.
	OriginAsset = "asset"
	// OriginOSV is an indicator the upstream OSV record lists in
	// database_specific.iocs (the section the import writes, IOCSection).
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

// IOCSection is the heading under which an import writes the indicators the
// upstream record lists (OSV's database_specific.iocs), defanged, at the end
// of payload_description. Only an imported report's section counts as
// OriginOSV: a community report's text is OriginPayload whatever it says.
const IOCSection = "### Indicators of compromise (defanged)"

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

// refangers undo the defanging conventions seen in threat reports (spec §2.3
// and the common variants).
var refangers = []struct {
	guarded
	repl string
}{
	{guarded{regexp.MustCompile(`(?i)\bhxxps(?:\[:\]|\(:\)|:)//|\bhttps\[:\]//`), func(s string) bool { return containsFold(s, "hxxp") || strings.Contains(s, "[:]") }}, "https://"},
	{guarded{regexp.MustCompile(`(?i)\bhxxp(?:\[:\]|\(:\)|:)//|\bhttp\[:\]//`), func(s string) bool { return containsFold(s, "hxxp") || strings.Contains(s, "[:]") }}, "http://"},
	{guarded{regexp.MustCompile(`(?i)\bfxp://`), func(s string) bool { return containsFold(s, "fxp://") }}, "ftp://"},
	{guarded{regexp.MustCompile(`\[\.\]|\(\.\)|\{\.\}|\[dot\]|\(dot\)|\{dot\}| \[dot\] | dot `), containsAny("[.]", "(.)", "{.}", "[dot]", "(dot)", "{dot}", " dot ")}, "."},
	{guarded{regexp.MustCompile(`\[:\]`), containsAny("[:]")}, ":"},
	{guarded{regexp.MustCompile(`\[/\]`), containsAny("[/]")}, "/"},
	{guarded{regexp.MustCompile(`\[@\]|\[at\]`), containsAny("[@]", "[at]")}, "@"},
}

// Refang turns defanged text back into live indicators: hxxps:// → https://,
// [.] (.) [dot] → ., [:] → :.
func Refang(s string) string {
	for _, r := range refangers {
		s = r.replaceAll(s, r.repl)
	}
	return s
}

var (
	urlRe  = guarded{regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'\x60\)\]\}|]+`), func(s string) bool { return containsFold(s, "http") }}
	hostRe = regexp.MustCompile(`(?i)\b(?:[a-z0-9\p{L}](?:[a-z0-9\p{L}-]{0,61}[a-z0-9\p{L}])?\.)+(?:[a-z\p{L}]{2,63}|xn--[a-z0-9-]{2,59})\b`)
	ipv4Re = guarded{regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b`), hasDottedDigits}
	// ipv6Re finds candidates; netip.ParseAddr decides.
	ipv6Re = guarded{regexp.MustCompile(`(?i)(?:^|[^0-9a-z:])([0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7})`), hasColonPair}
	// sourceDigestRe matches the digest of an OSV "## Source:" line.
	sourceDigestRe = regexp.MustCompile(`(?mi)^(\s*#+\s*Source:[^\n(]*)\(\s*[0-9a-f]{64}\s*\)`)
	purlRe         = guarded{regexp.MustCompile(`\bpkg:[a-z]+/[^\s"'<>\x60]+`), containsAny("pkg:")}
	emailish       = guarded{regexp.MustCompile(`[A-Za-z0-9._%+-]+@`), containsAny("@")}
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

// ExtractIOCs finds the indicators of a report (docs/indicators.md): its
// own subject (OriginAsset), the indicators an import lists under
// IOCSection (OriginOSV), then everything re-fanged from
// payload_description and threat_description (OriginPayload), where links
// the report gives as its references or evidence are not indicators.
// Values are normalised as for duplicate keys and listed once each, with
// the origin and confidence of their first, strongest source.
func ExtractIOCs(t Threat) []IOC {
	seen := map[string]bool{}
	var out []IOC
	add := func(ioc IOC) {
		k := ioc.Type + "\x00" + ioc.Value
		if ioc.Value == "" || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, ioc)
	}
	versions := AffectedVersions(t)
	// The report's own resource.
	if c, err := CanonicalIdentifier(t.ReportType, t.Registry, t.ResourceIdentifier); err == nil {
		asset := IOC{Origin: OriginAsset, Confidence: ConfidenceHigh}
		switch t.ReportType {
		case TypePackage:
			asset.Type, asset.Value, asset.Detail = IOCPackage, t.ResourceIdentifier, t.Registry
			asset.Versions = versions
		case TypeURL:
			asset.Type, asset.Value = IOCURL, c
		case TypeDomain:
			asset.Type, asset.Value = IOCDomain, c
		case TypeIP:
			asset.Type, asset.Value, asset.Detail = IOCIP, c, ipKind(c)
		case TypeWallet:
			asset.Type, asset.Value = IOCWallet, c
		case TypeRepository:
			asset.Type, asset.Value, asset.Detail = IOCURL, "https://"+c, "repository"
		case TypeContainer:
			asset.Type, asset.Value, asset.Detail = IOCPackage, c, "container"
		}
		add(asset)
	}
	text := t.Details.PayloadDescription
	if t.Source != "" {
		if before, listed, ok := strings.Cut(text, IOCSection); ok {
			text = before
			for _, ioc := range extractText(listed, nil) {
				ioc.Origin = OriginOSV
				if ioc.Confidence != ConfidenceLow {
					ioc.Confidence = ConfidenceHigh
				}
				add(ioc)
			}
		}
	}
	refs := references(t)
	own := ownHosts(t)
	var names []string
	if t.ReportType == TypePackage {
		// The package's own name is not a host, a hash or an address
		// (vtex.google-tag-manager, byte-flux-3822a6dd…), wherever the text
		// names it outside a link.
		names = []string{t.ResourceIdentifier, t.Details.PackageName}
	}
	skip := func(u string) bool { return refs[u] || IsReferenceURL(u) || ownLink(t, own, u) }
	for _, ioc := range extractText(text+"\n"+t.Details.ThreatDescription, skip, names...) {
		switch {
		case ioc.Type == IOCDomain && own[ioc.Value]:
			continue // the package's own registry or code host ("the crates.io team")
		case ioc.Type == IOCIP && slices.Contains(versions, ioc.Value):
			continue // "'discord-react' @ 0.0.0.1": a version, not an address
		}
		ioc.Origin = OriginPayload
		add(ioc)
	}
	return out
}

// codeHosts are where a package's own source lives.
var codeHosts = map[string]bool{"github.com": true, "gitlab.com": true, "bitbucket.org": true, "codeberg.org": true}

// ownLink reports whether the canonical URL u is the package's own page: on
// its registry, or its repository on a code host (github.com/<owner>/<the
// package's name>/…), which the report links to as the legitimate source.
func ownLink(t Threat, own map[string]bool, u string) bool {
	if t.ReportType != TypePackage {
		return false
	}
	host, path := hostPath(u)
	if own[host] {
		return true
	}
	if !codeHosts[host] {
		return false
	}
	parts := strings.Split(path, "/")
	name := strings.ToLower(t.ResourceIdentifier)
	name = name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.LastIndexByte(name, ':'); i >= 0 { // maven group:artifact
		name = name[i+1:]
	}
	return len(parts) >= 2 && name != "" && strings.EqualFold(strings.TrimSuffix(parts[1], ".git"), name)
}

// registryHosts are the hosts of each registry (the registries docs/api/submit.md names): a
// package report naming its own registry is not naming an indicator.
var registryHosts = map[string][]string{
	"npm": {"npmjs.com", "www.npmjs.com", "npmjs.org", "registry.npmjs.org"}, "pypi": {"pypi.org", "files.pythonhosted.org", "pythonhosted.org"},
	"rubygems": {"rubygems.org"}, "crates.io": {"crates.io", "static.crates.io"}, "go": {"pkg.go.dev", "proxy.golang.org", "go.dev"},
	"maven": {"repo.maven.apache.org", "maven.org", "search.maven.org", "central.sonatype.com"}, "nuget": {"nuget.org", "www.nuget.org", "api.nuget.org"},
	"packagist": {"packagist.org", "repo.packagist.org"}, "vscode": {"marketplace.visualstudio.com"}, "openvsx": {"open-vsx.org"},
	"dockerhub": {"hub.docker.com", "docker.io", "registry-1.docker.io"}, "ghcr": {"ghcr.io"}, "quay": {"quay.io"},
}

// ownHosts are the hosts a report names as its package's home, not as
// indicators: the registry's hosts and, for Go modules and repositories,
// the code host of the path.
func ownHosts(t Threat) map[string]bool {
	own := map[string]bool{}
	for _, h := range registryHosts[t.Registry] {
		own[h] = true
	}
	if t.ReportType == TypePackage && t.Registry == "go" || t.ReportType == TypeRepository {
		id := strings.ToLower(t.ResourceIdentifier)
		if host, _ := hostPath(id); host != "" {
			own[host] = true
		} else {
			host, _, _ := strings.Cut(id, "/")
			own[host] = true
		}
	}
	return own
}

// AffectedVersions lists the versions a package report names in
// version_info; nil when every version is affected (an empty list, or an
// imported record that affects all versions).
func AffectedVersions(t Threat) []string {
	if t.AllVersions || strings.TrimSpace(t.Details.VersionInfo) == "" {
		return nil
	}
	var out []string
	for v := range strings.SplitSeq(t.Details.VersionInfo, ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// references returns a report's own links (evidence_references and the
// advisory URL) in canonical form: a link the report gives as its source is
// not an indicator, even where its text repeats it.
func references(t Threat) map[string]bool {
	refs := map[string]bool{}
	for u := range strings.SplitSeq(t.Details.EvidenceReferences+"|"+t.Details.OSVAdvisoryURL, "|") {
		if c, err := canonicalHTTPURL("", strings.TrimSpace(u)); err == nil {
			refs[c] = true
		}
	}
	return refs
}

// ExtractText finds indicators in free text after re-fanging it, with the
// confidence of a report's text (ConfidenceMedium; ConfidenceLow for a
// domain of shared infrastructure named bare).
func ExtractText(text string) []IOC { return extractText(text, nil) }

// extractText is ExtractText for a report's own prose: the links skip
// accepts (canonical URLs: the report's sources, its package's own pages)
// are not indicators, and neither are their hosts; the names are blanked
// outside links.
func extractText(text string, skip func(string) bool, names ...string) []IOC {
	s := Refang(text)
	seen := map[string]bool{}
	var out []IOC
	add := func(typ, value, detail string) {
		k := typ + "\x00" + value
		if !seen[k] {
			seen[k] = true
			conf := ConfidenceMedium
			if typ == IOCDomain && IsInfrastructure(value) {
				conf = ConfidenceLow
			}
			out = append(out, IOC{Type: typ, Value: value, Detail: detail, Confidence: conf})
		}
	}
	// URLs first; their hosts are domains too.
	urlHosts := map[string]bool{}
	for _, m := range urlRe.findAll(s) {
		m = strings.TrimRight(m, ".,;:!?")
		c, err := canonicalHTTPURL("", m)
		if err != nil || skip != nil && skip(c) {
			continue // not a URL, or a link to the report's sources
		}
		add(IOCURL, c, "")
		host, _ := hostPath(c)
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
	rest := withoutNames(urlRe.replaceAll(s, " "), names...)
	for _, m := range ipv4Re.findAll(rest) {
		if a, err := netip.ParseAddr(m); err == nil {
			add(IOCIP, a.String(), "ipv4")
		}
	}
	for _, m := range ipv6Candidates(rest) {
		if a, err := netip.ParseAddr(m[1]); err == nil && a.Is6() && strings.Count(m[1], ":") >= 2 {
			add(IOCIP, a.String(), "ipv6")
		}
	}
	var emails [][]int
	if emailish.may(rest) {
		emails = emailish.re.FindAllStringIndex(rest, -1)
	}
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
	hashes, eth, btc := hashesAndWallets(rest)
	for _, m := range hashes {
		add(IOCHash, strings.ToLower(m), map[int]string{32: "md5", 40: "sha1", 64: "sha256"}[len(m)])
	}
	for _, m := range eth {
		add(IOCWallet, strings.ToLower(m), "ethereum")
	}
	for _, m := range btc {
		add(IOCWallet, m, "bitcoin")
	}
	for _, m := range purlRe.findAll(rest) {
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

// SearchableIOC says whether an indicator is kept for look-ups by value
// (the web site's search, check-malicious?match=indicators): at medium
// confidence or more, so that a bare domain of shared infrastructure a
// report mentions (ConfidenceLow) never makes that domain a hit.
func SearchableIOC(ioc IOC) bool {
	return ioc.Confidence >= ConfidenceMedium && ioc.Value != ""
}

// IndicatorKey is the look-up key of an indicator: a hash of its type and
// normalised value (fixed length, whatever the value's).
func IndicatorKey(iocType, value string) string {
	h := sha256.Sum256([]byte(iocType + "\x00" + value))
	return hex.EncodeToString(h[:16])
}
