// Package openvsx is the firewall's adapter for Open VSX, the gallery of
// VSCodium, Cursor, Windsurf, Gitpod and Theia: its registry API
// (/api/{namespace}/{name}[/{version}], -/query, -/search) and the VS
// Code gallery API it serves (/vscode/gallery/extensionquery,
// /vscode/asset, /vscode/unpkg, /vscode/item) lose refused versions, and
// a refused version's .vsix and assets are 403. Reports name an extension
// namespace.name (ecosystem openvsx); a version's publish time is its
// timestamp.
package openvsx

import (
	"net/url"
	"slices"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/vsgallery"
	"github.com/threatd/threatd/core/versioning"
)

// Adapter is the firewall's adapter for Open VSX.
type Adapter struct{}

var (
	_ firewall.Adapter          = Adapter{}
	_ firewall.Queried          = Adapter{}
	_ firewall.VersionDocuments = Adapter{}
	_ firewall.ListsVersions    = Adapter{}
	_ firewall.FactSource       = Adapter{}
	_ firewall.Archives         = Adapter{}
)

const (
	typeJSON  = "application/json"
	typeFile  = "application/octet-stream"
	queryPath = "vscode/gallery/extensionquery"
	reg       = core.RegistryOpenVSX
)

// targets are the target platforms Open VSX publishes for.
var targets = []string{"win32-x64", "win32-ia32", "win32-arm64", "linux-x64", "linux-arm64", "linux-armhf", "alpine-x64", "alpine-arm64",
	"darwin-x64", "darwin-arm64", "web", "universal"}

// aliases are the names Open VSX gives a version besides its own.
var aliases = []string{"latest", "pre-release"}

// Registry is openvsx.
func (Adapter) Registry() string { return reg }

// Defaults: open-vsx.org, whose files are in its blob storage.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://open-vsx.org", FileHosts: []string{"https://openvsxorg.blob.core.windows.net"}}
}

// QueryPaths: POST {base}/vscode/gallery/extensionquery.
func (Adapter) QueryPaths() []string { return []string{queryPath} }

// Route reads a request below {base}/firewall/openvsx/.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	segs := strings.Split(r.Path, "/")
	switch {
	case r.Path == queryPath:
		if r.Body == nil {
			return firewall.Route{}, false, nil
		}
		body, err := vsgallery.ParseQuery(reg, r.Body)
		if err != nil {
			return firewall.Route{}, true, err
		}
		return firewall.Route{Kind: firewall.Metadata, Upstream: queryPath, Body: body, Accept: typeJSON, Query: true}, true, nil
	case r.Path == "api/-/query" || r.Path == "api/-/search":
		q, err := searchQuery(r.Query)
		if err != nil {
			return firewall.Route{}, true, err
		}
		up := r.Path
		if q != "" {
			up += "?" + q
		}
		return firewall.Route{Kind: firewall.Metadata, Upstream: up, Accept: typeJSON, Query: true}, true, nil
	case len(segs) >= 3 && segs[0] == "api":
		return apiRoute(segs[1:])
	case len(segs) >= 2 && segs[0] == "vscode":
		return vscodeRoute(segs[1:], r.Query)
	}
	return firewall.Route{}, false, nil
}

// searchParams are the parameters of -/query and -/search passed on.
var searchParams = []string{"namespaceName", "extensionName", "extensionVersion", "extensionId", "extensionUuid", "namespaceUuid",
	"includeAllVersions", "targetPlatform", "query", "category", "size", "offset", "sortOrder", "sortBy"}

// searchQuery rebuilds a search's query from the parameters it knows.
func searchQuery(raw string) (string, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", firewall.CannotJudge(reg, "query", raw, "not a query string: %v", err)
	}
	out := url.Values{}
	for _, k := range searchParams {
		if v := q.Get(k); v != "" {
			if len(v) > 1024 || strings.IndexFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
				return "", firewall.CannotJudge(reg, "query parameter", k, "a value of at most 1024 bytes without control characters")
			}
			out.Set(k, v)
		}
	}
	return out.Encode(), nil
}

// apiRoute reads api/{namespace}/{name}[/{target}][/{version}[/file/{file}]].
func apiRoute(segs []string) (firewall.Route, bool, error) {
	ns, err := vsgallery.Segment(reg, "namespace", segs[0])
	if err != nil {
		return firewall.Route{}, true, err
	}
	ext, err := vsgallery.Segment(reg, "extension name", segs[1])
	if err != nil {
		return firewall.Route{}, true, err
	}
	name := ns + "." + ext
	rest := segs[2:]
	target := ""
	if len(rest) > 0 && slices.Contains(targets, rest[0]) {
		target, rest = rest[0], rest[1:]
	}
	prefix := "api/" + url.PathEscape(ns) + "/" + url.PathEscape(ext)
	if target != "" {
		prefix += "/" + target
	}
	doc := func(version, path string, fallback bool) firewall.Route {
		rt := firewall.Route{Kind: firewall.VersionDocument, Name: name, Version: version, Upstream: path, Accept: typeJSON}
		if fallback {
			rt.Fallback = prefix
		}
		return rt
	}
	switch {
	case len(rest) == 0:
		return doc("", prefix, true), true, nil
	case len(rest) == 1 && slices.Contains(aliases, rest[0]):
		return doc("", prefix+"/"+rest[0], true), true, nil
	case len(rest) == 1 && target == "" && (rest[0] == "reviews" || rest[0] == "versions" || rest[0] == "version-references"):
		return firewall.Route{}, false, nil
	case len(rest) == 1:
		ver, err := vsgallery.Segment(reg, "version", rest[0])
		if err != nil {
			return firewall.Route{}, true, err
		}
		return doc(ver, prefix+"/"+url.PathEscape(ver), false), true, nil
	case len(rest) == 3 && rest[1] == "file":
		ver, err := vsgallery.Segment(reg, "version", rest[0])
		if err != nil {
			return firewall.Route{}, true, err
		}
		file, err := vsgallery.Segment(reg, "file name", rest[2])
		if err != nil {
			return firewall.Route{}, true, err
		}
		return firewall.Route{Kind: firewall.Artifact, Name: name, Version: ver, Upstream: prefix + "/" + url.PathEscape(ver) + "/file/" + url.PathEscape(file),
			ContentType: typeFile}, true, nil
	}
	return firewall.Route{}, false, nil
}

