package ioc

import (
	"net/netip"
	"strings"
)

// Infrastructure lists the shared hosting and infrastructure that malware
// abuses but everybody uses: code hosts, package registries, CDNs, paste and
// file-sharing sites, URL shorteners, messaging APIs, and the advisory
// sites reports link to. A URL on one of them is an indicator with its full
// path; its host is never published as a bare domain indicator (blocking
// github.com or cdn.discordapp.com would break normal traffic). A domain
// the report's text itself names as a bare domain is still published.
// Subdomains count: gist.github.com is github.com's. docs/indicators.md
// documents the list; keep them in step.
var Infrastructure = []string{
	// Code hosts.
	"github.com", "githubusercontent.com", "github.io", "gitlab.com", "gitlab.io", "bitbucket.org", "codeberg.org",
	"sourceforge.net", "gitee.com", "glitch.me", "replit.com", "repl.co", "vercel.app", "netlify.app", "herokuapp.com",
	"pages.dev", "workers.dev", "azurewebsites.net", "web.app", "firebaseapp.com", "appspot.com",
	// Package registries and their mirrors.
	"npmjs.com", "npmjs.org", "yarnpkg.com", "pypi.org", "pythonhosted.org", "python.org", "crates.io", "rubygems.org",
	"nuget.org", "golang.org", "go.dev", "packagist.org", "maven.org", "apache.org", "visualstudio.com", "open-vsx.org",
	"docker.com", "docker.io", "ghcr.io", "quay.io",
	// CDNs and cloud storage.
	"discordapp.com", "discordapp.net", "discord.com", "discord.gg", "jsdelivr.net", "unpkg.com", "cloudflare.com",
	"cloudfront.net", "akamaihd.net", "googleapis.com", "googleusercontent.com", "amazonaws.com", "blob.core.windows.net",
	"storage.googleapis.com", "digitaloceanspaces.com", "backblazeb2.com",
	// Paste and file sharing.
	"pastebin.com", "paste.ee", "hastebin.com", "ghostbin.com", "rentry.co", "dropbox.com", "dropboxusercontent.com",
	"drive.google.com", "docs.google.com", "mega.nz", "mega.io", "mediafire.com", "transfer.sh", "file.io", "gofile.io",
	"anonfiles.com", "catbox.moe", "wetransfer.com", "onedrive.live.com", "1drv.ms", "sharepoint.com",
	// URL shorteners.
	"bit.ly", "tinyurl.com", "t.co", "goo.gl", "is.gd", "cutt.ly", "rb.gy", "ow.ly", "shorturl.at",
	// Messaging and webhook APIs.
	"telegram.org", "t.me", "slack.com", "api.telegram.org",
	// Services malware only asks: its public address, the time, a
	// connectivity check. A report names them in passing; blocking them
	// would break everybody who uses them.
	"ipify.org", "ipinfo.io", "ifconfig.me", "ifconfig.co", "icanhazip.com", "ipecho.net", "ip-api.com", "ident.me",
	"myexternalip.com", "wtfismyip.com", "checkip.dyndns.org", "api.myip.com", "ipapi.co", "httpbin.org",
	"dns.google", "cloudflare-dns.com", "one.one.one.one", "quad9.net", "opendns.com", "nextdns.io", "adguard-dns.com",
	// The web's largest sites, named as what malware pretends to be or
	// checks it can reach.
	"google.com", "www.google.com", "gstatic.com", "microsoft.com", "windows.com", "windowsupdate.com", "live.com",
	"office.com", "apple.com", "icloud.com", "amazon.com", "facebook.com", "instagram.com", "whatsapp.com",
	"twitter.com", "x.com", "youtube.com", "linkedin.com", "wikipedia.org", "bing.com", "yahoo.com",
}

// InfrastructureIPs are the addresses of public resolvers that malware
// (and everybody) queries: a report names them in passing, and blocking
// one would break name resolution for everyone who uses it.
var InfrastructureIPs = []string{
	"8.8.8.8", "8.8.4.4", "2001:4860:4860::8888", "2001:4860:4860::8844", // Google
	"1.1.1.1", "1.0.0.1", "2606:4700:4700::1111", "2606:4700:4700::1001", // Cloudflare
	"9.9.9.9", "149.112.112.112", "2620:fe::fe", "2620:fe::9", // Quad9
	"208.67.222.222", "208.67.220.220", "2620:119:35::35", "2620:119:53::53", // OpenDNS
	"94.140.14.14", "94.140.15.15", "2a10:50c0::ad1:ff", "2a10:50c0::ad2:ff", // AdGuard
	"76.76.2.0", "76.76.10.0", // Control D
	"185.228.168.9", "185.228.169.9", // CleanBrowsing
	"64.6.64.6", "64.6.65.6", // Verisign
}

// IsInfrastructureIP reports whether the address is one of
// InfrastructureIPs.
func IsInfrastructureIP(s string) bool {
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil && infrastructureIPs[a.Unmap()]
}

