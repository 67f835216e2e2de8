package nuget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
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
	_ firewall.Based      = Adapter{}
)

const typeJSON = "application/json"

// Registry is nuget.
func (Adapter) Registry() string { return core.RegistryNuGet }

// Defaults: nuget.org's service index.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://api.nuget.org/v3/index.json"}
}

// Root checks that the upstream setting is the URL of a service index
// (https://api.nuget.org/v3/index.json, BaGet's …/v3/index.json, GitHub
// Packages' https://nuget.pkg.github.com/OWNER/index.json): the firewall
// fetches it as it is, and every other document below the URLs it names.
func (Adapter) Root(upstream string) (string, error) {
	u := strings.TrimSuffix(upstream, "/")
	if !strings.HasSuffix(u, "/index.json") {
		return "", fmt.Errorf("a NuGet upstream is the URL of its service index, ending in index.json (got %q)", upstream)
	}
	return u, nil
}

// Route reads a request (Parse). A document of a resource is rendered
// apart per kind of resource (Variant): the same bytes are judged as what
// they are.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{}, ok, err
	}
	switch req.Kind {
	case ServiceIndex:
		return firewall.Route{Kind: firewall.Metadata, Upstream: req.Path}, true, nil
	case FlatIndex:
		return firewall.Route{Kind: firewall.Metadata, Name: req.ID, Upstream: req.Path, RefuseEvery: true, Variant: variantFlat}, true, nil
	case Registration:
		// Each leaf of a registration index or page says when its
		// version was published: the document is its own facts.
		return firewall.Route{Kind: firewall.Metadata, Name: req.ID, Upstream: req.Path, RefuseEvery: true, Variant: variantRegistration, OwnFacts: true}, true, nil
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

// The kinds of documents, as routes name them (Route.Variant).
const (
	variantFlat         = "flat"
	variantRegistration = "registration"
)

// Bases reads the service index: the URL of every resource the firewall
// serves, by its type's Slug, and Registrations (the SemVer 2.0.0 hive
// when there is one). Each URL ends in "/".
func (Adapter) Bases(root firewall.Document) (map[string]string, error) {
	resources, err := serviceResources(root.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range resources {
		slug := Slug(r.typ)
		if !served(r.typ) || slug == "" {
			continue
		}
		u := strings.TrimSuffix(r.id, "/") + "/"
		if _, ok := out[slug]; !ok {
			out[slug] = u
		}
		// The api.nuget.org paths the firewall served before, by the
		// end of the URL: v3-flatcontainer/, v3/registration…/.
		parts := strings.Split(strings.TrimSuffix(u, "/"), "/")
		switch n := len(parts); {
		case n >= 1 && parts[n-1] == "v3-flatcontainer":
			out[Legacy+"v3-flatcontainer"] = u
		case n >= 2 && parts[n-2] == "v3" && strings.HasPrefix(parts[n-1], "registration"):
			out[Legacy+"v3~"+parts[n-1]] = u
		}
	}
	for _, slug := range []string{"RegistrationsBaseUrl_3.6.0", "RegistrationsBaseUrl_3.4.0", "RegistrationsBaseUrl"} {
		if u, ok := out[slug]; ok {
			out[Registrations] = u
			break
		}
	}
	if _, ok := out[Registrations]; !ok {
		for slug, u := range out {
			if registrationType(slug) && (out[Registrations] == "" || slug < out[Registrations]) {
				out[Registrations] = u
			}
		}
	}
	return out, nil
}

// served says whether the firewall serves a resource of typ (package
// metadata or content); the others (search, publish, …) stay upstream.
func served(typ string) bool {
	return strings.HasPrefix(typ, "PackageBaseAddress/") || strings.HasPrefix(typ, "RegistrationsBaseUrl")
}

type resource struct{ typ, id string }

// serviceResources reads a service index's resources.
func serviceResources(body []byte) ([]resource, error) {
	var idx struct {
		Resources []struct {
			ID   string `json:"@id"`
			Type string `json:"@type"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("the service index is not a JSON object with resources: %v", err)
	}
	out := make([]resource, len(idx.Resources))
	for i, r := range idx.Resources {
		out[i] = resource{typ: r.Type, id: r.ID}
	}
	return out, nil
}

// Rewrite rewrites the service index (metadata and content resources
// through base), a flat container version list, or a registration index
// or page (refused versions' leaves gone, counts fixed, links into any
// resource the firewall serves through base).
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, base string) (firewall.Rendering, error) {
	switch doc.Variant {
	case "":
		out, err := rewriteServiceIndex(doc.Body, base)
		return firewall.Rendering{Body: out, ContentType: typeJSON}, err
	case variantFlat:
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
	v = rewriteRegistration(v, judge, linksOf(doc.Bases, base))
	out, err := json.Marshal(v)
	return firewall.Rendering{Body: out, ContentType: typeJSON}, err
}

// links rewrites a URL under one of the resources the firewall serves to
// the firewall's path of it.
type links []struct{ from, to string }

// linksOf are the links of bases, the longest base first.
func linksOf(bases map[string]string, base string) links {
	var l links
	for slug, u := range bases {
		if slug != Registrations && !strings.HasPrefix(slug, Legacy) {
			l = append(l, struct{ from, to string }{u, base + "/" + resPrefix + slug + "/"})
		}
	}
	sort.Slice(l, func(i, j int) bool {
		return len(l[i].from) > len(l[j].from) || len(l[i].from) == len(l[j].from) && l[i].from < l[j].from
	})
	return l
}

func (l links) rewrite(s string) (string, bool) {
	for _, e := range l {
		if rest, ok := strings.CutPrefix(s, e.from); ok {
			return e.to + rest, true
		}
	}
	return s, false
}

// rewriteServiceIndex points the resources that serve package metadata
// and content at base; one of a type the firewall cannot name is refused.
func rewriteServiceIndex(body []byte, base string) ([]byte, error) {
	var idx map[string]json.RawMessage
	if err := json.Unmarshal(body, &idx); err != nil || idx == nil {
		return nil, fmt.Errorf("the service index is not a JSON object: %v", err)
	}
	var resources []map[string]json.RawMessage
	if err := json.Unmarshal(idx["resources"], &resources); err != nil {
		return nil, fmt.Errorf("the service index's resources: %w", err)
	}
	for _, r := range resources {
		var typ string
		_ = json.Unmarshal(r["@type"], &typ)
		if !served(typ) {
			continue
		}
		slug := Slug(typ)
		if slug == "" {
			return nil, fmt.Errorf("the service index has a resource of type %q, which the firewall cannot serve: it would pass packages around the firewall", typ)
		}
		b, _ := json.Marshal(base + "/" + resPrefix + slug + "/")
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
// items list (a page's count follows), and points links into a resource
// the firewall serves at it.
func rewriteRegistration(v any, judge firewall.Judge, l links) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = rewriteRegistration(e, judge, l)
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
			x[i] = rewriteRegistration(e, judge, l)
		}
		return x
	case string:
		if s, ok := l.rewrite(x); ok {
			return s
		}
	}
	return v
}

// leafVersion is the version of a registration leaf ("" for anything else).
func leafVersion(v any) string {
	entry := catalogEntry(v)
	ver, _ := entry["version"].(string)
	return ver
}

// catalogEntry is a registration leaf's catalog entry (nil for anything
// else).
func catalogEntry(v any) map[string]any {
	leaf, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	entry, _ := leaf["catalogEntry"].(map[string]any)
	return entry
}

// unlistedBefore: nuget.org gives an unlisted version the published time
// 1900-01-01. Such a time says nothing of when the version was pushed: it
// is no publish time (the quarantine's missing_time decides), so a version
// pushed and unlisted at once is not taken for an old one.
var unlistedBefore = time.Date(1901, 1, 1, 0, 0, 0, 0, time.UTC)

// publishedAt reads a published time, zero when it is none (unlisted).
func publishedAt(s string, listed *bool) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil || t.Before(unlistedBefore) || listed != nil && !*listed {
		return time.Time{}
	}
	return t
}

// Versions reads a document's versions: a flat container version list (no
// times), a registration index or page (each leaf's version and published
// time), or a registration leaf (its published time).
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	if doc.Variant == variantRegistration {
		var v any
		if err := json.Unmarshal(doc.Body, &v); err != nil {
			return nil, fmt.Errorf("registration of %s: %w", doc.Name, err)
		}
		var out []firewall.Published
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				if e := catalogEntry(x); e != nil {
					if ver, _ := e["version"].(string); ver != "" {
						pub, _ := e["published"].(string)
						var listed *bool
						if b, ok := e["listed"].(bool); ok {
							listed = &b
						}
						out = append(out, firewall.Published{Version: ver, Time: publishedAt(pub, listed)})
						return
					}
				}
				for _, e := range x {
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(v)
		return out, nil
	}
	var d struct {
		Versions  []string `json:"versions"`
		Published string   `json:"published"`
		Listed    *bool    `json:"listed"`
	}
	if err := json.Unmarshal(doc.Body, &d); err != nil {
		return nil, err
	}
	if d.Versions == nil {
		return []firewall.Published{{Time: publishedAt(d.Published, d.Listed)}}, nil
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

// VersionFactsPath is a version's leaf in the upstream's Registrations
// hive.
func (Adapter) VersionFactsPath(id, version string) string {
	return resPrefix + Registrations + "/" + strings.ToLower(id) + "/" + strings.ToLower(version) + ".json"
}
