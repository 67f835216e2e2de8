package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
)

// testSightings: a person's sightings of a verified report are stored and
// counted; one of a report that is not verified is not found; a second
// false-positive vote of the same user conflicts; the daemon's own are one
// row per report, source and day however many are added, concurrently
// too; the list pages newest first; the counts add up.
func testSightings(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	u := user(t, s, "sight@example.com")
	v := user(t, s, "voter@example.com")
	at := now().Add(-time.Hour).Truncate(time.Millisecond)
	var ids []string
	for i := range 2 {
		th := report(t, u.ID, core.TypePackage, "npm", fmt.Sprintf("sighted-%d", i))
		if err := s.CreateThreat(c, core.SubmittedThreat{Threat: th, Policy: noLimits}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ID)
	}
	verify(t, s, ids[0], at)
	add := func(threat, typ, userID string, n int64, when time.Time) error {
		sg, err := community.NewSighting(community.SightingRequest{Type: typ, Count: n, ObservedAt: when.Format(time.RFC3339Nano), Note: "seen in **CI**"}, threat, userID, now())
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.AddSightings(c, community.SightingBatch{Sightings: []community.Sighting{sg}})
		switch {
		case err != nil:
			return err
		case out[0] == community.SightingNotFound:
			return core.ErrNotFound
		case out[0] == community.SightingConflict:
			return core.ErrConflict
		}
		return nil
	}
	if err := add(ids[1], community.SightingSeen, u.ID, 1, at); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("a sighting of a pending report: %v", err)
	}
	for i := range 5 {
		if err := add(ids[0], community.SightingSeen, u.ID, int64(i+1), at.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := add(ids[0], community.SightingFalsePositive, v.ID, 1, at); err != nil {
		t.Fatal(err)
	}
	if err := add(ids[0], community.SightingFalsePositive, v.ID, 1, at); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("a second vote: %v", err)
	}
	if err := add(ids[0], community.SightingExpired, v.ID, 2, at); err != nil {
		t.Fatal(err)
	}
	// One batch: what becomes of each, in order; a vote twice in the
	// same batch is a conflict the second time.
	var batch []community.Sighting
	for _, r := range []struct{ threat, typ, user string }{{ids[0], community.SightingSeen, u.ID}, {ids[1], community.SightingSeen, u.ID},
		{ids[0], community.SightingFalsePositive, u.ID}, {ids[0], community.SightingFalsePositive, u.ID}} {
		sg, err := community.NewSighting(community.SightingRequest{Type: r.typ, ObservedAt: at.Format(time.RFC3339)}, r.threat, r.user, now())
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, sg)
	}
	out, err := s.AddSightings(c, community.SightingBatch{Sightings: batch})
	if err != nil || fmt.Sprint(out) != fmt.Sprint([]string{community.SightingAdded, community.SightingNotFound, community.SightingAdded, community.SightingConflict}) {
		t.Fatalf("a batch: %v %v", out, err)
	}
	// The daemon's own, from 8 writers at once: two days, two sources.
	day1, day2 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 23, 59, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			var batch []community.SeenCount
			for i := range 50 {
				when := day1.Add(time.Duration(i) * time.Minute)
				if w%2 == 1 {
					when = day2
				}
				batch = append(batch, community.SeenCount{ThreatID: ids[0], Source: community.SightingSourceFirewall, Count: 1, At: when},
					community.SeenCount{ThreatID: ids[1], Source: community.SightingSourceFirewall, Count: 1, At: when})
			}
			batch = append(batch, community.SeenCount{ThreatID: ids[0], Source: community.SightingSourceScan, Count: 3, At: day1})
			errs <- s.AddSeen(c, batch)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var all []community.Sighting
	q := community.SightingQuery{ThreatID: ids[0], Limit: 3}
	for {
		page, err := s.ListSightings(c, q)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Sightings...)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	// 5 seen + 1 vote + 1 expired + the batch's seen and vote + firewall
	// on two days + scan on one.
	if len(all) != 12 {
		t.Fatalf("%d sightings listed, want 12: %+v", len(all), all)
	}
	var auto, autoCount int64
	for i, sg := range all {
		if i > 0 && sg.ObservedAt.After(all[i-1].ObservedAt) {
			t.Fatalf("not newest first at %d", i)
		}
		if sg.Auto {
			auto++
			autoCount += sg.Count
			if sg.UserID != "" || sg.Type != community.SightingSeen {
				t.Fatalf("an automatic sighting: %+v", sg)
			}
		}
		if sg.Type == community.SightingFalsePositive && sg.UserID == v.ID && sg.Note != "seen in **CI**" {
			t.Fatalf("the vote: %+v", sg)
		}
	}
	if auto != 3 || autoCount != 8*50+8*3 {
		t.Fatalf("%d automatic rows counting %d, want 3 rows counting %d", auto, autoCount, 8*50+8*3)
	}
	counts, err := s.CountSightings(c, []string{ids[0], ids[1]})
	if err != nil || len(counts) != 1 {
		t.Fatalf("counts: %+v %v", counts, err)
	}
	got := counts[0]
	if got.ThreatID != ids[0] || got.Seen != 16+8*50+8*3 || got.FalsePositive != 2 || got.Expired != 2 || !got.LastSeen.Equal(at.Add(4*time.Minute)) {
		t.Fatalf("counts: %+v", got)
	}
	// Weighed for confidence: the submitter's own sightings not at all,
	// each automatic row of a day as one sighting of at most 9.
	if got.Weight != 3*community.SeenWeightCap {
		t.Fatalf("weight %d, want %d: %+v", got.Weight, 3*community.SeenWeightCap, got)
	}
	if _, err := s.ListSightings(c, community.SightingQuery{ThreatID: ids[0], Limit: 10, Cursor: "nonsense"}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("a bad cursor: %v", err)
	}
	// Counts by page, all or changed since a time (what every daemon's
	// copy of the counts re-reads).
	page, err := s.SightingCountsPage(c, community.SightingCountsQuery{Limit: 10})
	if err != nil || len(page) != 1 || page[0].ThreatID != ids[0] || page[0].Seen != got.Seen || page[0].UpdatedAt.IsZero() ||
		page[0].UpdatedAt.Before(now().Add(-time.Minute)) || page[0].UpdatedAt.After(now().Add(time.Minute)) {
		t.Fatalf("all counts: %+v %v", page, err)
	}
	changed := page[0].UpdatedAt
	for _, q := range []struct {
		q    community.SightingCountsQuery
		want int
	}{
		{community.SightingCountsQuery{Since: changed, Limit: 10}, 1},
		{community.SightingCountsQuery{Since: changed.Add(time.Second), Limit: 10}, 0},
		{community.SightingCountsQuery{After: ids[0], Limit: 10}, 0},
		{community.SightingCountsQuery{Since: changed.Add(-time.Hour), After: "", Limit: 1}, 1},
	} {
		if rows, err := s.SightingCountsPage(c, q.q); err != nil || len(rows) != q.want {
			t.Fatalf("counts %+v: %+v %v", q.q, rows, err)
		}
	}
	if _, err := s.SightingCountsPage(c, community.SightingCountsQuery{}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("counts without a limit: %v", err)
	}
	// A later sighting moves the change time.
	time.Sleep(5 * time.Millisecond)
	if err := s.AddSeen(c, []community.SeenCount{{ThreatID: ids[0], Source: community.SightingSourceFirewall, Count: 1, At: now()}}); err != nil {
		t.Fatal(err)
	}
	if rows, err := s.SightingCountsPage(c, community.SightingCountsQuery{Since: changed.Add(time.Millisecond), Limit: 10}); err != nil || len(rows) != 1 || rows[0].Seen != got.Seen+1 || rows[0].Weight != got.Weight+1 {
		t.Fatalf("counts changed since: %+v %v", rows, err)
	}
	// One batch over two reports, their sightings interleaved and out of
	// time order: each report's counts add up, its last seen is the latest
	// of its seen sightings, and an expired one leaves it.
	third := report(t, u.ID, core.TypePackage, "npm", "sighted-2")
	if err := s.CreateThreat(c, core.SubmittedThreat{Threat: third, Policy: noLimits}); err != nil {
		t.Fatal(err)
	}
	verify(t, s, third.ID, at)
	before, err := s.CountSightings(c, []string{ids[0]})
	if err != nil || len(before) != 1 {
		t.Fatalf("counts: %+v %v", before, err)
	}
	batch = batch[:0]
	for _, r := range []struct {
		threat, typ string
		n           int64
		when        time.Time
	}{{third.ID, community.SightingSeen, 2, at.Add(time.Minute)}, {ids[0], community.SightingExpired, 3, at.Add(time.Hour)},
		{third.ID, community.SightingSeen, 1, at.Add(10 * time.Minute)}, {third.ID, community.SightingExpired, 5, at.Add(time.Hour)},
		{third.ID, community.SightingSeen, 4, at.Add(5 * time.Minute)}} {
		sg, err := community.NewSighting(community.SightingRequest{Type: r.typ, Count: r.n, ObservedAt: r.when.Format(time.RFC3339)}, r.threat, v.ID, now())
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, sg)
	}
	if out, err := s.AddSightings(c, community.SightingBatch{Sightings: batch}); err != nil || fmt.Sprint(out) != fmt.Sprint(slices.Repeat([]string{community.SightingAdded}, 5)) {
		t.Fatalf("a batch over two reports: %v %v", out, err)
	}
	counts, err = s.CountSightings(c, []string{ids[0], third.ID})
	if err != nil || len(counts) != 2 {
		t.Fatalf("counts: %+v %v", counts, err)
	}
	for _, got := range counts {
		switch got.ThreatID {
		case ids[0]:
			if got.Expired != 2+3 || got.Seen != before[0].Seen || !got.LastSeen.Equal(before[0].LastSeen) {
				t.Fatalf("the first report after the batch: %+v", got)
			}
		case third.ID:
			if got.Seen != 7 || got.Expired != 5 || got.FalsePositive != 0 || got.Weight != 7 || !got.LastSeen.Equal(at.Add(10*time.Minute).Truncate(time.Second)) {
				t.Fatalf("the third report after the batch: %+v", got)
			}
		}
	}
	// One person's sighting of count 1,000,000 weighs 9; its submitter's
	// own weighs nothing, though both are counted.
	if err := add(third.ID, community.SightingSeen, v.ID, 1_000_000, at); err != nil {
		t.Fatal(err)
	}
	if err := add(third.ID, community.SightingSeen, u.ID, 500, at); err != nil {
		t.Fatal(err)
	}
	if counts, err := s.CountSightings(c, []string{third.ID}); err != nil || len(counts) != 1 || counts[0].Seen != 7+1_000_000+500 || counts[0].Weight != 7+community.SeenWeightCap {
		t.Fatalf("a huge count and the submitter's own: %+v %v", counts, err)
	}
}
