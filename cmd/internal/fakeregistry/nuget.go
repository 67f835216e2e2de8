package fakeregistry

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// NuGetLayout is where a NuGet server keeps its resources, below the
// upstream's root: its service index, its flat container
// (PackageBaseAddress) and its registration hives by @type (a hive whose
// path holds "-gz" is served gzip-encoded, as api.nuget.org's are).
type NuGetLayout struct {
	Index, Flat string
	Hives       map[string]string
}

// api.nuget.org's layout, and BaGet's (its flat container under
// v3/package/, its registrations under v3/registration/), with a gzip
// SemVer 2 hive on another path.
var (
	NuGetOrg = NuGetLayout{Index: "/v3/index.json", Flat: "/v3-flatcontainer/", Hives: map[string]string{
		"RegistrationsBaseUrl": "/v3/registration5-semver1/", "RegistrationsBaseUrl/3.6.0": "/v3/registration5-gz-semver2/"}}
	BaGet = NuGetLayout{Index: "/baget/v3/index.json", Flat: "/baget/v3/package/", Hives: map[string]string{
		"RegistrationsBaseUrl": "/baget/v3/registration/", "RegistrationsBaseUrl/3.6.0": "/baget/hives/semver2-gz/"}}
)

// NuGetServiceIndex is u's service index of layout l (the resources a
// client reads, search on another host).
func (u *Registry) NuGetServiceIndex(l NuGetLayout) {
	root := u.Srv.URL
	resources := []map[string]string{
		{"@id": "https://azuresearch-usnc.nuget.org/query", "@type": "SearchQueryService", "comment": "Query endpoint of NuGet Search service (primary)"},
		{"@id": root + l.Flat, "@type": "PackageBaseAddress/3.0.0", "comment": "Base URL of where NuGet packages are stored"},
	}
	for _, typ := range []string{"RegistrationsBaseUrl", "RegistrationsBaseUrl/3.6.0"} {
		resources = append(resources, map[string]string{"@id": root + l.Hives[typ], "@type": typ, "comment": "Base URL of where NuGet package registration info is stored"})
	}
	idx, _ := json.Marshal(map[string]any{"version": "3.0.0", "resources": resources,
		"@context": map[string]string{"@vocab": "http://schema.nuget.org/services#", "comment": "http://www.w3.org/2000/01/rdf-schema#comment"}})
	u.Put(l.Index, "application/json", 60, idx)
}

// NuGetPackage publishes id's versions in layout l as the server does:
// the flat container's version list, .nupkg and .nuspec; in every hive, a
// registration index with one inlined page, and a leaf per version. A
// version in unlisted is pushed unlisted: published 1900-01-01, listed
// false, as nuget.org shows it.
func (u *Registry) NuGetPackage(t testing.TB, l NuGetLayout, id string, versions []string, at []time.Time, unlisted ...string) {
	t.Helper()
	root, lower := u.Srv.URL, strings.ToLower(id)
	list, _ := json.Marshal(map[string][]string{"versions": versions})
	u.Put(l.Flat+lower+"/index.json", "application/json", 60, list)
	for _, v := range versions {
		u.Put(l.Flat+lower+"/"+v+"/"+lower+"."+v+".nupkg", "application/octet-stream", 31536000, []byte("PK nupkg "+id+" "+v))
		u.Put(l.Flat+lower+"/"+v+"/"+lower+".nuspec", "application/xml", 31536000, []byte("<package><metadata><id>"+id+"</id><version>"+v+"</version></metadata></package>"))
	}
	for _, hivePath := range l.Hives {
		hive := root + hivePath + lower
		var leaves []map[string]any
		for i, v := range versions {
			published, listed := at[i].UTC().Format("2006-01-02T15:04:05.000Z07:00"), true
			for _, un := range unlisted {
				if un == v {
					published, listed = "1900-01-01T00:00:00+00:00", false
				}
			}
			content := root + l.Flat + lower + "/" + v + "/" + lower + "." + v + ".nupkg"
			leaf := map[string]any{
				"@id": hive + "/" + v + ".json", "@type": "Package", "commitId": "b9c1a7f0-0000-0000-0000-000000000000", "commitTimeStamp": published,
				"catalogEntry": map[string]any{"@id": root + "/v3/catalog0/data/2026.01.01.00.00.00/" + lower + "." + v + ".json", "@type": "PackageDetails",
					"authors": "threatd", "id": id, "listed": listed, "published": published, "version": v, "packageContent": content},
				"packageContent": content,
				"registration":   hive + "/index.json",
			}
			leaves = append(leaves, leaf)
			body, _ := json.Marshal(map[string]any{"@id": hive + "/" + v + ".json", "catalogEntry": leaf["catalogEntry"].(map[string]any)["@id"], "listed": listed,
				"packageContent": content, "published": published, "registration": hive + "/index.json"})
			u.PutHive(hivePath+lower+"/"+v+".json", body)
		}
		index, _ := json.Marshal(map[string]any{"@id": hive + "/index.json", "@type": []string{"catalog:CatalogRoot", "PackageRegistration"}, "count": 1,
			"items": []any{map[string]any{"@id": hive + "/index.json#page/" + versions[0] + "/" + versions[len(versions)-1], "@type": "catalog:CatalogPage",
				"count": len(leaves), "items": leaves, "lower": versions[0], "upper": versions[len(versions)-1], "parent": hive + "/index.json"}}})
		u.PutHive(hivePath+lower+"/index.json", index)
	}
}

// PutHive serves a registration document, gzip-encoded in a gzip hive.
func (u *Registry) PutHive(p string, body []byte) {
	if !strings.Contains(p, "-gz") {
		u.Put(p, "application/json", 60, body)
		return
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(body)
	_ = zw.Close()
	u.Mu.Lock()
	defer u.Mu.Unlock()
	u.Files[p] = File{Body: buf.Bytes(), ContentType: "application/json", MaxAge: 60, Header: map[string]string{"Content-Encoding": "gzip"}}
}
