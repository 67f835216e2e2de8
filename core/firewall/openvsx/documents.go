package openvsx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/vsgallery"
)

// Rewrite: Open VSX's listings are searches (RewriteQuery) and its
// extension documents version documents (RewriteListed).
func (Adapter) Rewrite(firewall.Document, firewall.Judge, string) (firewall.Rendering, error) {
	return firewall.Rendering{}, errors.New("the documents of Open VSX are searches and version documents")
}

// ext is an extension document (ExtensionJson) read.
type ext struct {
	o        *object
	name     string // namespace.name
	version  string
	target   string
	time     time.Time
	aliases  []string
	versions *object // allVersions: version (or alias) → URL
}

func readExt(o *object) (*ext, error) {
	e := &ext{o: o, version: o.str("version"), target: o.str("targetPlatform")}
	ns, name := o.str("namespace"), o.str("name")
	if ns == "" || name == "" || e.version == "" {
		return nil, errors.New("an extension document names no namespace, name and version")
	}
	e.name = ns + "." + name
	e.time, _ = time.Parse(time.RFC3339, o.str("timestamp"))
	_ = json.Unmarshal(o.vals["versionAlias"], &e.aliases)
	if raw, ok := o.vals["allVersions"]; ok {
		e.versions = &object{}
		if err := json.Unmarshal(raw, e.versions); err != nil {
			return nil, fmt.Errorf("allVersions: %w", err)
		}
	}
	return e, nil
}

func (e *ext) alias(k string) bool {
	return slices.Contains(aliases, k) || slices.Contains(e.aliases, k)
}

// published are the versions the document lists: its own with its
// timestamp, the others without.
func (e *ext) published() []firewall.Published {
	out := []firewall.Published{{Version: e.version, Time: e.time}}
	if e.versions != nil {
		for _, k := range e.versions.keys {
			if k != e.version && !e.alias(k) {
				out = append(out, firewall.Published{Version: k})
			}
		}
	}
	return out
}

// rewrite drops the refused versions of allVersions and points the
// document's files at base.
func (e *ext) rewrite(judge firewall.Judge, base string) {
	if e.versions != nil {
		for _, k := range slices.Clone(e.versions.keys) {
			if e.alias(k) || judge == nil {
				continue
			}
			if refused, _ := judge(k); refused {
				e.versions.del(k)
			}
		}
		e.o.set("allVersions", e.versions)
	}
	ns, name, _ := strings.Cut(e.name, ".")
	fileURL := func(target, u string) string {
		p := base + "/api/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
		if target != "" && target != "universal" {
			p += "/" + url.PathEscape(target)
		}
		file := path.Base(u)
		if pu, err := url.Parse(u); err == nil {
			file = path.Base(pu.Path)
		}
		return p + "/" + url.PathEscape(e.version) + "/file/" + url.PathEscape(file)
	}
	for _, k := range []string{"files", "downloads"} {
		var m object
		if e.o.has(k) && json.Unmarshal(e.o.vals[k], &m) == nil {
			for _, f := range m.keys {
				var u string
				if json.Unmarshal(m.vals[f], &u) != nil || u == "" {
					continue
				}
				target := e.target
				if k == "downloads" {
					target = f
				}
				m.set(f, fileURL(target, u))
			}
			e.o.set(k, &m)
		}
	}
}

// root is the upstream's URL an Open VSX document links below: what is
// before /api/ or /vscode/ in the URL it was fetched from.
func root(docURL string) string {
	u, _, _ := firewall.SplitRequest(docURL)
	for _, sep := range []string{"/api/", "/vscode/"} {
		if i := strings.Index(u, sep); i >= 0 {
			return u[:i]
		}
	}
	return strings.TrimSuffix(u, "/")
}

// relink points the links below the upstream's root at base.
func relink(b []byte, docURL, base string) []byte {
	r := root(docURL)
	for _, sep := range []string{"/api/", "/vscode/"} {
		b = bytes.ReplaceAll(b, []byte(`"`+r+sep), []byte(`"`+base+sep))
	}
	return b
}

