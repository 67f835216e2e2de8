// Package fakeregistry serves, on 127.0.0.1 for a test, the upstream
// registries the firewall fronts, shaped as the real ones serve them: npm
// package documents and tarballs, PyPI's simple index (HTML and JSON) with
// wheels, a Go module proxy, a Maven repository, a crates.io sparse index,
// and NuGet's v3 resources (as api.nuget.org and BaGet lay them out). The
// daemon's tests use it in both tiers: in process (cmd/internal/daemon)
// and end to end with the real package managers (cmd/threatd).
package fakeregistry

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Registry is one upstream registry server; its publishing methods put a
// registry's documents and files on it (Put serves any other). It counts requests
// by path, so that tests can see what the firewall's cache spared it.
type Registry struct {
	Srv   *httptest.Server
	Mu    sync.Mutex
	Files map[string]File
	Hits  map[string]int
	// normalize resolves a request's path as static servers do (decoded,
	// then cleaned: %2e%2e and %2f reach other files) before looking it up.
	Normalize bool
	// fallback serves a path no Put published (files read from disk).
	Fallback func(p string) (File, bool)
	// Dynamic answers a path from the request and its body (a search, a
	// POST), before what Put published.
	Dynamic map[string]func(r *http.Request, body []byte) File
	exts    map[string]*extension
}

type File struct {
	Body        []byte
	ContentType string
	MaxAge      int
	// status (200 when 0) and header are sent as they are.
	Status int
	Header map[string]string
}

