// Package vsgallery is the VS Code extension gallery's protocol, as the
// Visual Studio Marketplace and Open VSX serve it: the extensionquery a
// client POSTs, its answer, and the rewrite that drops refused versions
// and points every asset at the firewall. The registries' adapters
// (core/firewall/vscode, core/firewall/openvsx) give the routes.
package vsgallery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

// Bounds of a query the firewall passes on: VS Code's largest asks for
// every installed extension by id, a few hundred criteria.
const (
	maxFilters  = 8
	maxCriteria = 1000
	maxPageSize = 1000
	maxValue    = 1024
)

// Flag is the query's flags: what the answer includes.
const (
	FlagIncludeVersions   = 0x1
	FlagIncludeFiles      = 0x2
	FlagIncludeAssetURI   = 0x80
	FlagIncludeLatestOnly = 0x200
)

// FilterExtensionName is the criterion of an extension by publisher.name.
const FilterExtensionName = 7

// Query is an extensionquery request, as VS Code sends it.
type Query struct {
	Filters    []Filter `json:"filters"`
	AssetTypes []string `json:"assetTypes"`
	Flags      int      `json:"flags"`
}

// Filter is one page of one search.
type Filter struct {
	Criteria   []Criterion `json:"criteria"`
	PageNumber int         `json:"pageNumber"`
	PageSize   int         `json:"pageSize"`
	SortBy     int         `json:"sortBy"`
	SortOrder  int         `json:"sortOrder"`
}

// Criterion is one condition of a filter.
type Criterion struct {
	FilterType int    `json:"filterType"`
	Value      string `json:"value"`
}

// ParseQuery reads a client's extensionquery and writes it again from
// what it read (never the client's bytes): the body the firewall POSTs
// upstream, and keeps the answer by.
func ParseQuery(reg string, body []byte) ([]byte, error) {
	var q Query
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&q); err != nil {
		return nil, firewall.CannotJudge(reg, "extensionquery", "", "the body is not an extension query: %v", err)
	}
	if len(q.Filters) == 0 || len(q.Filters) > maxFilters {
		return nil, firewall.CannotJudge(reg, "extensionquery", "", "a query has 1 to %d filters (got %d)", maxFilters, len(q.Filters))
	}
	n := 0
	for i, f := range q.Filters {
		n += len(f.Criteria)
		if f.PageSize < 0 || f.PageSize > maxPageSize || f.PageNumber < 0 {
			return nil, firewall.CannotJudge(reg, "extensionquery", "", "filters[%d]: pageSize is 0 to %d and pageNumber not negative", i, maxPageSize)
		}
		for _, c := range f.Criteria {
			if len(c.Value) > maxValue {
				return nil, firewall.CannotJudge(reg, "extensionquery", "", "filters[%d]: a criterion's value is longer than %d bytes", i, maxValue)
			}
		}
	}
	if n > maxCriteria {
		return nil, firewall.CannotJudge(reg, "extensionquery", "", "a query has at most %d criteria (got %d)", maxCriteria, n)
	}
	if q.AssetTypes == nil {
		q.AssetTypes = []string{}
	}
	for i := range q.Filters {
		if q.Filters[i].Criteria == nil {
			q.Filters[i].Criteria = []Criterion{}
		}
	}
	return json.Marshal(q)
}

// NameQuery is the query of every version of one extension (the facts of
// its versions: their lastUpdated).
func NameQuery(name string) []byte {
	b, _ := json.Marshal(Query{Filters: []Filter{{Criteria: []Criterion{{FilterType: FilterExtensionName, Value: name}}, PageNumber: 1, PageSize: 1}},
		AssetTypes: []string{}, Flags: FlagIncludeVersions})
	return b
}

// object is a JSON object kept whole: the fields the firewall does not
// read are written back as they came.
type object map[string]json.RawMessage

func (o object) str(k string) string {
	var s string
	_ = json.Unmarshal(o[k], &s)
	return s
}

func (o object) set(k string, v any) {
	b, _ := firewall.MarshalJSON(v)
	o[k] = b
}

// answer is an extensionquery answer.
type answer struct {
	top     object
	results []result
}

type result struct {
	obj        object
	extensions []extension
}

type extension struct {
	obj      object
	name     string // publisher.name
	versions []object
	listed   bool // the answer has a versions list
}

func readAnswer(body []byte) (*answer, error) {
	var a answer
	if err := json.Unmarshal(body, &a.top); err != nil {
		return nil, fmt.Errorf("the extension query's answer: %w", err)
	}
	if a.top == nil {
		return nil, fmt.Errorf("the extension query's answer is not a JSON object")
	}
	var results []object
	if err := json.Unmarshal(a.top["results"], &results); err != nil && a.top["results"] != nil {
		return nil, fmt.Errorf("the extension query's answer: results: %w", err)
	}
	for i, r := range results {
		res := result{obj: r}
		var exts []object
		if err := json.Unmarshal(r["extensions"], &exts); err != nil && r["extensions"] != nil {
			return nil, fmt.Errorf("results[%d].extensions: %w", i, err)
		}
		for j, e := range exts {
			var pub struct {
				Name string `json:"publisherName"`
			}
			_ = json.Unmarshal(e["publisher"], &pub)
			ext := extension{obj: e, name: pub.Name + "." + e.str("extensionName")}
			if pub.Name == "" || e.str("extensionName") == "" {
				return nil, fmt.Errorf("results[%d].extensions[%d] names no publisher.publisherName and extensionName", i, j)
			}
			if raw, ok := e["versions"]; ok {
				ext.listed = true
				if err := json.Unmarshal(raw, &ext.versions); err != nil {
					return nil, fmt.Errorf("results[%d].extensions[%d].versions: %w", i, j, err)
				}
			}
			res.extensions = append(res.extensions, ext)
		}
		a.results = append(a.results, res)
	}
	return &a, nil
}

