package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	"golang.org/x/sync/errgroup"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
)

// at is the URL of an upstream path below up: up/path, or for a Based
// adapter (NuGet) the upstream setting's URL itself for "", and a path
// below one of the bases its service index names for BasePrefix+key/rest.
func (p *Proxy) at(ctx context.Context, a firewall.Adapter, up, path string) (string, error) {
	b, ok := a.(firewall.Based)
	if !ok {
		return up + "/" + path, nil
	}
	if path == "" {
		return up, nil
	}
	rest, ok := strings.CutPrefix(path, firewall.BasePrefix)
	key, rest, cut := strings.Cut(rest, "/")
	if !ok || !cut {
		return "", fmt.Errorf("the %s adapter routes to %q, which is below none of its bases", a.Registry(), path)
	}
	bases, err := p.bases(ctx, a, b, up)
	if err != nil {
		return "", err
	}
	u, ok := bases[key]
	if !ok {
		return "", notFound("The %s upstream's service index names no resource of type %s", a.Registry(), strings.ReplaceAll(key, "_", "/"))
	}
	return u + rest, nil
}

// bases are what a Based adapter reads of its upstream's root document,
// kept while the document is.
func (p *Proxy) bases(ctx context.Context, a firewall.Adapter, b firewall.Based, up string) (map[string]string, error) {
	reg := a.Registry()
	bases, res, err := parsedDocument(ctx, p, reg, up, "", "bases", func(doc firewall.Document) (map[string]string, error) {
		m, err := b.Bases(doc)
		if err != nil {
			return nil, p.unreadable(reg, err)
		}
		return m, nil
	}, func(m map[string]string) int64 {
		var n int64
		for k, v := range m {
			n += int64(len(k)+len(v)) + 32
		}
		return n
	})
	if err != nil {
		return nil, err
	}
	if res != nil {
		_ = res.Body.Close()
		return nil, &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The %s upstream answered %d for its service index, which names where its packages are", reg, res.Status)}
	}
	return bases, nil
}

// verdictAt is what reports say of a package and the upstream it comes
// from (Lookup, then upstream).
func (p *Proxy) verdictAt(ctx context.Context, reg, name string) (firewall.Verdict, string, error) {
	v, err := p.opts.Policy.Lookup(ctx, reg, name)
	if err != nil {
		return v, "", err
	}
	up, err := p.upstream(reg, v)
	return v, up, err
}

// reading picks the reading of an artifact path that reads more than one
// way (Route.Readings): the one whose package lists its version. When
// several do, a reading that is refused is answered (the same bytes are
// refused under any of their names); when none does, 404.
func (p *Proxy) reading(c *echo.Context, a firewall.Adapter, rt firewall.Route) (firewall.Route, error) {
	reg := a.Registry()
	ctx := c.Request().Context()
	var listed []firewall.Route
	var names []string
	for _, r := range rt.Readings {
		names = append(names, r.Name)
		_, up, err := p.verdictAt(ctx, reg, r.Name)
		var u *firewall.Unjudgeable
		if errors.As(err, &u) {
			continue // no such package can exist
		}
		if err != nil {
			return rt, err
		}
		listedURL, err := p.at(ctx, a, up, r.Listed)
		if err != nil {
			return rt, err
		}
		ps, _, err := p.published(ctx, a, reg, listedURL, "", r.Name)
		if err != nil {
			return rt, err
		}
		for _, pv := range ps {
			if pv.Version == r.Version {
				listed = append(listed, r)
				break
			}
		}
	}
	switch len(listed) {
	case 0:
		return rt, notFound("%q is no %s package's file: read as %s, none of them lists it", rt.Upstream, reg, strings.Join(names, ", "))
	case 1:
		return listed[0], nil
	}
	for _, r := range listed {
		v, up, err := p.verdictAt(ctx, reg, r.Name)
		if err != nil {
			return rt, err
		}
		rs, err := p.rule(ctx, a, v, up, false, r.Version)
		if err != nil {
			return rt, err
		}
		if rs[0].Refused() {
			return r, nil
		}
	}
	return listed[0], nil
}

