package taxii

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/threatd/threatd/core"
)

// TAXII 2.1 collections (docs/taxii.md): "threats" holds
// every published report, and one collection per package ecosystem holds
// that ecosystem's. A collection lists each report once, at its latest
// published change (feed_events), as the objects of the STIX exports: a
// revision publishes new versions of them, a withdrawal publishes them
// revoked. Each change has its own microsecond, which is the date_added of
// its objects, so that a client resuming after the last date it saw never
// misses or repeats an object.

// CollectionAll is the alias of the collection of every report.
const CollectionAll = "threats"

// namespace makes the collections' ids (UUIDv5 of their alias).
var namespace = uuid.MustParse("0b7e3c1e-5d0c-4a7f-9a53-1d8f2f0c6e41")

// Collection is one collection.
type Collection struct {
	ID          string
	Alias       string
	Title       string
	Description string
	// Registry is the ecosystem it holds; "" = every report.
	Registry string
}

// collections are the collections: "threats", then one per package
// ecosystem (worked out once: their ids are hashes of their aliases).
var collections = func() []Collection {
	out := []Collection{{ID: uuid.NewSHA1(namespace, []byte(CollectionAll)).String(), Alias: CollectionAll,
		Title: "Verified threats", Description: "Every verified threat report: malicious packages, repositories, URLs, domains, IP addresses, wallets and container images."}}
	for _, r := range core.PackageRegistries {
		out = append(out, Collection{ID: uuid.NewSHA1(namespace, []byte(r)).String(), Alias: r,
			Title: "Malicious " + r + " packages", Description: "Verified reports of malicious packages in the " + r + " ecosystem.", Registry: r})
	}
	return out
}()

// Collections lists the collections: "threats", then one per package
// ecosystem.
func Collections() []Collection { return slices.Clone(collections) }

// FindCollection finds a collection by id or alias.
func FindCollection(key string) (Collection, bool) {
	for _, c := range collections {
		if c.ID == key || c.Alias == key {
			return c, true
		}
	}
	return Collection{}, false
}

// SharedAdded is the date_added of the objects every record refers to
// (the service's identity, the TLP:WHITE marking): they come first in every
// collection.
var SharedAdded = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Query is a request for a collection's objects, manifest or versions.
type Query struct {
	Collection Collection
	// AddedAfter selects objects added strictly after it (zero: all).
	AddedAfter time.Time
	// Next is a position from an earlier page ("" = the start).
	Next  string
	Limit int
	// Match filters: object ids, types, versions ("first", "last", "all"
	// or modified timestamps), spec versions.
	IDs, Types, Versions, SpecVersions []string
}

// Object is one object with its collection metadata.
type Object struct {
	ID          string
	Type        string
	Version     string // modified (created when the object has none)
	SpecVersion string
	DateAdded   time.Time
	JSON        json.RawMessage
}

// Page is one page of a collection.
type Page struct {
	Objects []Object
	More    bool
	Next    string
}

// Service serves collections from the published changes, rendered by the
// STIX exporter a page at a time.
type Service struct {
	store     core.Store
	exporters core.Exporters
	service   string
	signer    *core.Signer
	ahead     readAhead
	sizes     pageSizes
	// Community says what the community says of each report rendered
	// (nil: nothing).
	Community core.Communities
}

// New returns the TAXII use cases; service names the STIX identity.
func New(store core.Store, exporters core.Exporters, service string) *Service {
	return &Service{store: store, exporters: exporters, service: service, signer: core.NewSigner(store)}
}

// position is where a page ends: after the change (At, Seq), or within
// it after Offset of its objects (a change with more objects than a page).
// Seq 0 is the shared objects before every change.
type position struct {
	At     time.Time
	Seq    int64
	Offset int
	Set    bool
}

// encode signs the position bound to the query it pages (binding):
// a next value works only with the collection, added_after and match
// filters it was given out for, and cannot be edited.
func (x *Service) encode(ctx context.Context, p position, q Query) (string, error) {
	return x.signer.Sign(ctx, fmt.Appendf(nil, "1.%d.%d.%d.%s", p.At.UnixMicro(), p.Seq, p.Offset, binding(q)))
}

// errBadNext answers a next value this server did not give out for
// this query.
var errBadNext = core.Invalid("next", "is not a value this server gave out for this collection and these filters: "+
	"repeat the request that returned it, or leave next out to start from the first page")

func (x *Service) decode(ctx context.Context, s string, q Query) (position, error) {
	if len(s) > 256 {
		return position{}, errBadNext
	}
	b, ok, err := x.signer.Open(ctx, s)
	if err != nil {
		return position{}, err
	}
	parts := strings.Split(string(b), ".")
	if !ok || len(parts) != 5 || parts[0] != "1" || parts[4] != binding(q) {
		return position{}, errBadNext
	}
	var n [3]int64
	for i, p := range parts[1:4] {
		if n[i], err = strconv.ParseInt(p, 10, 64); err != nil || n[i] < 0 {
			return position{}, errBadNext
		}
	}
	return position{At: time.UnixMicro(n[0]).UTC(), Seq: n[1], Offset: int(n[2]), Set: true}, nil
}