// Listed reads what an answer lists: by extension (publisher.name), each
// version and its lastUpdated.
func Listed(body []byte) (map[string][]firewall.Published, error) {
	a, err := readAnswer(body)
	if err != nil {
		return nil, err
	}
	out := map[string][]firewall.Published{}
	for _, r := range a.results {
		for _, e := range r.extensions {
			for _, v := range e.versions {
				p := firewall.Published{Version: v.str("version")}
				if t, err := time.Parse(time.RFC3339, v.str("lastUpdated")); err == nil {
					p.Time = t
				}
				out[e.name] = append(out[e.name], p)
			}
			if _, ok := out[e.name]; !ok {
				out[e.name] = []firewall.Published{}
			}
		}
	}
	return out, nil
}

// Assets gives the firewall's URL of a version's assets (assetUri): its
// files are below it, by asset type.
type Assets func(publisher, name, version string) string

// Rewrite rewrites an answer: the refused versions of each extension
// gone (an extension none of whose listed versions is left, gone, and
// the result's TotalCount with it); every version's assetUri,
// fallbackAssetUri and files at the firewall (assets).
func Rewrite(body []byte, judges func(map[string][]firewall.Published) (map[string]firewall.Judge, error), assets Assets) ([]byte, error) {
	listed, err := Listed(body)
	if err != nil {
		return nil, err
	}
	js, err := judges(listed)
	if err != nil {
		return nil, err
	}
	a, err := readAnswer(body)
	if err != nil {
		return nil, err
	}
	var results []object
	for _, r := range a.results {
		exts := []object{}
		dropped := 0
		for _, e := range r.extensions {
			judge := js[e.name]
			kept := []object{}
			for _, v := range e.versions {
				ver := v.str("version")
				if judge != nil {
					if refused, _ := judge(ver); refused {
						continue
					}
				}
				pub, name, _ := strings.Cut(e.name, ".")
				base := assets(pub, name, ver)
				v.set("assetUri", base)
				v.set("fallbackAssetUri", base)
				if raw, ok := v["files"]; ok {
					var files []object
					if json.Unmarshal(raw, &files) == nil {
						for _, f := range files {
							src := base + "/" + url.PathEscape(f.str("assetType"))
							if tp := v.str("targetPlatform"); tp != "" {
								src += "?targetPlatform=" + url.QueryEscape(tp)
							}
							f.set("source", src)
						}
						v.set("files", files)
					}
				}
				kept = append(kept, v)
			}
			if e.listed && len(kept) == 0 && len(e.versions) > 0 {
				dropped++
				continue
			}
			if e.listed {
				e.obj.set("versions", kept)
			}
			exts = append(exts, e.obj)
		}
		if _, ok := r.obj["extensions"]; ok {
			r.obj.set("extensions", exts)
		}
		if dropped > 0 {
			lessTotal(r.obj, dropped)
		}
		results = append(results, r.obj)
	}
	if _, ok := a.top["results"]; ok {
		if results == nil {
			results = []object{}
		}
		a.top.set("results", results)
	}
	return firewall.MarshalJSON(a.top)
}

// lessTotal takes n from a result's TotalCount.
func lessTotal(r object, n int) {
	var meta []struct {
		Type  string   `json:"metadataType"`
		Items []object `json:"metadataItems"`
	}
	if json.Unmarshal(r["resultMetadata"], &meta) != nil {
		return
	}
	var out []object
	for _, m := range meta {
		o := object{}
		o.set("metadataType", m.Type)
		for _, it := range m.Items {
			var count int
			if m.Type == "ResultCount" && it.str("name") == "TotalCount" && json.Unmarshal(it["count"], &count) == nil {
				it.set("count", max(0, count-n))
			}
		}
		o.set("metadataItems", m.Items)
		out = append(out, o)
	}
	r.set("resultMetadata", out)
}

// TargetPlatform is a target platform's form (win32-x64, linux-arm64,
// alpine-x64, web, universal …).
var TargetPlatform = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)?$`)

// Segment reads one path segment of a name or version: unescaped, and
// refused when it could climb or is empty.
func Segment(reg, what, s string) (string, error) {
	u, err := url.PathUnescape(s)
	if err != nil || u == "" || u == "." || u == ".." || strings.ContainsAny(u, "/\\?#%") || strings.IndexFunc(u, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "", firewall.CannotJudge(reg, what, s, "not a %s the firewall can judge", what)
	}
	return u, nil
}
