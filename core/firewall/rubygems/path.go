// Package rubygems is the registry firewall's adapter for the RubyGems
// compact index (a Bundler source, gem sources): /info/<gem> and
// /versions lose refused versions, /versions carries the checksums of the
// /info files as the firewall serves them, and a refused .gem or quick
// gemspec is 403.
package rubygems

import (
	"net/url"
	"slices"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a request asks for.
type Kind int

// The kinds of requests.
const (
	// Versions is /versions, every gem's versions and /info checksum.
	Versions Kind = iota + 1
	// Names is /names.
	Names
	// Specs is the legacy full index (specs.4.8.gz, latest_ and
	// prerelease_): what gem sources --add and gem fetch read.
	Specs
	// Info is /info/<gem>.
	Info
	// File is /gems/<gem>-<version>[-<platform>].gem or its quick
	// gemspec, quick/Marshal.4.8/<…>.gemspec.rz.
	File
)

// Request is a compact index request, as judged.
type Request struct {
	Kind Kind
	// Name and Version: the gem and the version as the index lists it
	// (with its platform: 1.15.0-x86_64-linux). For a File whose name
	// reads more than one way, Readings has every reading and Name and
	// Version are the first's.
	Name, Version string
	Readings      []Reading
	// Path is the path to fetch upstream.
	Path string
}

// Reading is one way to read a gem file's full name.
type Reading struct {
	// Name is the gem; Version the version as the index lists it, with
	// its platform (1.0.0, 1.0.0-java).
	Name, Version string
}

const quickPrefix = "quick/Marshal.4.8/"

// Parse reads the escaped path below the source's root. A path of an
// unknown shape is (Request{}, false, nil); a part the firewall cannot
// judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	switch escaped {
	case "", "versions":
		// gem install asks for the root (a HEAD) to know the source
		// has a compact index: it is answered as /versions.
		return Request{Kind: Versions, Path: "versions"}, true, nil
	case "names":
		return Request{Kind: Names, Path: escaped}, true, nil
	case "specs.4.8.gz", "latest_specs.4.8.gz", "prerelease_specs.4.8.gz":
		return Request{Kind: Specs, Path: escaped}, true, nil
	}
	dir, file, ok := cutLast(escaped)
	if !ok {
		return Request{}, false, nil
	}
	f, err := url.PathUnescape(file)
	if err != nil || !firewall.NamePart(f, ".-_") {
		return Request{}, false, firewall.CannotJudge(core.RegistryRubyGems, "path", escaped, "a gem file or name is letters, digits and .-_")
	}
	switch {
	case dir == "info":
		return Request{Kind: Info, Name: f, Path: "info/" + f}, true, nil
	case dir == "gems" && strings.HasSuffix(f, ".gem"):
		rs := Readings(strings.TrimSuffix(f, ".gem"))
		if len(rs) == 0 {
			return Request{}, false, firewall.CannotJudge(core.RegistryRubyGems, "file name", f, "a gem file is <name>-<version>[-<platform>].gem")
		}
		return fileRequest(rs, "gems/"+f), true, nil
	case dir+"/" == quickPrefix && strings.HasSuffix(f, ".gemspec.rz"):
		rs := Readings(strings.TrimSuffix(f, ".gemspec.rz"))
		if len(rs) == 0 {
			return Request{}, false, firewall.CannotJudge(core.RegistryRubyGems, "file name", f, "a quick gemspec is <name>-<version>[-<platform>].gemspec.rz")
		}
		return fileRequest(rs, quickPrefix+f), true, nil
	}
	return Request{}, false, nil
}

// fileRequest is the request of a file read as rs.
func fileRequest(rs []Reading, path string) Request {
	r := Request{Kind: File, Name: rs[0].Name, Version: rs[0].Version, Path: path}
	if len(rs) > 1 {
		r.Readings = rs
	}
	return r
}

// cutLast splits a path at its last slash.
func cutLast(p string) (string, string, bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	return p[:i], p[i+1:], true
}

// Readings are the ways to read a gem's full name,
// <name>-<version>[-<platform>], most likely first: a gem version holds no
// "-" (Gem::Version makes "1.0-rc1" 1.0.pre.rc1) and is digits, then
// dot-separated letters and digits; a platform never starts with a digit.
// A name may hold a part that starts with a digit (evil-2x, foo-2fa,
// rails-5-x), so "rails-5-x-1.0" reads as rails 5 on platform "x-1.0" or
// as rails-5-x 1.0: rubygems.org decides by the versions each gem has, and
// so does the firewall, by each reading's /info (Route.Readings).
func Readings(full string) []Reading {
	parts := strings.Split(full, "-")
	if parts[0] == "" {
		return nil
	}
	var out []Reading
	for i := 1; i < len(parts); i++ {
		if !gemVersion(parts[i]) {
			continue
		}
		platform := strings.Join(parts[i+1:], "-")
		if platform != "" && (platform[0] >= '0' && platform[0] <= '9' || slices.Contains(parts[i+1:], "")) {
			continue
		}
		name := strings.Join(parts[:i], "-")
		if !firewall.NamePart(name, ".-_") {
			// "." and ".." are no gem: /info/. would climb.
			continue
		}
		key := parts[i]
		if platform != "" {
			key += "-" + platform
		}
		out = append(out, Reading{Name: name, Version: key})
	}
	// The reading with the longest name first: a platform is rarer than
	// a name with a part that starts with a digit.
	slices.Reverse(out)
	return out
}

// gemVersion says whether s is a version as the index writes one
// (Gem::Version's pattern without "-"): digits, then dot-separated parts
// of letters and digits. 23a01ad3 and 2x are not versions: they are parts
// of a name.
func gemVersion(s string) bool {
	for i, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for j := 0; j < len(part); j++ {
			c := part[j]
			digit := c >= '0' && c <= '9'
			if i == 0 && !digit || !(digit || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// ReportVersion is the version reports name of a version as the index
// lists it: without its platform (1.0.0-java is 1.0.0).
func ReportVersion(key string) string {
	v, _, _ := strings.Cut(strings.TrimPrefix(key, "-"), "-")
	return v
}
