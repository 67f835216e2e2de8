package api

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	"golang.org/x/sync/errgroup"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/api/registrycache"
	"github.com/threatd/threatd/core/firewall"
)

// serve is the firewall for one registry: the adapter reads the request
// (firewall.Route), the proxy asks the index, picks the upstream (the
// private one for a private name), and fetches, rewrites, judges and
// streams as the route says.
func (p *proxy) serve(a firewall.Adapter) echo.HandlerFunc {
	reg := a.Registry()
	return func(c *echo.Context) error {
		req := c.Request()
		rt, ok, err := a.Route(firewall.Request{Path: p.tail(c, reg), Query: req.URL.RawQuery, Accept: req.Header.Get("Accept")})
		plain := rt.Refusal == firewall.RefusePlain
		if err != nil {
			return cannotJudge(c, err, plain)
		}
		if !ok {
			return notFound("%q is not a %s registry path the firewall serves", p.tail(c, reg), reg)
		}
		if rt.Kind == firewall.PassThrough {
			u := strings.TrimSuffix(p.opts.Upstreams[reg].URL, "/") + "/" + rt.Upstream
			if q := req.URL.RawQuery; q != "" {
				u += "?" + q
			}
			return p.forward(c, reg, u, rt.Accept, rt.ContentType, rt.Keep...)
		}
		if len(rt.Readings) > 0 {
			if rt, err = p.reading(c, a, rt); err != nil {
				return cannotJudge(c, err, plain)
			}
		}
		v := firewall.Verdict{Registry: reg}
		if rt.Kind != firewall.Metadata || rt.Name != "" {
			if v, err = p.lookup(c, reg, rt.Name); err != nil {
				return cannotJudge(c, err, plain)
			}
		}
		up, err := p.upstream(reg, v)
		if err != nil {
			return err
		}
		if rt.Vary != "" {
			c.Response().Header().Set("Vary", rt.Vary)
		}
		switch rt.Kind {
		case firewall.Metadata:
			if every := v.BlocksEvery(); rt.RefuseEvery && len(every) > 0 && p.opts.Policy.Action(core.RuleMalicious) == core.ActionBlock &&
				!p.opts.Waivers.Current().Lifts(reg, rt.Name, "", core.RuleMalicious, time.Now()) {
				return p.refuseAs(c, rt, p.opts.Policy.Blocked(reg, rt.Name, "", every))
			}
			docURL, err := p.at(c.Request().Context(), a, up, rt.Upstream)
			if err != nil {
				return err
			}
			decidedBy, render := p.metadata(a, rt, v, up, docURL)
			return p.document(c, reg, docURL, rt.Accept, decidedBy, render)
		case firewall.VersionDocument:
			vd, ok := a.(firewall.VersionDocuments)
			if !ok {
				return fmt.Errorf("the %s adapter routes a version document but does not read them", reg)
			}
			return p.versionDocument(c, vd, rt, v, up)
		}
		return p.artifact(c, a, rt, v, up)
	}
}

