package rules

import (
	"bytes"
	"path"
	"slices"
	"strings"

	"github.com/threatd/threatd/plugins/archive"
)

// appliesTo says whether a match counts in the file at p: its rule's
// path_include globs (none: every file) and path_exclude globs, matched
// against the file's name and its whole path.
func appliesTo(m Match, p string) bool {
	name := path.Base(p[strings.LastIndex(p, "!")+1:])
	inner := p[strings.LastIndex(p, "!")+1:]
	globs := func(list string) bool {
		for g := range strings.SplitSeq(list, ",") {
			g = strings.TrimSpace(g)
			if g == "" {
				continue
			}
			if ok, _ := path.Match(g, name); ok {
				return true
			}
			if ok, _ := path.Match(g, inner); ok {
				return true
			}
		}
		return false
	}
	if m.PathInclude != "" && !globs(m.PathInclude) {
		return false
	}
	return m.PathExclude == "" || !globs(m.PathExclude)
}

// read says whether a file of an ecosystem's archive is read: what can
// run (code, install scripts, manifests) and the archives that may hold
// it. Documentation never runs, nor do a Go module's tests and testdata
// (go build compiles neither for a dependent), nor a package's CI
// workflows, Dockerfiles and Makefiles (no package manager runs them).
func read(ecosystem, p string) bool {
	inner := p[strings.LastIndex(p, "!")+1:]
	name := strings.ToLower(path.Base(inner))
	if isDoc(p) {
		return false
	}
	if ecosystem == "go" && (strings.Contains("/"+inner, "/testdata/") || strings.HasSuffix(name, "_test.go") || strings.Contains("/"+inner, "/vendor/")) {
		return false
	}
	if archive.Nested(name) {
		return true // opened when it is an archive
	}
	if slices.Contains(binaryExtensions, path.Ext(name)) || strings.Contains(name, ".so.") || strings.Contains(name, ".dylib.") {
		return false // never read by the rules: not unpacked, so not bounded by max_file_bytes
	}
	for _, dir := range []string{".github/", ".gitlab/", ".circleci/"} {
		if strings.Contains("/"+inner, "/"+dir) {
			return false
		}
	}
	if strings.HasPrefix(name, "dockerfile") || name == "makefile" || name == "taskfile.yaml" || name == "taskfile.yml" {
		return false
	}
	ext := path.Ext(name)
	switch ecosystem {
	case "go":
		return ext == ".go"
	case "pypi":
		return slices.Contains([]string{".py", ".pyw", ".pyx", ".pth", ".pyi"}, ext) || name == "setup.cfg" || name == "pyproject.toml" || name == "metadata" || name == "record" || name == "entry_points.txt"
	case "rubygems":
		return slices.Contains([]string{".rb", ".gemspec", ".rake"}, ext) || name == "rakefile" || name == "gemfile" || name == "metadata"
	case "crates.io":
		return ext == ".rs" || name == "cargo.toml"
	case "npm", "vscode", "openvsx":
		if ext == ".json" {
			return name == "package.json"
		}
		if slices.Contains([]string{".yml", ".yaml", ".lock", ".toml", ".ini", ".csv", ".xml", ".snap"}, ext) {
			return false
		}
		return true
	}
	return true
}

// binaryExtensions are compiled code, fonts, images and media: the rules
// read text, so these are counted and skipped.
var binaryExtensions = []string{".so", ".dll", ".dylib", ".node", ".wasm", ".exe", ".pyd", ".a", ".o", ".lib", ".bin", ".dat",
	".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".pdf", ".db", ".sqlite"}

// docExtensions are documentation: read by people, never run (a README's
// "curl … | sh" is an instruction, not an install step).
var docExtensions = []string{".md", ".mdx", ".markdown", ".rst", ".txt", ".adoc", ".html", ".htm", ".map", ".css", ".svg", ".d.ts", ".d.mts", ".d.cts"}

// isDoc says whether a file is documentation (docExtensions, or a
// LICENSE, CHANGELOG, AUTHORS or NOTICE file).
func isDoc(p string) bool {
	name := strings.ToLower(path.Base(p[strings.LastIndex(p, "!")+1:]))
	for _, ext := range docExtensions {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	for _, pre := range []string{"license", "licence", "changelog", "changes", "authors", "notice", "history"} {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// scanned says whether the rules read a file: text (no NUL byte in its
// first 8 KiB), or code whatever it holds (a NUL early in a script does
// not hide it).
func scanned(name string, data []byte) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".js", ".cjs", ".mjs", ".ts", ".jsx", ".tsx", ".json", ".py", ".pyw", ".pth", ".rb", ".rs", ".go", ".sh", ".bash", ".bat", ".cmd", ".ps1":
		return true
	}
	return bytes.IndexByte(data[:min(len(data), 8192)], 0) < 0
}