// listingJudges are the Judges of the packages a registry-wide listing
// names: by their reports and waivers, and for the recent ones by their
// quarantine too (their facts read at most 8 at a time, within
// listingFactsTime: a package whose facts could not be read in time, or
// at all, is listed by its reports alone, and its own document, which
// still holds its young versions, then disagrees with the listing, so
// that the client fails rather than installs one). A name no report can
// name is listed as it is (its own document is refused); any other
// failure to judge by reports fails the listing: it never lists what it
// could not judge. held gathers when the first hold ends.
func (p *Proxy) listingJudges(ctx context.Context, a firewall.Adapter, names []string, recent map[string]bool, held *firewall.Listed) (map[string]firewall.Judge, error) {
	reg := a.Registry()
	out := map[string]firewall.Judge{}
	var mu sync.Mutex
	fctx, cancel := context.WithTimeout(ctx, listingFactsTime)
	defer cancel()
	var g errgroup.Group
	g.SetLimit(8)
	var unread atomic.Int64
	for _, name := range names {
		pv, ok, err := p.listedVerdict(ctx, reg, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if pv.Private {
			continue
		}
		quarantined := recent[name] && p.gate.NeedsFacts(a, pv)
		if pv.Clean() && !quarantined && !p.opts.Waivers.Current().Covers(reg, name) {
			continue // nothing of it can be refused
		}
		if !quarantined {
			out[name] = p.gate.Listing(pv, nil, held)
			continue
		}
		g.Go(func() error {
			var facts map[string]firewall.Facts
			up, err := p.upstream(reg, pv)
			if err == nil {
				facts, err = p.facts(fctx, a, pv, up, nil, true)
			}
			if err != nil {
				unread.Add(1)
			}
			mu.Lock()
			defer mu.Unlock()
			out[name] = p.gate.Listing(pv, facts, held)
			return nil
		})
	}
	_ = g.Wait()
	if n := unread.Load(); n > 0 {
		p.log.Warn("firewall: a listing judged some recent packages by their reports alone: their publish times could not be read in time",
			"registry", reg, "packages", n, "within", listingFactsTime.String())
	}
	return out, ctx.Err()
}

// listedVerdict is the verdict of a name a listing or a search names;
// ok is false for a name no report can name (listed as it is: its own
// documents are refused).
func (p *Proxy) listedVerdict(ctx context.Context, reg, name string) (firewall.Verdict, bool, error) {
	pv, err := p.opts.Policy.Lookup(ctx, reg, name)
	var u *firewall.Unjudgeable
	if errors.As(err, &u) {
		return pv, false, nil
	}
	return pv, err == nil, err
}

// listingFactsTime bounds reading the publish times of a listing's recent
// packages (rubygems.org's versions API answers about 10 requests a
// second to one client).
const listingFactsTime = 20 * time.Second

// renderedInfo is a package's document of a Listing (RubyGems' /info) as
// the firewall serves it, rendered (and kept) as a request for it would be.
func (p *Proxy) renderedInfo(ctx context.Context, a firewall.Adapter, l firewall.Listing, name string) ([]byte, error) {
	reg := a.Registry()
	rt, ok, err := a.Route(firewall.Request{Path: l.InfoPath(name)})
	if err != nil || !ok || rt.Kind != firewall.Metadata {
		return nil, fmt.Errorf("the %s listing names %q, whose document the firewall cannot serve: %v", reg, name, err)
	}
	v, up, err := p.verdictAt(ctx, reg, rt.Name)
	if err != nil {
		return nil, err
	}
	docURL, err := p.at(ctx, a, up, rt.Upstream)
	if err != nil {
		return nil, err
	}
	decidedBy, render := p.metadata(a, rt, v, up, docURL)
	body, _, err := p.renderedBytes(ctx, reg, docURL, rt.Accept, decidedBy, render)
	return body, err
}

// renderedBytes are the bytes of a document's rendering (made and kept
// as a request for it would make it), and when it expires, for what is
// computed from them (a listing's checksums, a checksum file): a
// rendering that links to the firewall would differ by client, and is an
// error.
func (p *Proxy) renderedBytes(ctx context.Context, reg, docURL, accept, decidedBy string, render renderFunc) ([]byte, time.Time, error) {
	d, err := p.render(ctx, reg, strings.Join([]string{reg, docURL, accept, decidedBy}, "\x00"), docURL, accept, render)
	if err != nil {
		return nil, time.Time{}, err
	}
	if d.status != http.StatusOK {
		return nil, time.Time{}, &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The %s upstream answered %d for %s", reg, d.status, docURL)}
	}
	if d.body != nil {
		if len(d.marks) > 0 {
			return nil, time.Time{}, fmt.Errorf("the %s document %s links to the firewall: what is computed from it would depend on the client", reg, docURL)
		}
		return d.body, d.expires, nil
	}
	f, ok := p.opts.Cache.OpenDerived(d.diskKey)
	if !ok {
		return nil, time.Time{}, &Error{Status: http.StatusServiceUnavailable, Headers: map[string]string{"Retry-After": "1"}, Message: "The firewall's copy of a document was just dropped from its cache; try again"}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDocument))
	return b, d.expires, err
}

