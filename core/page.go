package core

import (
	"context"
	"time"
)

// Every paged read (the paid feeds, TAXII, the export selections) is bounded
// by bytes as well as by count: a page ends at its limit or once the report
// text it carries reaches PageBytes, whichever comes first, and always
// holds at least one report. Storage is read in chunks sized from what the
// page has read so far, so a page of large reports never holds more than
// about PageBytes plus one chunk, and a page of small ones takes one or two
// storage calls.

// PageBytes bounds the report text one page of a paged endpoint carries
// (ApproxSize of its reports). A page that reaches it ends early with its
// cursor, so a client that follows the cursor still gets everything.
const PageBytes = 4 << 20

// firstChunk is how many rows the first storage read of a page asks for.
const firstChunk = 10

// ApproxSize is the size of t's text: its long fields plus room for the
// short ones. It bounds pages and batches without marshalling them.
func (t *Threat) ApproxSize() int {
	d := &t.Details
	n := 512 + len(t.ResourceIdentifier) + len(t.UpstreamID) + len(d.ThreatDescription) + len(d.PayloadDescription) +
		len(d.EvidenceReferences) + len(d.VersionInfo) + len(d.PackageName) + len(d.Publisher) + len(d.OSVAdvisoryURL)
	for _, s := range d.Tags {
		n += len(s) + 2
	}
	for _, s := range d.Contributors {
		n += len(s) + 2
	}
	for _, ind := range t.IOCs {
		n += 48 + len(ind.Value) + len(ind.Detail)
		for _, v := range ind.Versions {
			n += len(v) + 2
		}
	}
	return n
}

// fillPage reads one page of up to limit items holding at most budget
// bytes (size of each; the item that crosses the budget is kept, so a page
// is never empty while items remain). read(n) returns up to n items
// following those it returned before (it advances its own keyset
// position). more says whether items follow the page: it is never a guess,
// so a client sees the end of the data exactly when the cursor is absent.
func fillPage[T any](limit, budget int, size func(T) int, read func(n int) ([]T, error)) (page []T, more bool, err error) {
	n, bytes := min(limit+1, firstChunk), 0
	for {
		rows, err := read(n)
		if err != nil {
			return nil, false, err
		}
		for _, r := range rows {
			if len(page) == limit || (len(page) > 0 && bytes >= budget) {
				return page, true, nil
			}
			page = append(page, r)
			bytes += size(r)
		}
		if len(rows) < n {
			return page, false, nil
		}
		if len(page) == limit || bytes >= budget {
			// The page ends where the chunk did: one more row says
			// whether anything follows.
			probe, err := read(1)
			return page, len(probe) > 0, err
		}
		// The next chunk: as many rows as the rest of the budget holds at
		// the average size so far, one more than the page still needs at
		// the most.
		avg := max(bytes/len(page), 1)
		n = min(limit-len(page)+1, max((budget-bytes)/avg, 1)+1, MaxPage)
	}
}

// FeedPage reads one byte-bounded page of up to limit of the published
// changes q selects, from q's position on. A caller that reads on resumes
// after the page's last item (the reads may have gone past it).
func FeedPage(ctx context.Context, store PublishedStore, q FeedQuery, limit int) ([]FeedItem, bool, error) {
	return fillPage(limit, PageBytes, func(it FeedItem) int { return it.Threat.ApproxSize() }, func(n int) ([]FeedItem, error) {
		q.Limit = n
		items, err := store.Feed(ctx, q)
		if len(items) > 0 {
			last := items[len(items)-1].Event
			q.AfterAt, q.AfterSeq = last.At, last.Seq
		}
		return items, err
	})
}

// ThreatPage reads one byte-bounded page of up to limit of the verified
// reports q selects, from q's position on (as FeedPage).
func ThreatPage(ctx context.Context, store PublishedStore, q ThreatQuery, limit int) ([]Threat, bool, error) {
	return fillPage(limit, PageBytes, func(t Threat) int { return t.ApproxSize() }, func(n int) ([]Threat, error) {
		q.Limit = n
		page, err := store.QueryThreats(ctx, q)
		if len(page) > 0 {
			last := page[len(page)-1]
			q.AfterVerifiedAt, q.AfterID = timeOr(last.VerifiedAt), last.ID
		}
		return page, err
	})
}

// timeOr is *t, or the zero time for nil.
func timeOr(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
