package taxii

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// The pages read ahead: each is taken once, by the query that asks for it
// and no other; no more than aheadMax are kept or rendered at once; one
// older than aheadTTL is not served.
func TestReadAhead(t *testing.T) {
	var r readAhead
	var renders atomic.Int32
	release := make(chan struct{})
	render := func(_ context.Context, q Query) (Page, error) {
		renders.Add(1)
		<-release
		return Page{Next: "after " + q.Next}, nil
	}
	col, _ := FindCollection(CollectionAll)
	q := func(next string) Query { return Query{Collection: col, Limit: 10, Next: next} }
	for i := range aheadMax + 2 {
		r.start(q(fmt.Sprint(i)), render)
	}
	r.start(q("0"), render) // already being read ahead
	close(release)
	r.mu.Lock()
	kept := slices.Collect(maps.Values(r.pages))
	r.mu.Unlock()
	if len(kept) != aheadMax {
		t.Fatalf("%d pages kept, want %d", len(kept), aheadMax)
	}
	for _, a := range kept {
		<-a.done
	}
	if n := renders.Load(); n != aheadMax {
		t.Fatalf("%d renders, want %d", n, aheadMax)
	}
	other := q("0")
	other.Types = []string{"malware"}
	if r.take(other) != nil || r.take(Query{Collection: col, Limit: 20, Next: "0"}) != nil {
		t.Fatal("a page read ahead was given to another query")
	}
	a := r.take(q("0"))
	if a == nil {
		t.Fatal("the page read ahead for next 0 is missing")
	}
	<-a.done
	if a.err != nil || a.page.Next != "after 0" {
		t.Fatalf("page read ahead: %+v, %v", a.page, a.err)
	}
	if r.take(q("0")) != nil {
		t.Fatal("a page read ahead was taken twice")
	}
	if r.take(q(fmt.Sprint(aheadMax))) != nil {
		t.Fatal("a page past aheadMax was read ahead")
	}
	r.mu.Lock()
	r.pages[aheadKey(q("1"))].at = time.Now().Add(-aheadTTL - time.Second)
	r.mu.Unlock()
	if r.take(q("1")) != nil {
		t.Fatal("a page read ahead longer than aheadTTL ago was served")
	}
	// A failed read-ahead is not served: Page renders the page itself.
	var x Service
	x.ahead.start(q("x"), func(context.Context, Query) (Page, error) { return Page{}, errors.New("exporter gone") })
	if _, ok, err := x.readAhead(context.Background(), q("x")); ok || err != nil {
		t.Fatalf("a failed read-ahead: ok %v, err %v", ok, err)
	}
}
