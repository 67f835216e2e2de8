package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The corpus (testdata/corpus/<label>/<ecosystem>/<case>/) holds each
// case's files as they would sit in the package; pack makes the archive
// its registry serves: an npm tarball (package/…), a PyPI sdist
// (<name>-<version>/… with setup.py) or wheel, a .gem (metadata.gz and
// data.tar.gz, extensions from EXTENSIONS), a .crate (<name>-<version>/…)
// or a Go module zip (<module>@v1.0.0/…). CASE.txt (where the case comes
// from) and EXTENSIONS are not packed. Nothing here is run.

// caseFiles reads a case directory's files (path → bytes).
func caseFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// pack writes files as ecosystem's archive into a new file and returns
// its path.
func pack(t testing.TB, ecosystem, name string, files map[string][]byte) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	var body []byte
	switch ecosystem {
	case "npm":
		body = tgz(t, "package/", files)
		out += ".tgz"
	case "pypi":
		if _, ok := files["setup.py"]; ok {
			body = tgz(t, name+"-1.0.0/", files)
			out += "-1.0.0.tar.gz"
		} else {
			body = zipOf(t, "", files)
			out += "-1.0.0-py3-none-any.whl"
		}
	case "rubygems":
		body = gem(t, name, files)
		out += "-1.0.0.gem"
	case "crates.io":
		body = tgz(t, name+"-1.0.0/", files)
		out += "-1.0.0.crate"
	case "go":
		body = zipOf(t, "example.com/"+name+"@v1.0.0/", files)
		out += "@v1.0.0.zip"
	case "vscode":
		// A .vsix: the extension's files under extension/, beside the
		// package's own manifest.
		inner := map[string][]byte{}
		for n, b := range files {
			inner["extension/"+n] = b
		}
		inner["extension.vsixmanifest"] = []byte(`<?xml version="1.0" encoding="utf-8"?><PackageManifest Version="2.0.0"/>`)
		body = zipOf(t, "", inner)
		out += "-1.0.0.vsix"
	default:
		t.Fatalf("no packer for %s", ecosystem)
	}
	if err := os.WriteFile(out, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

var packed = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// skipped are a case's files that are not the package's.
func skipped(name string) bool { return name == "CASE.txt" || name == "EXTENSIONS" }

func sortedNames(files map[string][]byte) []string {
	var names []string
	for n := range files {
		if !skipped(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func tarOf(t testing.TB, prefix string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range sortedNames(files) {
		if err := tw.WriteHeader(&tar.Header{Name: prefix + n, Mode: 0o644, Size: int64(len(files[n])), ModTime: packed, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tgz(t testing.TB, prefix string, files map[string][]byte) []byte {
	t.Helper()
	return gz(t, tarOf(t, prefix, files))
}

func zipOf(t testing.TB, prefix string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range sortedNames(files) {
		w, err := zw.Create(prefix + n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(files[n])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gem is a .gem: a plain tar of metadata.gz (the gemspec's YAML) and
// data.tar.gz (the files).
func gem(t testing.TB, name string, files map[string][]byte) []byte {
	t.Helper()
	meta := "--- !ruby/object:Gem::Specification\nname: " + name + "\nversion: !ruby/object:Gem::Version\n  version: 1.0.0\nplatform: ruby\n"
	if ext := strings.TrimSpace(string(files["EXTENSIONS"])); ext != "" {
		meta += "extensions:\n"
		for _, e := range strings.Fields(ext) {
			meta += "- " + e + "\n"
		}
	} else {
		meta += "extensions: []\n"
	}
	var fileList []string
	for _, n := range sortedNames(files) {
		fileList = append(fileList, "- "+n)
	}
	meta += "files:\n" + strings.Join(fileList, "\n") + "\n"
	return tarOf(t, "", map[string][]byte{
		"metadata.gz":       gz(t, []byte(meta)),
		"data.tar.gz":       tgz(t, "", files),
		"checksums.yaml.gz": gz(t, []byte("---\n")),
	})
}
