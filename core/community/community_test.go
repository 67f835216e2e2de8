package community

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// table is a sighting_counts table as storage answers it (the same
// keyset rules), counting the rows each look reads.
type table struct {
	rows map[string]core.SightingCounts
	read int
}

func (t *table) SightingCountsPage(_ context.Context, q SightingCountsQuery) ([]core.SightingCounts, error) {
	var out []core.SightingCounts
	for _, r := range t.rows {
		switch {
		case q.Since.IsZero():
			if r.ThreatID > q.After {
				out = append(out, r)
			}
		case q.After != "":
			if !r.UpdatedAt.Before(q.Since) && (r.UpdatedAt.After(q.Since) || r.ThreatID > q.After) {
				out = append(out, r)
			}
		default:
			if !r.UpdatedAt.Before(q.Since) {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if q.Since.IsZero() || out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].ThreatID < out[j].ThreatID
		}
		return out[i].UpdatedAt.Before(out[j].UpdatedAt)
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	t.read += len(out)
	return out, nil
}

func (t *table) CountSightings(_ context.Context, ids []string) ([]core.SightingCounts, error) {
	var out []core.SightingCounts
	for _, id := range ids {
		if r, ok := t.rows[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (t *table) SubmitterRecordsAll(context.Context) ([]core.SubmitterRecord, error) { return nil, nil }
func (t *table) CampaignMembers(context.Context) ([]CampaignMember, error)           { return nil, nil }

// TestLooksReadEachChangeABoundedNumberOfTimes: a look reads what changed
// after the last change it read, not the overlap again; a change committed
// late (its time before changes already read) is found by a sweep; and
// over many looks each change is read at most three times.
func TestLooksReadEachChangeABoundedNumberOfTimes(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	tab := &table{rows: map[string]core.SightingCounts{}}
	seen := func(id uuid.UUID, n int64, at time.Time) {
		tab.rows[id.String()] = core.SightingCounts{ThreatID: id.String(), Seen: n, LastSeen: at, UpdatedAt: at}
	}
	v := New(tab, slog.New(slog.NewTextHandler(io.Discard, nil)))
	v.now = func() time.Time { return clock }

	ids := make([]uuid.UUID, 50)
	for i := range ids {
		ids[i] = uuid.New()
		seen(ids[i], 1, clock.Add(-time.Duration(i)*time.Second))
	}
	if err := v.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if tab.read != 50 {
		t.Fatalf("the first look read %d rows, want all 50", tab.read)
	}

	// 200 looks half a second apart, each after one new change: each look
	// reads that change and nothing else, but for the sweeps.
	changes := 0
	for i := range 200 {
		clock = clock.Add(500 * time.Millisecond)
		seen(ids[i%len(ids)], int64(2+i), clock)
		changes++
		if err := v.Catch(ctx); err != nil {
			t.Fatal(err)
		}
		if got := v.Of(ids[i%len(ids)], "").Sightings.Seen; got != int64(2+i) {
			t.Fatalf("look %d: seen %d, want %d", i, got, 2+i)
		}
	}
	read := tab.read - 50
	t.Logf("200 looks read %d rows for %d changes", read, changes)
	if read > 3*changes+2*len(ids) {
		t.Fatalf("200 looks read %d rows for %d changes: more than three reads a change", read, changes)
	}
	if read < changes {
		t.Fatalf("200 looks read %d rows for %d changes", read, changes)
	}

	// A change committed 5 s late: its time is before the latest change
	// read, so the next look does not see it; a sweep, within two Overlaps,
	// does.
	late := ids[7]
	clock = clock.Add(500 * time.Millisecond)
	seen(ids[1], 1000, clock)
	if err := v.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	seen(late, 5000, clock.Add(-5*time.Second))
	found := false
	for range int(2 * Overlap / (500 * time.Millisecond)) {
		clock = clock.Add(500 * time.Millisecond)
		if err := v.Catch(ctx); err != nil {
			t.Fatal(err)
		}
		if v.Of(late, "").Sightings.Seen == 5000 {
			found = true
			break
		}
	}
	if !found {
		t.Fatalf("a change committed 5 s late was not read within two sweeps (%s)", 2*Overlap)
	}

	// A Refresh (this daemon's own batch) does not move the cursor: a
	// change another daemon committed meanwhile, with an earlier time, is
	// read by the next look.
	clock = clock.Add(500 * time.Millisecond)
	other := ids[20]
	seen(other, 7000, clock)
	seen(ids[21], 7001, clock.Add(time.Millisecond))
	if err := v.Refresh(ctx, ids[21].String()); err != nil {
		t.Fatal(err)
	}
	if err := v.Catch(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.Of(other, "").Sightings.Seen; got != 7000 {
		t.Fatalf("after this daemon's Refresh of a later change, another's change reads %d, want 7000", got)
	}
}

// One sighting moves confidence by at most 10, whatever its count: the
// weight of a sighting is capped (SeenWeight) before the logarithm.
func TestConfidenceOfOneSighting(t *testing.T) {
	base := core.Confidence(core.ConfidenceInput{})
	one := core.Confidence(core.ConfidenceInput{Seen: SeenWeight(1_000_000)})
	if base != 50 || one != 60 {
		t.Fatalf("confidence %d without sightings, %d with one of count 1,000,000; want 50 and 60", base, one)
	}
	if SeenWeight(3) != 3 || SeenWeight(0) != 0 || SeenWeight(-5) != 0 {
		t.Fatal("SeenWeight below the cap is the count")
	}
}
