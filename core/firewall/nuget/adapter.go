package nuget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for NuGet v3.
type Adapter struct{}

var (
	_ firewall.Adapter    = Adapter{}
	_ firewall.FactSource = Adapter{}
	_ firewall.Rooted     = Adapter{}
)

const typeJSON = "application/json"

// FactsHive is the registration hive whose leaves give each version's
// published time (api.nuget.org's: every version, SemVer 2.0.0 too).
const FactsHive = "v3/registration5-gz-semver2"

// Registry is nuget.
func (Adapter) Registry() string { return core.RegistryNuGet }

// Defaults: nuget.org's service index.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://api.nuget.org/v3/index.json"}
}

// Root is the root the service index's paths are below: its URL without
// /v3/index.json.
func (Adapter) Root(upstream string) (string, error) {
	u := strings.TrimSuffix(upstream, "/")
	if !strings.HasSuffix(u, "/v3/index.json") {
		return "", fmt.Errorf("a NuGet upstream is the URL of its service index, ending in /v3/index.json (got %q)", upstream)
	}
	return strings.TrimSuffix(u, "/v3/index.json"), nil
}

// Route reads a request (Parse).
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{}, ok, err
	}
	switch req.Kind {
	case ServiceIndex:
		return firewall.Route{Kind: firewall.Metadata, Upstream: req.Path}, true, nil
	case FlatIndex, Registration:
		return firewall.Route{Kind: firewall.Metadata, Name: req.ID, Upstream: req.Path, RefuseEvery: true}, true, nil
	}
	ct := "application/octet-stream"
	switch {
	case strings.HasSuffix(req.Path, ".nuspec"):
		ct = "application/xml"
	case strings.HasSuffix(req.Path, ".json"):
		ct = typeJSON
	}
	return firewall.Route{Kind: firewall.Artifact, Name: req.ID, Version: req.Version, Upstream: req.Path, ContentType: ct}, true, nil
}

// rootOf is the upstream root a document of it was fetched below.
func rootOf(docURL string) string {
	for _, marker := range []string{"/v3/index.json", "/v3-flatcontainer/", "/v3/registration"} {
		if i := strings.LastIndex(docURL, marker); i >= 0 {
			return docURL[:i]
		}
	}
	return docURL
}

// Rewrite rewrites the service index (metadata and content resources
// through base), a flat container version list, or a registration index
// or page (refused versions' leaves gone, counts fixed, links into the
// registration hives and the flat container through base).
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, base string) (firewall.Rendering, error) {
	root := rootOf(doc.URL)
	switch {
	case doc.Name == "":
		out, err := rewriteServiceIndex(doc.Body, root, base)
		return firewall.Rendering{Body: out, ContentType: typeJSON}, err
	case strings.Contains(doc.URL, "/v3-flatcontainer/"):
		var list struct {
			Versions []string `json:"versions"`
		}
		if err := json.Unmarshal(doc.Body, &list); err != nil {
			return firewall.Rendering{}, fmt.Errorf("version list of %s: %w", doc.Name, err)
		}
		kept := make([]string, 0, len(list.Versions))
		for _, v := range list.Versions {
			if r, _ := judge(v); !r {
				kept = append(kept, v)
			}
		}
		out, err := json.Marshal(map[string][]string{"versions": kept})
		return firewall.Rendering{Body: out, ContentType: typeJSON}, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc.Body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return firewall.Rendering{}, fmt.Errorf("registration of %s: %w", doc.Name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return firewall.Rendering{}, fmt.Errorf("registration of %s is not an object", doc.Name)
	}
	v = rewriteRegistration(v, judge, []string{root + "/v3-flatcontainer/", root + "/v3/registration"}, root, base)
	out, err := json.Marshal(v)
	return firewall.Rendering{Body: out, ContentType: typeJSON}, err
}

// rewriteServiceIndex points the metadata and content resources at base.
func rewriteServiceIndex(body []byte, root, base string) ([]byte, error) {
	var idx map[string]json.RawMessage
	if err := json.Unmarshal(body, &idx); err != nil || idx == nil {
		return nil, fmt.Errorf("the service index is not a JSON object: %v", err)
	}
	var resources []map[string]json.RawMessage
	if err := json.Unmarshal(idx["resources"], &resources); err != nil {
		return nil, fmt.Errorf("the service index's resources: %w", err)
	}
	for _, r := range resources {
		var typ, id string
		_ = json.Unmarshal(r["@type"], &typ)
		_ = json.Unmarshal(r["@id"], &id)
		if !strings.HasPrefix(typ, "PackageBaseAddress/") && !strings.HasPrefix(typ, "RegistrationsBaseUrl") {
			continue
		}
		if !strings.HasPrefix(id, root+"/") {
			return nil, fmt.Errorf("the service index puts %s at %s, outside its root %s: the firewall serves only what is below it", typ, id, root)
		}
		b, _ := json.Marshal(base + "/" + strings.TrimPrefix(id, root+"/"))
		r["@id"] = b
	}
	b, err := json.Marshal(resources)
	if err != nil {
		return nil, err
	}
	idx["resources"] = b
	return json.Marshal(idx)
}

// rewriteRegistration drops the leaves of refused versions from every
// items list (a page's count follows), and points links under served at
// base.
func rewriteRegistration(v any, judge firewall.Judge, served []string, root, base string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = rewriteRegistration(e, judge, served, root, base)
		}
		if items, ok := x["items"].([]any); ok {
			kept := items[:0]
			for _, it := range items {
				if ver := leafVersion(it); ver != "" {
					if r, _ := judge(ver); r {
						continue
					}
				}
				kept = append(kept, it)
			}
			x["items"] = kept
			if _, ok := x["count"]; ok {
				x["count"] = len(kept)
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = rewriteRegistration(e, judge, served, root, base)
		}
		return x
	case string:
		for _, s := range served {
			if strings.HasPrefix(x, s) {
				return base + "/" + strings.TrimPrefix(x, root+"/")
			}
		}
	}
	return v
}

// leafVersion is the version of a registration leaf ("" for anything else).
func leafVersion(v any) string {
	leaf, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	entry, ok := leaf["catalogEntry"].(map[string]any)
	if !ok {
		return ""
	}
	ver, _ := entry["version"].(string)
	return ver
}

// Versions reads a flat container version list (no times), or a
// registration leaf's published time.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	var d struct {
		Versions  []string `json:"versions"`
		Published string   `json:"published"`
	}
	if err := json.Unmarshal(doc.Body, &d); err != nil {
		return nil, err
	}
	if d.Versions == nil {
		p := firewall.Published{}
		if t, err := time.Parse(time.RFC3339, d.Published); err == nil {
			p.Time = t
		}
		return []firewall.Published{p}, nil
	}
	out := make([]firewall.Published, len(d.Versions))
	for i, v := range d.Versions {
		out[i].Version = v
	}
	return out, nil
}

// Scripts: NuGet packages' install scripts are not judged.
func (Adapter) Scripts() bool { return false }

// FactsDocument is none: each version's registration leaf has its time.
func (Adapter) FactsDocument(string) (string, string) { return "", "" }

// VersionFactsPath is a version's leaf in FactsHive.
func (Adapter) VersionFactsPath(id, version string) string {
	return FactsHive + "/" + strings.ToLower(id) + "/" + strings.ToLower(version) + ".json"
}
