// Package proxy is the registry firewall's HTTP half (docs/firewall.md):
// one pull-through proxy for every registry adapter and the image
// registry, leaving out, or refusing, what the policy (core/firewall)
// refuses. It knows no registry: what a request asks for and how a
// document is rewritten are the adapter's (core/firewall/<registry>).
// The server around it (core/api) gives it who is asking, the records
// it shows, the budgets and the middleware (Host), and maps its errors
// (Error) to its own answers.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
	"github.com/threatd/threatd/core/index"
)

// Upstream is where one registry's packages come from.
type Upstream struct {
	// URL is the public upstream (firewall.<registry>.upstream).
	URL string
	// Private is the upstream of the names of firewall.private
	// (firewall.<registry>.private_upstream): "" = such names are refused.
	Private string
	// FileHosts are further origins whose files the upstream's documents
	// may link to (firewall.<registry>.file_hosts: PyPI's
	// files.pythonhosted.org).
	FileHosts []string
}

// Options configure the registry firewall (docs/firewall.md).
type Options struct {
	// Adapters are the registries served, one adapter each
	// (core/firewall/registries.All).
	Adapters []firewall.Adapter
	// Upstreams maps a registry (npm, pypi, go) to its upstreams.
	Upstreams map[string]Upstream
	Policy    *firewall.Policy
	Cache     *cache.Cache
	// Recent keeps the latest refusals for the admin page (nil: not kept).
	Recent *firewall.Recent
	// Recorder records decisions and held versions; Waivers are the
	// waivers in force (nil: none).
	Recorder *firewall.Recorder
	// Ledger counts the artifacts served (nil: not counted).
	Ledger  *firewall.Ledger
	Waivers *firewall.WaiverCache
	// Requests per minute allowed to one client IP and to one token; the
	// firewall's own budgets, because one install makes hundreds of requests.
	PerIPPerMinute, PerTokenPerMinute int
	// OCI is the container image registry on its own listener (nil: off).
	OCI *OCIOptions
	// ReviewerWaiverMax is firewall.reviewer_waiver_max (WaiverService).
	ReviewerWaiverMax time.Duration
	// UpstreamTimeout bounds fetching a document whole from the upstream
	// (and the wait for any answer); DownloadTimeout bounds streaming a
	// file (firewall.upstream_timeout, firewall.download_timeout).
	UpstreamTimeout, DownloadTimeout time.Duration
}

// Host is what the server around the proxy gives it.
type Host struct {
	// BasePath is the API's base path: the proxies are below
	// {BasePath}/firewall/{registry}/.
	BasePath string
	Log      *slog.Logger
	// Who is the e-mail of the user asking (logs, recent refusals);
	// Token is the id of the token asking (the ledger; nil: "").
	Who   func(c *echo.Context) string
	Token func(c *echo.Context) string
	// Record is a report as check-malicious shows it to the caller (a
	// refusal's details).
	Record func(c *echo.Context, t core.Threat) any
	// Charge counts cost requests against the caller's firewall budget,
	// hint added to the refusal's message.
	Charge func(c *echo.Context, cost int, hint string) error
	// Blocked and Rendered count a refusal and a document rendered anew,
	// by registry (nil: not counted).
	Blocked, Rendered func(registry string)
	// Index is the hot read path the image registry asks (the policy
	// asks it for the other registries).
	Index *index.Index
	// Pins keeps the digests reported tags resolve to.
	Pins PinStore
}

// PinStore keeps the digests reported image tags resolved to.
type PinStore interface {
	PinDigests(ctx context.Context, pins []firewall.DigestPin) error
	PinnedDigests(ctx context.Context, threatIDs []string) ([]firewall.DigestPin, error)
}

// Error is an answer other than what the upstream says: its status, its
// message, extra JSON fields and headers; the server writes it in its
// own shape ({"error": message, ...fields}).
type Error struct {
	Status  int
	Message string
	Fields  map[string]any
	Headers map[string]string
	// Cause is logged, never shown unless put in Fields.
	Cause error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Body is the JSON body of the answer: {"error": message} with the
// fields.
func (e *Error) Body() map[string]any {
	b := make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		b[k] = v
	}
	b["error"] = e.Message
	return b
}

