package fakeregistry

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Extension publishes an editor extension (publisher.name) on both
// galleries u serves, shaped as they serve them: Open VSX under /openvsx
// (its registry API, its files redirected to its storage at
// /openvsx-blob, and the VS Code gallery API it serves) and the Visual
// Studio Marketplace under /marketplace/_apis/public/gallery. versions are
// oldest first, published at.
func (u *Registry) Extension(t testing.TB, publisher, name string, versions []string, at []time.Time) {
	t.Helper()
	id := publisher + "." + name
	ov := u.Srv.URL + "/openvsx"
	u.Mu.Lock()
	if u.Dynamic == nil {
		u.Dynamic = map[string]func(*http.Request, []byte) File{}
	}
	if u.exts == nil {
		u.exts = map[string]*extension{}
	}
	e := &extension{publisher: publisher, name: name, versions: versions, at: at}
	u.exts[id] = e
	u.Dynamic["/openvsx/vscode/gallery/extensionquery"] = func(r *http.Request, body []byte) File { return u.galleryAnswer(body, "openvsx") }
	u.Dynamic["/marketplace/_apis/public/gallery/extensionquery"] = func(r *http.Request, body []byte) File { return u.galleryAnswer(body, "marketplace") }
	u.Dynamic["/openvsx/api/-/search"] = func(r *http.Request, _ []byte) File { return u.ovsxSearch(r) }
	u.Dynamic["/openvsx/api/-/query"] = func(r *http.Request, _ []byte) File { return u.ovsxQuery(r) }
	u.Mu.Unlock()
	for i, v := range versions {
		vsix := VSIX(t, publisher, name, v, "")
		file := id + "-" + v + ".vsix"
		u.Put("/openvsx-blob/resources/"+publisher+"/"+name+"/"+v+"/"+file, "application/octet-stream", 31536000, vsix)
		u.Mu.Lock()
		u.Files["/openvsx/api/"+publisher+"/"+name+"/"+v+"/file/"+file] = File{Status: http.StatusFound, ContentType: "text/plain",
			Header: map[string]string{"Location": u.Srv.URL + "/openvsx-blob/resources/" + publisher + "/" + name + "/" + v + "/" + file}}
		u.Mu.Unlock()
		u.Put("/openvsx/vscode/asset/"+publisher+"/"+name+"/"+v+"/Microsoft.VisualStudio.Services.VSIXPackage", "application/octet-stream", 31536000, vsix)
		u.Put("/openvsx/vscode/gallery/publishers/"+publisher+"/vsextensions/"+name+"/"+v+"/vspackage", "application/octet-stream", 31536000, vsix)
		u.Put("/openvsx/vscode/unpkg/"+publisher+"/"+name+"/"+v+"/extension/package.json", "application/json", 31536000, []byte(`{"name":"`+name+`","version":"`+v+`"}`))
		u.Put("/marketplace/_apis/public/gallery/publishers/"+publisher+"/vsextensions/"+name+"/"+v+"/vspackage", "application/octet-stream", 31536000, vsix)
		u.Put("/marketplace/_apis/public/gallery/publisher/"+publisher+"/extension/"+name+"/"+v+"/assetbyname/Microsoft.VisualStudio.Services.VSIXPackage", "application/octet-stream", 31536000, vsix)
		doc, _ := json.Marshal(e.doc(ov, i))
		u.Put("/openvsx/api/"+publisher+"/"+name+"/"+v, "application/json", 300, doc)
		if i == len(versions)-1 {
			u.Put("/openvsx/api/"+publisher+"/"+name, "application/json", 300, doc)
			u.Put("/openvsx/api/"+publisher+"/"+name+"/latest", "application/json", 300, doc)
		}
	}
}

type extension struct {
	publisher, name string
	versions        []string
	at              []time.Time
}

