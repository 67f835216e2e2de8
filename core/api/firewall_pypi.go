package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
	xhtml "golang.org/x/net/html"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api/upstream"
	"github.com/threatd/threatd/core/firewall"
	pypifw "github.com/threatd/threatd/core/firewall/pypi"
)

const (
	pypiJSON = "application/vnd.pypi.simple.v1+json"
	// pypiAcceptJSON is what the firewall asks the upstream with for a
	// client that takes PEP 691 JSON (pip does); pypiAcceptHTML for one
	// that takes only PEP 503 HTML.
	pypiAcceptJSON = pypiJSON + ", application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
	pypiAcceptHTML = "application/vnd.pypi.simple.v1+html, text/html;q=0.01"
)

// pypi serves {base}/firewall/pypi/simple/: the index root (passed
// through), project pages (PEP 503 HTML or PEP 691 JSON, by Accept) and
// their files. A project or file name the firewall cannot judge is refused
// (pypifw.Parse); upstream URLs are built from the normalised project.
func (p *proxy) pypi(c *echo.Context) error {
	tail := p.tail(c, "pypi")
	r, ok, err := pypifw.Parse(tail)
	if err != nil {
		return cannotJudge(c, err, false)
	}
	if !ok {
		return notFound("the PyPI firewall serves the simple index at /firewall/pypi/simple/")
	}
	accept := pypiAcceptHTML
	if strings.Contains(c.Request().Header.Get("Accept"), pypiJSON) {
		accept = pypiAcceptJSON
	}
	if r.Kind == pypifw.Root {
		ctx, cancel := context.WithTimeout(c.Request().Context(), p.opts.UpstreamTimeout)
		defer cancel()
		res, err := p.fetch(ctx, core.RegistryPyPI, strings.TrimSuffix(p.opts.Upstreams[core.RegistryPyPI].URL, "/")+"/", accept)
		if err != nil {
			return err
		}
		return passThrough(c, res, pypiType(res.Header.Get("Content-Type")))
	}
	v, err := p.lookup(c, core.RegistryPyPI, r.Project)
	if err != nil {
		return cannotJudge(c, err, false)
	}
	up, err := p.upstream(core.RegistryPyPI, v)
	if err != nil {
		return err
	}
	pageURL := up + "/" + pypifw.ProjectPath(r.Project)
	if r.Kind == pypifw.File {
		return p.pypiFile(c, v, pageURL, r)
	}
	c.Response().Header().Set("Vary", "Accept")
	project := r.Project
	return p.document(c, core.RegistryPyPI, pageURL, accept, v, func(body []byte, contentType, base string) (rendering, error) {
		links := base + "/simple/" + url.PathEscape(project) + "/"
		if strings.Contains(contentType, "json") {
			out, err := rewritePyPIJSON(body, pageURL, links, project, v)
			return rendering{out, pypiJSON}, err
		}
		out, err := rewritePyPIHTML(body, pageURL, links, project, v)
		return rendering{out, "text/html; charset=utf-8"}, err
	})
}

// pypiType is the media type a simple-index page passed through is served
// as: the simple API's JSON or HTML, never another upstream type.
func pypiType(upstreamType string) string {
	if strings.Contains(upstreamType, "json") {
		return pypiJSON
	}
	return "text/html; charset=utf-8"
}

// pypiLink is one file of a project page.
type pypiLink struct {
	Filename string
	URL      string            // absolute, without fragment
	Fragment string            // e.g. sha256=…
	Attrs    map[string]string // data-* attributes (HTML)
}

// yankReason marks a blocked file: pip and other installers never choose
// a yanked file for a range, and show the reason when a pin selects it
// (then the file answers 403).
func yankReason(v firewall.Verdict, project, filename, rawURL string) string {
	if b := pypiBlocked(v, project, filename, rawURL); b != nil {
		return b.Message()
	}
	return ""
}

