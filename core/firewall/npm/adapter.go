package npm

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/versioning"
)

// Adapter is the firewall's adapter for npm registries: package documents
// (full, or abbreviated as npm asks for them), version documents,
// tarballs, the /-/ endpoints passed through, and npm audit's
// bulk-advisory endpoint.
type Adapter struct{}

var (
	_ firewall.Adapter          = Adapter{}
	_ firewall.FileLister       = Adapter{}
	_ firewall.VersionDocuments = Adapter{}
	_ firewall.Auditor          = Adapter{}
)

// Registry is npm.
func (Adapter) Registry() string { return core.RegistryNPM }

// Defaults: the public npm registry, which serves its tarballs itself.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://registry.npmjs.org"}
}

// The media types of npm documents: the abbreviated install document npm
// asks for, and the full one.
const (
	installAccept = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
	typeJSON      = "application/json"
	typeFile      = "application/octet-stream"
)

// accept is what the upstream is asked with: the abbreviated install
// document when the client asked for it (npm does), else the full one.
func accept(client string) string {
	if strings.Contains(client, "application/vnd.npm.install-v1+json") {
		return installAccept
	}
	return typeJSON
}

// Route reads a request (Parse) into what the firewall fetches.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{}, ok, err
	}
	switch req.Kind {
	case Endpoint:
		return firewall.Route{Kind: firewall.PassThrough, Upstream: req.Path, Accept: r.Accept}, true, nil
	case Document:
		return firewall.Route{Kind: firewall.Metadata, Name: req.Name, Upstream: DocumentPath(req.Name), Accept: accept(r.Accept), RefuseEvery: true}, true, nil
	case VersionDocument:
		rt := firewall.Route{Kind: firewall.VersionDocument, Name: req.Name, Upstream: VersionPath(req.Name, req.Spec), Accept: typeJSON}
		if versioning.Check(core.RegistryNPM, req.Spec) == nil {
			rt.Version = req.Spec // else a dist-tag, resolved by the upstream
		}
		return rt, true, nil
	}
	return firewall.Route{Kind: firewall.Artifact, Name: req.Name, Index: DocumentPath(req.Name), File: req.File,
		Accept: installAccept, ContentType: typeFile}, true, nil
}

// Rewrite is Rewrite for a Metadata route.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, base string) (firewall.Rendering, error) {
	out, err := Rewrite(doc.Body, func(v string) bool { refused, _ := judge(v); return refused }, doc.Name, base)
	return firewall.Rendering{Body: out, ContentType: typeJSON}, err
}

// Versions reads a package document's versions and their times.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	var d struct {
		Versions map[string]struct {
			Scripts map[string]json.RawMessage `json:"scripts"`
		} `json:"versions"`
		Time map[string]string `json:"time"`
	}
	if err := json.Unmarshal(doc.Body, &d); err != nil {
		return nil, err
	}
	out := make([]firewall.Published, 0, len(d.Versions))
	for _, v := range slices.Sorted(mapKeys(d.Versions)) {
		p := firewall.Published{Version: v}
		if t, err := time.Parse(time.RFC3339, d.Time[v]); err == nil {
			p.Time = t
		}
		out = append(out, p)
	}
	// The install scripts each version adds to the one before it by
	// semver (versions that are not semver are left out).
	bySemver := slices.Clone(out)
	bySemver = slices.DeleteFunc(bySemver, func(p firewall.Published) bool { return !semver.IsValid("v" + p.Version) })
	slices.SortFunc(bySemver, func(a, b firewall.Published) int { return semver.Compare("v"+a.Version, "v"+b.Version) })
	at := map[string]int{}
	for i, p := range out {
		at[p.Version] = i
	}
	for i := 1; i < len(bySemver); i++ {
		prev, cur := d.Versions[bySemver[i-1].Version].Scripts, d.Versions[bySemver[i].Version].Scripts
		var added []string
		for _, k := range InstallScripts {
			if _, has := cur[k]; has {
				if _, had := prev[k]; !had {
					added = append(added, k)
				}
			}
		}
		if added != nil {
			o := &out[at[bySemver[i].Version]]
			o.NewScripts, o.Previous = added, bySemver[i-1].Version
		}
	}
	return out, nil
}

// InstallScripts are the scripts npm runs when it installs a package.
var InstallScripts = []string{"preinstall", "install", "postinstall"}

// Scripts says whether Versions reads install scripts.
func (Adapter) Scripts() bool { return true }

// FactsDocument is the full package document: only it has time and
// scripts (the abbreviated one npm asks for has neither).
func (Adapter) FactsDocument(name string) (string, string) {
	return DocumentPath(name), "application/json"
}

// VersionFactsPath is unused: the package document has every version.
func (Adapter) VersionFactsPath(name, version string) string { return VersionPath(name, version) }

// Files reads the tarballs a package document lists: by file name, the
// versions whose dist.tarball names it (one, unless the document is odd)
// and the first URL.
func (Adapter) Files(doc firewall.Document) (map[string]firewall.File, error) {
	var d struct {
		Versions map[string]struct {
			Dist struct {
				Tarball string `json:"tarball"`
			} `json:"dist"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(doc.Body, &d); err != nil {
		return nil, err
	}
	files := make(map[string]firewall.File, len(d.Versions))
	for _, ver := range slices.Sorted(mapKeys(d.Versions)) {
		if u := d.Versions[ver].Dist.Tarball; u != "" {
			f := files[path.Base(u)]
			if f.URL == "" {
				f.URL = u
			}
			f.Versions = append(f.Versions, ver)
			files[path.Base(u)] = f
		}
	}
	return files, nil
}

// VersionOf reads a version document's version.
func (Adapter) VersionOf(doc firewall.Document) (string, error) {
	var d struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(doc.Body, &d); err != nil {
		return "", err
	}
	var v string
	_ = json.Unmarshal(d.Version, &v)
	return v, nil
}

// RewriteVersion points a version document's dist.tarball at base.
func (Adapter) RewriteVersion(doc firewall.Document, name, base string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc.Body, &m); err != nil {
		return nil, err
	}
	raw, ok := m["dist"]
	if !ok {
		return doc.Body, nil
	}
	var dist map[string]json.RawMessage
	if err := json.Unmarshal(raw, &dist); err != nil {
		return nil, fmt.Errorf("dist: %w", err)
	}
	var tarball string
	_ = json.Unmarshal(dist["tarball"], &tarball)
	if tarball == "" {
		return doc.Body, nil
	}
	dist["tarball"], _ = json.Marshal(base + "/" + Escape(name) + "/-/" + path.Base(tarball))
	m["dist"], _ = json.Marshal(dist)
	return json.Marshal(m)
}

// Highest is the highest release among npm versions.
func (Adapter) Highest(versions []string) string { return highestRelease(versions) }

// VersionPath is the upstream path of one version's document.
func (Adapter) VersionPath(name, version string) string { return VersionPath(name, version) }

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
