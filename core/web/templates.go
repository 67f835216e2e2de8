package web

import (
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
)

var funcs = template.FuncMap{
	"date": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		case *time.Time:
			if v == nil {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04 UTC")
		}
		return ""
	},
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"join":  strings.Join,
	"get":   func(v url.Values, k string) string { return v.Get(k) },
	"token": core.TokenDisplay,
	"eq1":   func(a, b any) bool { return a == b },
	"str": func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case core.ReportType:
			return string(x)
		case core.Severity:
			return string(x)
		case core.Status:
			return string(x)
		}
		return ""
	},
	"list": func(v []string) string { return strings.Join(v, ", ") },
}

// parsePages parses each page template together with the layout.
func parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, err
		}
		pages[page] = t
	}
	return pages, nil
}