// rewritePyPIHTML rewrites a PEP 503 project page: every file link points
// at the firewall, and a blocked file is marked yanked with the refusal.
func rewritePyPIHTML(body []byte, pageURL, links, project string, v firewall.Verdict) ([]byte, error) {
	files, err := parsePyPIHTML(body, pageURL)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" content=\"1.1\">\n<title>Links for %s</title>\n</head>\n<body>\n<h1>Links for %s</h1>\n",
		html.EscapeString(project), html.EscapeString(project))
	for _, f := range files {
		href := links + url.PathEscape(f.Filename)
		if f.Fragment != "" {
			href += "#" + f.Fragment
		}
		fmt.Fprintf(&b, "<a href=\"%s\"", html.EscapeString(href))
		for _, k := range slices.Sorted(maps.Keys(f.Attrs)) {
			if k != "data-yanked" {
				fmt.Fprintf(&b, " %s=\"%s\"", k, html.EscapeString(f.Attrs[k]))
			}
		}
		if reason := yankReason(v, project, f.Filename, f.URL); reason != "" {
			fmt.Fprintf(&b, " data-yanked=\"%s\"", html.EscapeString(reason))
		} else if y, ok := f.Attrs["data-yanked"]; ok {
			fmt.Fprintf(&b, " data-yanked=\"%s\"", html.EscapeString(y))
		}
		fmt.Fprintf(&b, ">%s</a><br/>\n", html.EscapeString(f.Filename))
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes(), nil
}

// dataAttr are the anchor attributes a project page passes on (PEP 503's
// data-requires-python, PEP 658's data-dist-info-metadata, …): data-*
// names of plain characters only, so that a hostile upstream cannot
// break out of the tag with a crafted name.
var dataAttr = regexp.MustCompile(`^data-[a-z0-9-]+$`)

// parsePyPIHTML reads the file links of a PEP 503 page.
func parsePyPIHTML(body []byte, pageURL string) ([]pypiLink, error) {
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	var out []pypiLink
	z := xhtml.NewTokenizer(bytes.NewReader(body))
	var cur *pypiLink
	var text strings.Builder
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			return out, nil
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			t := z.Token()
			switch t.Data {
			case "base":
				for _, a := range t.Attr {
					if a.Key == "href" {
						if u, err := base.Parse(a.Val); err == nil {
							base = u
						}
					}
				}
			case "a":
				l := pypiLink{Attrs: map[string]string{}}
				for _, a := range t.Attr {
					switch {
					case a.Key == "href":
						u, err := base.Parse(a.Val)
						if err != nil {
							continue
						}
						l.Fragment, u.Fragment = u.Fragment, ""
						l.URL = u.String()
					case dataAttr.MatchString(a.Key):
						l.Attrs[a.Key] = a.Val
					}
				}
				if l.URL != "" {
					cur = &l
					text.Reset()
				}
			}
		case xhtml.TextToken:
			if cur != nil {
				text.Write(z.Text())
			}
		case xhtml.EndTagToken:
			if t := z.Token(); t.Data == "a" && cur != nil {
				cur.Filename = strings.TrimSpace(text.String())
				if cur.Filename == "" {
					u, _ := url.Parse(cur.URL)
					cur.Filename = path.Base(u.Path)
				}
				out = append(out, *cur)
				cur = nil
			}
		}
	}
}

// rewritePyPIJSON rewrites a PEP 691 project page the same way.
func rewritePyPIJSON(body []byte, pageURL, links, project string, v firewall.Verdict) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	var files []map[string]json.RawMessage
	if err := json.Unmarshal(doc["files"], &files); err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		name := stringField(f, "filename")
		u, err := base.Parse(stringField(f, "url"))
		if err != nil || name == "" {
			return nil, fmt.Errorf("a file without a usable filename and url")
		}
		href := links + url.PathEscape(name)
		if u.Fragment != "" {
			href += "#" + u.Fragment
		}
		f["url"], _ = json.Marshal(href)
		if reason := yankReason(v, project, name, u.String()); reason != "" {
			f["yanked"], _ = json.Marshal(reason)
		}
	}
	doc["files"], _ = json.Marshal(files)
	return json.Marshal(doc)
}