// IsPublicSuffix reports whether host is itself a public suffix (the
// Public Suffix List, ICANN and private sections: co.uk, in-addr.arpa,
// github.io), a name under which anybody may register: never a domain to
// block, nor a parent whose report flags every name below it.
//
// golang.org/x/net/publicsuffix has the list but imports
// net/http/cookiejar, which the domain may not (core/imports_test.go):
// the rules are generated from the same list (suffixes_gen.go, make tlds).
func IsPublicSuffix(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h != "" && PublicSuffix(h) == h
}

// The kinds of Public Suffix List rules about a name (suffixRules).
const (
	ruleNormal    = 1 // "name"
	ruleWildcard  = 2 // "*.name"
	ruleException = 4 // "!name"
)

// PublicSuffix is the public suffix of the lower-case ASCII name h by the
// list's algorithm: an exception rule first (its suffix is the rule less
// its first label), else the matching rule of most labels (a wildcard
// matches one label), else the last label.
func PublicSuffix(h string) string {
	for i := 0; ; {
		if suffixRules[h[i:]]&ruleException != 0 {
			if j := strings.IndexByte(h[i:], '.'); j >= 0 {
				return h[i+j+1:]
			}
		}
		j := strings.IndexByte(h[i:], '.')
		if j < 0 {
			break
		}
		i += j + 1
	}
	for i := 0; ; {
		rest := ""
		j := strings.IndexByte(h[i:], '.')
		if j >= 0 {
			rest = h[i+j+1:]
		}
		if suffixRules[h[i:]]&ruleNormal != 0 || rest != "" && suffixRules[rest]&ruleWildcard != 0 {
			return h[i:]
		}
		if j < 0 {
			return h[i:]
		}
		i += j + 1
	}
}

// ReferenceSites are the advisory and analysis sites reports link to as
// their sources: a link to one of them is a reference, never an indicator,
// and they count as infrastructure too. Subdomains count.
var ReferenceSites = []string{
	"osv.dev", "nist.gov", "mitre.org", "cve.org", "snyk.io", "socket.dev", "phylum.io", "checkmarx.com", "sonatype.com",
	"jfrog.com", "reversinglabs.com", "virustotal.com", "stepsecurity.io", "opensourcemalware.com", "deps.dev",
	"securityscorecards.dev", "openssf.org", "first.org", "cisa.gov",
}

// referencePaths are the advisory databases on code hosts: a link under one
// of these prefixes is a reference too.
var referencePaths = []string{
	"github.com/advisories/", "github.com/ossf/malicious-packages/", "github.com/github/advisory-database/",
}

// IsReferenceURL reports whether the canonical URL u links to an advisory or
// analysis site (ReferenceSites) or an advisory database on a code host,
// including a repository's own security advisories
// (github.com/<owner>/<repo>/security/advisories/…).
func IsReferenceURL(u string) bool {
	host, path := HostPath(u)
	if host == "" {
		return false
	}
	if isUnder(host, referenceSites) {
		return true
	}
	hp := host + "/" + path
	for _, p := range referencePaths {
		if strings.HasPrefix(hp, p) {
			return true
		}
	}
	if host == "github.com" {
		if parts := strings.SplitN(path, "/", 5); len(parts) >= 4 && parts[2] == "security" && parts[3] == "advisories" {
			return true
		}
	}
	return false
}

var (
	referenceSites    = setOf(ReferenceSites)
	infrastructure    = setOf(Infrastructure, ReferenceSites)
	infrastructureIPs = addrsOf(InfrastructureIPs)
)

// addrsOf makes a set of the addresses.
func addrsOf(list []string) map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	for _, s := range list {
		m[netip.MustParseAddr(s)] = true
	}
	return m
}

// setOf makes a set of the lists' entries.
func setOf(lists ...[]string) map[string]bool {
	m := map[string]bool{}
	for _, l := range lists {
		for _, d := range l {
			m[d] = true
		}
	}
	return m
}

// HostPath splits an http(s) URL into its lower-case host (with any
// user-info and port) and its path; host is "" for anything else.
func HostPath(u string) (host, path string) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "http") {
		return "", ""
	}
	host, path, _ = strings.Cut(rest, "/")
	return strings.ToLower(host), path
}

// IsInfrastructure reports whether host is, or is under, a domain of the
// Infrastructure or ReferenceSites lists.
func IsInfrastructure(host string) bool { return isUnder(host, infrastructure) }

// isUnder reports whether host is, or is under, a domain of set.
func isUnder(host string, set map[string]bool) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for {
		if set[h] {
			return true
		}
		_, rest, ok := strings.Cut(h, ".")
		if !ok {
			return false
		}
		h = rest
	}
}

// publicTLD reports whether host ends in a top-level domain of the ICANN
// root (the Public Suffix List's ICANN section, tlds_gen.go): com.unity.xr,
// prettier.config and d11-web-components.icon are package and file names,
// not domains.
// The documentation TLD of RFC 2606 counts too: examples and tests use it.
func publicTLD(host string) bool {
	tld := strings.ToLower(host[strings.LastIndexByte(host, '.')+1:])
	return icannTLDs[tld] || tld == "example"
}
