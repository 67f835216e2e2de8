package taxii

import (
	"fmt"
	"testing"

	"github.com/threatd/threatd/core"
)

// A page's first read: firstChunk while nothing is known of the query,
// then as many changes as fill the page at what the query's changes held,
// and two more; bounded by the bytes of objects and of text a page
// carries, and by what one read may ask for.
func TestFirstRead(t *testing.T) {
	var s pageSizes
	c, ok := s.get("q")
	if got := firstRead(c, ok, 1000); ok || got != firstChunk {
		t.Fatalf("nothing known: %d changes (known %v), want %d", got, ok, firstChunk)
	}
	if got := firstRead(c, false, 3); got != 4 {
		t.Fatalf("nothing known, room for 3: %d, want 4", got)
	}
	s.put("q", 0, 0, 0, 0)     // a page that took no change
	s.put("q", 10, 0, 0, 5000) // one whose objects were all left out
	if _, ok := s.get("q"); ok {
		t.Fatal("a page that took nothing was remembered")
	}
	// 143 changes held 1,000 objects of 1.4 MB, from 2.1 MB of text.
	s.put("q", 143, 1000, 1_400_000, 2_100_000)
	// Text bounds a page: 4 MiB of it at 1 MB a change is 4 changes.
	s.put("big", 10, 70, 70_000, 10_000_000)
	if c, ok := s.get("big"); firstRead(c, ok, 1000) != 4+2 {
		t.Fatalf("big reports: %d changes, want 6", firstRead(c, ok, 1000))
	}
	c, ok = s.get("q")
	if !ok {
		t.Fatal("the page's sizes were not remembered")
	}
	for _, tc := range []struct{ room, want int }{
		{1000, 143 + 2}, // 7 objects a change
		{500, 71 + 2},
		{0, 2},
	} {
		if got := firstRead(c, ok, tc.room); got != tc.want {
			t.Errorf("room %d: %d changes, want %d", tc.room, got, tc.want)
		}
	}
	// Changes of one object each and tiny text: bounded by a read's most.
	s.put("tiny", 1000, 1000, 1000, 1000)
	c, ok = s.get("tiny")
	if got := firstRead(c, ok, 1_000_000); got != core.MaxGetThreats {
		t.Fatalf("tiny changes: %d, want %d", got, core.MaxGetThreats)
	}
	if other, ok := s.get("other"); ok {
		t.Fatalf("another query has sizes %+v", other)
	}
	// The queries remembered are bounded.
	for i := range 3 * sizesMax {
		s.put(fmt.Sprint(i), 1, 1, 1, 1)
	}
	if n := len(s.m); n > sizesMax {
		t.Fatalf("%d queries remembered, at most %d", n, sizesMax)
	}
}