func New(t testing.TB) *Registry {
	u := &Registry{Files: map[string]File{}, Hits: map[string]int{}}
	u.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		u.Mu.Lock()
		if u.Normalize {
			p = path.Clean(r.URL.Path)
		}
		u.Hits[p]++
		f, ok := u.Files[p]
		if d := u.Dynamic[p]; d != nil {
			u.Mu.Unlock()
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			f, ok = d(r, body), true
			u.Mu.Lock()
		}
		// A PEP 691 JSON page where one is published, when asked for.
		if jf, jok := u.Files[p+"#json"]; jok && strings.Contains(r.Header.Get("Accept"), "application/vnd.pypi.simple.v1+json") {
			f, ok = jf, true
		}
		fallback := u.Fallback
		u.Mu.Unlock()
		if !ok && fallback != nil {
			f, ok = fallback(p)
		}
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"upstream: %s not found"}`, p)
			return
		}
		w.Header().Set("Content-Type", f.ContentType)
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", f.MaxAge))
		for k, v := range f.Header {
			w.Header().Set(k, v)
		}
		if f.Status != 0 {
			w.WriteHeader(f.Status)
		}
		_, _ = w.Write(f.Body)
	}))
	t.Cleanup(u.Srv.Close)
	return u
}

func (u *Registry) Put(p, contentType string, maxAge int, body []byte) {
	u.Mu.Lock()
	defer u.Mu.Unlock()
	u.Files[p] = File{Body: body, ContentType: contentType, MaxAge: maxAge}
}

func (u *Registry) HitsOf(p string) int {
	u.Mu.Lock()
	defer u.Mu.Unlock()
	return u.Hits[p]
}

// NPMPackage publishes an npm package with the given versions (a tarball
// each, made as npm pack makes them) and dist-tags.latest = latest.
func (u *Registry) NPMPackage(t testing.TB, name, latest string, versions ...string) {
	t.Helper()
	u.NPMPackageDeps(t, name, latest, nil, versions...)
}

// NPMPackageDeps is NPMPackage whose every version depends on deps (name →
// range), in its tarball's package.json and in the package document.
func (u *Registry) NPMPackageDeps(t testing.TB, name, latest string, deps map[string]string, versions ...string) {
	t.Helper()
	times := OldTimes(len(versions))
	u.NPMPackageAt(t, name, latest, deps, versions, times, nil)
}

// NPMPackageAt publishes an npm package whose versions were published at
// times, version v declaring the scripts scripts[v] (in its document).
func (u *Registry) NPMPackageAt(t testing.TB, name, latest string, deps map[string]string, versions []string, at []time.Time, scripts map[string]map[string]string) {
	t.Helper()
	docVersions := map[string]any{}
	times := map[string]string{"created": "2026-01-01T00:00:00.000Z", "modified": "2026-11-01T00:00:00.000Z"}
	esc := strings.Replace(name, "/", "%2f", 1)
	unscoped := path.Base(name)
	for i, v := range versions {
		tgz := NPMTarball(t, name, v, deps)
		file := unscoped + "-" + v + ".tgz"
		u.Put("/"+name+"/-/"+file, "application/octet-stream", 31536000, tgz)
		sha1sum := sha1.Sum(tgz)
		sha512sum := sha512.Sum512(tgz)
		docVersions[v] = map[string]any{"name": name, "version": v,
			"dist": map[string]any{"tarball": u.Srv.URL + "/" + name + "/-/" + file, "shasum": hex.EncodeToString(sha1sum[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:])}}
		if len(deps) > 0 {
			docVersions[v].(map[string]any)["dependencies"] = deps
		}
		if sc := scripts[v]; sc != nil {
			docVersions[v].(map[string]any)["scripts"] = sc
		}
		times[v] = at[i].UTC().Format("2006-01-02T15:04:05.000Z")
		vdoc, _ := json.Marshal(docVersions[v])
		u.Put("/"+esc+"/"+v, "application/json", 300, vdoc)
		if v == latest {
			u.Put("/"+esc+"/latest", "application/json", 300, vdoc)
		}
	}
	doc, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest},
		"versions": docVersions, "time": times})
	u.Put("/"+esc, "application/json", 300, doc)
}

// OldTimes are n publish times a day apart from 2026-01-01: versions
// long past any quarantine.
func OldTimes(n int) []time.Time {
	times := make([]time.Time, n)
	for i := range times {
		times[i] = time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)
	}
	return times
}

// NPMTarball is a package tarball: package/package.json and package/index.js.
func NPMTarball(t testing.TB, name, version string, deps ...map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	manifest := map[string]any{"name": name, "version": version, "main": "index.js"}
	if len(deps) > 0 && len(deps[0]) > 0 {
		manifest["dependencies"] = deps[0]
	}
	pj, _ := json.Marshal(manifest)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", string(pj)},
		{"package/index.js", fmt.Sprintf("module.exports = %q;\n", name+"@"+version)},
	} {
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)})
		_, _ = tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = gz.Close()
	return buf.Bytes()
}

// PyPIProject publishes a PyPI project: a Wheel per version, listed on a
// PEP 503 page with its sha256.
func (u *Registry) PyPIProject(t testing.TB, project string, versions ...string) {
	t.Helper()
	times := OldTimes(len(versions))
	u.PyPIProjectAt(t, project, versions, times)
}

// PyPIProjectAt is PyPIProject with each version's upload time, given in
// the project's JSON page (PEP 691, with PEP 700's upload-time) beside
// the HTML one.
func (u *Registry) PyPIProjectAt(t testing.TB, project string, versions []string, times []time.Time) {
	t.Helper()
	u.pypiProject(t, project, versions, times, func(v string) []byte { return Wheel(t, project, v) })
}

func (u *Registry) pypiProject(t testing.TB, project string, versions []string, times []time.Time, wheelOf func(version string) []byte) {
	t.Helper()
	var jsonFiles []map[string]any
	var page strings.Builder
	fmt.Fprintf(&page, "<!DOCTYPE html>\n<html><body><h1>Links for %s</h1>\n", project)
	for i, v := range versions {
		whl := wheelOf(v)
		file := strings.ReplaceAll(project, "-", "_") + "-" + v + "-py3-none-any.whl"
		u.Put("/files/"+file, "application/octet-stream", 31536000, whl)
		sum := sha256.Sum256(whl)
		fmt.Fprintf(&page, "<a href=\"../../files/%s#sha256=%s\" data-requires-python=\"&gt;=3.7\">%s</a><br/>\n", file, hex.EncodeToString(sum[:]), file)
		jsonFiles = append(jsonFiles, map[string]any{"filename": file, "url": "../../files/" + file, "hashes": map[string]string{"sha256": hex.EncodeToString(sum[:])},
			"requires-python": ">=3.7", "upload-time": times[i].UTC().Format("2006-01-02T15:04:05.000000Z")})
	}
	page.WriteString("</body></html>\n")
	u.Put("/simple/"+project+"/", "text/html", 600, []byte(page.String()))
	doc, _ := json.Marshal(map[string]any{"meta": map[string]any{"api-version": "1.1"}, "name": project, "versions": versions, "files": jsonFiles})
	u.Put("/simple/"+project+"/#json", "application/vnd.pypi.simple.v1+json", 600, doc)
}

// Wheel builds a pure-Python Wheel of project at version.
func Wheel(t testing.TB, project, version string) []byte {
	t.Helper()
	dist := strings.ReplaceAll(project, "-", "_")
	return wheel(t, project, version, map[string]string{dist + "/__init__.py": fmt.Sprintf("VERSION = %q\n", version)})
}

// wheel is a pure-Python wheel of project at version holding code (paths
// from the wheel's root), with its dist-info.
func wheel(t testing.TB, project, version string, code map[string]string) []byte {
	t.Helper()
	dist := strings.ReplaceAll(project, "-", "_")
	info := dist + "-" + version + ".dist-info/"
	var files []struct{ name, body string }
	names := make([]string, 0, len(code))
	for n := range code {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, struct{ name, body string }{n, code[n]})
	}
	files = append(files, []struct{ name, body string }{
		{info + "METADATA", fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", project, version)},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: threatd-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}...)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, _ := zw.Create(f.name)
		_, _ = w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(info + "RECORD,,\n")
	w, _ := zw.Create(info + "RECORD")
	_, _ = w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// GoModule publishes a module's versions in the module proxy layout
// (@v/list, .info, .mod, .zip, @latest).
func (u *Registry) GoModule(t testing.TB, mod string, versions ...string) {
	t.Helper()
	times := OldTimes(len(versions))
	u.GoModuleAt(t, mod, versions, times)
}

// GoModuleAt is GoModule with each version's .info Time.
func (u *Registry) GoModuleAt(t testing.TB, mod string, versions []string, at []time.Time) {
	t.Helper()
	u.goModule(t, mod, versions, at, nil)
}

func (u *Registry) goModule(t testing.TB, mod string, versions []string, at []time.Time, filesOf func(version string) map[string]string) {
	t.Helper()
	sorted := append([]string(nil), versions...)
	sort.Strings(sorted)
	u.Put("/"+mod+"/@v/list", "text/plain; charset=utf-8", 60, []byte(strings.Join(sorted, "\n")+"\n"))
	pkgName := path.Base(mod)
	for i, v := range versions {
		info, _ := json.Marshal(map[string]string{"Version": v, "Time": at[i].UTC().Format(time.RFC3339)})
		gomod := "module " + mod + "\n\ngo 1.21\n"
		u.Put("/"+mod+"/@v/"+v+".info", "application/json", 31536000, info)
		u.Put("/"+mod+"/@v/"+v+".mod", "text/plain; charset=utf-8", 31536000, []byte(gomod))
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		files := []struct{ name, body string }{{"go.mod", gomod}}
		if filesOf == nil {
			files = append(files, struct{ name, body string }{pkgName + ".go", fmt.Sprintf("package %s\n\n// Version is the module's version.\nconst Version = %q\n", pkgName, v)})
		} else {
			code := filesOf(v)
			names := make([]string, 0, len(code))
			for n := range code {
				if n != "go.mod" {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			for _, n := range names {
				files = append(files, struct{ name, body string }{n, code[n]})
			}
		}
		for _, f := range files {
			w, _ := zw.Create(mod + "@" + v + "/" + f.name)
			_, _ = w.Write([]byte(f.body))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		u.Put("/"+mod+"/@v/"+v+".zip", "application/zip", 31536000, buf.Bytes())
		if i == len(versions)-1 {
			u.Put("/"+mod+"/@latest", "application/json", 60, info)
		}
	}
}

// Integrity is a file's npm Integrity string (sha512, base64).
func Integrity(b []byte) string {
	sum := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}
