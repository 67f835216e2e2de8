package pypi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/threatd/threatd/core/firewall"
)

// link is one file of a project page.
type link struct {
	Filename string
	URL      string            // absolute, without fragment
	Fragment string            // e.g. sha256=…
	Attrs    map[string]string // data-* attributes (HTML)
}

// yankReason marks a refused file: pip and other installers never choose
// a yanked file for a range, and show the reason when a pin selects it
// (then the file answers 403). A file is judged by the name the page
// gives it and by the name its URL ends with (FileVersions).
func yankReason(judge firewall.Judge, project, filename, rawURL string) string {
	for _, v := range FileVersions(project, filename, rawURL) {
		if refused, why := judge(v); refused {
			return why
		}
	}
	return ""
}

// rewriteHTML rewrites a PEP 503 project page: every file link points
// at the firewall, and a blocked file is marked yanked with the refusal.
func rewriteHTML(body []byte, pageURL, links, project string, judge firewall.Judge) ([]byte, error) {
	files, err := parseHTML(body, pageURL)
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
		if reason := yankReason(judge, project, f.Filename, f.URL); reason != "" {
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

// parseHTML reads the file links of a PEP 503 page.
func parseHTML(body []byte, pageURL string) ([]link, error) {
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	var out []link
	z := xhtml.NewTokenizer(bytes.NewReader(body))
	var cur *link
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
				l := link{Attrs: map[string]string{}}
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

// rewriteJSON rewrites a PEP 691 project page the same way.
func rewriteJSON(body []byte, pageURL, links, project string, judge firewall.Judge) ([]byte, error) {
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
		if reason := yankReason(judge, project, name, u.String()); reason != "" {
			f["yanked"], _ = json.Marshal(reason)
		}
	}
	doc["files"], _ = json.Marshal(files)
	return json.Marshal(doc)
}

// parseJSON reads the file links of a PEP 691 page.
func parseJSON(body []byte, pageURL string) ([]link, error) {
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
	out := make([]link, 0, len(doc.Files))
	for _, f := range doc.Files {
		u, err := base.Parse(f.URL)
		if err != nil {
			continue
		}
		u.Fragment = ""
		out = append(out, link{Filename: f.Filename, URL: u.String()})
	}
	return out, nil
}

// stringField is a string member of a JSON object ("" when absent or not a string).
func stringField(m map[string]json.RawMessage, k string) string {
	var s string
	if raw, ok := m[k]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}
