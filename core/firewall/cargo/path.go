// Package cargo is the registry firewall's adapter for crates.io's sparse
// index protocol (sparse+https://…): config.json sends downloads back
// through the firewall and says auth-required, an index file keeps a
// refused version's line marked "yanked" (cargo never chooses it, and a
// lockfile that pins it fails at its download), and a refused .crate is
// 403.
package cargo

import (
	"net/url"
	"strings"

	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a sparse registry request asks for.
type Kind int

// The kinds of requests.
const (
	// Config is the registry's config.json.
	Config Kind = iota + 1
	// Index is one crate's index file.
	Index
	// Download is a version's .crate, at crates/{name}/{version}/download.
	Download
)

// Request is a sparse registry request, as judged.
type Request struct {
	Kind          Kind
	Name, Version string
}

// maxName is the longest crate name crates.io accepts.
const maxName = 64

// Parse reads the escaped path below the registry root. A path of an
// unknown shape is (Request{}, false, nil); a name or version the firewall
// cannot judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if escaped == "config.json" {
		return Request{Kind: Config}, true, nil
	}
	segs := strings.Split(escaped, "/")
	if len(segs) == 4 && segs[0] == "crates" && segs[3] == "download" {
		name, err := crateName(segs[1])
		if err != nil {
			return Request{}, false, err
		}
		v, err := url.PathUnescape(segs[2])
		if err != nil || !versionChars(v) {
			return Request{}, false, firewall.CannotJudge(firewall.FirewallCargo, "version", segs[2], "a crate version is semver: letters, digits and .-+")
		}
		return Request{Kind: Download, Name: name, Version: v}, true, nil
	}
	if len(segs) < 2 || len(segs) > 3 {
		return Request{}, false, nil
	}
	last := segs[len(segs)-1]
	name, err := crateName(last)
	if err != nil {
		return Request{}, false, err
	}
	if name != strings.ToLower(name) {
		return Request{}, false, firewall.CannotJudge(firewall.FirewallCargo, "index path", escaped, "index files are named in lower case")
	}
	if IndexPath(name) != escaped {
		return Request{}, false, nil
	}
	return Request{Kind: Index, Name: name}, true, nil
}

// crateName checks a crate name as crates.io accepts it.
func crateName(s string) (string, error) {
	ok := s != "" && len(s) <= maxName
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return "", firewall.CannotJudge(firewall.FirewallCargo, "crate name", s, "a crate name is 1 to 64 letters, digits, - and _")
	}
	return s, nil
}

// versionChars says whether v is made of what a semver version is.
func versionChars(v string) bool {
	if v == "" || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+') {
			return false
		}
	}
	return true
}

// IndexPath is the path of a crate's index file: 1/a, 2/ab, 3/a/abc,
// ab/cd/abcd… (lower case).
func IndexPath(name string) string {
	n := strings.ToLower(name)
	switch len(n) {
	case 1:
		return "1/" + n
	case 2:
		return "2/" + n
	case 3:
		return "3/" + n[:1] + "/" + n
	}
	return n[:2] + "/" + n[2:4] + "/" + n
}