// at is the URL of an upstream path below up: up/path, or for a Based
// adapter (NuGet) the upstream setting's URL itself for "", and a path
// below one of the bases its service index names for BasePrefix+key/rest.
func (p *proxy) at(ctx context.Context, a firewall.Adapter, up, path string) (string, error) {
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
func (p *proxy) bases(ctx context.Context, a firewall.Adapter, b firewall.Based, up string) (map[string]string, error) {
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

// reading picks the reading of an artifact path that reads more than one
// way (Route.Readings): the one whose package lists its version. When
// several do, a reading that is refused is answered (the same bytes are
// refused under any of their names); when none does, 404.
func (p *proxy) reading(c *echo.Context, a firewall.Adapter, rt firewall.Route) (firewall.Route, error) {
	reg := a.Registry()
	ctx := c.Request().Context()
	var listed []firewall.Route
	var names []string
	for _, r := range rt.Readings {
		names = append(names, r.Name)
		v, err := p.opts.Policy.Lookup(ctx, reg, r.Name)
		var u *firewall.Unjudgeable
		if errors.As(err, &u) {
			continue // no such package can exist
		}
		if err != nil {
			return rt, err
		}
		up, err := p.upstream(reg, v)
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
		v, err := p.opts.Policy.Lookup(ctx, reg, r.Name)
		if err != nil {
			return rt, err
		}
		up, err := p.upstream(reg, v)
		if err != nil {
			return rt, err
		}
		facts, err := p.versionFacts(ctx, a, v, up, r.Version)
		if err != nil {
			return rt, err
		}
		if p.ruling(v, r.Version, facts).Refused() {
			return r, nil
		}
	}
	return listed[0], nil
}

// metadata is the rendering of a Metadata route's document, and what
// decides it besides the document: the reports' fingerprint, the
// waivers of the package, the route's variant (for a Listing, every
// report and waiver).
func (p *proxy) metadata(a firewall.Adapter, rt firewall.Route, v firewall.Verdict, up, docURL string) (string, renderFunc) {
	reg := a.Registry()
	if l, ok := a.(firewall.Listing); ok && rt.Listing {
		decidedBy := fmt.Sprintf("listing\x00%d\x00%s", p.opts.Policy.Generation(), p.opts.Waivers.Current().Generation)
		return decidedBy, func(ctx context.Context, body []byte, contentType, base string) (rendering, error) {
			doc := firewall.Document{Body: body, ContentType: contentType, URL: docURL}
			var held listing
			judges := func(names []string, recent map[string]bool) (map[string]firewall.Judge, error) {
				return p.listingJudges(ctx, a, names, recent, &held)
			}
			info := func(name string) ([]byte, error) { return p.renderedInfo(ctx, a, l, name) }
			r, err := l.RewriteListing(doc, judges, info)
			return rendering{body: r.Body, contentType: r.ContentType, expires: held.expires}, err
		}
	}
	if dv, ok := a.(firewall.Derived); ok && rt.Variant != "" {
		// A variant made from the main rendering's bytes (Maven's
		// checksum files): the facts are read once, for the main one.
		main := rt
		main.Variant = ""
		mainBy, mainRender := p.metadata(a, main, v, up, docURL)
		return mainBy + "\x00" + rt.Variant, func(ctx context.Context, _ []byte, _, _ string) (rendering, error) {
			body, expires, err := p.renderedBytes(ctx, reg, docURL, main.Accept, mainBy, mainRender)
			if err != nil {
				return rendering{}, err
			}
			r, err := dv.Derive(body, rt.Variant)
			return rendering{body: r.Body, contentType: r.ContentType, expires: expires}, err
		}
	}
	decidedBy := v.Fingerprint() + "\x00" + rt.Variant
	if ws := p.opts.Waivers.Current(); ws.Covers(reg, rt.Name) {
		decidedBy += "\x00" + ws.Generation
	}
	return decidedBy, func(ctx context.Context, body []byte, contentType, base string) (rendering, error) {
		doc := firewall.Document{Body: body, ContentType: contentType, URL: docURL, Name: rt.Name, Variant: rt.Variant}
		if b, ok := a.(firewall.Based); ok {
			var err error
			if doc.Bases, err = p.bases(ctx, a, b, up); err != nil {
				return rendering{}, err
			}
		}
		var facts map[string]firewall.Facts
		if rt.Name != "" && p.needsFacts(a, v) {
			listed, err := a.Versions(doc)
			if err != nil {
				return rendering{}, err
			}
			versions := make([]string, len(listed))
			for i, l := range listed {
				versions[i] = l.Version
			}
			var have []firewall.Published
			if fs, ok := a.(firewall.FactSource); ok {
				if path, accept := fs.FactsDocument(rt.Name); rt.OwnFacts || path == rt.Upstream && accept == rt.Accept {
					have = listed // the document is its own facts
				}
			}
			if facts, err = p.facts(ctx, a, v, up, versions, true, have...); err != nil {
				return rendering{}, err
			}
		}
		var l listing
		r, err := a.Rewrite(doc, p.judgeOf(v, facts, &l), base)
		return rendering{body: r.Body, contentType: r.ContentType, expires: l.expires, warnings: l.warnings}, err
	}
}

// listingJudges are the Judges of the packages a registry-wide listing
// names: by their reports and waivers, and for the recent ones by their
// quarantine too (their facts read at most 8 at a time). A name no report
// can name is listed as it is (its own document is refused); any other
// failure to judge fails the listing: it never lists what it could not
// judge. held gathers when the first hold ends.
func (p *proxy) listingJudges(ctx context.Context, a firewall.Adapter, names []string, recent map[string]bool, held *listing) (map[string]firewall.Judge, error) {
	reg := a.Registry()
	out := map[string]firewall.Judge{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, name := range names {
		pv, err := p.opts.Policy.Lookup(ctx, reg, name)
		var u *firewall.Unjudgeable
		if errors.As(err, &u) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if pv.Private {
			continue
		}
		quarantined := recent[name] && p.needsFacts(a, pv)
		if pv.Clean() && !quarantined && !p.opts.Waivers.Current().Covers(reg, name) {
			continue // nothing of it can be refused
		}
		if !quarantined {
			out[name] = p.judgeOf(pv, nil, held)
			continue
		}
		g.Go(func() error {
			up, err := p.upstream(reg, pv)
			if err != nil {
				return err
			}
			facts, err := p.facts(gctx, a, pv, up, nil, true)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out[name] = p.judgeOf(pv, facts, held)
			return nil
		})
	}
	return out, g.Wait()
}

// renderedInfo is a package's document of a Listing (RubyGems' /info) as
// the firewall serves it, rendered (and kept) as a request for it would be.
func (p *proxy) renderedInfo(ctx context.Context, a firewall.Adapter, l firewall.Listing, name string) ([]byte, error) {
	reg := a.Registry()
	rt, ok, err := a.Route(firewall.Request{Path: l.InfoPath(name)})
	if err != nil || !ok || rt.Kind != firewall.Metadata {
		return nil, fmt.Errorf("the %s listing names %q, whose document the firewall cannot serve: %v", reg, name, err)
	}
	v, err := p.opts.Policy.Lookup(ctx, reg, rt.Name)
	if err != nil {
		return nil, err
	}
	up, err := p.upstream(reg, v)
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
func (p *proxy) renderedBytes(ctx context.Context, reg, docURL, accept, decidedBy string, render renderFunc) ([]byte, time.Time, error) {
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

// refuseAs writes a refusal as the route's registry wants it.
func (p *proxy) refuseAs(c *echo.Context, rt firewall.Route, b *firewall.Blocked) error {
	switch rt.Refusal {
	case firewall.RefusePlain:
		return p.refuse(c, b, true)
	case firewall.RefuseReason:
		return p.refuseWithReason(c, b)
	}
	return p.refuse(c, b, false)
}

// versionDocument answers a document of one version: refused when the
// version the path names is, else fetched and judged by the version it is
// of (a tag the upstream resolved); a refused one is answered by the
// route's fallback, the highest allowed version, when it has one.
func (p *proxy) versionDocument(c *echo.Context, vd firewall.VersionDocuments, rt firewall.Route, v firewall.Verdict, up string) error {
	reg := v.Registry
	ctx := c.Request().Context()
	a := vd.(firewall.Adapter)
	if rt.Version != "" {
		facts, err := p.versionFacts(ctx, a, v, up, rt.Version)
		if err != nil {
			return err
		}
		if r := p.ruling(v, rt.Version, facts); r.Refused() {
			return p.refuseRuling(c, rt, v, rt.Version, r)
		}
	}
	docURL, err := p.at(ctx, a, up, rt.Upstream)
	if err != nil {
		return err
	}
	body, res, err := p.fetchDocument(ctx, reg, docURL, rt.Accept)
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	doc := firewall.Document{Body: body, ContentType: typeJSON, URL: docURL, Name: rt.Name}
	ver, err := vd.VersionOf(doc)
	if err != nil {
		return p.unreadable(reg, err)
	}
	facts, err := p.versionFacts(ctx, a, v, up, ver)
	if err != nil {
		return err
	}
	r := p.ruling(v, ver, facts)
	if !r.Refused() {
		out, err := vd.RewriteVersion(doc, rt.Name, p.base(c, reg))
		if err != nil {
			return p.unreadable(reg, err)
		}
		p.decided(c, v, ver, r)
		return c.Blob(http.StatusOK, typeJSON, out)
	}
	if rt.Fallback == "" {
		if ver == "" {
			return p.unreadable(reg, fmt.Errorf("the version document of %s names no version", rt.Name))
		}
		return p.refuseRuling(c, rt, v, ver, r)
	}
	fallbackURL, err := p.at(ctx, a, up, rt.Fallback)
	if err != nil {
		return err
	}
	lb, res, err := p.fetchDocument(ctx, reg, fallbackURL, "")
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	listed, err := a.Versions(firewall.Document{Body: lb, URL: fallbackURL, Name: rt.Name})
	if err != nil {
		return p.unreadable(reg, err)
	}
	versions := make([]string, len(listed))
	for i, l := range listed {
		versions[i] = l.Version
	}
	if p.needsFacts(a, v) {
		if facts, err = p.facts(ctx, a, v, up, versions, true); err != nil {
			return err
		}
	}
	var allowed []string
	for _, l := range listed {
		if !p.ruling(v, l.Version, facts).Refused() {
			allowed = append(allowed, l.Version)
		}
	}
	if best := vd.Highest(allowed); best != "" {
		u, err := p.at(ctx, a, up, vd.VersionPath(rt.Name, best))
		if err != nil {
			return err
		}
		return p.stream(c, reg, u, typeJSON)
	}
	if every := v.BlocksEvery(); len(every) > 0 {
		return p.refuseAs(c, rt, p.opts.Policy.Blocked(reg, rt.Name, "", every))
	}
	if ver != "" {
		return p.refuseRuling(c, rt, v, ver, r)
	}
	return notFound("no clean version of %s", rt.Name)
}

// artifact answers a file of one version: judged by the version its path
// names, or by the versions the metadata document at rt.Index gives the
// file (refused when any of them is), then streamed from the upstream as
// rt.ContentType.
func (p *proxy) artifact(c *echo.Context, a firewall.Adapter, rt firewall.Route, v firewall.Verdict, up string) error {
	reg := a.Registry()
	ctx := c.Request().Context()
	if fl, ok := a.(firewall.FileLocator); ok && rt.Index != "" && rt.File == "" {
		return p.located(c, a, fl, rt, v, up)
	}
	if rt.Index == "" {
		if !rt.Unjudged {
			facts, err := p.versionFacts(ctx, a, v, up, rt.Version)
			if err != nil {
				return err
			}
			r := p.ruling(v, rt.Version, facts)
			if r.Refused() {
				return p.refuseRuling(c, rt, v, rt.Version, r)
			}
			p.decided(c, v, rt.Version, r)
		}
		u, err := p.at(ctx, a, up, rt.Upstream)
		if err != nil {
			return err
		}
		return p.stream(c, reg, u, rt.ContentType)
	}
	fl, ok := a.(firewall.FileLister)
	if !ok {
		return fmt.Errorf("the %s adapter routes a file through a document but does not list files", reg)
	}
	indexURL, err := p.at(ctx, a, up, rt.Index)
	if err != nil {
		return err
	}
	table, res, err := p.files(ctx, fl, reg, indexURL, rt.Accept, rt.Name)
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	f, ok := table[rt.File]
	if !ok {
		return notFound("%s package %s has no file %s", reg, rt.Name, rt.File)
	}
	if !rt.Unjudged {
		facts, err := p.versionFacts(ctx, a, v, up, f.Versions...)
		if err != nil {
			return err
		}
		var served []firewall.Ruling
		for _, ver := range f.Versions {
			r := p.ruling(v, ver, facts)
			if r.Refused() {
				return p.refuseRuling(c, rt, v, ver, r)
			}
			served = append(served, r)
		}
		for i, r := range served {
			p.decided(c, v, f.Versions[i], r)
		}
	}
	return p.stream(c, reg, f.URL+rt.Suffix, rt.ContentType)
}

// located answers a file of the version the path names, at the URL the
// registry-wide document at rt.Index gives it (firewall.FileLocator).
func (p *proxy) located(c *echo.Context, a firewall.Adapter, fl firewall.FileLocator, rt firewall.Route, v firewall.Verdict, up string) error {
	reg := a.Registry()
	ctx := c.Request().Context()
	facts, err := p.versionFacts(ctx, a, v, up, rt.Version)
	if err != nil {
		return err
	}
	r := p.ruling(v, rt.Version, facts)
	if r.Refused() {
		return p.refuseRuling(c, rt, v, rt.Version, r)
	}
	indexURL, err := p.at(ctx, a, up, rt.Index)
	if err != nil {
		return err
	}
	loc, res, err := parsedDocument(ctx, p, reg, indexURL, rt.Accept, "locate", func(doc firewall.Document) (firewall.Location, error) {
		loc, err := fl.Locate(doc)
		if err != nil {
			return loc, p.unreadable(reg, err)
		}
		return loc, nil
	}, func(loc firewall.Location) int64 { return int64(len(loc.Template)) + 64 })
	if err != nil {
		return err
	}
	if res != nil {
		return passThrough(c, res, "")
	}
	u, err := fl.FileURL(loc, rt.Name, rt.Version)
	if err != nil {
		return p.unreadable(reg, err)
	}
	p.decided(c, v, rt.Version, r)
	return p.stream(c, reg, u, rt.ContentType)
}

// files is the table of the files a metadata document lists, read by the
// adapter and kept while the document is.
func (p *proxy) files(ctx context.Context, fl firewall.FileLister, reg, docURL, accept, name string) (map[string]firewall.File, *registrycache.Response, error) {
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
func parsedDocument[T any](ctx context.Context, p *proxy, reg, docURL, accept, kind string, parse func(firewall.Document) (T, error), size func(T) int64) (T, *registrycache.Response, error) {
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

// The costs of an audit: one firewall request per auditPerRequest package
// versions it asks about, and, charged before its body is parsed, one per
// auditBytesPerRequest bytes of it (a lockfile of 1,000 packages is about
// 40 KB of npm audit request).
const (
	auditPerRequest      = 1000
	auditBytesPerRequest = 64 << 10
	auditHint            = " (an audit counts one request per 1,000 package versions)"
)

// audit answers a registry's bulk-advisory request (npm audit), often
// gzip-compressed, with the adapter's advisories for every refused
// version it asks about.
func (p *proxy) audit(a firewall.Adapter, au firewall.Auditor) echo.HandlerFunc {
	reg := a.Registry()
	return func(c *echo.Context) error {
		var r io.Reader = c.Request().Body
		if strings.EqualFold(c.Request().Header.Get("Content-Encoding"), "gzip") {
			zr, err := gzip.NewReader(r)
			if err != nil {
				return &Error{Status: http.StatusBadRequest, Message: "The request body is not valid gzip: " + err.Error()}
			}
			defer zr.Close()
			r = zr
		}
		body, err := io.ReadAll(io.LimitReader(r, maxAuditBody+1))
		if err != nil {
			return &Error{Status: http.StatusBadRequest, Message: "The request body could not be read: " + err.Error()}
		}
		if len(body) > maxAuditBody {
			return &Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("The audit request is larger than %d MiB once decompressed", maxAuditBody>>20)}
		}
		// Charged by what the request costs, before the work: the
		// route's one request, one more per auditBytesPerRequest of
		// body before it is parsed, then, once parsed, one per
		// auditPerRequest versions asked about in all.
		pre := len(body) / auditBytesPerRequest
		if pre > 0 {
			if err := p.s.chargeFirewall(c, pre, auditHint); err != nil {
				return err
			}
		}
		asked, err := au.ParseAudit(body)
		if err != nil {
			return err
		}
		n := 0
		for _, versions := range asked {
			n += max(1, len(versions))
		}
		if extra := (n+auditPerRequest-1)/auditPerRequest - 1 - pre; extra > 0 {
			if err := p.s.chargeFirewall(c, extra, auditHint); err != nil {
				return err
			}
		}
		var found []firewall.AuditFinding
		for name, versions := range asked {
			v, err := p.lookup(c, reg, name)
			var unjudgeable *firewall.Unjudgeable
			if errors.As(err, &unjudgeable) {
				continue // no report can name it, and nothing is served
			}
			if err != nil {
				return err
			}
			if v.Clean() {
				continue
			}
			for _, ver := range versions {
				if b := v.Check(ver); b != nil {
					found = append(found, firewall.AuditFinding{Name: name, Blocked: b})
				}
			}
		}
		out, err := au.RenderAudit(found, c.Scheme()+"://"+c.Request().Host)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, typeJSON, out)
	}
}
