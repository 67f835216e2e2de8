package scan

import (
	"regexp"
	"strings"

	"github.com/threatd/threatd/core"
)

var requirement = regexp.MustCompile(`^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$`)

// parseRequirements reads a pip requirements file. A requirement pinned
// with == (or ===) is checked at its version; any other (>=, ~=, a range,
// a wildcard, none) pins no version, and is checked against the reports
// that name every version. Options (-r, -c, --index-url) are not followed;
// editable, URL and path requirements are skipped, named.
func parseRequirements(data []byte, f *File) error {
	lines := logicalLines(data)
	for _, l := range lines {
		text := l.text
		if i := commentStart(text); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "-") {
			if strings.HasPrefix(text, "-e") || strings.HasPrefix(text, "--editable") {
				f.skip(text, l.line, "an editable requirement (a local or VCS checkout), not a registry package")
			}
			continue
		}
		if marker := strings.IndexByte(text, ';'); marker >= 0 {
			text = strings.TrimSpace(text[:marker])
		}
		m := requirement.FindStringSubmatch(text)
		if m == nil {
			f.skip(text, l.line, "not a requirement scan can read (a path or URL?)")
			continue
		}
		name, spec := m[1], strings.TrimSpace(m[3])
		if i := strings.Index(spec, " --"); i >= 0 {
			spec = strings.TrimSpace(spec[:i]) // per-requirement options: --hash=…
		}
		if strings.HasPrefix(spec, "@") {
			f.skip(name, l.line, "a direct URL requirement, not a registry package")
			continue
		}
		version := ""
		for _, op := range []string{"===", "=="} {
			if v, ok := strings.CutPrefix(spec, op); ok {
				v = strings.TrimSpace(v)
				if v != "" && !strings.ContainsAny(v, ",*<>=!~ ") {
					version = v
				}
				break
			}
		}
		f.add(core.RegistryPyPI, name, version, l.line)
	}
	return nil
}

// commentStart is where a requirements comment starts: a # at the start
// of the line or after whitespace.
func commentStart(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t') {
			return i
		}
	}
	return -1
}

type logicalLine struct {
	text string
	line int
}

// logicalLines joins lines continued with a trailing backslash, keeping
// the first line's number.
func logicalLines(data []byte) []logicalLine {
	var out []logicalLine
	var cur *logicalLine
	for n, t := range lines(data) {
		if cur == nil {
			out = append(out, logicalLine{line: n})
			cur = &out[len(out)-1]
		}
		if s, ok := strings.CutSuffix(t, `\`); ok {
			cur.text += s + " "
			continue
		}
		cur.text += t
		cur = nil
	}
	return out
}

// tomlPackages reads the [[package]] tables of a TOML lockfile (poetry.lock,
// Cargo.lock) line by line: their top-level keys, and the keys of their
// sub-tables as "<table>.<key>" ([package.source] type → source.type).
type tomlPackage struct {
	fields map[string]string
	line   int
}

func tomlPackages(data []byte) []tomlPackage {
	var out []tomlPackage
	var cur *tomlPackage
	sub := ""
	for n, t := range lines(data) {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case t == "[[package]]":
			out = append(out, tomlPackage{fields: map[string]string{}, line: n})
			cur, sub = &out[len(out)-1], ""
		case strings.HasPrefix(t, "[[") || strings.HasPrefix(t, "["):
			name := strings.Trim(t, "[] ")
			if s, ok := strings.CutPrefix(name, "package."); ok && cur != nil && !strings.HasPrefix(t, "[[") {
				sub = s + "."
			} else {
				cur = nil
			}
		case cur != nil:
			k, v, ok := strings.Cut(t, "=")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			if strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "'") {
				if end := strings.IndexByte(v[1:], v[0]); end >= 0 {
					v = unquote(v[:end+2])
				}
			}
			cur.fields[sub+strings.TrimSpace(k)] = v
		}
	}
	return out
}

// parsePoetryLock reads poetry.lock. Packages from git, a folder, a file
// or a URL are skipped, named; a package from another index (legacy) is
// checked as PyPI's: the name a report names is the risk either way.
func parsePoetryLock(data []byte, f *File) error {
	for _, p := range tomlPackages(data) {
		name, version := p.fields["name"], p.fields["version"]
		if name == "" {
			f.skip("", p.line, "a [[package]] without a name")
			continue
		}
		switch t := p.fields["source.type"]; t {
		case "git", "directory", "file", "url":
			f.skip(name, p.line, "not from a package index (source "+t+")")
			continue
		}
		f.add(core.RegistryPyPI, name, version, p.line)
	}
	return nil
}