// vscodeRoute reads the VS Code gallery API's downloads and item page:
//
//	asset/{namespace}/{name}/{version}/{assetType}[/{path}]
//	unpkg/{namespace}/{name}/{version}/{path}
//	gallery/publishers/{namespace}/vsextensions/{name}/{version}/vspackage
//	item?itemName={namespace}.{name}
func vscodeRoute(segs []string, rawQuery string) (firewall.Route, bool, error) {
	q, _ := url.ParseQuery(rawQuery)
	if len(segs) == 1 && segs[0] == "item" {
		item := q.Get("itemName")
		_, _, ok := strings.Cut(item, ".")
		if _, err := core.CanonicalIdentifier(core.TypePackage, reg, item); err != nil || !ok || len(q) != 1 {
			return firewall.Route{}, true, firewall.CannotJudge(reg, "itemName", item, "an extension is namespace.name")
		}
		// The query is passed on as it came (checked above).
		return firewall.Route{Kind: firewall.PassThrough, Upstream: "vscode/item"}, true, nil
	}
	var ns, ext, ver string
	var tail []string
	switch {
	case len(segs) >= 5 && segs[0] == "asset":
		ns, ext, ver, tail = segs[1], segs[2], segs[3], segs[4:]
	case len(segs) >= 5 && segs[0] == "unpkg":
		ns, ext, ver, tail = segs[1], segs[2], segs[3], segs[4:]
	case len(segs) == 7 && segs[0] == "gallery" && segs[1] == "publishers" && segs[3] == "vsextensions" && segs[6] == "vspackage":
		ns, ext, ver, tail = segs[2], segs[4], segs[5], []string{"vspackage"}
	default:
		return firewall.Route{}, false, nil
	}
	parts := []*string{&ns, &ext, &ver}
	for i := range tail {
		parts = append(parts, &tail[i])
	}
	for _, s := range parts {
		u, err := vsgallery.Segment(reg, "extension path", *s)
		if err != nil {
			return firewall.Route{}, true, err
		}
		*s = u
	}
	esc := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = url.PathEscape(s)
		}
		return strings.Join(out, "/")
	}
	var up string
	switch segs[0] {
	case "asset", "unpkg":
		up = "vscode/" + segs[0] + "/" + esc([]string{ns, ext, ver}) + "/" + esc(tail)
	default:
		up = "vscode/gallery/publishers/" + url.PathEscape(ns) + "/vsextensions/" + url.PathEscape(ext) + "/" + url.PathEscape(ver) + "/vspackage"
	}
	if tp := q.Get("targetPlatform"); tp != "" && segs[0] != "unpkg" {
		if !vsgallery.TargetPlatform.MatchString(tp) {
			return firewall.Route{}, true, firewall.CannotJudge(reg, "target platform", tp, "a target platform is as win32-x64 or web")
		}
		up += "?targetPlatform=" + tp
	}
	return firewall.Route{Kind: firewall.Artifact, Name: ns + "." + ext, Version: ver, Upstream: up, ContentType: typeFile}, true, nil
}

// Highest is the highest release among versions (a pre-release only when
// there is none), as Open VSX's latest.
func (Adapter) Highest(versions []string) string {
	var best, bestPre string
	for _, v := range versions {
		if strings.Contains(v, "-") {
			if bestPre == "" || versioning.Compare(reg, v, bestPre) > 0 {
				bestPre = v
			}
		} else if best == "" || versioning.Compare(reg, v, best) > 0 {
			best = v
		}
	}
	if best == "" {
		return bestPre
	}
	return best
}

// VersionPath is a version's document.
func (Adapter) VersionPath(name, version string) string {
	ns, ext, _ := strings.Cut(name, ".")
	return "api/" + url.PathEscape(ns) + "/" + url.PathEscape(ext) + "/" + url.PathEscape(version)
}

// FactsDocument: each version's own document gives its timestamp.
func (Adapter) FactsDocument(string) (string, string) { return "", "" }

// VersionFactsPath is a version's document.
func (Adapter) VersionFactsPath(name, version string) string {
	return Adapter{}.VersionPath(name, version)
}

// Scripts: the firewall judges no extension scripts.
func (Adapter) Scripts() bool { return false }

// ArchiveIndex is the extension's document, which lists its versions.
func (Adapter) ArchiveIndex(name string) (string, string) {
	ns, ext, _ := strings.Cut(name, ".")
	return "api/" + url.PathEscape(ns) + "/" + url.PathEscape(ext), typeJSON
}

// ArchiveURLs names each listed version's .vsix (its file route, which
// Open VSX answers from its storage).
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	vs, err := Adapter{}.Versions(doc)
	if err != nil {
		return nil, err
	}
	ns, ext, _ := strings.Cut(doc.Name, ".")
	out := map[string]string{}
	for _, v := range vs {
		out[v.Version] = Adapter{}.VersionPath(doc.Name, v.Version) + "/file/" + url.PathEscape(ns+"."+ext+"-"+v.Version+".vsix")
	}
	return out, nil
}
