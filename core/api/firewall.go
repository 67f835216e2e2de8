package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"golang.org/x/mod/semver"

	"github.com/threatd/threatd/core/api/upstream"
	"github.com/threatd/threatd/core/firewall"
)

// FirewallOptions configure the registry firewall (docs/firewall.md).
type FirewallOptions struct {
	// Upstreams maps a registry (npm, pypi, go) to its upstream URL.
	Upstreams map[string]string
	Policy    *firewall.Policy
	Cache     *upstream.Cache
	// Recent keeps the latest refusals for the admin page (nil: not kept).
	Recent *firewall.Recent
	// Requests per minute allowed to one client IP and to one token; the
	// firewall's own budgets, because one install makes hundreds of requests.
	PerIPPerMinute, PerTokenPerMinute int
}

// maxDocument bounds an upstream document the firewall reads whole to
// rewrite (npm package documents, PyPI project pages, Go version lists).
const maxDocument = 64 << 20

// maxAuditBody bounds npm's bulk-advisory request once decompressed.
const maxAuditBody = 16 << 20

// proxy is the registry firewall: pull-through proxies for npm, PyPI and Go
// that leave out, or refuse, the versions verified reports name.
type proxy struct {
	s        *Server
	opts     FirewallOptions
	log      *slog.Logger
	rendered *upstream.LRU[rendering] // rewritten documents
	parsed   *upstream.LRU[any]       // file look-up tables of documents
}

// Bounds of the proxy's in-memory caches.
const (
	renderedBytes = 64 << 20
	parsedBytes   = 32 << 20
)

// firewallRoutes mounts the proxies under {base}/firewall.
func (s *Server) firewallRoutes(e *echo.Echo) {
	p := &proxy{s: s, opts: *s.opts.Firewall, log: s.log, rendered: upstream.NewLRU[rendering](renderedBytes), parsed: upstream.NewLRU[any](parsedBytes)}
	g := e.Group(s.opts.BasePath+"/firewall", s.authenticateWith(true), s.firewallTokenLimit, s.requireIndex)
	g.GET("/npm/*", p.npm)
	g.HEAD("/npm/*", p.npm)
	g.POST("/npm/-/npm/v1/security/advisories/bulk", p.npmAudit)
	g.GET("/pypi/*", p.pypi)
	g.HEAD("/pypi/*", p.pypi)
	g.GET("/go/*", p.golang)
	g.HEAD("/go/*", p.golang)
}

// firewallPath says whether a request is for the firewall (its own per-IP budget).
func (s *Server) firewallPath(path string) bool {
	return s.opts.Firewall != nil && strings.HasPrefix(path, s.opts.BasePath+"/firewall/")
}

// firewallTokenLimit is the per-token limit of firewall requests
// (firewall.per_token_per_minute), with the RateLimit-* headers.
func (s *Server) firewallTokenLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		limit := s.opts.Firewall.PerTokenPerMinute
		if err := s.charge(c, "firewall:"+principal(c).Token.ID, limit, 1, func() string { return fmt.Sprintf("the firewall allows %d requests per minute", limit) }); err != nil {
			return err
		}
		return next(c)
	}
}

// tail is the escaped path below prefix ("/firewall/npm/").
func (p *proxy) tail(c *echo.Context, registry string) string {
	return strings.TrimPrefix(c.Request().URL.EscapedPath(), p.s.opts.BasePath+"/firewall/"+registry+"/")
}

// base is the firewall's own URL for registry as the client reached it.
func (p *proxy) base(c *echo.Context, registry string) string {
	return c.Scheme() + "://" + c.Request().Host + p.s.opts.BasePath + "/firewall/" + registry
}

// upstream is the configured upstream URL of registry, without a final slash.
func (p *proxy) upstream(registry string) string {
	return strings.TrimSuffix(p.opts.Upstreams[registry], "/")
}

// lookup returns the verdict for a package.
func (p *proxy) lookup(c *echo.Context, registry, name string) (firewall.Verdict, error) {
	return p.opts.Policy.Lookup(c.Request().Context(), registry, name)
}

// refuse answers a blocked version: 403 with the message, the ids of the
// reports and the newest of them as check-malicious shows it; counted in
// metrics, logged with the token's user, kept for the admin page. plain
// answers text/plain, for clients that show only such bodies (the go
// command), unless the request accepts JSON.
func (p *proxy) refuse(c *echo.Context, b *firewall.Blocked, plain bool) error {
	who := principal(c)
	ids := b.ThreatIDs()
	p.log.Warn("firewall blocked a package", "user", who.User.Email, "registry", b.Registry,
		"package", b.Name, "version", b.Version, "threat_ids", ids)
	if m := p.s.opts.Metrics; m != nil {
		m.firewallBlocked(b.Registry)
	}
	if p.opts.Recent != nil {
		p.opts.Recent.Add(firewall.Event{Time: time.Now(), User: who.User.Email, Registry: b.Registry, Name: b.Name, Version: b.Version, ThreatIDs: ids})
	}
	if plain && !strings.Contains(c.Request().Header.Get("Accept"), "json") {
		return c.String(http.StatusForbidden, b.Message()+"\n")
	}
	return &Error{Status: http.StatusForbidden, Message: b.Message(),
		Fields: map[string]any{"threat_ids": ids, "details": toRecord(b.Threats[0], who)}}
}