// binding is a digest of what a next value is bound to: the
// collection, added_after and the match filters (not limit: a client may
// change its page size while it pages).
func binding(q Query) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00", q.Collection.ID, q.AddedAfter.UnixNano())
	for _, list := range [][]string{q.IDs, q.Types, q.Versions, q.SpecVersions} {
		sorted := slices.Clone(list)
		slices.Sort(sorted)
		fmt.Fprintf(h, "%q\x00", sorted)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// ParseTimestamp parses a TAXII timestamp (RFC 3339 in UTC, e.g.
// added_after, match[version]).
func ParseTimestamp(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, core.Invalid(field, "must be an RFC 3339 timestamp such as 2026-01-02T03:04:05.123456Z (got %q)", core.Shorten(s))
	}
	return t.UTC(), nil
}

// Timestamp renders a date_added in UTC: to the microsecond, or to
// the nanosecond for the later objects of one change (objects).
func Timestamp(t time.Time) string {
	if t.Nanosecond()%1000 != 0 {
		return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

// maxPageRoom bounds the objects a page makes room for at its first.
const maxPageRoom = 1000

// firstChunk is how many changes the first read of a page asks for.
const firstChunk = 10

// scanFactor bounds how many changes one page reads per object it may
// return, when filters leave out most objects.
const scanFactor = 10

// Page returns one page of a collection's objects, oldest first. A page
// asked for by next, by a client that pages, is taken from the pages read
// ahead when there is one, and the page after it is read ahead in turn
// (readAhead); a first page is not (a poll that reads one page and stops
// would pay for two).
func (x *Service) Page(ctx context.Context, q Query) (Page, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	if q.Next == "" {
		return x.page(ctx, q)
	}
	page, ok, err := x.readAhead(ctx, q)
	if !ok && err == nil {
		page, err = x.page(ctx, q)
	}
	if err == nil && page.Next != "" {
		following := q
		following.Next = page.Next
		x.ahead.start(following, x.page)
	}
	return page, err
}

// readAhead returns the page read ahead for q once it is rendered; ok is
// false when there is none, or when reading it ahead failed.
func (x *Service) readAhead(ctx context.Context, q Query) (Page, bool, error) {
	a := x.ahead.take(q)
	if a == nil {
		return Page{}, false, nil
	}
	select {
	case <-a.done:
	case <-ctx.Done():
		return Page{}, false, ctx.Err()
	}
	return a.page, a.err == nil, nil
}

// page renders one page of a collection's objects.
func (x *Service) page(ctx context.Context, q Query) (Page, error) {
	var pos position
	if q.Next != "" {
		var err error
		if pos, err = x.decode(ctx, q.Next, q); err != nil {
			return Page{}, err
		}
	}
	shared, sharedIDs, storeIDs := true, 0, q.IDs
	if len(q.IDs) > 0 {
		storeIDs = nil
		for _, id := range q.IDs {
			if strings.HasPrefix(id, "identity--") || strings.HasPrefix(id, "marking-definition--") || strings.HasPrefix(id, "extension-definition--") {
				sharedIDs++
			} else {
				storeIDs = append(storeIDs, id)
			}
		}
		shared = sharedIDs > 0
	}
	// The shared objects come first: only a page from the start, or one
	// that resumes inside them, has them.
	if (pos.Set && (pos.Seq > 0 || pos.Offset == 0)) || (!q.AddedAfter.IsZero() && !q.AddedAfter.Before(SharedAdded.Add(time.Microsecond))) {
		shared = false
	}
	var page Page
	full, bytes := false, 0
	var last position
	// add appends the objects of one change (or the shared ones) from
	// offset; it reports false when the page is full.
	add := func(objs []Object, p position) bool {
		objs = x.filter(objs, q)
		if p.Offset > 0 {
			objs = objs[min(p.Offset, len(objs)):]
		}
		if len(objs) == 0 {
			last = position{At: p.At, Seq: p.Seq, Set: true}
			return true
		}
		if full {
			page.More = true
			return false
		}
		if page.Objects == nil {
			// Room for a full page once there is an object: grown from
			// nothing, the list was copied about ten times.
			page.Objects = make([]Object, 0, min(q.Limit, maxPageRoom))
		}
		room := q.Limit - len(page.Objects)
		switch {
		case len(objs) <= room:
			page.Objects = append(page.Objects, objs...)
			last = position{At: p.At, Seq: p.Seq, Set: true}
			for _, o := range objs {
				bytes += len(o.JSON)
			}
			// Full at the limit, or at PageBytes of objects (never
			// before the first change's).
			full = len(page.Objects) == q.Limit || bytes >= core.PageBytes
			return true
		case len(page.Objects) == 0:
			// One change with more objects than a page: cut inside it.
			page.Objects = append(page.Objects, objs[:room]...)
			last = position{At: p.At, Seq: p.Seq, Offset: p.Offset + room, Set: true}
		}
		page.More = true
		return false
	}
	if shared {
		objs, err := x.render(ctx, nil)
		if err != nil {
			return Page{}, err
		}
		if !add(objs.shared, position{At: SharedAdded, Offset: pos.Offset}) {
			return x.next(ctx, page, last, q)
		}
	}
	if len(q.IDs) > 0 && len(storeIDs) == 0 {
		return page, nil
	}
	// The first read asks for a few changes; later ones as many as the
	// rest of the page holds at the objects, object bytes and report text
	// a change has had so far, so that a page of 1,000 objects renders
	// about 250 reports, not 1,000. A page also ends once the reports it
	// read hold PageBytes of text (ApproxSize): large reports cost their
	// indicator extraction and their trip to the exporter whether or not
	// they yield many objects.
	key := binding(q)
	known, learnt := x.sizes.get(key)
	fq := core.FeedQuery{Latest: true, Registry: q.Collection.Registry, ObjectIDs: storeIDs, Limit: firstRead(known, learnt, q.Limit-len(page.Objects))}
	changes, text, taken, takenText := 0, 0, 0, 0
	defer func() { x.sizes.put(key, taken, len(page.Objects), bytes, takenText) }()
	if !q.AddedAfter.IsZero() {
		// The change of that microsecond may have objects added after it.
		fq.From = q.AddedAfter.Truncate(time.Microsecond)
	}
	if pos.Set && pos.Seq > 0 {
		fq.AfterAt, fq.AfterSeq = pos.At, pos.Seq
		if pos.Offset > 0 {
			// Resume inside a change: read it again.
			fq.AfterAt, fq.AfterSeq = pos.At, pos.Seq-1
		}
	}
	if learnt && fq.Limit > 2*renderSplit {
		// Half first: the other half is read while it renders.
		fq.Limit /= 2
	}
	// The next read runs while a read's reports render, when what the
	// query's changes held says the page needs more than them.
	var ahead *feedRead
	defer func() { ahead.drop() }()
	for scanned := 0; scanned < scanFactor*q.Limit; {
		var items []core.FeedItem
		var err error
		if ahead != nil {
			fq = ahead.fq
			items, err = ahead.wait()
			ahead = nil
		} else {
			items, err = x.store.Feed(ctx, fq)
		}
		if err != nil {
			return Page{}, err
		}
		if full && len(items) > 1 {
			// Read ahead before the page filled: only the first says
			// whether anything follows.
			items, fq.Limit = items[:1], 1
		}
		if pos.Offset > 0 && len(items) > 0 && items[0].Event.Seq != pos.Seq {
			// The change the page stopped in is no longer the report's
			// latest: its objects come again with the later change.
			pos.Offset = 0
		}
		scanned += len(items)
		changes += len(items)
		if learnt && !full && len(items) == fq.Limit {
			need := known.fill(q.Limit-len(page.Objects), core.PageBytes-bytes, core.PageBytes-text) - float64(len(items))
			if need >= 1 {
				next := fq
				next.AfterAt, next.AfterSeq = items[len(items)-1].Event.At, items[len(items)-1].Event.Seq
				next.Limit = min(int(need)+2, core.MaxGetThreats)
				ahead = x.readFeed(ctx, next)
			}
		}
		objs, err := x.render(ctx, items)
		if err != nil {
			return Page{}, err
		}
		for i, it := range items {
			p := position{At: it.Event.At, Seq: it.Event.Seq}
			if i == 0 && it.Event.Seq == pos.Seq {
				p.Offset = pos.Offset
			}
			if text >= core.PageBytes && len(page.Objects) > 0 {
				full = true // the reports read so far hold a page's text
			}
			size := it.Threat.ApproxSize()
			text += size
			if !add(objs.records[i], p) {
				return x.next(ctx, page, last, q)
			}
			taken, takenText = taken+1, takenText+size
		}
		if len(items) < fq.Limit {
			return page, nil
		}
		fq.AfterAt, fq.AfterSeq = items[len(items)-1].Event.At, items[len(items)-1].Event.Seq
		if full {
			// The page is full and ends at a change's end: one more read
			// says whether anything follows.
			fq.Limit = 1
			continue
		}
		if text >= scanFactor*core.PageBytes {
			break // filters left out most of a lot of text
		}
		if ahead != nil {
			continue
		}
		perChange := max(len(page.Objects)/max(changes, 1), 1)
		bytesPerChange := max(bytes/max(changes, 1), 1)
		textPerChange := max(text/max(changes, 1), 1)
		fq.Limit = min((q.Limit-len(page.Objects))/perChange+1, max(core.PageBytes-bytes, 0)/bytesPerChange+1,
			max(core.PageBytes-text, 0)/textPerChange+1, core.MaxGetThreats)
	}
	// Filters left out most of what was read: the rest follows with next.
	page.More = true
	return x.next(ctx, page, last, q)
}

// next ends a page that more objects follow: its next value resumes at last.
func (x *Service) next(ctx context.Context, page Page, last position, q Query) (Page, error) {
	var err error
	page.Next, err = x.encode(ctx, last, q)
	return page, err
}
