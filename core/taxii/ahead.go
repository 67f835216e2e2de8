package taxii

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A client that pages a collection by next asks for each page only once
// it has read the one before, so the daemon, the storage plugin and the
// STIX exporter waited while it did, and it waited while they worked. The
// service therefore renders the page that follows a page with a next
// value as soon as it has answered, and keeps it until that next value
// is asked for (read-ahead). A page read ahead is the answer a request
// made at that moment would have had: a change published since comes in a
// later page, as it would for a client that asked a little earlier.
const (
	// aheadMax bounds the pages kept or being rendered (each at most
	// core.PageBytes of objects, as every page).
	aheadMax = 4
	// aheadTTL is how long a page read ahead waits for its request.
	aheadTTL = 10 * time.Second
	// aheadTimeout bounds the rendering of one page read ahead.
	aheadTimeout = 30 * time.Second
)

// ahead is one page read ahead: done is closed once page and err are set.
type ahead struct {
	done chan struct{}
	page Page
	err  error
	at   time.Time // when it was started
}

// readAhead holds the pages read ahead, by the query that asks for them.
type readAhead struct {
	mu    sync.Mutex
	pages map[string]*ahead
}

// aheadKey names a query: every field that decides its page.
func aheadKey(q Query) string {
	return fmt.Sprintf("%s\x00%d\x00%s\x00%d\x00%q\x00%q\x00%q\x00%q", q.Collection.ID, q.AddedAfter.UnixNano(), q.Next, q.Limit,
		q.IDs, q.Types, q.Versions, q.SpecVersions)
}

// take removes and returns the page read ahead for q, if there is one
// that is not too old.
func (r *readAhead) take(q Query) *ahead {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := aheadKey(q)
	a := r.pages[key]
	delete(r.pages, key)
	if a == nil || time.Since(a.at) > aheadTTL {
		return nil
	}
	return a
}

// start reads the page of q ahead with render, unless aheadMax pages are
// already kept or being rendered (pages older than aheadTTL are dropped
// first).
func (r *readAhead) start(q Query, render func(context.Context, Query) (Page, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pages == nil {
		r.pages = map[string]*ahead{}
	}
	for k, a := range r.pages {
		if time.Since(a.at) > aheadTTL {
			delete(r.pages, k)
		}
	}
	key := aheadKey(q)
	if _, ok := r.pages[key]; ok || len(r.pages) >= aheadMax {
		return
	}
	a := &ahead{done: make(chan struct{}), at: time.Now()}
	r.pages[key] = a
	go func() {
		defer close(a.done)
		ctx, cancel := context.WithTimeout(context.Background(), aheadTimeout)
		defer cancel()
		a.page, a.err = render(ctx, q)
	}()
}
