package datadog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// dataset writes samples/<ecosystem>/manifest.json as the dataset lays
// them out (with the samples' zips beside, which are not read).
func dataset(t *testing.T, manifests map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "samples")
	for eco, text := range manifests {
		dir := filepath.Join(root, eco)
		if err := os.MkdirAll(filepath.Join(dir, "malicious_intent", "evil-pkg", "1.0.0"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "malicious_intent", "evil-pkg", "1.0.0", "sample.zip"), []byte("PK\x03\x04"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const npmManifest = `{
  "evil-pkg": [
    "1.0.0",
    "1.0.1"
  ],
  "@scope/stealer": null,
  "Not A Valid Name": null
}`

const pypiManifest = `{"requestz": ["0.1", "0.2", "0.3"], "colourama": null}`

func read(t *testing.T, paths []string, known core.Known) ([]core.ImportRecord, []string, int, error) {
	t.Helper()
	var (
		recs      []core.ImportRecord
		skipped   []string
		unchanged int
	)
	err := Source{Now: func() time.Time { return time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) }}.Read(context.Background(), paths, nil, known,
		func(it core.SourceItem) error {
			switch {
			case it.Record != nil:
				recs = append(recs, *it.Record)
			case it.Skipped != "":
				skipped = append(skipped, it.Skipped+": "+it.Reason)
			}
			unchanged += it.Unchanged
			return nil
		})
	return recs, skipped, unchanged, err
}

// The samples folder as the dataset lays it out: every name a package
// report in its folder's registry, its versions or every version; a name
// threatd cannot hold is skipped with its reason; a re-import is
// unchanged until an entry grows.
func TestReadDataset(t *testing.T) {
	root := dataset(t, map[string]string{"npm": npmManifest, "pypi": pypiManifest, "rubygems": `{"x": null}`})
	recs, skipped, _, err := read(t, []string{root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || len(skipped) != 2 {
		t.Fatalf("%d records, skipped %q", len(recs), skipped)
	}
	byID := map[string]core.Threat{}
	for _, r := range recs {
		byID[r.Threat.UpstreamID] = r.Threat
	}
	if th := byID["npm/evil-pkg"]; th.Registry != core.RegistryNPM || th.AllVersions || th.Details.VersionInfo != "1.0.0, 1.0.1" || th.Source != SourceName {
		t.Errorf("npm/evil-pkg: %+v", th)
	}
	if th := byID["npm/@scope/stealer"]; !th.AllVersions || th.ResourceIdentifier != "@scope/stealer" {
		t.Errorf("a null entry: %+v", th)
	}
	if th := byID["pypi/colourama"]; th.Registry != core.RegistryPyPI || !th.AllVersions {
		t.Errorf("pypi: %+v", th)
	}
	if !strings.Contains(strings.Join(skipped, "\n"), `"rubygems" is not one threatd imports`) || !strings.Contains(strings.Join(skipped, "\n"), "Not A Valid Name") {
		t.Errorf("skipped: %q", skipped)
	}
	imported := map[string]time.Time{}
	for _, r := range recs {
		imported[r.Threat.UpstreamID] = *r.Threat.UpstreamModified
	}
	known := func(_ context.Context, vs []core.UpstreamVersion) ([]bool, error) {
		out := make([]bool, len(vs))
		for i, v := range vs {
			at, ok := imported[v.IDs[0]]
			out[i] = ok && !v.Modified.After(at)
		}
		return out, nil
	}
	if recs, _, unchanged, err := read(t, []string{root}, known); err != nil || len(recs) != 0 || unchanged != 4 {
		t.Fatalf("a re-import: %d records, %d unchanged, %v", len(recs), unchanged, err)
	}
	// A version added: that package is read again.
	grown := dataset(t, map[string]string{"npm": strings.Replace(npmManifest, `"1.0.1"`, `"1.0.1", "1.0.2"`, 1)})
	if recs, _, unchanged, err := read(t, []string{grown}, known); err != nil || len(recs) != 1 || recs[0].Threat.UpstreamID != "npm/evil-pkg" || unchanged != 1 {
		t.Fatalf("a grown entry: %d records, %d unchanged, %v", len(recs), unchanged, err)
	}
}

// Hostile manifests: refused whole with a clear error, nothing yielded.
func TestHostileManifests(t *testing.T) {
	huge := `{"a": [` + strings.Repeat(`"1.0.0",`, MaxEntry/4) + `"x"]}`
	for name, c := range map[string]struct{ text, want string }{
		"an array":            {`["evil"]`, "it starts with ["},
		"versions not a list": {`{"evil": "1.0.0"}`, "not a list of strings or null"},
		"numbers":             {`{"evil": [1, 2]}`, "not a list of strings or null"},
		"broken":              {npmManifest[:30], "not a dataset manifest"},
		"a huge entry":        {huge, "longer than 262144 bytes"},
		"more after":          {npmManifest + `[]`, "more after its object"},
		"a name twice":        {`{"evil": ["1.0.0"], "other": null, "evil": ["2.0.0"]}`, `the id "evil" appears twice (entry 1 and entry 3)`},
	} {
		root := dataset(t, map[string]string{"npm": c.text, "pypi": pypiManifest})
		recs, skipped, _, err := read(t, []string{root}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(recs)+len(skipped) != 0 {
			t.Errorf("%s: %d records, %d skipped, error %v; want an error with %q and nothing yielded", name, len(recs), len(skipped), err, c.want)
		}
	}
	if _, _, _, err := read(t, []string{t.TempDir()}, nil); err == nil || !strings.Contains(err.Error(), "no manifest.json") {
		t.Errorf("a folder without manifests: %v", err)
	}
}
