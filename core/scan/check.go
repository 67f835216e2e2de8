package scan

import (
	"context"
	"strings"

	"github.com/threatd/threatd/core"
)

// Matcher returns the verified reports under keys that affect version ("" =
// any version), most recently verified first: the index of check-malicious.
type Matcher interface {
	Matches(ctx context.Context, keys []string, version string) ([]core.Threat, error)
}

// Finding is a package of a file that verified reports name.
type Finding struct {
	File string
	Package
	// Threats are the matching reports, most recently verified first.
	Threats []core.Threat
}

// FileSkipped is an entry of a file that was not checked, and why.
type FileSkipped struct {
	File string `json:"file"`
	Skipped
}

// Result is the outcome of checking files.
type Result struct {
	// Files are the files checked, each with its format and the number of
	// distinct packages checked in it.
	Files []FileSummary
	// Packages is the number of packages checked, over every file.
	Packages int
	Findings []Finding
	Skipped  []FileSkipped
}

// FileSummary describes one checked file.
type FileSummary struct {
	File     string `json:"file"`
	Format   Format `json:"format"`
	Packages int    `json:"packages"`
}

// Check checks every package of files against the verified reports, as
// check-malicious does: by registry, name and exact version. A package a
// file lists more than once is checked once, at its first line. A package
// without a version is matched only by reports that name every version of
// it (a report of one version does not make an unpinned dependency
// malicious). Go and Packagist versions are matched with and without their
// leading "v" (OSV writes Go versions without it). Nothing is cut: every
// package of every file is checked.
func Check(ctx context.Context, m Matcher, files []File) (Result, error) {
	var out Result
	for _, f := range files {
		seen := map[string]bool{}
		n := 0
		for _, p := range f.Packages {
			q := core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: p.Name, Ecosystem: p.Registry, Version: p.Version}
			if p.Type == core.TypeContainer || p.Type == core.TypeRepository {
				q = core.CheckQuery{ReportType: p.Type, ResourceIdentifier: p.Name}
			}
			keys, err := core.CheckKeys(q)
			if err != nil {
				out.Skipped = append(out.Skipped, FileSkipped{File: f.Name, Skipped: Skipped{Name: p.Name, Line: p.Line, Reason: reason(err)}})
				continue
			}
			id := strings.Join(keys, "\x00") + "@" + p.Version
			if seen[id] {
				continue
			}
			seen[id] = true
			n++
			threats, err := match(ctx, m, keys, p)
			if err != nil {
				return Result{}, err
			}
			if len(threats) > 0 {
				out.Findings = append(out.Findings, Finding{File: f.Name, Package: p, Threats: threats})
			}
		}
		for _, s := range f.Skipped {
			out.Skipped = append(out.Skipped, FileSkipped{File: f.Name, Skipped: s})
		}
		out.Files = append(out.Files, FileSummary{File: f.Name, Format: f.Format, Packages: n})
		out.Packages += n
	}
	return out, nil
}

// match returns the reports that name p. The index compares versions as
// p's registry does (core/versioning: Go's v1.0.1 and 1.0.1, Composer's
// v1.0.1 and 1.0.1.0 are one version).
func match(ctx context.Context, m Matcher, keys []string, p Package) ([]core.Threat, error) {
	if p.Type == core.TypeContainer || p.Type == core.TypeRepository {
		return m.Matches(ctx, keys, "")
	}
	ts, err := m.Matches(ctx, keys, p.Version)
	if err != nil {
		return nil, err
	}
	out := ts[:0:0]
	for _, t := range ts {
		if p.Version == "" && !t.AllVersions && t.Details.VersionInfo != "" {
			continue // a report of some versions; the file pins none
		}
		out = append(out, t)
	}
	return out, nil
}

// Purl is the package URL of p: the SBOM's own, or one made from the
// registry, name and version.
func (p Package) PackageURL() string {
	if p.Purl != "" || p.Type == core.TypeContainer || p.Type == core.TypeRepository {
		return p.Purl
	}
	return core.VersionPurl(p.Registry, p.Name, p.Version)
}
