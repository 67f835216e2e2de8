package core

import (
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// This file validates resource identifiers per report type and computes the
// canonical duplicate key of docs/api/submit.md ("Duplicates"). The same functions normalise
// look-ups later, so that `LoDash` on npm finds `lodash`.

const fieldRI = "resource_identifier"

// CanonicalKey returns the duplicate key of a report: "<type>:<identifier>",
// or for packages "package:<registry>:<name>". It validates the identifier.
func CanonicalKey(t ReportType, registry, identifier string) (string, error) {
	c, err := CanonicalIdentifier(t, registry, identifier)
	if err != nil {
		return "", err
	}
	if t == TypePackage {
		return "package:" + registry + ":" + c, nil
	}
	return string(t) + ":" + c, nil
}

// CanonicalIdentifier validates identifier for report type t (and registry,
// for packages) and returns its canonical form.
func CanonicalIdentifier(t ReportType, registry, identifier string) (string, error) {
	s := strings.TrimSpace(identifier)
	if s == "" {
		return "", Invalid(fieldRI, "must not be empty")
	}
	if !utf8.ValidString(s) {
		return "", Invalid(fieldRI, "is not valid UTF-8")
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) }) >= 0 {
		return "", Invalid(fieldRI, "contains a control character")
	}
	if len(s) > MaxIdentifierBytes {
		return "", Invalid(fieldRI, "is longer than %d bytes (%d)", MaxIdentifierBytes, len(s))
	}
	c, err := canonicalIdentifier(t, registry, s)
	if err == nil && len(c) > MaxIdentifierBytes {
		// Normalising can lengthen (IDN to punycode, percent-encoding).
		return "", Invalid(fieldRI, "is longer than %d bytes once normalised (%d)", MaxIdentifierBytes, len(c))
	}
	return c, err
}

// MaxIdentifierBytes bounds a resource identifier and a URL field, as given
// and once normalised: every backend must be able to index the canonical key
// (PostgreSQL's B-tree rows stop at 2,704 bytes; a 3.9 KB URL was accepted by
// SQLite and a 500 on PostgreSQL). 2,048 bytes is the longest URL that
// browsers and proxies reliably carry.
const MaxIdentifierBytes = 2048

func canonicalIdentifier(t ReportType, registry, s string) (string, error) {
	switch t {
	case TypePackage:
		return canonicalPackage(registry, s)
	case TypeURL:
		return canonicalURL(s)
	case TypeDomain:
		return canonicalDomain(fieldRI, s)
	case TypeIP:
		return canonicalIP(s)
	case TypeRepository:
		return canonicalRepository(s)
	case TypeWallet:
		return canonicalWallet(s)
	case TypeContainer:
		return canonicalContainer(s)
	}
	return "", Invalid("report_type", "unknown report type %q", t)
}

// nameChar reports whether r may appear in a package name: letters and
// digits of any script (look-alike names are real attacks and are never
// transliterated) plus the punctuation in extra.
func nameChars(s, extra string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(extra, r) {
			return false
		}
	}
	return true
}

// ghOwner is a GitHub user or organisation name.
var ghOwner = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)

