package scan

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/threatd/threatd/core"
)

// parseGoMod reads go.mod: every required module at its version, or at its
// replacement when a replace directive names another module version. A
// module replaced by a local folder is skipped, named.
func parseGoMod(data []byte, f *File) error {
	mf, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return err
	}
	if mf.Module == nil && len(mf.Require) == 0 {
		return errors.New("it has no module or require directive")
	}
	replaced := map[string]*modfile.Replace{}
	for _, r := range mf.Replace {
		replaced[r.Old.Path+"@"+r.Old.Version] = r
	}
	for _, r := range mf.Require {
		line := 0
		if r.Syntax != nil {
			line = r.Syntax.Start.Line
		}
		path, version := r.Mod.Path, r.Mod.Version
		rep := replaced[path+"@"+version]
		if rep == nil {
			rep = replaced[path+"@"]
		}
		if rep != nil {
			if rep.New.Version == "" {
				f.skip(path, line, "replaced by the local folder "+rep.New.Path)
				continue
			}
			path, version = rep.New.Path, rep.New.Version
		}
		f.add(core.RegistryGo, path, version, line)
	}
	return nil
}

// parseGoSum reads go.sum: every module version whose content (not only
// its go.mod) is listed, which is every module the build downloaded.
func parseGoSum(data []byte, f *File) error {
	for n, text := range lines(data) {
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 || !strings.HasPrefix(fields[2], "h1:") {
			return fmt.Errorf("line %d: %q is not \"<module> <version> h1:<hash>\"", n, clip(text))
		}
		if strings.HasSuffix(fields[1], "/go.mod") {
			continue
		}
		f.add(core.RegistryGo, fields[0], fields[1], n)
	}
	return nil
}

// parseCargoLock reads Cargo.lock: crates from crates.io. Workspace crates
// (no source), git crates and other registries' crates are skipped, named.
func parseCargoLock(data []byte, f *File) error {
	pkgs := tomlPackages(data)
	if len(pkgs) == 0 && !bytes.Contains(data, []byte("version")) {
		return errors.New("it has no [[package]] table")
	}
	for _, p := range pkgs {
		name, source := p.fields["name"], p.fields["source"]
		switch {
		case name == "":
			f.skip("", p.line, "a [[package]] without a name")
		case source == "":
			f.skip(name, p.line, "a crate of the workspace itself")
		case strings.HasPrefix(source, "registry+https://github.com/rust-lang/crates.io-index"),
			strings.HasPrefix(source, "sparse+https://index.crates.io/"):
			f.add(core.RegistryCrates, name, p.fields["version"], p.line)
		default:
			f.skip(name, p.line, "not from crates.io ("+source+")")
		}
	}
	return nil
}

var gemSpec = regexp.MustCompile(`^    ([^ (]+) \(([^)]+)\)\s*$`)

// parseGemfileLock reads Gemfile.lock: the specs of its GEM sections. Gems
// of GIT and PATH sections are skipped, named. A platform suffix
// (nokogiri (1.16.0-x86_64-linux)) is not part of the version.
func parseGemfileLock(data []byte, f *File) error {
	section, sections := "", 0
	for n, t := range lines(data) {
		if t != "" && t[0] != ' ' {
			section = strings.TrimSpace(t)
			sections++
			continue
		}
		m := gemSpec.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		switch section {
		case "GEM":
			version := m[2]
			if i := strings.IndexByte(version, '-'); i > 0 {
				version = version[:i]
			}
			f.add(core.RegistryRubyGems, m[1], version, n)
		case "GIT", "PATH":
			f.skip(m[1], n, "from a "+section+" source, not rubygems.org")
		}
	}
	if sections == 0 {
		return errors.New("it has no GEM, GIT or PATH section")
	}
	return nil
}

// parseComposerLock reads composer.lock: packages and packages-dev.
// Packages installed from a path are skipped, named.
func parseComposerLock(data []byte, f *File) error {
	type pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Dist    struct {
			Type string `json:"type"`
		} `json:"dist"`
	}
	var lock struct {
		Packages    *[]pkg `json:"packages"`
		PackagesDev []pkg  `json:"packages-dev"`
	}
	if err := decodeJSON(data, &lock); err != nil {
		return err
	}
	if lock.Packages == nil {
		return errors.New("it has no packages list")
	}
	lines := objectLines(data)
	for key, list := range map[string][]pkg{"packages": *lock.Packages, "packages-dev": lock.PackagesDev} {
		for i, p := range list {
			list, _ := lines.find(root, key)
			line := lines.line(list.ord, strconv.Itoa(i))
			if p.Dist.Type == "path" {
				f.skip(p.Name, line, "installed from a local path")
				continue
			}
			f.add(core.RegistryPackagist, p.Name, p.Version, line)
		}
	}
	return nil
}
