// Package vscode is the firewall's adapter for the Visual Studio
// Marketplace, the gallery VS Code's extensionsGallery.serviceUrl names:
// its extensionquery answers lose refused versions (core/firewall/vsgallery),
// and a refused version's vspackage and assets are 403.
package vscode

import (
	"errors"
	"net/url"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/vsgallery"
)

// Adapter is the firewall's adapter for the Marketplace's gallery API.
type Adapter struct{}

var (
	_ firewall.Adapter     = Adapter{}
	_ firewall.Queried     = Adapter{}
	_ firewall.FactSource  = Adapter{}
	_ firewall.PostedFacts = Adapter{}
	_ firewall.Archives    = Adapter{}
)

const (
	typeJSON = "application/json"
	typeFile = "application/octet-stream"
	// accept is what VS Code asks the gallery with.
	accept = "application/json;api-version=3.0-preview.1"
	// queryPath is the search, below the gallery's URL.
	queryPath = "extensionquery"
)

// Registry is vscode.
func (Adapter) Registry() string { return core.RegistryVSCode }

// Defaults: the Marketplace's public gallery, which serves its assets
// itself (assetbyname) as well as from its CDN.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://marketplace.visualstudio.com/_apis/public/gallery"}
}

// QueryPaths: POST {base}/extensionquery.
func (Adapter) QueryPaths() []string { return []string{queryPath} }

// Route reads a request below {base}/firewall/vscode/:
//
//	extensionquery (POST)                                         the search
//	publishers/{pub}/vsextensions/{name}/{version}/vspackage      the .vsix
//	publisher/{pub}/extension/{name}/{version}/assetbyname/{type} an asset
//
// each download with an optional targetPlatform query.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	reg := core.RegistryVSCode
	segs := strings.Split(r.Path, "/")
	if r.Path == queryPath {
		if r.Body == nil {
			return firewall.Route{}, false, nil
		}
		body, err := vsgallery.ParseQuery(reg, r.Body)
		if err != nil {
			return firewall.Route{}, true, err
		}
		return firewall.Route{Kind: firewall.Metadata, Upstream: queryPath, Body: body, Accept: accept, Query: true}, true, nil
	}
	var pub, name, ver, tail string
	switch {
	case len(segs) == 6 && segs[0] == "publishers" && segs[2] == "vsextensions" && segs[5] == "vspackage":
		pub, name, ver, tail = segs[1], segs[3], segs[4], "vspackage"
	case len(segs) == 7 && segs[0] == "publisher" && segs[2] == "extension" && segs[5] == "assetbyname":
		pub, name, ver, tail = segs[1], segs[3], segs[4], "assetbyname/"
		t, err := vsgallery.Segment(reg, "asset type", segs[6])
		if err != nil {
			return firewall.Route{}, true, err
		}
		tail += url.PathEscape(t)
	default:
		return firewall.Route{}, false, nil
	}
	var err error
	for _, s := range []*string{&pub, &name, &ver} {
		if *s, err = vsgallery.Segment(reg, "extension path", *s); err != nil {
			return firewall.Route{}, true, err
		}
	}
	up := "publishers/" + url.PathEscape(pub) + "/vsextensions/" + url.PathEscape(name) + "/" + url.PathEscape(ver) + "/" + tail
	if strings.HasPrefix(tail, "assetbyname/") {
		up = "publisher/" + url.PathEscape(pub) + "/extension/" + url.PathEscape(name) + "/" + url.PathEscape(ver) + "/" + tail
	}
	q, _ := url.ParseQuery(r.Query)
	if tp := q.Get("targetPlatform"); tp != "" {
		if !vsgallery.TargetPlatform.MatchString(tp) {
			return firewall.Route{}, true, firewall.CannotJudge(reg, "target platform", tp, "a target platform is as win32-x64 or web")
		}
		up += "?targetPlatform=" + tp
	}
	return firewall.Route{Kind: firewall.Artifact, Name: pub + "." + name, Version: ver, Upstream: up, ContentType: typeFile}, true, nil
}

// Rewrite: the Marketplace's only document is its search (RewriteQuery).
func (Adapter) Rewrite(firewall.Document, firewall.Judge, string) (firewall.Rendering, error) {
	return firewall.Rendering{}, errors.New("the Marketplace's documents are its extensionquery answers, rewritten as searches")
}

// RewriteQuery rewrites an extensionquery answer (vsgallery.Rewrite),
// each version's assets at {base}/publisher/{pub}/extension/{name}/{version}/assetbyname.
func (Adapter) RewriteQuery(doc firewall.Document, judges func(map[string][]firewall.Published) (map[string]firewall.Judge, error), base string) (firewall.Rendering, error) {
	b, err := vsgallery.Rewrite(doc.Body, judges, func(pub, name, ver string) string {
		return base + "/publisher/" + url.PathEscape(pub) + "/extension/" + url.PathEscape(name) + "/" + url.PathEscape(ver) + "/assetbyname"
	})
	return firewall.Rendering{Body: b, ContentType: typeJSON}, err
}

// Versions reads the versions of doc.Name an extensionquery answer lists,
// with their lastUpdated.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	listed, err := vsgallery.Listed(doc.Body)
	if err != nil {
		return nil, err
	}
	for name, vs := range listed {
		if strings.EqualFold(name, doc.Name) {
			return vs, nil
		}
	}
	return []firewall.Published{}, nil
}

// FactsDocument is the extensionquery of the extension (FactsBody).
func (Adapter) FactsDocument(string) (string, string) { return queryPath, accept }

// FactsBody asks for every version of the extension.
func (Adapter) FactsBody(name string) []byte { return vsgallery.NameQuery(name) }

// VersionFactsPath is unused: one document gives every version's facts.
func (Adapter) VersionFactsPath(string, string) string { return "" }

// Scripts: the firewall judges no extension scripts.
func (Adapter) Scripts() bool { return false }

// ArchiveIndex is the extension's query; ArchiveURLs its versions' .vsix.
func (Adapter) ArchiveIndex(name string) (string, string) { return queryPath, accept }

// ArchiveURLs names each listed version's .vsix.
func (Adapter) ArchiveURLs(doc firewall.Document) (map[string]string, error) {
	vs, err := Adapter{}.Versions(doc)
	if err != nil {
		return nil, err
	}
	pub, name, _ := strings.Cut(doc.Name, ".")
	out := map[string]string{}
	for _, v := range vs {
		out[v.Version] = "publishers/" + url.PathEscape(pub) + "/vsextensions/" + url.PathEscape(name) + "/" + url.PathEscape(v.Version) + "/vspackage"
	}
	return out, nil
}