// ordered is a JSON object written in its keys' order (Open VSX lists
// allVersions newest first).
type ordered [][2]string

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[0])
		v, _ := json.Marshal(kv[1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// doc is Open VSX's document of version i (ExtensionJson).
func (e *extension) doc(root string, i int) map[string]any {
	v := e.versions[i]
	api := root + "/api/" + e.publisher + "/" + e.name
	all := ordered{{"latest", api + "/latest"}}
	for j := len(e.versions) - 1; j >= 0; j-- {
		all = append(all, [2]string{e.versions[j], api + "/" + e.versions[j]})
	}
	file := e.publisher + "." + e.name + "-" + v + ".vsix"
	blob := strings.Replace(root, "/openvsx", "/openvsx-blob", 1) + "/resources/" + e.publisher + "/" + e.name + "/" + v + "/"
	return map[string]any{"namespaceUrl": root + "/api/" + e.publisher, "reviewsUrl": api + "/reviews",
		"files": map[string]string{"download": api + "/" + v + "/file/" + file, "manifest": blob + "package.json", "icon": blob + "icon.png"},
		"name":  e.name, "namespace": e.publisher, "targetPlatform": "universal", "version": v, "preRelease": false,
		"allVersions": all, "allVersionsUrl": api + "/versions", "versionAlias": []string{"latest"},
		"timestamp": e.at[i].UTC().Format("2006-01-02T15:04:05.000000Z"), "displayName": e.name, "description": "A fake extension",
		"engines": map[string]string{"vscode": "^1.80.0"}, "downloadable": true, "url": api + "/" + v,
		"homepage": "https://github.invalid/" + e.publisher + "/" + e.name}
}

// galleryVersion is a version as the VS Code gallery answers it.
func (e *extension) galleryVersion(root, kind string, i int) map[string]any {
	v := e.versions[i]
	asset := root + "/vscode/asset/" + e.publisher + "/" + e.name + "/" + v
	fallback := asset
	if kind == "marketplace" {
		asset = strings.Replace(root, "/marketplace/_apis/public/gallery", "/marketplace-cdn", 1) + "/extensions/" + e.publisher + "/" + e.name + "/" + v + "/1700000000"
		fallback = root + "/publisher/" + e.publisher + "/extension/" + e.name + "/" + v + "/assetbyname"
	}
	return map[string]any{"version": v, "flags": "validated", "lastUpdated": e.at[i].UTC().Format("2006-01-02T15:04:05.000Z"),
		"assetUri": asset, "fallbackAssetUri": fallback,
		"files": []map[string]string{{"assetType": "Microsoft.VisualStudio.Services.VSIXPackage", "source": asset + "/Microsoft.VisualStudio.Services.VSIXPackage"},
			{"assetType": "Microsoft.VisualStudio.Code.Manifest", "source": asset + "/Microsoft.VisualStudio.Code.Manifest"}},
		"properties": []map[string]string{{"key": "Microsoft.VisualStudio.Code.Engine", "value": "^1.80.0"}}}
}

// galleryAnswer answers an extensionquery: the extensions its
// ExtensionName criteria (7) name, or, for a search text (10), every one.
func (u *Registry) galleryAnswer(body []byte, kind string) File {
	var q struct {
		Filters []struct {
			Criteria []struct {
				FilterType int    `json:"filterType"`
				Value      string `json:"value"`
			} `json:"criteria"`
		} `json:"filters"`
		Flags int `json:"flags"`
	}
	if json.Unmarshal(body, &q) != nil || len(q.Filters) == 0 {
		return File{Status: http.StatusBadRequest, ContentType: "application/json", Body: []byte(`{"message":"bad query"}`)}
	}
	root := u.Srv.URL + "/openvsx"
	if kind == "marketplace" {
		root = u.Srv.URL + "/marketplace/_apis/public/gallery"
	}
	u.Mu.Lock()
	defer u.Mu.Unlock()
	var exts []map[string]any
	for id, e := range u.exts {
		match := false
		for _, c := range q.Filters[0].Criteria {
			match = match || (c.FilterType == 7 && strings.EqualFold(c.Value, id)) || c.FilterType == 10
		}
		if !match {
			continue
		}
		var vs []map[string]any
		for i := len(e.versions) - 1; i >= 0; i-- {
			vs = append(vs, e.galleryVersion(root, kind, i))
			if q.Flags&0x200 != 0 {
				break
			}
		}
		exts = append(exts, map[string]any{"publisher": map[string]any{"publisherId": "0000-" + e.publisher, "publisherName": e.publisher, "displayName": e.publisher, "flags": "verified"},
			"extensionId": "0000-" + id, "extensionName": e.name, "displayName": e.name, "flags": "validated, public",
			"lastUpdated": e.at[len(e.at)-1].UTC().Format("2006-01-02T15:04:05.000Z"), "shortDescription": "A fake extension", "versions": vs})
	}
	b, _ := json.Marshal(map[string]any{"results": []map[string]any{{"extensions": exts, "pagingToken": nil,
		"resultMetadata": []map[string]any{{"metadataType": "ResultCount", "metadataItems": []map[string]any{{"name": "TotalCount", "count": len(exts)}}}}}}})
	return File{Body: b, ContentType: "application/json; charset=utf-8", MaxAge: 300}
}

// ovsxSearch answers -/search: every extension, its latest version.
func (u *Registry) ovsxSearch(r *http.Request) File {
	root := u.Srv.URL + "/openvsx"
	u.Mu.Lock()
	defer u.Mu.Unlock()
	var entries []map[string]any
	for _, e := range u.exts {
		i := len(e.versions) - 1
		api := root + "/api/" + e.publisher + "/" + e.name
		entry := map[string]any{"url": api, "files": map[string]string{"download": api + "/" + e.versions[i] + "/file/" + e.publisher + "." + e.name + "-" + e.versions[i] + ".vsix"},
			"name": e.name, "namespace": e.publisher, "version": e.versions[i], "timestamp": e.at[i].UTC().Format("2006-01-02T15:04:05.000000Z"), "displayName": e.name}
		if r.URL.Query().Get("includeAllVersions") == "true" {
			var all []map[string]any
			for j := len(e.versions) - 1; j >= 0; j-- {
				all = append(all, map[string]any{"url": api + "/" + e.versions[j], "version": e.versions[j], "engines": map[string]string{"vscode": "^1.80.0"}})
			}
			entry["allVersions"] = all
		}
		entries = append(entries, entry)
	}
	b, _ := json.Marshal(map[string]any{"offset": 0, "totalSize": len(entries), "extensions": entries})
	return File{Body: b, ContentType: "application/json", MaxAge: 300}
}

// ovsxQuery answers -/query by extensionId, each version's document with
// includeAllVersions, else the latest's.
func (u *Registry) ovsxQuery(r *http.Request) File {
	q := r.URL.Query()
	root := u.Srv.URL + "/openvsx"
	u.Mu.Lock()
	defer u.Mu.Unlock()
	docs := []map[string]any{}
	for id, e := range u.exts {
		if want := q.Get("extensionId"); want != "" && !strings.EqualFold(want, id) {
			continue
		}
		for i := len(e.versions) - 1; i >= 0; i-- {
			docs = append(docs, e.doc(root, i))
			if q.Get("includeAllVersions") != "true" {
				break
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"extensions": docs})
	return File{Body: b, ContentType: "application/json", MaxAge: 300}
}

// VSIX is an extension package as vsce makes it: [Content_Types].xml,
// extension.vsixmanifest, extension/package.json and extension/extension.js
// (with pad bytes of padding, for size); inert.
func VSIX(t testing.TB, publisher, name, version, pad string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="utf-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension=".json" ContentType="application/json"/><Default Extension=".js" ContentType="application/javascript"/><Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>`},
		{"extension.vsixmanifest", fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011"><Metadata><Identity Language="en-US" Id="%s" Version="%s" Publisher="%s"/><DisplayName>%s</DisplayName></Metadata><Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation><Assets><Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/></Assets></PackageManifest>`, name, version, publisher, name)},
		{"extension/package.json", fmt.Sprintf(`{"name":%q,"publisher":%q,"version":%q,"engines":{"vscode":"^1.80.0"},"main":"./extension.js","activationEvents":["onCommand:%s.hello"]}`, name, publisher, version, name)},
		{"extension/extension.js", "exports.activate = function () { return 'hello from " + name + "'; };\n" + pad},
	}
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