// files is the table of the files a metadata document lists, read by the
// adapter and kept while the document is.
func (p *Proxy) files(ctx context.Context, fl firewall.FileLister, reg, docURL, accept, name string) (map[string]firewall.File, *cache.Response, error) {
	return parsedDocument(ctx, p, reg, docURL, accept, "files", func(doc firewall.Document) (map[string]firewall.File, error) {
		doc.Name = name
		table, err := fl.Files(doc)
		if err != nil {
			return nil, p.unreadable(reg, err)
		}
		return table, nil
	}, func(table map[string]firewall.File) int64 {
		var size int64
		for f, e := range table {
			size += int64(len(f)+len(e.URL)) + 16*int64(len(e.Versions)) + 64
		}
		return size
	})
}

// parsedDocument is what parse makes of the upstream document at docURL,
// kept (as kind, by the document's version) while the document is: read
// whole within the upstream timeout and the rendering budget, parsed
// once. An answer other than 200 is returned unread (res != nil).
func parsedDocument[T any](ctx context.Context, p *Proxy, reg, docURL, accept, kind string, parse func(firewall.Document) (T, error), size func(T) int64) (T, *cache.Response, error) {
	var zero T
	// The common case: the document is fresh in the cache and was parsed
	// already; nothing to fetch, no file opened.
	if version, ok := p.opts.Cache.Peek(docURL, accept); ok {
		if v, ok := p.parsed.Get(kind + "\x00" + docURL + "\x00" + accept + "\x00" + version); ok {
			return v.(T), nil, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.UpstreamTimeout)
	defer cancel()
	res, err := p.fetch(ctx, reg, docURL, accept)
	if err != nil {
		return zero, nil, err
	}
	if res.Status != http.StatusOK {
		return zero, res, nil
	}
	key := kind + "\x00" + docURL + "\x00" + accept + "\x00" + res.Version
	if v, ok := p.parsed.Get(key); ok {
		_ = res.Body.Close()
		return v.(T), nil, nil
	}
	var out T
	read := func() error {
		contentType := res.Header.Get("Content-Type")
		body, err := p.readDocument(reg, res)
		if err != nil {
			return err
		}
		doc := firewall.Document{Body: body, ContentType: contentType, URL: docURL}
		if lm, err := http.ParseTime(res.Header.Get("Last-Modified")); err == nil {
			doc.LastModified = lm
		}
		out, err = parse(doc)
		return err
	}
	if ctx.Value(renderingKey{}) != nil {
		// Read for a rendering that holds its budget already: waiting
		// for more could wait for itself.
		err = read()
	} else {
		err = p.renders.withBudget(ctx, contentLength(res), read)
	}
	if err != nil {
		_ = res.Body.Close()
		return zero, nil, err
	}
	if res.Kept() {
		remember(p.parsed, parsedBytes, key, any(out), int64(len(key))+size(out))
	}
	return out, nil, nil
}

// queryJudges are the Judges of the packages a search answer lists (a
// Queried adapter's): by their reports and waivers, and where the
// quarantine applies by the publish times the answer gives; a version
// it lists without one is judged there by its reports alone (its own
// documents and files, whose facts the firewall reads, are held). A name
// no report can name is listed as it is; a private name is left out, as
// its documents are never fetched from the public upstream.
func (p *Proxy) queryJudges(ctx context.Context, a firewall.Adapter, listed map[string][]firewall.Published, held *firewall.Listed) (map[string]firewall.Judge, error) {
	reg := a.Registry()
	out := map[string]firewall.Judge{}
	for name, versions := range listed {
		pv, ok, err := p.listedVerdict(ctx, reg, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if pv.Private {
			out[name] = func(string) (bool, string) {
				return true, name + " is a private name: the firewall never serves it from the public registry"
			}
			continue
		}
		quarantined := p.gate.NeedsFacts(a, pv)
		if pv.Clean() && !quarantined && !p.opts.Waivers.Current().Covers(reg, name) {
			continue
		}
		var facts map[string]firewall.Facts
		if quarantined {
			facts = make(map[string]firewall.Facts, len(versions))
			for _, ver := range versions {
				facts[ver.Version] = firewall.Facts{Published: ver.Time, Unjudged: ver.Time.IsZero()}
			}
		}
		out[name] = p.gate.Listing(pv, facts, held)
	}
	return out, ctx.Err()
}

// remember keeps v of size bytes in l unless it would take more than an
// eighth of the bound: one huge document must not empty the cache.
func remember[V any](l *cache.LRU[V], max int64, key string, v V, size int64) {
	if size <= max/8 {
		l.Add(key, v, size)
	}
}

// notFound is a 404 naming what is missing.
func notFound(format string, args ...any) error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// maxQueryBody bounds a search a client POSTs (the VS Code gallery's
// extensionquery: VS Code's largest, of every installed extension by id,
// is a few KB).
const maxQueryBody = 256 << 10
