package fakeregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// NPMRelease is one version of an npm package whose tarball holds Files
// (paths below package/; package.json as given, its scripts listed in the
// package document too), published at At.
type NPMRelease struct {
	Version string
	At      time.Time
	Files   map[string]string
}

// NPMPackageFiles publishes an npm package whose versions' tarballs hold
// the files given; the last release is dist-tags.latest.
func (u *Registry) NPMPackageFiles(t testing.TB, name string, releases []NPMRelease) {
	t.Helper()
	docVersions := map[string]any{}
	times := map[string]string{"created": "2026-01-01T00:00:00.000Z", "modified": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}
	esc := strings.Replace(name, "/", "%2f", 1)
	for _, r := range releases {
		files := map[string]string{}
		for p, b := range r.Files {
			files[p] = b
		}
		var manifest map[string]any
		if pj, ok := files["package.json"]; ok {
			if err := json.Unmarshal([]byte(pj), &manifest); err != nil {
				t.Fatalf("package.json of %s@%s: %v", name, r.Version, err)
			}
		} else {
			manifest = map[string]any{}
		}
		manifest["name"], manifest["version"] = name, r.Version
		pj, _ := json.Marshal(manifest)
		files["package.json"] = string(pj)
		tgz := tarball(t, files)
		file := path.Base(name) + "-" + r.Version + ".tgz"
		u.Put("/"+name+"/-/"+file, "application/octet-stream", 31536000, tgz)
		sha1sum, sha512sum := sha1.Sum(tgz), sha512.Sum512(tgz)
		doc := map[string]any{"name": name, "version": r.Version,
			"dist": map[string]any{"tarball": u.Srv.URL + "/" + name + "/-/" + file, "shasum": hex.EncodeToString(sha1sum[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:])}}
		if sc, ok := manifest["scripts"]; ok {
			doc["scripts"] = sc
		}
		docVersions[r.Version] = doc
		times[r.Version] = r.At.UTC().Format("2006-01-02T15:04:05.000Z")
		vdoc, _ := json.Marshal(doc)
		u.Put("/"+esc+"/"+r.Version, "application/json", 300, vdoc)
	}
	latest := releases[len(releases)-1].Version
	doc, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest}, "versions": docVersions, "time": times})
	u.Put("/"+esc, "application/json", 300, doc)
}

// tarball packs files below package/ as npm pack does.
func tarball(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := files[n]
		_ = tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: 0o644, Size: int64(len(b)), ModTime: time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)})
		_, _ = tw.Write([]byte(b))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = gz.Close()
	return buf.Bytes()
}

// ReadCase reads an analysis corpus case's files (a directory of the
// rules analyzer's testdata), CASE.txt left out.
func ReadCase(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "CASE.txt" {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Release is one version of a PyPI project or Go module whose wheel or
// module zip holds Files (paths from the archive's root; for a module,
// go.mod is made), published at At.
type Release struct {
	Version string
	At      time.Time
	Files   map[string]string
}

// PyPIProjectFiles publishes a PyPI project whose versions' wheels hold
// the files given, on the HTML and JSON pages as PyPIProjectAt does.
func (u *Registry) PyPIProjectFiles(t testing.TB, project string, releases []Release) {
	t.Helper()
	versions, times := make([]string, len(releases)), make([]time.Time, len(releases))
	for i, r := range releases {
		versions[i], times[i] = r.Version, r.At
	}
	u.pypiProject(t, project, versions, times, func(v string) []byte {
		for _, r := range releases {
			if r.Version == v {
				return wheel(t, project, v, r.Files)
			}
		}
		return nil
	})
}

// GoModuleFiles publishes a module whose versions' zips hold the files
// given, in the module proxy layout as GoModuleAt does.
func (u *Registry) GoModuleFiles(t testing.TB, mod string, releases []Release) {
	t.Helper()
	versions, times := make([]string, len(releases)), make([]time.Time, len(releases))
	for i, r := range releases {
		versions[i], times[i] = r.Version, r.At
	}
	u.goModule(t, mod, versions, times, func(v string) map[string]string {
		for _, r := range releases {
			if r.Version == v {
				return r.Files
			}
		}
		return nil
	})
}
