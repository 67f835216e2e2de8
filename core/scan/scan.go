// Package scan reads the dependency lists a CI pipeline already has —
// lockfiles and SBOMs — and checks every package against the verified
// reports, with check-malicious's matching and from the same in-memory
// index (docs/ci.md). It knows nothing of HTTP: POST /scan lives in
// core/api, threatd scan in cmd/threatd.
package scan

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"path"
	"slices"
	"strings"

	"github.com/threatd/threatd/core"
)

// Format names a kind of file scan reads: the file name it is usually
// given, or cyclonedx / spdx for SBOMs.
type Format string

// The formats scan reads.
const (
	NPMLock      Format = "package-lock.json"
	YarnLock     Format = "yarn.lock"
	PNPMLock     Format = "pnpm-lock.yaml"
	Requirements Format = "requirements.txt"
	PoetryLock   Format = "poetry.lock"
	GoMod        Format = "go.mod"
	GoSum        Format = "go.sum"
	CargoLock    Format = "Cargo.lock"
	GemfileLock  Format = "Gemfile.lock"
	ComposerLock Format = "composer.lock"
	CycloneDX    Format = "cyclonedx"
	SPDX         Format = "spdx"
	// GitHubActions is a workflow (.github/workflows/*.yml) or an
	// action's action.yml: the actions, reusable workflows and images
	// its uses: name.
	GitHubActions Format = "github-actions"
)

// Formats lists every format, in the order docs/ci.md does.
var Formats = []Format{NPMLock, YarnLock, PNPMLock, Requirements, PoetryLock, GoMod, GoSum, CargoLock, GemfileLock, ComposerLock, CycloneDX, SPDX, GitHubActions}

// formatNames lists the format names for error messages.
func formatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// aliases are other spellings of format names (?format=, media types).
var aliases = map[string]Format{
	"npm": NPMLock, "package-lock": NPMLock, "npm-shrinkwrap.json": NPMLock, "yarn": YarnLock, "pnpm": PNPMLock,
	"pnpm-lock.yml": PNPMLock, "requirements": Requirements, "pip": Requirements, "poetry": PoetryLock,
	"gomod": GoMod, "gosum": GoSum, "cargo": CargoLock, "gemfile": GemfileLock, "bundler": GemfileLock,
	"composer": ComposerLock, "cyclonedx-json": CycloneDX, "cdx": CycloneDX, "spdx-json": SPDX,
	"application/vnd.cyclonedx+json": CycloneDX, "application/spdx+json": SPDX,
	"workflow": GitHubActions, "github-workflow": GitHubActions, "actions": GitHubActions, "action.yml": GitHubActions,
}

// ParseFormat reads a format name, case-insensitively: a name of Formats
// or one of its aliases (a media type such as application/vnd.cyclonedx+json
// among them). An unknown name is an error that lists the known ones.
func ParseFormat(s string) (Format, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, f := range Formats {
		if strings.ToLower(string(f)) == t {
			return f, nil
		}
	}
	if f, ok := aliases[t]; ok {
		return f, nil
	}
	return "", fmt.Errorf("format %q is not one scan reads (%s)", s, formatNames())
}

// Package is one dependency a file names.
type Package struct {
	// Registry is the package's registry (core.RegistryNPM, …).
	Registry string
	// Name is its name in the registry (npm: @scope/name; Go: the module
	// path; Maven: group:artifact).
	Name string
	// Version is the exact version the file pins; "" when it pins none.
	Version string
	// Line is where the file names it (1-based); 0 when the format has
	// no line for it.
	Line int
	// Purl is the package URL an SBOM gave ("" for lockfiles).
	Purl string
	// Type is core.TypeContainer for an SBOM's container image, else "" (a
	// package).
	Type core.ReportType
}

// Skipped is an entry of a file that names no registry package scan can
// check: a local path, a git checkout, a purl of an unsupported type.
type Skipped struct {
	Name   string `json:"name"`
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
}

// DefaultMaxBytes is the most one scan reads of a file unless
// scan.max_bytes says otherwise: 8 MiB.
const DefaultMaxBytes = 8 << 20

