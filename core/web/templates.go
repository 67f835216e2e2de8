package web

import (
	"html/template"
	"io/fs"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/webhooks"
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
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// eventType names a webhook event kind as subscriptions list it.
	"eventType": webhooks.EventType,
	// grouped writes a count with thousands separators: 1,000,000.
	"grouped": grouped,
	"inc":     func(i int) int { return i + 1 },
	// suggestionName is the name a campaign suggestion's form proposes.
	"suggestionName": suggestionName,
	"join":           strings.Join,
	"get":            func(v url.Values, k string) string { return v.Get(k) },
	"token":          core.TokenDisplay,
	"eq1":            func(a, b any) bool { return a == b },
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
	"day": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if !v.IsZero() {
				return v.UTC().Format("2006-01-02")
			}
		case *time.Time:
			if v != nil {
				return v.UTC().Format("2006-01-02")
			}
		}
		return ""
	},
	// clip shortens text to about n characters, at a word.
	"clip": func(s string, n int) string {
		if utf8.RuneCountInString(s) <= n {
			return s
		}
		r := []rune(s)[:n]
		if i := strings.LastIndexByte(string(r), ' '); i > n/2 {
			return string(r)[:i] + " …"
		}
		return string(r) + "…"
	},
	"versions": core.AffectedVersions,
	"label":    fieldLabel,
	"labels": func(fields []string) string {
		out := make([]string, len(fields))
		for i, f := range fields {
			out[i] = fieldLabel(f)
		}
		return strings.Join(out, ", ")
	},
	"kindName": func(k core.SearchKind) string { return searchKindNames[k] },
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

// searchKindNames say what a search input was taken to be.
var searchKindNames = map[core.SearchKind]string{
	core.SearchPurl: "a package URL", core.SearchURL: "a URL", core.SearchIP: "an IP address", core.SearchWallet: "a wallet address",
	core.SearchContainer: "a container image", core.SearchRepository: "a repository", core.SearchDomain: "a domain",
	core.SearchName: "a package name", "package": "a package",
}

// fieldLabel is a submit field's label on the form ("first_seen" → "First
// seen"); an unknown name is shown as it is.
func fieldLabel(name string) string {
	if l, ok := fieldLabels[name]; ok {
		return l
	}
	if name == "evidence_references_add" {
		return "Evidence references (added)"
	}
	return name
}

// grouped formats n with a comma between groups of three digits.
func grouped(n int64) string { return englishNumbers.Sprint(n) }

var englishNumbers = message.NewPrinter(language.English)