// Versions reads an extension document's versions: its own with its
// timestamp, those allVersions names without.
func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	o, err := parseObject(doc.Body, "the extension document")
	if err != nil {
		return nil, err
	}
	e, err := readExt(o)
	if err != nil {
		return nil, err
	}
	return e.published(), nil
}

// VersionOf is the version an extension document is of.
func (Adapter) VersionOf(doc firewall.Document) (string, error) {
	o, err := parseObject(doc.Body, "the extension document")
	if err != nil {
		return "", err
	}
	e, err := readExt(o)
	if err != nil {
		return "", err
	}
	return e.version, nil
}

// RewriteVersion points an extension document's links at base.
func (a Adapter) RewriteVersion(doc firewall.Document, _, base string) ([]byte, error) {
	return a.RewriteListed(doc, nil, base)
}

// RewriteListed drops the refused versions of an extension document's
// allVersions and points its links and files at base.
func (Adapter) RewriteListed(doc firewall.Document, judge firewall.Judge, base string) ([]byte, error) {
	o, err := parseObject(doc.Body, "the extension document")
	if err != nil {
		return nil, err
	}
	e, err := readExt(o)
	if err != nil {
		return nil, err
	}
	e.rewrite(judge, base)
	b, err := firewall.MarshalJSON(o)
	return relink(b, doc.URL, base), err
}

// RewriteQuery rewrites a search: the gallery's extensionquery
// (vsgallery.Rewrite, assets at {base}/vscode/asset/…), -/query (a
// refused version's document gone) or -/search (an extension whose
// version is refused moves to the highest allowed one its allVersions
// names, or is gone, and totalSize with it).
func (Adapter) RewriteQuery(doc firewall.Document, judges func(map[string][]firewall.Published) (map[string]firewall.Judge, error), base string) (firewall.Rendering, error) {
	u, _, post := firewall.SplitRequest(doc.URL)
	var b []byte
	var err error
	switch {
	case post:
		b, err = vsgallery.Rewrite(doc.Body, judges, func(pub, name, ver string) string {
			return base + "/vscode/asset/" + url.PathEscape(pub) + "/" + url.PathEscape(name) + "/" + url.PathEscape(ver)
		})
	case strings.Contains(u, "/api/-/search"):
		b, err = rewriteSearch(doc, judges, base)
	default:
		b, err = rewriteExtList(doc, judges, base)
	}
	if err != nil {
		return firewall.Rendering{}, err
	}
	return firewall.Rendering{Body: relink(b, doc.URL, base), ContentType: typeJSON}, nil
}

// extensionsOf reads a search's answer ({"extensions": [...], …}): the
// whole, and its extensions' objects.
func extensionsOf(doc firewall.Document, what string) (*object, []*object, error) {
	top, err := parseObject(doc.Body, what)
	if err != nil {
		return nil, nil, err
	}
	var list []*object
	if err := json.Unmarshal(top.vals["extensions"], &list); err != nil && top.has("extensions") {
		return nil, nil, fmt.Errorf("%s: extensions: %w", what, err)
	}
	return top, list, nil
}

// rewriteExtList rewrites -/query's {"extensions": [extension documents]}.
func rewriteExtList(doc firewall.Document, judges func(map[string][]firewall.Published) (map[string]firewall.Judge, error), base string) ([]byte, error) {
	top, list, err := extensionsOf(doc, "the query's answer")
	if err != nil {
		return nil, err
	}
	exts := make([]*ext, len(list))
	listed := map[string][]firewall.Published{}
	for i, o := range list {
		if exts[i], err = readExt(o); err != nil {
			return nil, fmt.Errorf("the query's answer: extensions[%d]: %w", i, err)
		}
		listed[exts[i].name] = append(listed[exts[i].name], exts[i].published()...)
	}
	js, err := judges(listed)
	if err != nil {
		return nil, err
	}
	kept := []*object{}
	for _, e := range exts {
		j := js[e.name]
		if j != nil {
			if refused, _ := j(e.version); refused {
				continue
			}
		}
		e.rewrite(j, base)
		kept = append(kept, e.o)
	}
	if top.has("extensions") {
		top.set("extensions", kept)
	}
	return firewall.MarshalJSON(top)
}

