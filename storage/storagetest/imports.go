package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// ImportedVersions reads back the upstream modified times of imported
// reports, by source, leaving out unknown ids; over the bound is invalid.
func testImportedVersions(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)
	later := at.Add(time.Hour)
	var recs []core.ImportRecord
	for i, id := range []string{"MAL-1", "MAL-2/npm/a", "MAL-2/pypi/b"} {
		th := report(t, "", core.TypePackage, core.RegistryNPM, "imported-"+string(rune('a'+i)))
		th.Source, th.UpstreamID, th.UpstreamModified = "osv", id, &at
		if i == 2 {
			th.UpstreamModified = &later
		}
		recs = append(recs, core.ImportRecord{Threat: th})
	}
	out, err := s.ImportThreats(c, core.ImportBatch{Records: recs, Actor: "osv-import"})
	if err != nil || len(out) != 3 || out[0].Result != core.ImportCreated {
		t.Fatalf("import: %+v %v", out, err)
	}
	got, err := s.ImportedVersions(c, core.VersionQuery{Source: "osv", IDs: []string{"MAL-1", "MAL-2/pypi/b", "MAL-3", "MAL-2/npm/a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got["MAL-1"].Equal(at) || !got["MAL-2/npm/a"].Equal(at) || !got["MAL-2/pypi/b"].Equal(later) {
		t.Fatalf("ImportedVersions = %v", got)
	}
	if other, err := s.ImportedVersions(c, core.VersionQuery{Source: "ghsa", IDs: []string{"MAL-1"}}); err != nil || len(other) != 0 {
		t.Fatalf("another source: %v %v", other, err)
	}
	if none, err := s.ImportedVersions(c, core.VersionQuery{Source: "osv", IDs: nil}); err != nil || len(none) != 0 {
		t.Fatalf("no ids: %v %v", none, err)
	}
	if _, err := s.ImportedVersions(c, core.VersionQuery{Source: "osv", IDs: make([]string, core.MaxImportedVersions+1)}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("over the bound: %v", err)
	}
}
