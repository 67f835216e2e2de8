package composer

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for Composer 2 repositories.
type Adapter struct{}

var (
	_ firewall.Adapter    = Adapter{}
	_ firewall.FileLister = Adapter{}
	_ firewall.FactSource = Adapter{}
)

const (
	typeJSON = "application/json"
	typeDist = "application/octet-stream"
	// minifiedFormat is the minified form's marker in a p2 document.
	minifiedFormat = "composer/2.0"
)

// Registry is composer (reports name the registry packagist).
func (Adapter) Registry() string { return firewall.FirewallComposer }

// Defaults: Packagist's Composer 2 repository, whose dists are GitHub's
// zipballs (api.github.com, redirected to codeload.github.com).
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://repo.packagist.org", FileHosts: []string{"https://api.github.com", "https://codeload.github.com"}}
}

// Route reads a request (Parse) into what the firewall fetches.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{}, ok, err
	}
	switch req.Kind {
	case Root:
		return firewall.Route{Kind: firewall.Metadata, Upstream: "packages.json", Accept: typeJSON}, true, nil
	case Metadata:
		return firewall.Route{Kind: firewall.Metadata, Name: req.Name, Upstream: MetadataPath(req.Name, req.Dev), Accept: typeJSON, RefuseEvery: true, OwnFacts: true}, true, nil
	}
	// The refusal in the status line too: Composer prints a failed
	// download's status line, not its body.
	return firewall.Route{Kind: firewall.Artifact, Name: req.Name, Index: MetadataPath(req.Name, req.Dev), File: req.Version, Accept: typeJSON, ContentType: typeDist,
		Refusal: firewall.RefuseReason}, true, nil
}

// Rewrite rewrites packages.json (metadata-url through base; the
// upstream's own endpoints dropped) or a p2 document (refused versions
// gone, every dist through base, no source).
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, base string) (firewall.Rendering, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc.Body, &top); err != nil {
		return firewall.Rendering{}, fmt.Errorf("%s: %w", docName(doc), err)
	}
	if top == nil {
		return firewall.Rendering{}, fmt.Errorf("%s is not a JSON object", docName(doc))
	}
	if doc.Name == "" {
		// Only what Composer 2 needs to find packages here: the upstream's
		// search, lists, install notifications and Composer 1 providers
		// would send it elsewhere.
		metadata, _ := json.Marshal(base + "/p2/%package%.json")
		out := map[string]json.RawMessage{"packages": json.RawMessage("[]"), "metadata-url": metadata}
		if ap, ok := top["available-packages"]; ok {
			out["available-packages"] = ap
		}
		if ap, ok := top["available-package-patterns"]; ok {
			out["available-package-patterns"] = ap
		}
		b, err := firewall.MarshalJSON(out)
		return firewall.Rendering{Body: b, ContentType: typeJSON}, err
	}
	packages, minified, err := parseP2(doc, top)
	if err != nil {
		return firewall.Rendering{}, err
	}
	rewritten := make(map[string][]json.RawMessage, len(packages))
	for name, vs := range packages {
		kept := vs[:0]
		for _, v := range vs {
			ver := v.field("version")
			if refused, _ := judge(ver); refused {
				continue
			}
			delete(v, "source") // a git clone would go around the firewall
			if raw, ok := v["dist"]; ok {
				var dist map[string]json.RawMessage
				if json.Unmarshal(raw, &dist) == nil && dist != nil {
					u, _ := json.Marshal(base + "/dist/" + name + "/" + url.PathEscape(ver))
					dist["url"] = u
					delete(dist, "mirrors")
					v["dist"] = version(dist).marshal()
				}
			}
			kept = append(kept, v)
		}
		if minified {
			rewritten[name] = minify(kept)
		} else {
			for _, v := range kept {
				rewritten[name] = append(rewritten[name], v.marshal())
			}
		}
		if rewritten[name] == nil {
			rewritten[name] = []json.RawMessage{}
		}
	}
	b, err := firewall.MarshalJSON(rewritten)
	if err != nil {
		return firewall.Rendering{}, err
	}
	top["packages"] = b
	out, err := firewall.MarshalJSON(top)
	return firewall.Rendering{Body: out, ContentType: typeJSON}, err
}

// parseP2 reads a p2 document's packages, each version whole.
func parseP2(doc firewall.Document, top map[string]json.RawMessage) (map[string][]version, bool, error) {
	var lists map[string][]json.RawMessage
	if err := json.Unmarshal(top["packages"], &lists); err != nil {
		return nil, false, fmt.Errorf("%s: packages: %w", docName(doc), err)
	}
	var format string
	_ = json.Unmarshal(top["minified"], &format)
	minified := format == minifiedFormat
	if format != "" && !minified {
		return nil, false, fmt.Errorf("%s: minified is %q, a form the firewall does not read (it reads %s)", docName(doc), format, minifiedFormat)
	}
	out := make(map[string][]version, len(lists))
	for name, list := range lists {
		vs, err := expand(list, minified)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %s: %w", docName(doc), name, err)
		}
		out[strings.ToLower(name)] = vs
	}
	return out, minified, nil
}

func docName(doc firewall.Document) string {
	if doc.Name == "" {
		return "packages.json"
	}
	return "the p2 document of " + doc.Name
}

// Files reads a p2 document's dists: by version, the upstream URL.
func (Adapter) Files(doc firewall.Document) (map[string]firewall.File, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc.Body, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", docName(doc), err)
	}
	packages, _, err := parseP2(doc, top)
	if err != nil {
		return nil, err
	}
	out := map[string]firewall.File{}
	for _, v := range packages[doc.Name] {
		var dist struct {
			URL string `json:"url"`
		}
		ver := v.field("version")
		if json.Unmarshal(v["dist"], &dist) != nil || dist.URL == "" || ver == "" {
			continue
		}
		u, err := url.Parse(dist.URL)
		if err != nil {
			continue
		}
		if !u.IsAbs() {
			if b, err := url.Parse(doc.URL); err == nil {
				u = b.ResolveReference(u)
			}
		}
		out[ver] = firewall.File{URL: u.String(), Versions: []string{ver}}
	}
	return out, nil
}

// Versions reads a p2 document's versions and their time.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	if doc.Name == "" {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc.Body, &top); err != nil {
		return nil, fmt.Errorf("%s: %w", docName(doc), err)
	}
	packages, _, err := parseP2(doc, top)
	if err != nil {
		return nil, err
	}
	var out []firewall.Published
	for _, v := range packages[doc.Name] {
		p := firewall.Published{Version: v.field("version")}
		if t, err := time.Parse(time.RFC3339, v.field("time")); err == nil {
			p.Time = t
		}
		out = append(out, p)
	}
	return out, nil
}

// Scripts: the firewall judges no Composer scripts.
func (Adapter) Scripts() bool { return false }

// FactsDocument: none of every version. Releases are in the package's p2
// document, branches (dev-main) in its ~dev.json, each with its time: a
// version's facts are in the one that lists it (VersionFactsPath), and a
// p2 document's own (Route.OwnFacts).
func (Adapter) FactsDocument(string) (string, string) { return "", "" }

// VersionFactsPath is the p2 document that lists the version.
func (Adapter) VersionFactsPath(name, v string) string { return MetadataPath(name, IsDev(v)) }
