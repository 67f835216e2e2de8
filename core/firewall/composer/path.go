// Package composer is the registry firewall's adapter for Composer 2
// repositories (repo.packagist.org and its mirrors): packages.json points
// metadata-url back through the firewall, a package's p2 documents
// (vendor/package.json, and ~dev.json for branches) lose refused versions
// in Composer's minified form, and every version's dist is served through
// the firewall, a refused one 403; source (git) references are dropped,
// so that Composer cannot go around the firewall by cloning.
package composer

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a Composer repository request asks for.
type Kind int

// The kinds of requests.
const (
	// Root is packages.json.
	Root Kind = iota + 1
	// Metadata is a package's p2 document: p2/{vendor}/{package}.json,
	// or p2/{vendor}/{package}~dev.json (Dev).
	Metadata
	// Dist is a version's archive, at dist/{vendor}/{package}/{version}.
	Dist
)

// Request is a Composer repository request, as judged.
type Request struct {
	Kind    Kind
	Name    string // vendor/package, lower case
	Dev     bool
	Version string
}

// packageName is Composer's package name grammar (lower case; a request
// in other case is folded first, as Composer folds names).
var packageName = regexp.MustCompile(`^[a-z0-9](?:[_.-]?[a-z0-9]+)*/[a-z0-9](?:(?:[_.]|-{1,2})?[a-z0-9]+)*$`)

// Parse reads the escaped path below the repository root. A path of an
// unknown shape is (Request{}, false, nil); a name or version the firewall
// cannot judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if escaped == "packages.json" {
		return Request{Kind: Root}, true, nil
	}
	segs := strings.Split(escaped, "/")
	switch {
	case len(segs) == 3 && segs[0] == "p2" && strings.HasSuffix(segs[2], ".json"):
		file := strings.TrimSuffix(segs[2], ".json")
		dev := strings.HasSuffix(file, "~dev")
		name, err := Name(segs[1] + "/" + strings.TrimSuffix(file, "~dev"))
		if err != nil {
			return Request{}, false, err
		}
		return Request{Kind: Metadata, Name: name, Dev: dev}, true, nil
	case len(segs) == 4 && segs[0] == "dist":
		name, err := Name(segs[1] + "/" + segs[2])
		if err != nil {
			return Request{}, false, err
		}
		v, err := url.PathUnescape(segs[3])
		if err != nil || v == "" || len(v) > 255 || strings.ContainsAny(v, "/\\ ") || strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return Request{}, false, firewall.CannotJudge(firewall.FirewallComposer, "version", segs[3], "a Composer version has no spaces, slashes or control characters")
		}
		return Request{Kind: Dist, Name: name, Version: v, Dev: IsDev(v)}, true, nil
	}
	return Request{}, false, nil
}

// Name checks a package name (escaped or not) and folds it to lower case.
func Name(s string) (string, error) {
	n, err := url.PathUnescape(s)
	if err == nil {
		n = strings.ToLower(n)
	}
	if err != nil || len(n) > 200 || !packageName.MatchString(n) {
		return "", firewall.CannotJudge(firewall.FirewallComposer, "package name", s, "a Composer package is vendor/package: lower-case letters, digits and _.-")
	}
	return n, nil
}

// IsDev says whether a version is a branch (dev-main, 1.x-dev): listed in
// the ~dev document.
func IsDev(v string) bool { return strings.HasPrefix(v, "dev-") || strings.HasSuffix(v, "-dev") }

// MetadataPath is the upstream path of a package's p2 document.
func MetadataPath(name string, dev bool) string {
	if dev {
		return "p2/" + name + "~dev.json"
	}
	return "p2/" + name + ".json"
}
