package ioc

import "strings"

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
	referenceSites = setOf(ReferenceSites)
	infrastructure = setOf(Infrastructure, ReferenceSites)
)

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
