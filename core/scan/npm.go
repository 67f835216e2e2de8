package scan

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/threatd/threatd/core"
)

// npmLocal says whether an npm version or resolved URL names something
// other than a registry release: a local folder, a git checkout, a link.
func npmLocal(s string) bool {
	for _, p := range []string{"file:", "link:", "git+", "git:", "github:", "gitlab:", "bitbucket:", "workspace:", "portal:", "patch:", "exec:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

type npmLockEntry struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Resolved string `json:"resolved"`
	Link     bool   `json:"link"`
}

type npmLockDep struct {
	Version      string                `json:"version"`
	Resolved     string                `json:"resolved"`
	Dependencies map[string]npmLockDep `json:"dependencies"`
}

// parseNPMLock reads package-lock.json and npm-shrinkwrap.json, versions
// 1 (dependencies, nested) to 3 (packages, keyed by node_modules path).
func parseNPMLock(data []byte, f *File) error {
	var lock struct {
		LockfileVersion *int                    `json:"lockfileVersion"`
		Packages        map[string]npmLockEntry `json:"packages"`
		Dependencies    map[string]npmLockDep   `json:"dependencies"`
	}
	if err := decodeJSON(data, &lock); err != nil {
		return err
	}
	if lock.LockfileVersion == nil {
		return errors.New("it has no lockfileVersion")
	}
	if *lock.LockfileVersion < 1 || *lock.LockfileVersion > 3 {
		return fmt.Errorf("lockfileVersion %d is not one of 1, 2, 3", *lock.LockfileVersion)
	}
	lines := objectLines(data)
	if lock.Packages != nil {
		packages, _ := lines.find(root, "packages")
		for _, key := range slices.Sorted(maps.Keys(lock.Packages)) {
			e := lock.Packages[key]
			line := lines.line(packages.ord, key)
			if key == "" {
				continue // the project itself
			}
			i := strings.LastIndex(key, "node_modules/")
			if i < 0 {
				f.skip(key, line, "a workspace folder of the project, not a registry package")
				continue
			}
			name := key[i+len("node_modules/"):]
			switch {
			case e.Link:
				f.skip(name, line, "a link to a local folder ("+e.Resolved+"), not a registry package")
				continue
			case npmLocal(e.Version) || npmLocal(e.Resolved):
				f.skip(name, line, "not from the registry ("+firstNonEmpty(e.Resolved, e.Version)+")")
				continue
			}
			if e.Name != "" {
				name = e.Name // an alias: node_modules/<alias> holds <name>
			}
			f.add(core.RegistryNPM, name, e.Version, line)
		}
		return nil
	}
	// walk reads deps, the dependencies member of the container parent.
	var walk func(deps map[string]npmLockDep, parent int32)
	walk = func(deps map[string]npmLockDep, parent int32) {
		list, _ := lines.find(parent, "dependencies")
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			d := deps[name]
			node, ok := lines.find(list.ord, name)
			if !ok {
				node.ord = -1 // no lines below (never for a document objectLines read)
			}
			line := int(node.line)
			version := d.Version
			if real, ok := strings.CutPrefix(version, "npm:"); ok {
				if at := strings.LastIndex(real, "@"); at > 0 {
					name, version = real[:at], real[at+1:]
				}
			}
			if npmLocal(version) || npmLocal(d.Resolved) || strings.Contains(version, "://") {
				f.skip(name, line, "not from the registry ("+firstNonEmpty(d.Resolved, version)+")")
			} else {
				f.add(core.RegistryNPM, name, version, line)
			}
			if len(d.Dependencies) > 0 {
				walk(d.Dependencies, node.ord)
			}
		}
	}
	walk(lock.Dependencies, root)
	return nil
}

