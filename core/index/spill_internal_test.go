package index

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// TestSpillGuards covers what the fill must never do: attach an answer read
// before a change to the record the change made, serve an entry of another
// report, or read through a position into a rewritten file.
func TestSpillGuards(t *testing.T) {
	ctx := context.Background()
	x := New(nil, 16)
	render := func(th core.Threat) ([]byte, error) {
		return []byte(`{"d":"` + th.Details.ThreatDescription + `"}`), nil
	}
	if err := x.EnableSpill(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	x.spill.render = render
	defer x.CloseSpill()
	id := uuid.New()
	sum := core.Summary{ID: id.String(), CanonicalKey: "package:npm:g", ReportType: core.TypePackage, Registry: "npm", VerifiedAt: time.Now()}
	if err := x.Put(sum); err != nil {
		t.Fatal(err)
	}
	q := core.CheckQuery{ReportType: core.TypePackage, ResourceIdentifier: "g", Ecosystem: "npm"}
	th := func(desc string) core.Threat {
		return core.Threat{ID: id.String(), CanonicalKey: sum.CanonicalKey, Status: core.StatusVerified, Details: core.Details{ThreatDescription: desc}}
	}

	// The fill chose the record, then the report changed before its
	// answer was written: the old answer is garbage, not the record's.
	chosen, _, _ := x.unspilled(0, 10)
	if len(chosen) != 1 {
		t.Fatalf("unspilled: %+v", chosen)
	}
	if err := x.Put(sum); err != nil {
		t.Fatal(err)
	}
	if err := x.writeEntries([]core.Threat{th("old")}, map[uuid.UUID]pending{id: chosen[0]}); err != nil {
		t.Fatal(err)
	}
	if r, _ := x.byKey.get(sum.CanonicalKey); r.spillLen != 0 {
		t.Fatal("an answer read before a change was attached to the changed record")
	}
	if s := x.SpillStats(); s.Entries != 0 || s.Garbage == 0 {
		t.Fatalf("stale entry: %+v", s)
	}
	chosen, _, _ = x.unspilled(0, 10)
	if err := x.writeEntries([]core.Threat{th("new")}, map[uuid.UUID]pending{id: chosen[0]}); err != nil {
		t.Fatal(err)
	}
	r, err := x.CheckQuery(ctx, q)
	if err != nil || string(r.Answer) != `{"d":"new"}` || r.Count != 1 || r.ID != id {
		t.Fatalf("fresh entry: %+v %v", r, err)
	}

	// An entry is read only for its own report.
	rc := &x.byKey.recs[0]
	sp := x.spill.cur.Load()
	if _, _, _, err := readEntry(sp, uuid.New(), rc.spillOff, rc.spillLen); !errors.Is(err, errSpillEntry) {
		t.Fatalf("another report's entry: %v", err)
	}
	if _, _, body, err := readEntry(sp, id, rc.spillOff, rc.spillLen); err != nil || string(body) != `{"d":"new"}` {
		t.Fatalf("own entry: %q %v", body, err)
	}

	// Garbage past the bound and past the live bytes: a new file, every
	// record without an entry (checks read storage until the fill has
	// written them again), and the old file closed under late readers.
	x.byKey.spillGarbage = spillCompactMin
	x.maybeRewriteSpill()
	if r, _ := x.byKey.get(sum.CanonicalKey); r.spillLen != 0 {
		t.Fatal("an entry survived the rewrite")
	}
	if s := x.SpillStats(); s.Entries != 0 || s.Live != 0 || s.Garbage != 0 {
		t.Fatalf("after the rewrite: %+v", s)
	}
	if _, _, _, err := readEntry(sp, id, rc.spillOff, 12); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a read of the old file: %v", err)
	}
	if x.spill.cur.Load() == sp {
		t.Fatal("the file was not replaced")
	}
}