// refuseWithReason is refuse for clients that print only the status
// line of a failed download (pip, through requests): over HTTP/1.1 the
// status line's reason phrase carries the refusal's message. The body is
// the same JSON.
func (p *proxy) refuseWithReason(c *echo.Context, b *firewall.Blocked) error {
	r := c.Request()
	if r.ProtoMajor != 1 {
		return p.refuse(c, b, false)
	}
	err := p.refuse(c, b, false)
	fe, ok := err.(*Error)
	if !ok {
		return err
	}
	body, jerr := json.Marshal(fe.body())
	if jerr != nil {
		return err
	}
	conn, buf, herr := http.NewResponseController(c.Response()).Hijack()
	if herr != nil {
		return err
	}
	defer conn.Close()
	reason := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, fe.Message)
	// The headers set so far (RateLimit-*, the request id, no-store,
	// nosniff) go out as on any other answer.
	h := c.Response().Header().Clone()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	fmt.Fprintf(buf, "HTTP/1.1 403 %s\r\n", reason)
	_ = h.Write(buf)
	fmt.Fprintf(buf, "\r\n%s", body)
	if resp, _ := echo.UnwrapResponse(c.Response()); resp != nil {
		resp.Status, resp.Committed = http.StatusForbidden, true
	}
	return buf.Flush()
}

// unreachable is the 502 of an upstream that did not answer.
func (p *proxy) unreachable(registry string, err error) error {
	return &Error{Status: http.StatusBadGateway,
		Message: fmt.Sprintf("The %s upstream registry did not answer; try again later", registry), Cause: err}
}

// unreadable is the 502 of an upstream document the firewall cannot parse.
func (p *proxy) unreadable(registry string, err error) error {
	return &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The %s upstream answered a document the firewall cannot read: %v", registry, err)}
}

// fetch gets url from the upstream through the cache; a failure to reach it is a 502.
func (p *proxy) fetch(ctx context.Context, registry, url, accept string) (*upstream.Response, error) {
	res, err := p.opts.Cache.Get(ctx, url, accept)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, p.unreachable(registry, err)
	}
	return res, nil
}

// passThrough answers with an upstream response unchanged (its status,
// type and body).
func passThrough(c *echo.Context, res *upstream.Response) error {
	defer res.Body.Close()
	h := c.Response().Header()
	for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "Last-Modified", "Location"} {
		if v := res.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	c.Response().WriteHeader(res.Status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err := io.Copy(c.Response(), res.Body)
	return err
}

// readDocument reads an upstream document whole, refusing one larger than
// maxDocument rather than serving part of it.
func (p *proxy) readDocument(registry string, res *upstream.Response) ([]byte, error) {
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

// rendering is a rewritten document.
type rendering struct {
	body        []byte
	contentType string
}

// document fetches an upstream document and answers it rewritten by
// render, keeping the rewritten bytes while the upstream body, the
// verdict and the client's view of the firewall's address stay the same.
func (p *proxy) document(c *echo.Context, registry, url, accept string, v firewall.Verdict,
	render func(body []byte, contentType, base string) (rendering, error)) error {
	res, err := p.fetch(c.Request().Context(), registry, url, accept)
	if err != nil {
		return err
	}
	if res.Status != http.StatusOK {
		return passThrough(c, res)
	}
	base := p.base(c, registry)
	key := strings.Join([]string{url, accept, res.Version, v.Fingerprint(), base}, "\x00")
	if r, ok := p.rendered.Get(key); ok {
		_ = res.Body.Close()
		return writeRendering(c, r)
	}
	body, err := p.readDocument(registry, res)
	if err != nil {
		return err
	}
	r, err := render(body, res.Header.Get("Content-Type"), base)
	if err != nil {
		return p.unreadable(registry, err)
	}
	if res.Hit {
		remember(p.rendered, renderedBytes, key, r, int64(len(r.body)+len(key)))
	}
	return writeRendering(c, r)
}

func writeRendering(c *echo.Context, r rendering) error {
	if c.Request().Method == http.MethodHead {
		c.Response().Header().Set("Content-Type", r.contentType)
		c.Response().WriteHeader(http.StatusOK)
		return nil
	}
	return c.Blob(http.StatusOK, r.contentType, r.body)
}

// stream answers an upstream file (a tarball, wheel or module zip).
func (p *proxy) stream(c *echo.Context, registry, url string) error {
	return p.forward(c, registry, url, "")
}

// forward answers with the upstream's answer to url, unchanged.
func (p *proxy) forward(c *echo.Context, registry, url, accept string) error {
	res, err := p.fetch(c.Request().Context(), registry, url, accept)
	if err != nil {
		return err
	}
	return passThrough(c, res)
}

// highestRelease is the highest release among versions in semver order
// (prefix makes a version semver as golang.org/x/mod reads it: "v" for
// npm's, "" for Go's), or the highest pre-release when there is no
// release; "" when none is semver.
func highestRelease(versions iter.Seq[string], prefix string) string {
	var best, bestPre string
	for ver := range versions {
		sv := prefix + ver
		switch {
		case !semver.IsValid(sv):
		case semver.Prerelease(sv) == "":
			if best == "" || semver.Compare(sv, prefix+best) > 0 {
				best = ver
			}
		case bestPre == "" || semver.Compare(sv, prefix+bestPre) > 0:
			bestPre = ver
		}
	}
	if best != "" {
		return best
	}
	return bestPre
}

// remember keeps v of size bytes in l unless it would take more than an
// eighth of the bound: one huge document must not empty the cache.
func remember[V any](l *upstream.LRU[V], max int64, key string, v V, size int64) {
	if size <= max/8 {
		l.Add(key, v, size)
	}
}

// notFound is a 404 naming what is missing.
func notFound(format string, args ...any) error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}