// parseYarnLock reads yarn.lock: yarn 1's own format and yarn 2+'s YAML,
// line by line (an entry is a header line, then indented fields).
func parseYarnLock(data []byte, f *File) error {
	type entry struct {
		spec, version, resolution string
		line                      int
	}
	var cur *entry
	flush := func() {
		if cur == nil {
			return
		}
		e := cur
		cur = nil
		if e.spec == "__metadata" {
			return
		}
		name, rng := splitNPMSpec(e.spec)
		if e.resolution != "" {
			// yarn 2+: "name@npm:1.2.3"; anything else is local.
			at := strings.Index(e.resolution[1:], "@") + 1
			if at == 0 || !strings.HasPrefix(e.resolution[at+1:], "npm:") {
				f.skip(name, e.line, "not from the registry ("+e.resolution+")")
				return
			}
			name = e.resolution[:at]
			if e.version == "" {
				e.version = e.resolution[at+len("@npm:"):]
			}
		} else if real, ok := strings.CutPrefix(rng, "npm:"); ok {
			if n, _ := splitNPMSpec(real); n != "" && n != real {
				name = n
			}
		}
		if name == "" {
			f.skip(e.spec, e.line, "an entry without a package name")
			return
		}
		if npmLocal(rng) || strings.Contains(rng, "://") && !strings.HasPrefix(rng, "npm:") {
			f.skip(name, e.line, "not from the registry ("+rng+")")
			return
		}
		f.add(core.RegistryNPM, name, e.version, e.line)
	}
	for n, text := range lines(data) {
		if strings.TrimSpace(text) == "" || strings.HasPrefix(strings.TrimSpace(text), "#") {
			continue
		}
		if text[0] != ' ' && text[0] != '\t' {
			flush()
			if !strings.HasSuffix(text, ":") {
				return fmt.Errorf("line %d: %q is neither an entry's header (ending with a colon) nor an indented field", n, clip(text))
			}
			first, _, _ := strings.Cut(strings.TrimSuffix(text, ":"), ",")
			cur = &entry{spec: unquote(strings.TrimSpace(first)), line: n}
			continue
		}
		if cur == nil {
			return fmt.Errorf("line %d: an indented field outside any entry", n)
		}
		field := strings.TrimSpace(text)
		if !strings.HasPrefix(text, "  ") || strings.HasPrefix(text, "   ") {
			continue // a field of a nested block (dependencies)
		}
		key, value, _ := strings.Cut(field, " ")
		key = strings.TrimSuffix(key, ":")
		switch key {
		case "version":
			cur.version = unquote(strings.TrimSpace(value))
		case "resolution":
			cur.resolution = unquote(strings.TrimSpace(value))
		}
	}
	flush()
	return nil
}

// splitNPMSpec splits "name@range" (name may be @scope/name).
func splitNPMSpec(spec string) (name, rng string) {
	at := strings.Index(spec[min(1, len(spec)):], "@")
	if at < 0 {
		return spec, ""
	}
	at++
	return spec[:at], spec[at+1:]
}

// parsePNPMLock reads pnpm-lock.yaml, lockfile versions 5 to 9: the keys
// of its packages map name every installed package and version.
func parsePNPMLock(data []byte, f *File) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return errors.New("it is not a YAML mapping")
	}
	root := doc.Content[0]
	version := mappingValue(root, "lockfileVersion")
	if version == nil {
		return errors.New("it has no lockfileVersion")
	}
	v5 := strings.HasPrefix(version.Value, "5")
	packages := mappingValue(root, "packages")
	if packages == nil {
		return nil
	}
	if packages.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: packages is not a mapping", packages.Line)
	}
	for i := 0; i+1 < len(packages.Content); i += 2 {
		k := packages.Content[i]
		key := strings.TrimPrefix(k.Value, "/")
		if p := strings.IndexByte(key, '('); p > 0 {
			key = key[:p] // v6+: peer dependencies in parentheses
		}
		var name, ver string
		if v5 {
			slash := strings.LastIndex(key, "/")
			if slash > 0 {
				name, ver = key[:slash], key[slash+1:]
				if u := strings.IndexByte(ver, '_'); u > 0 {
					ver = ver[:u] // v5: peer dependencies after an underscore
				}
			}
		} else {
			name, ver = splitNPMSpec(key)
		}
		if name == "" || ver == "" || ver[0] < '0' || ver[0] > '9' {
			f.skip(k.Value, k.Line, "not a registry package and version")
			continue
		}
		f.add(core.RegistryNPM, name, ver, k.Line)
	}
	return nil
}

// mappingValue is the value of key in a YAML mapping node, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// decodeJSON decodes data into v, naming the line of a syntax error.
func decodeJSON(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("line %d: %v", newLineIndex(data).line(int(se.Offset)), se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("line %d: %s must be %s, not %s", newLineIndex(data).line(int(te.Offset)), firstNonEmpty(te.Field, "the document"), te.Type, te.Value)
	}
	return err
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// unquote removes one pair of double or single quotes.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		if s[0] == '"' {
			if u, err := strconv.Unquote(s); err == nil {
				return u
			}
		}
		return s[1 : len(s)-1]
	}
	return s
}

// clip shortens a line quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
