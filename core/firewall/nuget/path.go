// Package nuget is the registry firewall's adapter for the NuGet v3
// protocol: the service index sends package metadata and content
// (PackageBaseAddress, RegistrationsBaseUrl) back through the firewall;
// the flat container's version list and the registration index and pages
// lose refused versions; a refused .nupkg or .nuspec is 403. Ids are
// case-insensitive.
//
// A NuGet server names where its resources are in its service index, and
// clients follow those URLs: api.nuget.org keeps them under
// v3-flatcontainer/ and v3/registration…/, BaGet under v3/package/ and
// v3/registration/, Azure Artifacts under …/nuget/v3/flat2/, GitHub
// Packages and Nexus elsewhere again. So the firewall serves each
// resource below a path of its own, res/<its type>/ (the type's "/" as
// "_": res/PackageBaseAddress_3.0.0/), and fetches below the URL the
// upstream's service index gives that type (Adapter.Bases). A document is
// judged by the resource it belongs to, never by the shape of its URL.
package nuget

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
	// ServiceIndex is v3/index.json: the upstream setting's document.
	ServiceIndex Kind = iota + 1
	// FlatIndex is a package's version list in the flat container.
	FlatIndex
	// Registration is a package's registration index or one of its pages.
	Registration
	// File is a version's .nupkg or .nuspec, or its registration leaf.
	File
)

// Request is a NuGet request, as judged.
type Request struct {
	Kind Kind
	// ID is the package id in lower case; Version a File's version.
	ID, Version string
	// Path is the upstream path: res/<type>/<the parts judged>, resolved
	// against the upstream's service index (Bases), or "" for the service
	// index itself.
	Path string
}

// resPrefix starts the paths of the resources a service index names.
const resPrefix = firewall.BasePrefix

// Registrations is the resource key facts are read from: the
// registration hive of SemVer 2.0.0 (RegistrationsBaseUrl/3.6.0) when the
// upstream has one, else its first registration hive (Bases).
const Registrations = "registrations"

// Slug is a resource type as a path segment: "/" written "_"
// (PackageBaseAddress/3.0.0 is PackageBaseAddress_3.0.0); "" for a type
// that cannot be one.
func Slug(typ string) string {
	s := strings.ReplaceAll(typ, "/", "_")
	if !firewall.NamePart(s, ".-_+") {
		return ""
	}
	return s
}

// Legacy starts the keys of the resources by the end of their URL's path
// ("/" written "~"): legacy:v3-flatcontainer, legacy:v3~registration5-gz-semver2.
const Legacy = "legacy:"

// flatType and registrationType say which resources hold which documents.
func flatType(slug string) bool {
	return strings.HasPrefix(slug, "PackageBaseAddress") || slug == Legacy+"v3-flatcontainer"
}
func registrationType(slug string) bool {
	return slug == Registrations || strings.HasPrefix(slug, "RegistrationsBaseUrl") || strings.HasPrefix(slug, Legacy+"v3~registration")
}

// Parse reads the escaped path below the firewall's root. A path of an
// unknown shape is (Request{}, false, nil); a part the firewall cannot
// judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if escaped == "v3/index.json" {
		return Request{Kind: ServiceIndex}, true, nil
	}
	segs := strings.Split(escaped, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || !firewall.NamePart(u, ".-_+") {
			return Request{}, false, firewall.CannotJudge(core.RegistryNuGet, "path", escaped,
				"each part of a NuGet path is letters, digits and .-_+ (no empty, . or .. part)")
		}
		segs[i] = u
	}
	var slug string
	var rest []string
	switch {
	case len(segs) >= 4 && segs[0]+"/" == resPrefix:
		slug, rest = segs[1], segs[2:]
	case len(segs) >= 3 && segs[0] == "v3-flatcontainer":
		// api.nuget.org's own paths, as the firewall served them before
		// (clients keep a service index a while): the resource whose URL
		// ends so.
		slug, rest = Legacy+"v3-flatcontainer", segs[1:]
	case len(segs) >= 4 && segs[0] == "v3" && strings.HasPrefix(segs[1], "registration"):
		slug, rest = Legacy+"v3~"+segs[1], segs[2:]
	default:
		return Request{}, false, nil
	}
	for i := range rest {
		rest[i] = strings.ToLower(rest[i])
	}
	path := resPrefix + slug + "/" + strings.Join(rest, "/")
	id := rest[0]
	switch {
	case flatType(slug):
		switch {
		case len(rest) == 2 && rest[1] == "index.json":
			return Request{Kind: FlatIndex, ID: id, Path: path}, true, nil
		case len(rest) == 3 && (rest[2] == id+"."+rest[1]+".nupkg" || rest[2] == id+".nuspec"):
			return Request{Kind: File, ID: id, Version: rest[1], Path: path}, true, nil
		}
	case registrationType(slug):
		switch {
		case len(rest) == 2 && rest[1] == "index.json", len(rest) > 2 && strings.HasSuffix(rest[len(rest)-1], ".json"):
			// The index, or a page wherever the index puts it
			// (api.nuget.org: page/<lower>/<upper>.json).
			return Request{Kind: Registration, ID: id, Path: path}, true, nil
		case len(rest) == 2 && strings.HasSuffix(rest[1], ".json") && rest[1] != ".json":
			return Request{Kind: File, ID: id, Version: strings.TrimSuffix(rest[1], ".json"), Path: path}, true, nil
		}
	}
	return Request{}, false, nil
}
