package storagetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/firewall"
)

// testExposures: the versions the ledger and the inventories name; a
// report's exposures recorded once per row however often they are found;
// an inventory replaced by the next scan; pages newest first, a user's
// own only.
func testExposures(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	led := func(version, token, email string, count int64) firewall.LedgerEntry {
		return firewall.LedgerEntry{Ecosystem: "npm", Name: "axios", Version: version, Purl: "pkg:npm/axios@" + version, User: email, TokenID: token,
			ClientIP: "10.0.0.1", Day: day, First: day.Add(time.Hour), Last: day.Add(2 * time.Hour), Count: count}
	}
	if err := s.RecordLedger(c, []firewall.LedgerEntry{led("1.14.1", "tok-a", "a@example.com", 3), led("1.14.1", "tok-b", "b@example.com", 1), led("1.14.0", "tok-a", "a@example.com", 9)}); err != nil {
		t.Fatal(err)
	}
	inv := exposure.Inventory{Project: "web-app", User: "a@example.com", TokenID: "tok-a", ScannedAt: day,
		Items: []exposure.Item{{Ecosystem: "npm", Name: "axios", Version: "1.14.1", Purl: "pkg:npm/axios@1.14.1"}, {Ecosystem: "npm", Name: "react", Version: "19.0.0"}}}
	if err := s.SaveInventory(c, inv); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveInventory(c, exposure.Inventory{Project: "bad\x00name"}); err == nil {
		t.Fatal("a project name with a control character was kept")
	}
	vs, err := s.ExposedVersions(c, exposure.Package{Ecosystem: "npm", Name: "axios", Limit: 100})
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions %v %v", vs, err)
	}
	// Paged, in order: the ledger's and the inventories' versions as one.
	if first, err := s.ExposedVersions(c, exposure.Package{Ecosystem: "npm", Name: "axios", Limit: 1}); err != nil || len(first) != 1 || first[0] != vs[0] || vs[0] >= vs[1] {
		t.Fatalf("first page %v of %v: %v", first, vs, err)
	}
	if rest, err := s.ExposedVersions(c, exposure.Package{Ecosystem: "npm", Name: "axios", After: vs[0], Limit: 100}); err != nil || len(rest) != 1 || rest[0] != vs[1] {
		t.Fatalf("after %s: %v %v", vs[0], rest, err)
	}
	if _, err := s.ExposedVersions(c, exposure.Package{Ecosystem: "npm", Name: "axios"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("no limit: %v", err)
	}
	found := exposure.Found{ThreatID: "th-1", Ecosystem: "npm", Name: "axios", Versions: []string{"1.14.1"}, At: day.Add(24 * time.Hour)}
	n, err := s.RecordExposures(c, found)
	if err != nil || n != 3 {
		t.Fatalf("found %d %v, want 3 (two ledger rows, one inventory)", n, err)
	}
	if n, err := s.RecordExposures(c, found); err != nil || n != 0 {
		t.Fatalf("found again: %d %v", n, err)
	}
	all, err := s.ListExposures(c, exposure.Query{ThreatID: "th-1", Limit: 10})
	if err != nil || len(all) != 3 || all[0].ID < all[2].ID {
		t.Fatalf("list %+v %v", all, err)
	}
	kinds := map[string]int{}
	for _, e := range all {
		kinds[e.Kind]++
		if e.Kind == exposure.KindInventory && (e.Project != "web-app" || e.User != "a@example.com") {
			t.Fatalf("inventory exposure %+v", e)
		}
		if e.Kind == exposure.KindServed && e.TokenID == "tok-a" && (e.Count != 3 || e.ClientIP != "10.0.0.1" || !e.First.Equal(day.Add(time.Hour))) {
			t.Fatalf("served exposure %+v", e)
		}
	}
	if kinds[exposure.KindServed] != 2 || kinds[exposure.KindInventory] != 1 {
		t.Fatalf("kinds %v", kinds)
	}
	page, err := s.ListExposures(c, exposure.Query{ThreatID: "th-1", Limit: 2})
	if err != nil || len(page) != 2 {
		t.Fatal(err)
	}
	rest, err := s.ListExposures(c, exposure.Query{ThreatID: "th-1", After: page[1].ID, Limit: 2})
	if err != nil || len(rest) != 1 || rest[0].ID >= page[1].ID {
		t.Fatalf("second page %+v %v", rest, err)
	}
	mine, err := s.ListExposures(c, exposure.Query{User: "b@example.com", Limit: 10})
	if err != nil || len(mine) != 1 || mine[0].TokenID != "tok-b" {
		t.Fatalf("b's %+v %v", mine, err)
	}
	if n, err := s.ExposureCount(c, "th-1"); err != nil || n != 3 {
		t.Fatalf("count %d %v", n, err)
	}
	// The next scan replaces the inventory: a version it no longer
	// lists is no exposure of a later report.
	inv.Items = inv.Items[1:]
	if err := s.SaveInventory(c, inv); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RecordExposures(c, exposure.Found{ThreatID: "th-2", Ecosystem: "npm", Name: "axios", Versions: []string{"1.14.1"}, At: day, Project: "web-app"}); err != nil || n != 0 {
		t.Fatalf("a replaced inventory: %d %v", n, err)
	}
	// A second look reads only what was served, or scanned, since: the
	// ledger rows' last download is 2 h into the day, the scan at 0 h.
	inv.Items = []exposure.Item{{Ecosystem: "npm", Name: "axios", Version: "1.14.1", Purl: "pkg:npm/axios@1.14.1"}}
	if err := s.SaveInventory(c, inv); err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		threat string
		since  time.Duration
		want   int64
	}{{"th-late-1", 3 * time.Hour, 0}, {"th-late-2", 90 * time.Minute, 2}, {"th-late-3", -time.Hour, 3}} {
		late := exposure.Found{ThreatID: c2.threat, Ecosystem: "npm", Name: "axios", Versions: []string{"1.14.1"}, At: day.Add(24 * time.Hour), Since: day.Add(c2.since)}
		if n, err := s.RecordExposures(c, late); err != nil || n != c2.want {
			t.Fatalf("since %s into the day: %d %v, want %d", c2.since, n, err, c2.want)
		}
	}
	// Which packages anyone got: the ledger's and the inventories'.
	if err := s.SaveInventory(c, exposure.Inventory{Project: "other", User: "b@example.com", TokenID: "tok-b", ScannedAt: day,
		Items: []exposure.Item{{Ecosystem: "pypi", Name: "requests", Version: "2.0.0"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ExposedPackages(c, []exposure.Package{{Ecosystem: "npm", Name: "axios"}, {Ecosystem: "npm", Name: "nobody"},
		{Ecosystem: "pypi", Name: "requests"}, {Ecosystem: "pypi", Name: "axios"}, {Ecosystem: "npm", Name: "axios"}})
	if err != nil || len(got) != 2 || !slices.Contains(got, exposure.Package{Ecosystem: "npm", Name: "axios"}) || !slices.Contains(got, exposure.Package{Ecosystem: "pypi", Name: "requests"}) {
		t.Fatalf("exposed packages %v %v", got, err)
	}
	// The detector's feed mark: none, then only forward.
	if at, err := s.ExposureMark(c); err != nil || !at.IsZero() {
		t.Fatalf("no mark yet: %v %v", at, err)
	}
	for _, m := range []time.Time{day.Add(2 * time.Hour), day.Add(time.Hour)} {
		if err := s.MoveExposureMark(c, m); err != nil {
			t.Fatal(err)
		}
	}
	if at, err := s.ExposureMark(c); err != nil || !at.Equal(day.Add(2*time.Hour)) {
		t.Fatalf("mark %v %v, want %v (never back)", at, err, day.Add(2*time.Hour))
	}
}