// parsePyPIJSON reads the file links of a PEP 691 page.
func parsePyPIJSON(body []byte, pageURL string) ([]pypiLink, error) {
	var doc struct {
		Files []struct {
			Filename string `json:"filename"`
			URL      string `json:"url"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	out := make([]pypiLink, 0, len(doc.Files))
	for _, f := range doc.Files {
		u, err := base.Parse(f.URL)
		if err != nil {
			continue
		}
		u.Fragment = ""
		out = append(out, pypiLink{Filename: f.Filename, URL: u.String()})
	}
	return out, nil
}

// pypiFile answers a file of a project (or its PEP 658 metadata, which is
// served even for a blocked file: pip reads it to resolve, and it runs
// nothing): the URL is the one the upstream's project page gives, on one of
// the registry's origins. The file is judged by the name the page gives it
// and by the name its URL ends with: refused when either is blocked.
func (p *proxy) pypiFile(c *echo.Context, v firewall.Verdict, pageURL string, r pypifw.Request) error {
	table, res, err := p.pypiFiles(c.Request().Context(), pageURL)
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	u, ok := table[r.File]
	if !ok {
		return notFound("PyPI project %s has no file %s", r.Project, r.File)
	}
	if r.Metadata {
		return p.stream(c, core.RegistryPyPI, u+".metadata", typeText)
	}
	if b := pypiBlocked(v, r.Project, r.File, u); b != nil {
		return p.refuseWithReason(c, b)
	}
	return p.stream(c, core.RegistryPyPI, u, typeFile)
}

// pypiBlocked is the refusal of a file named name at rawURL, or nil.
func pypiBlocked(v firewall.Verdict, project, name, rawURL string) *firewall.Blocked {
	if b := v.Check(pypifw.Version(project, name)); b != nil {
		return b
	}
	if u, err := url.Parse(rawURL); err == nil {
		if base := path.Base(u.Path); base != name && base != "/" && base != "." {
			return v.Check(pypifw.Version(project, base))
		}
	}
	return nil
}

// pypiFiles is the table of a project's files (file name → upstream URL),
// read from its page and kept while the page is.
func (p *proxy) pypiFiles(ctx context.Context, pageURL string) (map[string]string, *upstream.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.UpstreamTimeout)
	defer cancel()
	res, err := p.fetch(ctx, core.RegistryPyPI, pageURL, pypiAcceptJSON)
	if err != nil {
		return nil, nil, err
	}
	if res.Status != http.StatusOK {
		return nil, res, nil
	}
	key := "pypi-files\x00" + pageURL + "\x00" + res.Version
	if t, ok := p.parsed.Get(key); ok {
		_ = res.Body.Close()
		return t.(map[string]string), nil, nil
	}
	var table map[string]string
	err = p.renders.withBudget(ctx, contentLength(res), func() error {
		contentType := res.Header.Get("Content-Type")
		body, err := p.readDocument(core.RegistryPyPI, res)
		if err != nil {
			return err
		}
		var links []pypiLink
		if strings.Contains(contentType, "json") {
			links, err = parsePyPIJSON(body, pageURL)
		} else {
			links, err = parsePyPIHTML(body, pageURL)
		}
		if err != nil {
			return p.unreadable(core.RegistryPyPI, err)
		}
		table = make(map[string]string, len(links))
		for _, l := range links {
			if _, dup := table[l.Filename]; !dup {
				table[l.Filename] = l.URL
			}
		}
		return nil
	})
	if err != nil {
		_ = res.Body.Close()
		return nil, nil, err
	}
	if res.Kept() {
		size := int64(len(key))
		for f, u := range table {
			size += int64(len(f) + len(u))
		}
		remember(p.parsed, parsedBytes, key, any(table), size)
	}
	return table, nil, nil
}