// maxDocument bounds an upstream document the firewall reads whole to
// rewrite (npm package documents, PyPI project pages, Go version lists).
const maxDocument = 64 << 20

// maxAuditBody bounds npm's bulk-advisory request once decompressed.
const maxAuditBody = 16 << 20

// Proxy is the registry firewall: one pull-through proxy for every
// registry adapter, leaving out, or refusing, the versions verified
// reports name.
type Proxy struct {
	host    Host
	opts    Options
	log     *slog.Logger
	renders *renderings
	parsed  *cache.LRU[any] // file look-up tables of documents
	// origins are, per registry, the origins the firewall fetches from.
	origins map[string]cache.Origins
	// adapters are the registries' adapters, by name.
	adapters map[string]firewall.Adapter
	// listings remember when versions appeared (firewall.AuthorTimes).
	listings *firewall.Listings
	// gate decides (core/firewall): the proxy gathers facts and asks it.
	gate *firewall.Gate
	oci  *ociProxy
}

// Bounds of the proxy's in-memory caches.
const parsedBytes = 32 << 20

// New is the firewall of opts, served within host.
func New(opts Options, host Host) *Proxy {
	p := &Proxy{host: host, opts: opts, log: host.Log, parsed: cache.NewLRU[any](parsedBytes), origins: map[string]cache.Origins{},
		adapters: map[string]firewall.Adapter{}, listings: firewall.NewListings()}
	for _, a := range p.opts.Adapters {
		p.adapters[a.Registry()] = a
	}
	if p.opts.UpstreamTimeout <= 0 {
		p.opts.UpstreamTimeout = time.Minute
	}
	if p.opts.DownloadTimeout <= 0 {
		p.opts.DownloadTimeout = 10 * time.Minute
	}
	p.gate = &firewall.Gate{Policy: p.opts.Policy, Recorder: p.opts.Recorder, Waivers: p.opts.Waivers, Adapters: p.adapters}
	p.renders = newRenderings(p.opts.Cache)
	if p.opts.OCI != nil {
		p.oci = newOCI(p, p.opts.OCI)
	}
	for reg, up := range p.opts.Upstreams {
		o := cache.Origins{}
		for _, raw := range append([]string{up.URL, up.Private}, up.FileHosts...) {
			if u, err := url.Parse(raw); err == nil && raw != "" {
				o[cache.OriginOf(u)] = true
			}
		}
		p.origins[reg] = o
	}
	return p
}

// Options are the firewall's options, defaults applied.
func (p *Proxy) Options() Options { return p.opts }

// Mount adds each registry's routes to g (the server's group at
// {BasePath}/firewall, its middleware around them).
func (p *Proxy) Mount(g *echo.Group) {
	g.Use(Headers)
	for _, a := range p.opts.Adapters {
		h := p.serve(a)
		g.GET("/"+a.Registry()+"/*", h)
		g.HEAD("/"+a.Registry()+"/*", h)
		if au, ok := a.(firewall.Auditor); ok {
			g.POST("/"+a.Registry()+"/"+au.AuditPath(), p.audit(a, au))
		}
		if q, ok := a.(firewall.Queried); ok {
			for _, path := range q.QueryPaths() {
				g.POST("/"+a.Registry()+"/"+path, h)
			}
		}
	}
}

// Headers are on every firewall answer: what it serves comes from an
// upstream the site's origin does not vouch for, so no browser may sniff
// it into a page or run it as one (a sandbox without scripts).
func Headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		return next(c)
	}
}

// tail is the escaped path below prefix ("/firewall/npm/").
func (p *Proxy) tail(c *echo.Context, registry string) string {
	return strings.TrimPrefix(c.Request().URL.EscapedPath(), p.host.BasePath+"/firewall/"+registry+"/")
}

