package cache

import (
	"slices"
	"testing"
)

func TestLRU(t *testing.T) {
	l := NewLRU[string](10)
	if d := l.Add("a", "A", 4); d != nil {
		t.Fatal(d)
	}
	l.Add("b", "B", 4)
	l.Get("a") // b is now the least recently used
	if d := l.Add("c", "C", 4); !slices.Equal(d, []string{"B"}) || l.Used() != 8 {
		t.Fatalf("dropped %v, used %d", d, l.Used())
	}
	if d := l.Add("a", "A2", 6); d != nil || l.Used() != 10 {
		t.Fatalf("a replacement is not a drop: %v, used %d", d, l.Used())
	}
	if v, ok := l.Get("a"); !ok || v != "A2" {
		t.Fatal(v)
	}
	if d := l.Add("huge", "H", 11); !slices.Contains(d, "H") || l.Used() > 10 {
		t.Fatalf("a value larger than the bound: %v, used %d", d, l.Used())
	}
	l.Remove("c")
	if _, ok := l.Get("c"); ok {
		t.Fatal("removed")
	}
}