// rewriteSearch rewrites -/search's {"offset", "totalSize", "extensions":
// [entries]}: an entry names its latest version (with its timestamp) and,
// with includeAllVersions, allVersions [{version, url, files}].
func rewriteSearch(doc firewall.Document, judges func(map[string][]firewall.Published) (map[string]firewall.Judge, error), base string) ([]byte, error) {
	top, entries, err := extensionsOf(doc, "the search's answer")
	if err != nil {
		return nil, err
	}
	type entry struct {
		o    *object
		name string
		all  []*object
	}
	es := make([]entry, len(entries))
	listed := map[string][]firewall.Published{}
	for i, o := range entries {
		ns, name, ver := o.str("namespace"), o.str("name"), o.str("version")
		if ns == "" || name == "" || ver == "" {
			return nil, fmt.Errorf("the search's answer: extensions[%d] names no namespace, name and version", i)
		}
		es[i] = entry{o: o, name: ns + "." + name}
		t, _ := time.Parse(time.RFC3339, o.str("timestamp"))
		listed[es[i].name] = append(listed[es[i].name], firewall.Published{Version: ver, Time: t})
		if o.has("allVersions") {
			if err := json.Unmarshal(o.vals["allVersions"], &es[i].all); err != nil {
				return nil, fmt.Errorf("the search's answer: extensions[%d].allVersions: %w", i, err)
			}
			for _, v := range es[i].all {
				if vv := v.str("version"); vv != ver && vv != "" {
					listed[es[i].name] = append(listed[es[i].name], firewall.Published{Version: vv})
				}
			}
		}
	}
	js, err := judges(listed)
	if err != nil {
		return nil, err
	}
	kept := []*object{}
	dropped := 0
	for _, e := range es {
		j := js[e.name]
		refused := func(v string) bool {
			if j == nil {
				return false
			}
			r, _ := j(v)
			return r
		}
		var all []*object
		var allowed []string
		for _, v := range e.all {
			if !refused(v.str("version")) {
				all = append(all, v)
				allowed = append(allowed, v.str("version"))
			}
		}
		if all == nil {
			all = []*object{}
		}
		if ver := e.o.str("version"); refused(ver) {
			best := Adapter{}.Highest(allowed)
			if best == "" {
				dropped++
				continue
			}
			// The highest allowed version in the refused one's place:
			// its own links, no timestamp of another version.
			ns, name, _ := strings.Cut(e.name, ".")
			e.o.set("version", best)
			e.o.del("timestamp")
			e.o.set("url", base+"/"+Adapter{}.VersionPath(e.name, best))
			e.o.set("files", map[string]string{"download": base + "/" + Adapter{}.VersionPath(e.name, best) + "/file/" + url.PathEscape(ns+"."+name+"-"+best+".vsix")})
		} else {
			pointFiles(e.o, e.name, ver, base)
		}
		for _, v := range all {
			pointFiles(v, e.name, v.str("version"), base)
		}
		if e.o.has("allVersions") {
			e.o.set("allVersions", all)
		}
		kept = append(kept, e.o)
	}
	if top.has("extensions") {
		top.set("extensions", kept)
	}
	if dropped > 0 {
		var total int
		if json.Unmarshal(top.vals["totalSize"], &total) == nil {
			top.set("totalSize", max(0, total-dropped))
		}
	}
	return firewall.MarshalJSON(top)
}

// pointFiles points an entry's files (files: {kind: URL}) at the
// firewall's file route of version: Open VSX may link them to its
// storage, which the client must not reach around the firewall.
func pointFiles(o *object, name, version, base string) {
	var m object
	if !o.has("files") || json.Unmarshal(o.vals["files"], &m) != nil {
		return
	}
	for _, f := range m.keys {
		var u string
		if json.Unmarshal(m.vals[f], &u) != nil || u == "" {
			continue
		}
		file := path.Base(u)
		if pu, err := url.Parse(u); err == nil {
			file = path.Base(pu.Path)
		}
		m.set(f, base+"/"+Adapter{}.VersionPath(name, version)+"/file/"+url.PathEscape(file))
	}
	o.set("files", &m)
}
