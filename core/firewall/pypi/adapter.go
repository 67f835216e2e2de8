package pypi

import (
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Adapter is the firewall's adapter for PyPI's simple repository API:
// project pages as PEP 503 HTML or PEP 691 JSON (by the client's Accept),
// their files and PEP 658 metadata, and the index root passed through.
type Adapter struct{}

var (
	_ firewall.Adapter    = Adapter{}
	_ firewall.FileLister = Adapter{}
)

// The simple API's media types.
const (
	TypeJSON = "application/vnd.pypi.simple.v1+json"
	typeHTML = "text/html; charset=utf-8"
	// acceptJSON is what the upstream is asked with for a client that
	// takes PEP 691 JSON (pip does); acceptHTML for one that takes only
	// PEP 503 HTML.
	acceptJSON = TypeJSON + ", application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
	acceptHTML = "application/vnd.pypi.simple.v1+html, text/html;q=0.01"
)

// Registry is pypi.
func (Adapter) Registry() string { return core.RegistryPyPI }

// Defaults: PyPI's simple index, whose files are on files.pythonhosted.org.
func (Adapter) Defaults() firewall.Upstream {
	return firewall.Upstream{URL: "https://pypi.org/simple", FileHosts: []string{"https://files.pythonhosted.org"}}
}

// Route reads a request (Parse) into what the firewall fetches.
func (Adapter) Route(r firewall.Request) (firewall.Route, bool, error) {
	req, ok, err := Parse(r.Path)
	if err != nil || !ok {
		return firewall.Route{}, ok, err
	}
	accept := acceptHTML
	if strings.Contains(r.Accept, TypeJSON) {
		accept = acceptJSON
	}
	switch req.Kind {
	case Root:
		return firewall.Route{Kind: firewall.PassThrough, Upstream: "", Accept: accept,
			Keep: []string{"text/html", TypeJSON, "application/vnd.pypi.simple.v1+html"}}, true, nil
	case Project:
		return firewall.Route{Kind: firewall.Metadata, Name: req.Project, Upstream: ProjectPath(req.Project), Accept: accept, Vary: "Accept"}, true, nil
	}
	rt := firewall.Route{Kind: firewall.Artifact, Name: req.Project, Index: ProjectPath(req.Project), File: req.File,
		Accept: acceptJSON, ContentType: "application/octet-stream", Refusal: firewall.RefuseReason}
	if req.Metadata {
		rt.Suffix, rt.Unjudged, rt.ContentType = ".metadata", true, "text/plain; charset=utf-8"
	}
	return rt, true, nil
}

// Rewrite rewrites a project page: every file link points at the
// firewall (with its #sha256= fragment), and a refused file is marked
// yanked (PEP 592) with the refusal as the reason.
func (Adapter) Rewrite(doc firewall.Document, judge firewall.Judge, base string) (firewall.Rendering, error) {
	links := base + "/simple/" + url.PathEscape(doc.Name) + "/"
	if strings.Contains(doc.ContentType, "json") {
		out, err := rewriteJSON(doc.Body, doc.URL, links, doc.Name, judge)
		return firewall.Rendering{Body: out, ContentType: TypeJSON}, err
	}
	out, err := rewriteHTML(doc.Body, doc.URL, links, doc.Name, judge)
	return firewall.Rendering{Body: out, ContentType: typeHTML}, err
}

// links reads the file links of a page of either form.
func links(doc firewall.Document) ([]link, error) {
	if strings.Contains(doc.ContentType, "json") {
		return parseJSON(doc.Body, doc.URL)
	}
	return parseHTML(doc.Body, doc.URL)
}

// Files reads a project page's files: by the name the page gives each,
// its URL and the versions its names carry.
func (Adapter) Files(doc firewall.Document) (map[string]firewall.File, error) {
	ls, err := links(doc)
	if err != nil {
		return nil, err
	}
	out := make(map[string]firewall.File, len(ls))
	for _, l := range ls {
		if _, dup := out[l.Filename]; !dup {
			out[l.Filename] = firewall.File{URL: l.URL, Versions: FileVersions(doc.Name, l.Filename, l.URL)}
		}
	}
	return out, nil
}

// Versions reads the versions of a project's files and, from the JSON
// form, when each was first uploaded (PEP 700 upload-time).
// Scripts says whether Versions reads install scripts.
func (Adapter) Scripts() bool { return false }

// FactsDocument is the project's JSON page (PEP 691), whose files have
// their PEP 700 upload-time; the HTML page has none.
func (Adapter) FactsDocument(name string) (string, string) { return ProjectPath(name), TypeJSON }

// VersionFactsPath is unused: the project page has every version.
func (Adapter) VersionFactsPath(name, _ string) string { return ProjectPath(name) }

func (Adapter) Versions(doc firewall.Document) ([]firewall.Published, error) {
	times := map[string]time.Time{}
	if strings.Contains(doc.ContentType, "json") {
		var d struct {
			Files []struct {
				Filename   string `json:"filename"`
				UploadTime string `json:"upload-time"`
			} `json:"files"`
		}
		if err := json.Unmarshal(doc.Body, &d); err != nil {
			return nil, err
		}
		for _, f := range d.Files {
			v := Version(doc.Name, f.Filename)
			if v == "" {
				continue
			}
			// A version is as new as its newest file: a file added to an
			// old release is held like a new release.
			t, err := time.Parse(time.RFC3339, f.UploadTime)
			if old, seen := times[v]; !seen || err == nil && t.After(old) {
				times[v] = t
			}
		}
	} else {
		ls, err := parseHTML(doc.Body, doc.URL)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if v := Version(doc.Name, l.Filename); v != "" {
				times[v] = time.Time{}
			}
		}
	}
	out := make([]firewall.Published, 0, len(times))
	for _, v := range slices.Sorted(func(yield func(string) bool) {
		for v := range times {
			if !yield(v) {
				return
			}
		}
	}) {
		out = append(out, firewall.Published{Version: v, Time: times[v]})
	}
	return out, nil
}

// FileVersions are the versions a file may be: the one its name on the
// page carries and, when its URL ends with another name, that one's ("" for
// a name that carries none).
func FileVersions(project, filename, rawURL string) []string {
	out := []string{Version(project, filename)}
	if u, err := url.Parse(rawURL); err == nil {
		if b := path.Base(u.Path); b != filename && b != "/" && b != "." {
			out = append(out, Version(project, b))
		}
	}
	return out
}
