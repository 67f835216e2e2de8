package web

import "testing"

// The totals' cache from its zero value: before the index has loaded its
// version is 0, which the empty cache also has (a total counted then was
// written to a nil map, and the panic left the cache's lock held: every
// later list page waited for ever).
func TestCountsFromZero(t *testing.T) {
	var c counts
	c.put(0, "a", 7)
	if _, ok := c.get(0, "a"); ok {
		t.Fatal("a total put into the empty cache is found")
	}
	c.put(0, "a", 7)
	if n, ok := c.get(0, "a"); !ok || n != 7 {
		t.Fatalf("get = %d, %v; want 7", n, ok)
	}
	if _, ok := c.get(1, "a"); ok {
		t.Fatal("a total survived a version change")
	}
	c.put(0, "a", 9) // counted under the old version: dropped
	if _, ok := c.get(1, "a"); ok {
		t.Fatal("a total of an old version was cached")
	}
}
