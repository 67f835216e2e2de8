package osv

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/coretest"
)

// osvSchema compiles the OSV schema (reference data osv-schema).
func osvSchema(t *testing.T) *jsonschema.Schema {
	return coretest.Schema(t, filepath.Join(coretest.Reference(t, "osv-schema"), "schema.json"), true)
}

// stored is an import record as the store keeps it once imported.
func stored(th core.Threat, now time.Time) core.Threat {
	th.ID = uuid.Must(uuid.NewV7()).String()
	th.Status, th.VerifiedBy, th.Version = core.StatusVerified, "osv-import", 1
	th.CreatedAt, th.UpdatedAt = now, now
	return th
}

// readArchive returns the records of an all.zip, by id, as raw JSON.
func readArchive(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSuffix(f.Name, ".json")
		if _, dup := out[id]; dup || id == f.Name {
			t.Fatalf("archive entry %s: duplicate or not <id>.json", f.Name)
		}
		out[id] = raw
	}
	return out
}

// TestExportRealReports: the 29,604 real OSV reports, imported and exported
// again, one archive per ecosystem. Every exported record is valid against
// the OSV schema, has its upstream id, and names exactly the packages the
// upstream record names in that ecosystem, with the versions imported;
// what is wrong is counted, not only what is present.
func TestExportRealReports(t *testing.T) {
	zips := coretest.OSVArchives(t)
	schema := osvSchema(t)
	now := time.Now().UTC()
	writers := map[string]*ArchiveWriter{}
	bufs := map[string]*bytes.Buffer{}
	// want: ecosystem → record id → package names (from the import).
	want := map[string]map[string][]string{}
	versions := map[string][]string{} // ecosystem/id/name → the versions named, nil for every version
	imported := 0
	err := Source{Now: time.Now}.Read(context.Background(), zips, nil, nil, func(it core.SourceItem) error {
		if it.Record == nil || it.Record.Withdrawn {
			return nil
		}
		th := stored(it.Record.Threat, now)
		eco, ok := core.OSVEcosystems[th.Registry]
		if !ok {
			return nil
		}
		imported++
		w := writers[eco]
		if w == nil {
			bufs[eco] = &bytes.Buffer{}
			w = NewArchiveWriter(bufs[eco])
			writers[eco] = w
			want[eco] = map[string][]string{}
		}
		id := RecordID(th)
		want[eco][id] = append(want[eco][id], th.ResourceIdentifier)
		versions[eco+"/"+id+"/"+th.ResourceIdentifier] = core.AffectedVersions(th)
		return w.Add(th)
	})
	if err != nil {
		t.Fatal(err)
	}
	var invalid, wrongID, wrongPackages, wrongVersions, records int
	var examples []string
	note := func(format string, args ...any) {
		if len(examples) < 10 {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	for eco, w := range writers {
		n, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := readArchive(t, bufs[eco].Bytes())
		if n != len(got) || len(got) != len(want[eco]) {
			t.Errorf("%s: %d records written, %d in the archive, %d upstream records imported", eco, n, len(got), len(want[eco]))
		}
		for id, raw := range got {
			records++
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(doc); err != nil {
				invalid++
				note("%s/%s invalid: %v", eco, id, err)
			}
			var v Vuln
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if v.ID != id || !strings.HasPrefix(id, "MAL-") {
				wrongID++
				note("%s: entry %s holds id %s", eco, id, v.ID)
			}
			var names []string
			for _, a := range v.Affected {
				names = append(names, a.Package.Name)
				every := len(a.Ranges) == 1 && a.Ranges[0].Events[0].Introduced == "0"
				want := versions[eco+"/"+id+"/"+a.Package.Name]
				if a.Package.Ecosystem != eco || every != (want == nil) || (!every && !slices.Equal(a.Versions, want)) {
					wrongVersions++
					note("%s/%s %s: ecosystem %s, ranges %v, versions %v", eco, id, a.Package.Name, a.Package.Ecosystem, a.Ranges, a.Versions)
				}
			}
			sort.Strings(names)
			w := slices.Clone(want[eco][id])
			sort.Strings(w)
			if !slices.Equal(names, w) {
				wrongPackages++
				note("%s/%s names %v, upstream %v", eco, id, names, w)
			}
		}
	}
	t.Logf("%d reports imported, %d OSV records in %d archives; invalid %d, wrong id %d, wrong packages %d, wrong versions %d",
		imported, records, len(writers), invalid, wrongID, wrongPackages, wrongVersions)
	if imported < 29_000 {
		t.Fatalf("only %d reports imported: the sample is not what this test expects", imported)
	}
	if invalid+wrongID+wrongPackages+wrongVersions > 0 {
		t.Fatalf("wrong records:\n%s", strings.Join(examples, "\n"))
	}
}

// A community report: THREATD-<uuid>, its versions, its fields under
// database_specific, valid against the schema; non-package and non-OSV
// registries are not exportable.
func TestExportCommunityReport(t *testing.T) {
	schema := osvSchema(t)
	now := time.Date(2026, 11, 20, 14, 0, 0, 0, time.UTC)
	s := func(v string) *string { return &v }
	th, err := core.NewThreat(core.Submission{
		ReportType: s("package"), ResourceIdentifier: s("@evil/scope-pkg"), Registry: s("npm"),
		ThreatDescription: s("Steals tokens"), PayloadDescription: s("posts ~/.npmrc"),
		VersionInfo: s("1.0.1, 1.0.2"), EvidenceReferences: s("https://blog.example/a|https://blog.example/b"),
		Contributors: []string{"Ann", "Bo"}, SeverityLevel: s("high"),
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	th.ID, th.Status, th.Version, th.CreatedAt, th.UpdatedAt, th.VerifiedAt = uuid.NewString(), core.StatusVerified, 1, now, now, &now
	if !Exportable(th) {
		t.Fatal("a verified npm report is not exportable")
	}
	v := Convert(th)
	raw, _ := json.Marshal(v)
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	// The schema allows the id prefixes of the databases registered with
	// OSV, and x_ for others; docs/osv.md names community records
	// THREATD-<uuid> (docs/osv.md). The id is refused for that alone:
	err = schema.Validate(doc)
	if err == nil || !strings.Contains(err.Error(), "at '/id'") || strings.Count(err.Error(), "- at '") != 1 {
		t.Fatalf("the schema should refuse the THREATD- prefix and nothing else: %v", err)
	}
	// and everything else is valid.
	doc.(map[string]any)["id"] = "x_" + v.ID
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("invalid: %v\n%s", err, raw)
	}
	a := v.Affected[0]
	if v.ID != "THREATD-"+th.ID || a.Package.Purl != "pkg:npm/%40evil/scope-pkg" ||
		!slices.Equal(a.Versions, []string{"1.0.1", "1.0.2"}) || a.Ranges != nil || len(v.References) != 2 || len(v.Credits) != 2 ||
		!strings.Contains(string(a.DatabaseSpecific), `"severity_level":"high"`) {
		t.Fatalf("record:\n%s", raw)
	}
	for _, c := range []struct {
		typ, registry string
	}{{"package", "openvsx"}, {"container", "dockerhub"}, {"domain", ""}} {
		o := th
		o.ReportType, o.Registry = core.ReportType(c.typ), c.registry
		if Exportable(o) {
			t.Errorf("a %s report of %q is exportable", c.typ, c.registry)
		}
	}
	o := th
	o.Status = core.StatusPending
	if Exportable(o) {
		t.Error("a pending report is exportable")
	}
}
