package storagetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// testLedger: a row is one version, token, address and day; writing it
// again adds the count and widens first and last; trimming removes the
// days before the bound.
func testLedger(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	e := firewall.LedgerEntry{Ecosystem: "npm", Name: "left-pad", Version: "1.3.0", Purl: "pkg:npm/left-pad@1.3.0", User: "dev@example.com",
		TokenID: "tok-1", ClientIP: "10.0.0.1", Day: day, First: day.Add(time.Hour), Last: day.Add(2 * time.Hour), Count: 3}
	other := e
	other.TokenID, other.Count = "tok-2", 1
	old := e
	old.Day, old.First, old.Last = day.Add(-48*time.Hour), day.Add(-47*time.Hour), day.Add(-47*time.Hour)
	if err := s.RecordLedger(c, []firewall.LedgerEntry{e, other, old}); err != nil {
		t.Fatal(err)
	}
	again := e
	again.First, again.Last, again.Count = day.Add(30*time.Minute), day.Add(5*time.Hour), 2
	if err := s.RecordLedger(c, []firewall.LedgerEntry{again}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLedger(c, []firewall.LedgerEntry{{Ecosystem: "npm", Count: 1}}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("an entry without a name: %v", err)
	}
	// More expired rows than one trimming transaction removes: all go.
	var expired []firewall.LedgerEntry
	for i := range 25_000 {
		x := old
		x.TokenID = fmt.Sprintf("tok-old-%d", i)
		if expired = append(expired, x); len(expired) == 10_000 || i == 24_999 {
			if err := s.RecordLedger(c, expired); err != nil {
				t.Fatal(err)
			}
			expired = expired[:0]
		}
	}
	n, err := s.TrimLedger(c, firewall.LedgerTrim{Before: day})
	if err != nil || n != 25_001 {
		t.Fatalf("trim: %d %v, want 25001", n, err)
	}
	rows, err := s.LedgerOf(c, firewall.LedgerQuery{Ecosystem: "npm", Name: "left-pad", Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %+v %v", rows, err)
	}
	for _, r := range rows {
		if r.TokenID == "tok-1" && (r.Count != 5 || !r.First.Equal(day.Add(30*time.Minute)) || !r.Last.Equal(day.Add(5*time.Hour)) || r.User != "dev@example.com" || r.ClientIP != "10.0.0.1") {
			t.Fatalf("merged row %+v", r)
		}
		if r.TokenID == "tok-2" && r.Count != 1 {
			t.Fatalf("other row %+v", r)
		}
	}
}