// base is the firewall's own URL for registry as the client reached it.
func (p *Proxy) base(c *echo.Context, registry string) string {
	return c.Scheme() + "://" + c.Request().Host + p.host.BasePath + "/firewall/" + registry
}

// upstream is the upstream URL, without a final slash, that v's package
// comes from: the public upstream, or for a private name the private one.
// A private name without a private upstream is refused (404 naming the
// setting): it is never fetched from the public registry, where a decoy
// of the same name would install.
func (p *Proxy) upstream(registry string, v firewall.Verdict) (string, error) {
	up := p.opts.Upstreams[registry]
	if !v.Private {
		return strings.TrimSuffix(up.URL, "/"), nil
	}
	if up.Private == "" {
		return "", &Error{Status: http.StatusNotFound, Message: fmt.Sprintf(
			"%s is a private name (firewall.private.%s) and firewall.%s.private_upstream is not set: the firewall never fetches a private name from the public registry, where a decoy of it would install",
			v.Name, registry, registry)}
	}
	return strings.TrimSuffix(up.Private, "/"), nil
}

// lookup returns the verdict for a package; a name the firewall cannot
// judge is refused.
func (p *Proxy) lookup(c *echo.Context, registry, name string) (firewall.Verdict, error) {
	return p.opts.Policy.Lookup(c.Request().Context(), registry, name)
}

// cannotJudge is the 400 of a request the firewall cannot judge
// (*firewall.Unjudgeable): text/plain for plain clients (the go command)
// unless JSON is asked for.
func cannotJudge(c *echo.Context, err error, plain bool) error {
	var u *firewall.Unjudgeable
	if !errors.As(err, &u) {
		return err
	}
	if plain && !strings.Contains(c.Request().Header.Get("Accept"), "json") {
		return plainAnswer(c, http.StatusBadRequest, u.Error())
	}
	return &Error{Status: http.StatusBadRequest, Message: u.Error()}
}

// plainAnswer answers status with a text/plain body (none to a HEAD).
func plainAnswer(c *echo.Context, status int, text string) error {
	if c.Request().Method == http.MethodHead {
		c.Response().Header().Set("Content-Type", "text/plain; charset=utf-8")
		return c.NoContent(status)
	}
	return c.String(status, text+"\n")
}

// unreachable is the 502 of an upstream that did not answer, or answered
// too slowly.
func (p *Proxy) unreachable(registry string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Status: http.StatusBadGateway, Cause: err,
			Message: fmt.Sprintf("The %s upstream registry did not answer in time (firewall.upstream_timeout, firewall.download_timeout); try again later", registry)}
	}
	if errors.Is(err, cache.ErrNotAllowed) {
		return &Error{Status: http.StatusBadGateway, Cause: err,
			Message: fmt.Sprintf("The %s upstream pointed the firewall at a host it does not fetch from (%v); only firewall.%s.upstream, private_upstream and file_hosts are fetched",
				registry, errors.Unwrap(err), registry)}
	}
	return &Error{Status: http.StatusBadGateway,
		Message: fmt.Sprintf("The %s upstream registry did not answer; try again later", registry), Cause: err}
}

// unreadable is the 502 of an upstream document the firewall cannot parse.
func (p *Proxy) unreadable(registry string, err error) error {
	return &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The %s upstream answered a document the firewall cannot read: %v", registry, err)}
}

// fetch gets rawURL from the upstream through the cache: only from the
// registry's origins (a document's link to any other host is refused), a
// failure to reach it is a 502.
func (p *Proxy) fetch(ctx context.Context, registry, rawURL, accept string) (*cache.Response, error) {
	o := p.origins[registry]
	if !o.Allows(rawURL) {
		host := rawURL
		target, _, _ := cache.SplitRequest(rawURL)
		if u, err := url.Parse(target); err == nil {
			host = cache.OriginOf(u)
		}
		return nil, p.unreachable(registry, fmt.Errorf("%w: %s", cache.ErrNotAllowed, host))
	}
	res, err := p.opts.Cache.Get(cache.WithOrigins(ctx, o), rawURL, accept)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err()
		}
		return nil, p.unreachable(registry, err)
	}
	return res, nil
}

