// Package nuget is the registry firewall's adapter for the NuGet v3
// protocol: the service index sends package metadata and content
// (PackageBaseAddress, RegistrationsBaseUrl) back through the firewall;
// the flat container's version list and the registration index and pages
// lose refused versions; a refused .nupkg or .nuspec is 403. Ids are
// case-insensitive.
//
// The firewall serves the upstream's paths below its root (the service
// index's URL without v3/index.json), as api.nuget.org lays them out:
// v3/index.json, v3-flatcontainer/…, v3/registration…/….
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
	// ServiceIndex is v3/index.json.
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
	// Path is the path to fetch below the upstream's root, rebuilt from
	// the parts judged.
	Path string
}

// Parse reads the escaped path below the firewall's root. A path of an
// unknown shape is (Request{}, false, nil); a part the firewall cannot
// judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	if escaped == "v3/index.json" {
		return Request{Kind: ServiceIndex, Path: escaped}, true, nil
	}
	segs := strings.Split(escaped, "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil || !firewall.NamePart(u, ".-_+") {
			return Request{}, false, firewall.CannotJudge(core.RegistryNuGet, "path", escaped,
				"each part of a NuGet path is letters, digits and .-_+ (no empty, . or .. part)")
		}
		segs[i] = strings.ToLower(u)
	}
	switch {
	case len(segs) == 3 && segs[0] == "v3-flatcontainer" && segs[2] == "index.json":
		return Request{Kind: FlatIndex, ID: segs[1], Path: strings.Join(segs, "/")}, true, nil
	case len(segs) == 4 && segs[0] == "v3-flatcontainer":
		id, ver, file := segs[1], segs[2], segs[3]
		if file != id+"."+ver+".nupkg" && file != id+".nuspec" {
			return Request{}, false, nil
		}
		return Request{Kind: File, ID: id, Version: ver, Path: strings.Join(segs, "/")}, true, nil
	case len(segs) >= 4 && segs[0] == "v3" && strings.HasPrefix(segs[1], "registration"):
		id, rest := segs[2], segs[3:]
		switch {
		case len(rest) == 1 && rest[0] == "index.json",
			len(rest) == 3 && rest[0] == "page" && strings.HasSuffix(rest[2], ".json"):
			return Request{Kind: Registration, ID: id, Path: strings.Join(segs, "/")}, true, nil
		case len(rest) == 1 && strings.HasSuffix(rest[0], ".json") && rest[0] != ".json":
			return Request{Kind: File, ID: id, Version: strings.TrimSuffix(rest[0], ".json"), Path: strings.Join(segs, "/")}, true, nil
		}
	}
	return Request{}, false, nil
}
