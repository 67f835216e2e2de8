// Package datadog is the source plugin of Datadog's
// malicious-software-packages-dataset (Apache-2.0; docs/ingestion.md):
// `threatd import datadog samples/`. Each `samples/<ecosystem>/manifest.json`
// is one object, package name → its malicious versions, or null for every
// version; each name becomes a verified package report of source datadog
// in the registry its folder names, whose upstream id is
// "<ecosystem>/<name>".
//
// A manifest is read twice: once to check it whole (one object of names,
// each a list of version strings or null, no entry over MaxEntry bytes),
// so that a file that is not a manifest, or is broken anywhere, is
// refused before anything is imported; then to map and yield its names.
package datadog

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins/sourcekit"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = "datadog"

// MaxEntry bounds one package's entry.
const MaxEntry = 256 << 10

// MaxVersions bounds the versions kept of one package (the rest are
// counted in the report's text).
const MaxVersions = 500

// registries are the dataset's ecosystem folders and threatd's registries.
var registries = map[string]string{"npm": core.RegistryNPM, "pypi": core.RegistryPyPI}

// Source implements core.Source for the dataset's manifests.
type Source struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// manifests are the manifest.json files under paths (a manifest itself,
// or a folder holding <ecosystem>/manifest.json), sorted.
func manifests(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Name() == "manifest.json" {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no manifest.json under %s: give the dataset's samples/ folder or samples/<ecosystem>/manifest.json", strings.Join(paths, ", "))
	}
	sort.Strings(out)
	return out, nil
}

// Read checks every manifest whole, then yields its packages.
func (s Source) Read(ctx context.Context, paths []string, settings map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	if err := sourcekit.CheckSettings(SourceName, settings); err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	files, err := manifests(paths)
	if err != nil {
		return err
	}
	for _, p := range files {
		var names sourcekit.Unique
		n := 0
		if err := each(ctx, p, func(name string, _ []string, _ bool) error {
			n++
			return names.Add(p, name, fmt.Sprintf("entry %d", n))
		}); err != nil {
			return err
		}
	}
	for i, p := range files {
		eco := filepath.Base(filepath.Dir(p))
		registry, ok := registries[eco]
		if !ok {
			if err := fn(core.SourceItem{Skipped: p, Reason: fmt.Sprintf("the ecosystem folder %q is not one threatd imports from this dataset (npm, pypi)", eco)}); err != nil {
				return err
			}
			continue
		}
		b := &sourcekit.Batch{Source: SourceName, Known: known, Yield: fn}
		err := each(ctx, p, func(name string, versions []string, all bool) error {
			return b.Add(ctx, sourcekit.Pending{ID: eco + "/" + name, Modified: version(versions, all), Label: fmt.Sprintf("%s %q", p, name),
				Map: func() (core.ImportRecord, error) { return record(eco, registry, name, versions, all, now()) }})
		})
		if err == nil {
			err = b.Flush(ctx)
		}
		if err != nil {
			return err
		}
		if err := fn(core.SourceItem{FilesDone: i + 1, FilesTotal: len(files)}); err != nil {
			return err
		}
	}
	return nil
}

// version is an entry's upstream version: the dataset has no times, and an
// entry only grows (versions are added; null, every version, is last), so
// its size orders its versions.
func version(versions []string, all bool) time.Time {
	if all {
		return time.Unix(1<<31, 0).UTC()
	}
	return time.Unix(int64(len(versions)), 0).UTC()
}

// manifest is a dataset manifest's shape: an object of package names,
// each a list of versions or null.
var manifest = sourcekit.Object{Max: MaxEntry, What: "a package's entry", Members: "packages",
	Label: func(name string) string { return fmt.Sprintf("package %q", name) },
	NotShape: func(path, what string) error {
		return fmt.Errorf("%s: not a dataset manifest (an object of package names, each a list of versions or null): %s (nothing was imported)", path, what)
	}}

// each reads a manifest, checks its shape, and calls fn with each name
// and its versions (all: null, every version), in file order.
func each(ctx context.Context, path string, fn func(name string, versions []string, all bool) error) error {
	return manifest.Each(ctx, path, func(name string, raw json.RawMessage) error {
		var versions []string
		all := string(raw) == "null"
		if !all {
			if err := json.Unmarshal(raw, &versions); err != nil {
				return manifest.NotShape(path, fmt.Sprintf("package %q: its versions are not a list of strings or null", name))
			}
		}
		return fn(name, versions, all)
	})
}

// record is one package as an imported report.
func record(eco, registry, name string, versions []string, all bool, now time.Time) (core.ImportRecord, error) {
	str := func(s string) *string { return &s }
	var payload strings.Builder
	fmt.Fprintf(&payload, "Listed in Datadog's malicious-software-packages-dataset (samples/%s/manifest.json)", eco)
	kept := versions
	if len(kept) > MaxVersions {
		kept = kept[:MaxVersions]
		fmt.Fprintf(&payload, "; the first %d of %d versions are listed", MaxVersions, len(versions))
	}
	payload.WriteString(".")
	sub := core.Submission{ReportType: str(string(core.TypePackage)), ResourceIdentifier: str(name), Registry: str(registry),
		PackageName: str(name), ThreatDescription: str(fmt.Sprintf("Malicious %s package %s (Datadog dataset)", eco, name)),
		PayloadDescription: str(payload.String()), Tags: []string{"datadog", "malicious-package"},
		EvidenceReferences: str("https://github.com/DataDog/malicious-software-packages-dataset")}
	if !all && len(kept) > 0 {
		sub.VersionInfo = str(strings.Join(kept, ", "))
	}
	th, err := core.NewImportedThreat(sub, now)
	if err != nil {
		return core.ImportRecord{}, err
	}
	th.Source, th.UpstreamID = SourceName, eco+"/"+name
	modified := version(versions, all)
	th.UpstreamModified = &modified
	th.AllVersions = all || len(versions) == 0
	return core.ImportRecord{Threat: th}, nil
}