func canonicalPackage(registry, name string) (string, error) {
	bad := func(format string, args ...any) (string, error) { return "", Invalid(fieldRI, format, args...) }
	if strings.ContainsAny(name, " \t") {
		return bad("a %s package name cannot contain spaces", registry)
	}
	switch registry {
	case RegistryNPM:
		if len(name) > 214 {
			return bad("an npm package name is at most 214 characters")
		}
		n := name
		if strings.HasPrefix(n, "@") {
			scope, rest, ok := strings.Cut(n[1:], "/")
			if !ok || scope == "" || rest == "" {
				return bad("a scoped npm package name is @scope/name (got %q)", name)
			}
			if !nameChars(scope, "-._~") {
				return bad("npm scope %q has characters npm does not allow", scope)
			}
			n = rest
		}
		if n == "" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || !nameChars(n, "-._~") {
			return bad("%q is not a valid npm package name", name)
		}
		return strings.ToLower(name), nil
	case RegistryPyPI:
		if !nameChars(name, "-._") || strings.IndexAny(name[:1], "-._") == 0 || strings.IndexAny(name[len(name)-1:], "-._") == 0 {
			return bad("%q is not a valid PyPI project name (letters, digits, - _ . ; starting and ending with a letter or digit)", name)
		}
		return NormalizePyPIName(name), nil
	case RegistryNuGet:
		if len(name) > 100 || !nameChars(name, "-._") {
			return bad("%q is not a valid NuGet package id", name)
		}
		return strings.ToLower(name), nil
	case RegistryCrates:
		if len(name) > 64 || !nameChars(name, "-_") {
			return bad("%q is not a valid crates.io crate name", name)
		}
		return strings.ReplaceAll(strings.ToLower(name), "_", "-"), nil
	case RegistryMaven:
		group, artifact, ok := strings.Cut(name, ":")
		if !ok || group == "" || artifact == "" || strings.Contains(artifact, ":") || !nameChars(group, "-._") || !nameChars(artifact, "-._") {
			return bad("a Maven package is groupId:artifactId (got %q)", name)
		}
		return name, nil
	case RegistryGo:
		segs := strings.Split(name, "/")
		if !strings.Contains(segs[0], ".") {
			return bad("a Go module path starts with a domain, e.g. github.com/owner/repo (got %q)", name)
		}
		for _, seg := range segs {
			if seg == "" || seg == "." || seg == ".." || !nameChars(seg, "-._~+") {
				return bad("%q is not a valid Go module path", name)
			}
		}
		return name, nil
	case RegistryRubyGems:
		if !nameChars(name, "-._") {
			return bad("%q is not a valid RubyGems gem name", name)
		}
		return name, nil
	case RegistryPackagist:
		vendor, pkg, ok := strings.Cut(name, "/")
		if !ok || vendor == "" || pkg == "" || !nameChars(vendor, "-._") || !nameChars(pkg, "-._") {
			return bad("a Packagist package is vendor/package (got %q)", name)
		}
		return name, nil
	case RegistryGitHubActions:
		// GitHub compares owners and repositories in any case.
		segs := strings.Split(name, "/")
		if len(segs) < 2 || !ghOwner.MatchString(segs[0]) {
			return bad("a GitHub action is owner/repo, as uses: names it before the @ (got %q)", name)
		}
		for _, seg := range segs[1:] {
			if seg == "" || seg == "." || seg == ".." || !nameChars(seg, "-._") {
				return bad("a GitHub action is owner/repo, as uses: names it before the @ (got %q)", name)
			}
		}
		return strings.ToLower(name), nil
	case RegistryVSCode, RegistryOpenVSX:
		publisher, ext, ok := strings.Cut(name, ".")
		if !ok || publisher == "" || ext == "" || !nameChars(publisher, "-_") || !nameChars(ext, "-._") {
			return bad("an extension is publisher.name (got %q)", name)
		}
		return name, nil
	}
	return "", Invalid("registry", "must be a package registry (%s) for package reports", strings.Join(PackageRegistries, ", "))
}

// hostProfile converts IDN host names to their ASCII (punycode) form.
var hostProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false), idna.StrictDomainName(false))

// canonicalHost lower-cases a host name and converts IDN to punycode; it
// requires at least two labels.
func canonicalHost(field, s string) (string, error) {
	h := strings.TrimSuffix(s, ".")
	if h == "" || strings.ContainsAny(h, " /\\:@?#[]*") {
		return "", Invalid(field, "%q is not a host name", s)
	}
	if !utf8.ValidString(h) {
		return "", Invalid(field, "%q is not a valid host name: invalid UTF-8", s)
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", Invalid(field, "%q is not a valid host name: %v", s, err)
	}
	a = strings.ToLower(a)
	// The canonical form must be its own canonical form: a label that IDNA
	// encodes but cannot decode again is not a host name.
	if again, err := hostProfile.ToASCII(a); err != nil || again != a {
		return "", Invalid(field, "%q is not a valid host name", s)
	}
	labels := strings.Split(a, ".")
	if len(labels) < 2 || len(a) > 253 {
		return "", Invalid(field, "%q is not a fully qualified domain name", s)
	}
	if tld := labels[len(labels)-1]; strings.Trim(tld, "0123456789") == "" {
		return "", Invalid(field, "%q is not a domain name: its last label is numeric", s)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return "", Invalid(field, "%q has an invalid label", s)
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return "", Invalid(field, "%q has an invalid character in a label", s)
			}
		}
	}
	if _, err := netip.ParseAddr(a); err == nil {
		return "", Invalid(field, "%q is an IP address, not a domain", s)
	}
	return a, nil
}

func canonicalDomain(field, s string) (string, error) {
	if strings.Contains(s, "://") {
		return "", Invalid(field, "a domain is a bare host name, without a scheme (got %q)", s)
	}
	if strings.ContainsAny(s, "/:") {
		return "", Invalid(field, "a domain is a bare host name, without a path or port (got %q)", s)
	}
	return canonicalHost(field, s)
}

func canonicalIP(s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", Invalid(fieldRI, "%q is not an IPv4 or IPv6 address", s)
	}
	return a.Unmap().String(), nil
}

// canonicalURL validates an absolute http(s) URL and returns its canonical
// form: scheme and host lower-case (IDN as punycode), default port dropped,
// fragment dropped, empty path as "/", path and query kept as given.
func canonicalURL(s string) (string, error) {
	return canonicalHTTPURL(fieldRI, s)
}