// Media types the firewall serves upstream answers as; never the
// upstream's own, which could make a page of the site's origin.
const (
	typeFile = "application/octet-stream"
	typeJSON = "application/json"
	typeText = "text/plain; charset=utf-8"
)

// passThrough answers with an upstream answer other than a document the
// firewall rewrites: its status and body, as contentType ("" = the
// upstream's type when it is one of keep, else JSON when the upstream says
// JSON, else plain text), never any other upstream type, nor Location
// (redirects are followed by the firewall, only to its origins).
func passThrough(c *echo.Context, res *cache.Response, contentType string, keep ...string) error {
	defer res.Body.Close()
	h := c.Response().Header()
	if contentType == "" {
		contentType = typeText
		mt, _, err := mime.ParseMediaType(res.Header.Get("Content-Type"))
		switch {
		case err != nil:
		case slices.Contains(keep, mt):
			contentType = res.Header.Get("Content-Type")
		case strings.HasSuffix(mt, "/json") || strings.HasSuffix(mt, "+json"):
			contentType = typeJSON
		}
	}
	h.Set("Content-Type", contentType)
	for _, k := range []string{"Content-Length", "Content-Encoding", "Last-Modified"} {
		if v := res.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	status := res.Status
	if status >= 300 && status < 400 && status != http.StatusNotModified {
		// A redirect the firewall did not follow (more than 5): never
		// handed to the client, who would go around the firewall.
		return &Error{Status: http.StatusBadGateway, Message: "The upstream answered a redirect the firewall did not follow"}
	}
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err := io.Copy(c.Response(), res.Body)
	return err
}

// readDocument reads an upstream document whole, refusing one larger than
// maxDocument rather than serving part of it.
func (p *Proxy) readDocument(registry string, res *cache.Response) ([]byte, error) {
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxDocument+1))
	if err != nil {
		return nil, p.unreachable(registry, err)
	}
	if len(b) > maxDocument {
		return nil, &Error{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("The %s upstream document is larger than the firewall reads (%d MiB)", registry, maxDocument>>20)}
	}
	return b, nil
}

// fetchDocument fetches and reads a document whole within the upstream
// timeout; an answer other than 200 is returned unread (res != nil).
func (p *Proxy) fetchDocument(ctx context.Context, registry, rawURL, accept string) ([]byte, *cache.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.UpstreamTimeout)
	defer cancel()
	res, err := p.fetch(ctx, registry, rawURL, accept)
	if err != nil {
		return nil, nil, err
	}
	if res.Status != http.StatusOK {
		// Read within the timeout too: a trickling error page must not
		// hold the request.
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		res.Body.Close()
		if err != nil {
			return nil, nil, p.unreachable(registry, err)
		}
		res.Body = io.NopCloser(strings.NewReader(string(b)))
		res.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil, res, nil
	}
	b, err := p.readDocument(registry, res)
	return b, nil, err
}

// stream answers an upstream file (a tarball, wheel or module zip) as
// bytes of a fixed type, within firewall.download_timeout.
func (p *Proxy) stream(c *echo.Context, registry, rawURL, contentType string) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), p.opts.DownloadTimeout)
	defer cancel()
	res, err := p.fetch(ctx, registry, rawURL, "")
	if err != nil {
		return err
	}
	return passThrough(c, res, contentType)
}

// forward answers with the upstream's answer to rawURL as passThrough
// types it, within the upstream timeout.
func (p *Proxy) forward(c *echo.Context, registry, rawURL, accept, contentType string, keep ...string) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), p.opts.UpstreamTimeout)
	defer cancel()
	res, err := p.fetch(ctx, registry, rawURL, accept)
	if err != nil {
		return err
	}
	return passThrough(c, res, contentType, keep...)
}
