package rules

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strings"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/plugins/archive"
)

// installTime says which files of an archive run at install: the
// manifests and install hooks (package.json, setup.py, .pth files,
// extconf.rb, Rakefile, build.rs), shell and batch scripts, and the files
// npm's install scripts name, and an editor extension's main.
func installTime(manifests []archive.File) func(string) bool {
	named := map[string]bool{}
	for _, f := range manifests {
		if path.Base(f.Path) != "package.json" {
			continue
		}
		var pj struct {
			Scripts map[string]string `json:"scripts"`
			Main    string            `json:"main"`
		}
		if json.Unmarshal(f.Data, &pj) != nil {
			continue
		}
		dir := path.Dir(f.Path)
		if f.Path == "extension/package.json" && pj.Main != "" {
			// An editor extension's main runs in the editor, with the
			// user's rights, once it is activated: its install time.
			m := path.Join(dir, pj.Main)
			named[m] = true
			if path.Ext(m) == "" {
				named[m+".js"] = true
			}
		}
		for _, s := range installScripts {
			for _, word := range strings.FieldsFunc(pj.Scripts[s], func(r rune) bool { return r == ' ' || r == '&' || r == '|' || r == ';' || r == '"' || r == '\'' }) {
				if strings.Contains(word, ".") && !strings.HasPrefix(word, "-") {
					named[path.Join(dir, word)] = true
				}
			}
		}
	}
	return func(p string) bool {
		inner := p[strings.LastIndex(p, "!")+1:]
		name := strings.ToLower(path.Base(inner))
		switch {
		case named[p], name == "package.json", name == "setup.py", name == "extconf.rb", name == "rakefile", name == "build.rs":
			return true
		}
		return slices.Contains([]string{".sh", ".bash", ".bat", ".cmd", ".ps1", ".pth"}, path.Ext(name))
	}
}

// isManifest says whether a file is one the manifest rules read.
func isManifest(ecosystem, p string) bool {
	if strings.Contains(p, "!") && ecosystem != "rubygems" {
		return false // a nested archive's manifest is not the package's
	}
	base := path.Base(p)
	depth := strings.Count(p, "/")
	switch ecosystem {
	case "npm":
		return base == "package.json" && depth == 1
	case "pypi":
		return (base == "setup.py" || base == "pyproject.toml") && depth <= 1
	case "rubygems":
		return p == "metadata.gz!metadata" || p == "metadata"
	case "crates.io":
		return (base == "build.rs" || base == "Cargo.toml") && depth == 1
	case "vscode", "openvsx":
		return p == "extension/package.json"
	}
	return false
}

// installScripts are npm's scripts that run at install.
var installScripts = []string{"preinstall", "install", "postinstall"}

// manifestFindings report install-time execution: npm install scripts, a
// PyPI sdist's setup.py, RubyGems extensions, a crate's build.rs.
func manifestFindings(files []archive.File) []analysis.Finding {
	var out []analysis.Finding
	for _, f := range files {
		switch path.Base(f.Path) {
		case "package.json":
			var pj struct {
				Scripts          map[string]string `json:"scripts"`
				Main             string            `json:"main"`
				ActivationEvents []string          `json:"activationEvents"`
			}
			if json.Unmarshal(f.Data, &pj) != nil {
				continue
			}
			if f.Path == "extension/package.json" {
				// An editor extension runs no install script: what it
				// runs, it runs when the editor activates it.
				for _, ev := range pj.ActivationEvents {
					if (ev == "*" || ev == "onStartupFinished") && pj.Main != "" {
						out = append(out, analysis.Finding{Rule: "extension_startup", Severity: analysis.SeverityLow, File: f.Path, Line: lineOf(f.Data, `"`+ev+`"`),
							Excerpt: analysis.Excerpt("activationEvents: " + ev + ", main: " + pj.Main), Description: "runs its code whenever the editor starts, before anything is asked of it"})
						break
					}
				}
				continue
			}
			for _, s := range installScripts {
				if cmd, ok := pj.Scripts[s]; ok && !benignInstall(cmd) {
					out = append(out, analysis.Finding{Rule: "install_script", Severity: analysis.SeverityMedium, File: f.Path, Line: lineOf(f.Data, `"`+s+`"`),
						Excerpt: analysis.Excerpt(s + ": " + cmd), Description: "runs a command when the package is installed (npm " + s + ")"})
				}
			}
		case "setup.py":
			out = append(out, analysis.Finding{Rule: "setup_py", Severity: analysis.SeverityLow, File: f.Path, Line: 1,
				Excerpt: analysis.Excerpt(firstCode(f.Data)), Description: "an sdist's setup.py runs when the package is built or installed from source"})
		case "metadata":
			if ext := gemExtensions(f.Data); len(ext) > 0 {
				out = append(out, analysis.Finding{Rule: "gem_extension", Severity: analysis.SeverityLow, File: f.Path, Line: lineOf(f.Data, "extensions:"),
					Excerpt: analysis.Excerpt("extensions: " + strings.Join(ext, ", ")), Description: "builds a native extension at install, running its extconf.rb"})
			}
		case "build.rs":
			out = append(out, analysis.Finding{Rule: "build_rs", Severity: analysis.SeverityLow, File: f.Path, Line: 1,
				Excerpt: analysis.Excerpt(firstCode(f.Data)), Description: "a build script runs when the crate is built"})
		}
	}
	return out
}

// benignInstall is an install command that only builds native code the
// usual way (node-gyp, prebuild), which npm itself runs for binding.gyp.
func benignInstall(cmd string) bool {
	c := strings.TrimSpace(cmd)
	for _, ok := range []string{"node-gyp rebuild", "node-gyp-build", "prebuild-install || node-gyp rebuild", "prebuild-install", "node-gyp-build-optional-packages"} {
		if c == ok {
			return true
		}
	}
	return false
}

// gemExtensions reads a gem metadata's extensions list (YAML, read by
// line: the metadata is written by RubyGems in one shape).
func gemExtensions(meta []byte) []string {
	lines := strings.Split(string(meta), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "extensions:") {
			continue
		}
		if rest := strings.TrimSpace(strings.TrimPrefix(l, "extensions:")); rest == "[]" {
			return nil
		}
		var out []string
		for _, n := range lines[i+1:] {
			if !strings.HasPrefix(n, "- ") {
				break
			}
			out = append(out, strings.TrimSpace(strings.TrimPrefix(n, "- ")))
		}
		return out
	}
	return nil
}

func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 1
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// firstCode is a file's first line that is not blank or a comment.
func firstCode(data []byte) string {
	for l := range strings.SplitSeq(string(data[:min(len(data), 4096)]), "\n") {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "//") {
			return t
		}
	}
	return ""
}
