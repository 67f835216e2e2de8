package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
)

// serve is the firewall for one registry: the adapter reads the request
// (firewall.Route), the proxy asks the index, picks the upstream (the
// private one for a private name), and fetches, rewrites, judges and
// streams as the route says.
func (p *Proxy) serve(a firewall.Adapter) echo.HandlerFunc {
	reg := a.Registry()
	return func(c *echo.Context) error {
		req := c.Request()
		fr := firewall.Request{Path: p.tail(c, reg), Query: req.URL.RawQuery, Accept: req.Header.Get("Accept")}
		if req.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(req.Body, maxQueryBody+1))
			if err != nil {
				return &Error{Status: http.StatusBadRequest, Message: "The request body could not be read: " + err.Error()}
			}
			if len(body) > maxQueryBody {
				return &Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("The query is larger than the firewall reads (%d KiB)", maxQueryBody>>10)}
			}
			fr.Body = body
		}
		rt, ok, err := a.Route(fr)
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
			if every := v.BlocksEvery(); rt.RefuseEvery && len(every) > 0 && p.opts.Policy.Action(firewall.RuleMalicious) == firewall.ActionBlock &&
				!p.opts.Waivers.Current().Lifts(reg, rt.Name, "", firewall.RuleMalicious, time.Now()) {
				return p.refuseAs(c, rt, p.opts.Policy.Blocked(reg, rt.Name, "", every))
			}
			docURL, err := p.at(c.Request().Context(), a, up, rt.Upstream)
			if err != nil {
				return err
			}
			if rt.Body != nil {
				docURL = cache.PostRequest(docURL, rt.Body)
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

// metadata is the rendering of a Metadata route's document, and what
// decides it besides the document: the reports' fingerprint, the
// waivers of the package, the route's variant (for a Listing, every
// report and waiver).
func (p *Proxy) metadata(a firewall.Adapter, rt firewall.Route, v firewall.Verdict, up, docURL string) (string, renderFunc) {
	reg := a.Registry()
	if l, ok := a.(firewall.Listing); ok && rt.Listing {
		decidedBy := fmt.Sprintf("listing\x00%d\x00%s", p.opts.Policy.Generation(), p.opts.Waivers.Current().Generation)
		return decidedBy, func(ctx context.Context, body []byte, contentType, base string) (rendering, error) {
			doc := firewall.Document{Body: body, ContentType: contentType, URL: docURL}
			var held firewall.Listed
			judges := func(names []string, recent map[string]bool) (map[string]firewall.Judge, error) {
				return p.listingJudges(ctx, a, names, recent, &held)
			}
			info := func(name string) ([]byte, error) { return p.renderedInfo(ctx, a, l, name) }
			r, err := l.RewriteListing(doc, judges, info)
			return rendering{body: r.Body, contentType: r.ContentType, expires: held.Expires}, err
		}
	}
	if q, ok := a.(firewall.Queried); ok && rt.Query {
		decidedBy := fmt.Sprintf("query\x00%d\x00%s", p.opts.Policy.Generation(), p.opts.Waivers.Current().Generation)
		return decidedBy, func(ctx context.Context, body []byte, contentType, base string) (rendering, error) {
			doc := firewall.Document{Body: body, ContentType: contentType, URL: docURL}
			var held firewall.Listed
			judges := func(listed map[string][]firewall.Published) (map[string]firewall.Judge, error) {
				return p.queryJudges(ctx, a, listed, &held)
			}
			r, err := q.RewriteQuery(doc, judges, base)
			return rendering{body: r.Body, contentType: r.ContentType, expires: held.Expires, warnings: held.Warnings}, err
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
		var l firewall.Listed
		judge, err := p.gate.Document(ctx, a, v, rt, doc, upstreamFacts{p, a, v, up}, &l)
		if err != nil {
			return rendering{}, err
		}
		r, err := a.Rewrite(doc, judge, base)
		return rendering{body: r.Body, contentType: r.ContentType, expires: l.Expires, warnings: l.Warnings}, err
	}
}

// versionDocument answers a document of one version: refused when the
// version the path names is, else fetched and judged by the version it is
// of (a tag the upstream resolved); a refused one is answered by the
// route's fallback, the highest allowed version, when it has one.
func (p *Proxy) versionDocument(c *echo.Context, vd firewall.VersionDocuments, rt firewall.Route, v firewall.Verdict, up string) error {
	reg := v.Registry
	ctx := c.Request().Context()
	a := vd.(firewall.Adapter)
	if rt.Version != "" {
		rs, err := p.rule(ctx, a, v, up, false, rt.Version)
		if err != nil {
			return err
		}
		if rs[0].Refused() {
			return p.refuseRuling(c, rt, v, rt.Version, rs[0])
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
	rs, err := p.rule(ctx, a, v, up, false, ver)
	if err != nil {
		return err
	}
	r := rs[0]
	if !r.Refused() {
		out, err := p.rewriteVersion(ctx, vd, doc, v, up, p.base(c, reg))
		if err != nil {
			return err
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
	fallbackURL, lb := docURL, body
	if rt.Fallback != rt.Upstream {
		// Another document lists the versions (Go's @v/list); Open
		// VSX's extension document lists them itself: read once.
		if fallbackURL, err = p.at(ctx, a, up, rt.Fallback); err != nil {
			return err
		}
		if lb, res, err = p.fetchDocument(ctx, reg, fallbackURL, ""); err != nil {
			return err
		}
		if res != nil {
			return passThrough(c, res, "")
		}
	}
	listed, err := a.Versions(firewall.Document{Body: lb, URL: fallbackURL, Name: rt.Name})
	if err != nil {
		return p.unreadable(reg, err)
	}
	versions := make([]string, len(listed))
	for i, l := range listed {
		versions[i] = l.Version
	}
	rulings, err := p.rule(ctx, a, v, up, true, versions...)
	if err != nil {
		return err
	}
	var allowed []string
	for i, l := range listed {
		if !rulings[i].Refused() {
			allowed = append(allowed, l.Version)
		}
	}
	if best := vd.Highest(allowed); best != "" {
		u, err := p.at(ctx, a, up, vd.VersionPath(rt.Name, best))
		if err != nil {
			return err
		}
		if _, ok := a.(firewall.ListsVersions); !ok {
			return p.stream(c, reg, u, typeJSON)
		}
		// The highest allowed version's own document, its list of
		// versions judged as the fallback's was.
		body, res, err := p.fetchDocument(ctx, reg, u, rt.Accept)
		if err != nil {
			return err
		}
		if res != nil {
			return passThrough(c, res, "")
		}
		out, err := p.rewriteVersion(ctx, vd, firewall.Document{Body: body, ContentType: typeJSON, URL: u, Name: rt.Name}, v, up, p.base(c, reg))
		if err != nil {
			return err
		}
		p.decided(c, v, best, firewall.Ruling{})
		return c.Blob(http.StatusOK, typeJSON, out)
	}
	if every := v.BlocksEvery(); len(every) > 0 {
		return p.refuseAs(c, rt, p.opts.Policy.Blocked(reg, rt.Name, "", every))
	}
	if ver != "" {
		return p.refuseRuling(c, rt, v, ver, r)
	}
	return notFound("no clean version of %s", rt.Name)
}

// rewriteVersion points a version document's links at base; for a
// ListsVersions adapter, the versions it lists are judged and the
// refused ones dropped.
func (p *Proxy) rewriteVersion(ctx context.Context, vd firewall.VersionDocuments, doc firewall.Document, v firewall.Verdict, up, base string) ([]byte, error) {
	a := vd.(firewall.Adapter)
	lv, ok := a.(firewall.ListsVersions)
	if !ok {
		out, err := vd.RewriteVersion(doc, doc.Name, base)
		if err != nil {
			return nil, p.unreadable(v.Registry, err)
		}
		return out, nil
	}
	listed, err := a.Versions(doc)
	if err != nil {
		return nil, p.unreadable(v.Registry, err)
	}
	versions := make([]string, len(listed))
	for i, l := range listed {
		versions[i] = l.Version
	}
	rulings, err := p.rule(ctx, a, v, up, true, versions...)
	if err != nil {
		return nil, err
	}
	refused := map[string]string{}
	for i, r := range rulings {
		if r.Refused() {
			refused[versions[i]] = r.Message
		}
	}
	out, err := lv.RewriteListed(doc, func(ver string) (bool, string) {
		why, ok := refused[ver]
		return ok, why
	}, base)
	if err != nil {
		return nil, p.unreadable(v.Registry, err)
	}
	return out, nil
}

// artifact answers a file of one version: judged by the version its path
// names, or by the versions the metadata document at rt.Index gives the
// file (refused when any of them is), then streamed from the upstream as
// rt.ContentType.
func (p *Proxy) artifact(c *echo.Context, a firewall.Adapter, rt firewall.Route, v firewall.Verdict, up string) error {
	reg := a.Registry()
	ctx := c.Request().Context()
	if fl, ok := a.(firewall.FileLocator); ok && rt.Index != "" && rt.File == "" {
		return p.located(c, a, fl, rt, v, up)
	}
	if rt.Index == "" {
		if !rt.Unjudged {
			rs, err := p.rule(ctx, a, v, up, false, rt.Version)
			if err != nil {
				return err
			}
			r := rs[0]
			if r.Refused() {
				return p.refuseRuling(c, rt, v, rt.Version, r)
			}
			p.decided(c, v, rt.Version, r)
		}
		u, err := p.at(ctx, a, up, rt.Upstream)
		if err != nil {
			return err
		}
		return p.served(c, v, p.stream(c, reg, u, rt.ContentType), rt.Version)
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
		served, err := p.rule(ctx, a, v, up, false, f.Versions...)
		if err != nil {
			return err
		}
		for i, r := range served {
			if r.Refused() {
				return p.refuseRuling(c, rt, v, f.Versions[i], r)
			}
		}
		for i, r := range served {
			p.decided(c, v, f.Versions[i], r)
		}
	}
	return p.served(c, v, p.stream(c, reg, f.URL+rt.Suffix, rt.ContentType), f.Versions...)
}

// located answers a file of the version the path names, at the URL the
// registry-wide document at rt.Index gives it (firewall.FileLocator).
func (p *Proxy) located(c *echo.Context, a firewall.Adapter, fl firewall.FileLocator, rt firewall.Route, v firewall.Verdict, up string) error {
	reg := a.Registry()
	ctx := c.Request().Context()
	rs, err := p.rule(ctx, a, v, up, false, rt.Version)
	if err != nil {
		return err
	}
	r := rs[0]
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
	return p.served(c, v, p.stream(c, reg, u, rt.ContentType), rt.Version)
}