func canonicalHTTPURL(field, s string) (string, error) {
	if len(s) > MaxIdentifierBytes {
		return "", Invalid(field, "is longer than %d bytes (%d)", MaxIdentifierBytes, len(s))
	}
	if strings.ContainsAny(s, " \t") {
		return "", Invalid(field, "a URL cannot contain spaces (got %q)", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", Invalid(field, "%q is not a valid URL", s)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || u.Host == "" || u.Opaque != "" {
		return "", Invalid(field, "must be an absolute http or https URL (got %q)", s)
	}
	host, port := u.Hostname(), u.Port()
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
		if a.Is6() && !a.Is4In6() {
			host = "[" + host + "]"
		}
	} else if host, err = canonicalHost(field, host); err != nil {
		return "", err
	}
	if port == "80" && scheme == "http" || port == "443" && scheme == "https" {
		port = ""
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	if u.User != nil {
		b.WriteString(u.User.String() + "@")
	}
	b.WriteString(host)
	if port != "" {
		b.WriteString(":" + port)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path)
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + u.RawQuery)
	}
	return b.String(), nil
}

func canonicalRepository(s string) (string, error) {
	if strings.Contains(s, "://") {
		return "", Invalid(fieldRI, "a repository is host/path without a scheme (got %q)", s)
	}
	host, path, ok := strings.Cut(s, "/")
	if !ok {
		return "", Invalid(fieldRI, "a repository is host/path, e.g. github.com/owner/repo (got %q)", s)
	}
	h, err := canonicalHost(fieldRI, host)
	if err != nil {
		return "", err
	}
	// Every trailing ".git" goes, so that the canonical form is its own
	// (".git.git" once left ".git", which normalised again to nothing).
	for path = strings.TrimRight(path, "/"); strings.HasSuffix(path, ".git"); {
		path = strings.TrimRight(strings.TrimSuffix(path, ".git"), "/")
	}
	if path == "" || strings.ContainsAny(path, "?#\\ \t") || strings.Contains(path, "//") {
		return "", Invalid(fieldRI, "a repository needs a path after the host, e.g. github.com/owner/repo (got %q)", s)
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return "", Invalid(fieldRI, "%q has a . or .. path segment", s)
		}
	}
	return h + "/" + path, nil
}

var walletRe = regexp.MustCompile(`^[A-Za-z0-9]{26,128}$`)

func canonicalWallet(s string) (string, error) {
	if !walletRe.MatchString(s) {
		return "", Invalid(fieldRI, "a wallet address is 26 to 128 letters and digits (got %q)", s)
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return strings.ToLower(s), nil
	}
	return s, nil
}

var (
	containerComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	containerTag       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	containerDigest    = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$`)
	containerHost      = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?$`)
)

// canonicalContainer normalises an image reference the way Docker does:
// "nginx" = "docker.io/library/nginx:latest"; a tag or digest is kept.
func canonicalContainer(s string) (string, error) {
	bad := func(why string) (string, error) {
		return "", Invalid(fieldRI, "%q is not a container image reference (%s)", s, why)
	}
	name, digest, hasDigest := strings.Cut(s, "@")
	if hasDigest && !containerDigest.MatchString(digest) {
		return bad("bad digest")
	}
	tag := ""
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i+1:], "/") {
		name, tag = name[:i], name[i+1:]
		if !containerTag.MatchString(tag) {
			return bad("bad tag")
		}
	}
	if strings.Contains(name, "://") {
		return bad("no scheme allowed")
	}
	host := "docker.io"
	parts := strings.Split(name, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		host, parts = strings.ToLower(parts[0]), parts[1:]
		if !containerHost.MatchString(host) {
			return bad("bad registry host")
		}
		if host == "index.docker.io" || host == "registry-1.docker.io" {
			host = "docker.io"
		}
	}
	if host == "docker.io" && len(parts) == 1 {
		parts = []string{"library", parts[0]}
	}
	for _, p := range parts {
		if !containerComponent.MatchString(p) {
			return bad("repository path components are lower-case letters, digits and separators")
		}
	}
	if tag == "" && !hasDigest {
		tag = "latest"
	}
	out := host + "/" + strings.Join(parts, "/")
	if tag != "" {
		out += ":" + tag
	}
	if hasDigest {
		out += "@" + strings.ToLower(digest)
	}
	return out, nil
}

// ContainerRepository splits a canonical image reference
// ("docker.io/library/nginx:1.25@sha256:…", without "container:") into its
// repository path without the registry host ("library/nginx"), its tag
// and its digest ("" when it has none).
func ContainerRepository(canonical string) (path, tag, digest string) {
	ref, digest, _ := strings.Cut(canonical, "@")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref, tag = ref[:i], ref[i+1:]
	}
	_, path, _ = strings.Cut(ref, "/")
	return path, tag, digest
}

// ImagePath is a repository path as a client asks a registry for it,
// with Docker Hub's official images under library/ ("nginx" is
// "library/nginx"): the form reports of images are matched in.
func ImagePath(path string) string {
	if path != "" && !strings.Contains(path, "/") {
		return "library/" + path
	}
	return path
}

// ContainerRegistryOf returns the ecosystem of a canonical image reference
// (dockerhub, ghcr, quay), or "" for other hosts.
func ContainerRegistryOf(canonical string) string {
	host, _, _ := strings.Cut(canonical, "/")
	switch host {
	case "docker.io":
		return RegistryDockerHub
	case "ghcr.io":
		return RegistryGHCR
	case "quay.io":
		return RegistryQuay
	}
	return ""
}
