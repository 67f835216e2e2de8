package scan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threatd/threatd/core"
)

// describe lists a file's packages as "registry name@version:line", and
// its skipped entries as "skip name:line".
func describe(f File) []string {
	var out []string
	for _, p := range f.Packages {
		s := fmt.Sprintf("%s %s@%s:%d", p.Registry, p.Name, p.Version, p.Line)
		if p.Type == core.TypeContainer {
			s = "container " + s
		}
		out = append(out, s)
	}
	for _, s := range f.Skipped {
		out = append(out, fmt.Sprintf("skip %s:%d", s.Name, s.Line))
	}
	slices.Sort(out)
	return out
}

func TestParseFormats(t *testing.T) {
	for _, tc := range []struct {
		file   string
		format Format
		want   []string
	}{
		{"package-lock-v3.json", NPMLock, []string{
			"npm @acme/util@2.0.0:17", "npm evil-pkg@1.0.1:30", "npm left-pad@1.1.0:25", "npm left-pad@1.2.0:45", "npm left-pad@1.3.0:40",
			"skip from-git:36", "skip packages/web:55", "skip web:51"}},
		{"package-lock-v1.json", NPMLock, []string{
			"npm @acme/util@2.0.0:7", "npm evil-pkg@1.0.1:22", "npm left-pad@1.1.0:15", "npm left-pad@1.2.0:30", "skip local:27"}},
		{"yarn-v1.lock", YarnLock, []string{
			"npm @acme/util@2.0.0:5", "npm evil-pkg@1.0.1:12", "npm left-pad@1.1.0:17", "npm left-pad@1.2.0:21", "skip local:25"}},
		{"yarn-berry.lock", YarnLock, []string{"npm @acme/util@2.0.0:8", "npm evil-pkg@1.0.1:17", "skip shop:24"}},
		{"pnpm-lock-v9.yaml", PNPMLock, []string{"npm @acme/util@2.0.0:20", "npm evil-pkg@1.0.1:23", "npm react-dom@18.2.0:26"}},
		{"pnpm-lock-v5.yaml", PNPMLock, []string{"npm @acme/util@2.0.0:13", "npm evil-pkg@1.0.1:17", "npm react-dom@18.2.0:21"}},
		{"requirements.txt", Requirements, []string{"pypi Django@:6", "pypi evil_pkg@1.0.1:5", "pypi numpy@1.26.4:8", "pypi requests@2.31.0:3",
			"skip -e git+https://github.com/acme/tool.git#egg=tool:7"}},
		{"poetry.lock", PoetryLock, []string{"pypi certifi@2024.2.2:3", "pypi evil-pkg@1.0.1:13", "skip mytool:24"}},
		{"go.mod", GoMod, []string{"go github.com/evil/pkg@v1.0.1:7", "go golang.org/x/text@v0.14.0:10", "skip github.com/acme/util:6"}},
		{"go.sum", GoSum, []string{"go github.com/evil/pkg@v1.0.1:1", "go golang.org/x/text@v0.14.0:4"}},
		{"Cargo.lock", CargoLock, []string{"crates.io evil-crate@0.1.2:5", "crates.io serde@1.0.197:11", "skip shop:17", "skip tool:25"}},
		{"Gemfile.lock", GemfileLock, []string{"rubygems evil-gem@1.0.1:10", "rubygems nokogiri@1.16.0:12", "rubygems rack@3.0.9:14", "skip tool:5"}},
		{"composer.lock", ComposerLock, []string{"packagist acme/evil@v1.0.1:7", "packagist monolog/monolog@3.5.0:15", "skip acme/local:21"}},
		{"bom-1.5.cdx.json", CycloneDX, []string{"container  evil/image:latest@:36", "npm @acme/util@2.0.0:15", "npm evil-pkg@1.0.1:22",
			"pypi evil-pkg@1.0.1:30", "skip pkg:github/acme/action@v1:47", "skip vendored-thing:42"}},
		{"sbom-2.3.spdx.json", SPDX, []string{"crates.io serde@1.0.197:25", "npm evil-pkg@1.0.1:12", "skip internal:38"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			// Recognised by its usual name, and by its content alone.
			for _, name := range []string{tc.file, ""} {
				f, err := Detect(name, data, "")
				if err != nil || f != tc.format {
					t.Fatalf("Detect(%q): %q %v, want %q", name, f, err, tc.format)
				}
			}
			f, err := Parse(tc.file, data, tc.format)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(f); !slices.Equal(got, tc.want) {
				t.Fatalf("parsed:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}
