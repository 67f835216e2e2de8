package taxii

import (
	"context"
	"sync"

	"github.com/threatd/threatd/core"
)

// A page asks storage for the changes it needs at what a change of the
// same query held on the pages before (pageSizes), instead of a few first
// to learn it: a page of 1,000 objects was three reads of the feed and
// four calls to the exporter (ten changes, then the rest, then one to say
// whether anything follows), each waiting for the one before; it is now
// one of each, and the first page of a query still starts with
// firstChunk.

// sizesMax bounds the queries remembered; past it they are forgotten
// and learnt again.
const sizesMax = 256

// changeSize is what one change of a query's pages held on average: the
// objects the page kept, their bytes, and the report text read.
type changeSize struct{ objects, bytes, text float64 }

// pageSizes remembers a changeSize per query (binding: the collection,
// added_after and the filters).
type pageSizes struct {
	mu sync.Mutex
	m  map[string]changeSize
}

func (s *pageSizes) get(key string) (changeSize, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[key]
	return c, ok
}

// put records what the changes a page took held (changes: those whose
// objects it kept or left out, not those read past its end); a page that
// took no change, or whose objects were all left out, teaches nothing.
func (s *pageSizes) put(key string, changes, objects, bytes, text int) {
	if changes == 0 || objects == 0 || bytes == 0 || text == 0 {
		return
	}
	n := float64(changes)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= sizesMax {
		s.m = map[string]changeSize{}
	}
	s.m[key] = changeSize{objects: float64(objects) / n, bytes: float64(bytes) / n, text: float64(text) / n}
}

// firstRead is how many changes a page's first read asks for: as many as
// fill the rest of the page (room objects) at c, and two more, so that a
// page that fills ends without a read to say whether anything follows;
// firstChunk when nothing is known.
func firstRead(c changeSize, known bool, room int) int {
	if !known {
		return min(room+1, firstChunk)
	}
	return min(int(c.fill(room, core.PageBytes, core.PageBytes))+2, core.MaxGetThreats)
}

// fill is how many changes of size c fill the room left in a page: objects,
// bytes of objects and bytes of report text.
func (c changeSize) fill(objects, bytes, text int) float64 {
	return max(min(float64(objects)/c.objects, float64(bytes)/c.bytes, float64(text)/c.text), 0)
}

// feedRead is a read of the feed running while a page renders the one
// before it: done is closed once items and err are set.
type feedRead struct {
	fq     core.FeedQuery
	items  []core.FeedItem
	err    error
	done   chan struct{}
	cancel context.CancelFunc
}

// readFeed starts reading fq from store.
func (x *Service) readFeed(ctx context.Context, fq core.FeedQuery) *feedRead {
	ctx, cancel := context.WithCancel(ctx)
	r := &feedRead{fq: fq, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.done)
		r.items, r.err = x.store.Feed(ctx, fq)
	}()
	return r
}

// wait returns what the read returned.
func (r *feedRead) wait() ([]core.FeedItem, error) {
	<-r.done
	r.cancel()
	return r.items, r.err
}

// drop stops a read the page no longer needs, and waits for it to end.
func (r *feedRead) drop() {
	if r != nil {
		r.cancel()
		<-r.done
	}
}
