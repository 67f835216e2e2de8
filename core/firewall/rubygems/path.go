// Package rubygems is the registry firewall's adapter for the RubyGems
// compact index (a Bundler source, gem sources): /info/<gem> and
// /versions lose refused versions, /versions carries the checksums of the
// /info files as the firewall serves them, and a refused .gem or quick
// gemspec is 403.
package rubygems

import (
	"net/url"
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
	// Info is /info/<gem>.
	Info
	// File is /gems/<gem>-<version>[-<platform>].gem or its quick
	// gemspec, quick/Marshal.4.8/<…>.gemspec.rz.
	File
)

// Request is a compact index request, as judged.
type Request struct {
	Kind          Kind
	Name, Version string
	// Path is the path to fetch upstream.
	Path string
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
		name, version, ok := SplitFull(strings.TrimSuffix(f, ".gem"))
		if !ok {
			return Request{}, false, firewall.CannotJudge(core.RegistryRubyGems, "file name", f, "a gem file is <name>-<version>[-<platform>].gem")
		}
		return Request{Kind: File, Name: name, Version: version, Path: "gems/" + f}, true, nil
	case dir+"/" == quickPrefix && strings.HasSuffix(f, ".gemspec.rz"):
		name, version, ok := SplitFull(strings.TrimSuffix(f, ".gemspec.rz"))
		if !ok {
			return Request{}, false, firewall.CannotJudge(core.RegistryRubyGems, "file name", f, "a quick gemspec is <name>-<version>[-<platform>].gemspec.rz")
		}
		return Request{Kind: File, Name: name, Version: version, Path: quickPrefix + f}, true, nil
	}
	return Request{}, false, nil
}

// cutLast splits a path at its last slash.
func cutLast(p string) (string, string, bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	return p[:i], p[i+1:], true
}

// SplitFull splits a gem's full name, <name>-<version>[-<platform>]: the
// version is the first part after the name that starts with a digit (a
// version never holds a -, a platform never starts with a digit).
func SplitFull(full string) (name, version string, ok bool) {
	parts := strings.Split(full, "-")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" && p[0] >= '0' && p[0] <= '9' {
			return strings.Join(parts[:i], "-"), p, parts[0] != ""
		}
	}
	return "", "", false
}