// File is what Parse read from one file.
type File struct {
	Name     string
	Format   Format
	Packages []Package
	Skipped  []Skipped
}

// Detect names the format of a file: hint when given (?format=, a media
// type, --format-of), else the file name, else the content.
func Detect(name string, data []byte, hint string) (Format, error) {
	if hint != "" {
		return ParseFormat(hint)
	}
	if f, ok := byName(name); ok {
		return f, nil
	}
	if f, ok := byContent(data); ok {
		return f, nil
	}
	what := "the content"
	if name != "" {
		what = fmt.Sprintf("the name %q nor the content", path.Base(name))
	}
	return "", fmt.Errorf("the format is not recognised from %s: scan reads %s (name it with a format)", what, formatNames())
}

// byName recognises the usual file names.
func byName(name string) (Format, bool) {
	if name == "" {
		return "", false
	}
	base := path.Base(strings.ReplaceAll(name, `\`, "/"))
	lower := strings.ToLower(base)
	for _, f := range Formats {
		if f != CycloneDX && f != SPDX && f != GitHubActions && strings.ToLower(string(f)) == lower {
			return f, true
		}
	}
	if IsWorkflowPath(name) {
		return GitHubActions, true
	}
	switch {
	case lower == "npm-shrinkwrap.json":
		return NPMLock, true
	case lower == "pnpm-lock.yml":
		return PNPMLock, true
	case strings.HasSuffix(lower, ".cdx.json"), lower == "bom.json", strings.HasSuffix(lower, ".bom.json"):
		return CycloneDX, true
	case strings.HasSuffix(lower, ".spdx.json"):
		return SPDX, true
	case strings.HasPrefix(lower, "requirements") && strings.HasSuffix(lower, ".txt"):
		return Requirements, true
	}
	return "", false
}

// Parse reads a file of format f. An error names the file, the format and
// what is wrong, with the line where there is one.
func Parse(name string, data []byte, f Format) (File, error) {
	parse, ok := parsers[f]
	if !ok {
		return File{}, fmt.Errorf("format %q is not one scan reads (%s)", f, formatNames())
	}
	out := File{Name: name, Format: f}
	if err := parse(data, &out); err != nil {
		return File{}, fmt.Errorf("%s is not a valid %s: %w", cmp.Or(name, "the file"), f, err)
	}
	return out, nil
}

// parsers maps each format to its reader.
var parsers = map[Format]func([]byte, *File) error{
	NPMLock: parseNPMLock, YarnLock: parseYarnLock, PNPMLock: parsePNPMLock,
	Requirements: parseRequirements, PoetryLock: parsePoetryLock,
	GoMod: parseGoMod, GoSum: parseGoSum,
	CargoLock: parseCargoLock, GemfileLock: parseGemfileLock, ComposerLock: parseComposerLock,
	CycloneDX: parseCycloneDX, SPDX: parseSPDX, GitHubActions: parseWorkflow,
}

// add records a package (duplicates are merged by Check).
func (f *File) add(registry, name, version string, line int) {
	f.Packages = append(f.Packages, Package{Registry: registry, Name: name, Version: version, Line: line})
}

func (f *File) skip(name string, line int, reason string) {
	f.Skipped = append(f.Skipped, Skipped{Name: name, Line: line, Reason: reason})
}

// lineIndex maps byte offsets to 1-based line numbers.
type lineIndex []int

func newLineIndex(data []byte) lineIndex {
	var nl lineIndex
	for i, b := range data {
		if b == '\n' {
			nl = append(nl, i)
		}
	}
	return nl
}

// line is the line of the byte at offset.
func (nl lineIndex) line(offset int) int {
	i, _ := slices.BinarySearch(nl, offset)
	return i + 1
}

// lines yields each line of data with its number (from 1), without its
// end (\n or \r\n). A final line without an end is a line.
func lines(data []byte) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !yield(n, strings.TrimSuffix(string(line), "\r")) {
				return
			}
		}
	}
}
