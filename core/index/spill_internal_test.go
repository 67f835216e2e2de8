package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
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
	render := func(b []byte, th core.Threat) ([]byte, error) {
		return append(b, `{"d":"`+th.Details.ThreatDescription+`"}`...), nil
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
	if _, _, _, err := readEntry(sp, uuid.New(), rc.spillOff, rc.spillLen, nil); !errors.Is(err, errSpillEntry) {
		t.Fatalf("another report's entry: %v", err)
	}
	if _, _, body, err := readEntry(sp, id, rc.spillOff, rc.spillLen, nil); err != nil || string(body) != `{"d":"new"}` {
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
	if _, _, _, err := readEntry(sp, id, rc.spillOff, 12, nil); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a read of the old file: %v", err)
	}
	if x.spill.cur.Load() == sp {
		t.Fatal("the file was not replaced")
	}
}

// BenchmarkWriteEntries renders and appends a fill's batch of 1,000
// reports the size of an imported one (the spill's fill at start-up does
// this for every verified report): its allocations are most of the
// daemon's garbage during the fill (docs/performance.md).
func BenchmarkWriteEntries(b *testing.B) {
	x := New(nil, 16)
	if err := x.EnableSpill(b.TempDir()); err != nil {
		b.Fatal(err)
	}
	defer x.CloseSpill()
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	ts := make([]core.Threat, 1000)
	want := make(map[uuid.UUID]pending, len(ts))
	for i := range ts {
		id := uuid.New()
		name := fmt.Sprintf("bench-npm-%07d", i)
		sum := core.Summary{ID: id.String(), CanonicalKey: "package:npm:" + name, ReportType: core.TypePackage, Registry: "npm", VerifiedAt: at}
		if err := x.Put(sum); err != nil {
			b.Fatal(err)
		}
		ts[i] = core.Threat{ID: id.String(), Status: core.StatusVerified, ReportType: core.TypePackage, CanonicalKey: sum.CanonicalKey,
			ResourceIdentifier: name, Registry: "npm", CreatedAt: at, VerifiedAt: &at, Revision: 1, SubmitterID: "importer-osv",
			Details: core.Details{ThreatDescription: "Malicious code in " + name + " (npm): it sends the environment to https://c2.bench-exfil.invalid/collect when installed. " + strings.Repeat("It runs a preinstall script. ", 30),
				PackageName: name, EvidenceReferences: "https://example.org/advisories/" + name, Tags: []string{"malicious-package", "bench"},
				Contributors: []string{}, FirstSeen: &at, OSVAdvisoryURL: "https://osv.dev/vulnerability/MAL-2025-" + name}}
	}
	chosen, _, _ := x.unspilled(0, len(ts))
	for _, p := range chosen {
		want[p.id] = p
	}
	sp := x.spill.cur.Load()
	b.ReportAllocs()
	for b.Loop() {
		if err := x.writeEntries(ts, want); err != nil {
			b.Fatal(err)
		}
		// The same batch again, over the same bytes of the file: the
		// records hold entries already and keep them.
		sp.mu.Lock()
		sp.end = 0
		sp.mu.Unlock()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ts)), "ns/report")
}
