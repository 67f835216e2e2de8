package storagetest

import (
	"fmt"
	"testing"

	"github.com/threatd/threatd/core"
)

func testRateCounters(t *testing.T, b Backend) {
	s := open(t, b, dbName(t))
	c := ctx(t)
	const w = 29_000_000
	totals, err := s.SyncRateCounts(c, core.RateCounts{Window: w, Counts: map[string]int64{"ip:192.0.2.1": 3, "token:a": 1}})
	if err != nil || totals["ip:192.0.2.1"] != 3 || totals["token:a"] != 1 {
		t.Fatalf("first sync: %v %v", totals, err)
	}
	// Concurrent daemons add to the same counters.
	_, _, other := race(10, func(i int) error {
		_, err := s.SyncRateCounts(c, core.RateCounts{Window: w, Counts: map[string]int64{"token:a": 2, fmt.Sprintf("ip:198.51.100.%d", i): 1}})
		return err
	}, nil)
	if len(other) > 0 {
		t.Fatal(other)
	}
	totals, err = s.SyncRateCounts(c, core.RateCounts{Window: w, Counts: nil})
	if err != nil || totals["token:a"] != 21 || totals["ip:192.0.2.1"] != 3 || len(totals) != 12 {
		t.Fatalf("after concurrent syncs: %v %v", totals, err)
	}
	// Windows older than the previous one are forgotten.
	if totals, _ := s.SyncRateCounts(c, core.RateCounts{Window: w + 2, Counts: map[string]int64{"token:a": 1}}); len(totals) != 1 || totals["token:a"] != 1 {
		t.Fatalf("new window: %v", totals)
	}
	if old, _ := s.SyncRateCounts(c, core.RateCounts{Window: w, Counts: nil}); len(old) != 0 {
		t.Fatalf("old window kept: %v", old)
	}
	// An hourly limiter's windows (the sightings') live beside the
	// minutes': neither forgets the other's.
	const h = 494_000
	if totals, _ := s.SyncRateCounts(c, core.RateCounts{Window: h, Counts: map[string]int64{"sightings:u1": 5}}); totals["sightings:u1"] != 5 {
		t.Fatalf("hour window: %v", totals)
	}
	s.SyncRateCounts(c, core.RateCounts{Window: w + 3, Counts: map[string]int64{"token:a": 1}})
	if totals, _ := s.SyncRateCounts(c, core.RateCounts{Window: h, Counts: map[string]int64{"sightings:u1": 1}}); totals["sightings:u1"] != 6 {
		t.Fatalf("a minute sync forgot the hour window: %v", totals)
	}
	if totals, _ := s.SyncRateCounts(c, core.RateCounts{Window: w + 3, Counts: nil}); totals["token:a"] != 1 {
		t.Fatalf("an hour sync forgot the minute window: %v", totals)
	}
}
