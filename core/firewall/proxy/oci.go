package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
	"github.com/threatd/threatd/core/firewall/oci"
)

// OCIOptions configure the firewall's OCI distribution registry
// (docs/firewall.md, "Container images"), served on a listener of its own.
type OCIOptions struct {
	// Upstream is the registry it fronts (firewall.oci.upstream).
	Upstream string
	// Client fetches from Origins only: the upstream, its token service
	// and the hosts its blobs redirect to (firewall.oci.file_hosts).
	Client  *http.Client
	Origins cache.Origins
	// Handler is set by the server that mounts the firewall: the
	// registry, to serve on firewall.oci.listen.
	Handler http.Handler
}

// Bounds of what the OCI firewall reads whole.
const (
	maxManifest = 4 << 20  // the distribution spec's recommended manifest limit
	maxTagList  = 16 << 20 // a page of tags
	maxToken    = 1 << 20
)

// ociProxy is the OCI registry in front of the upstream: manifests of
// reported images refused, reported tags left out of tag lists, blobs
// streamed, the upstream's token challenge answered.
type ociProxy struct {
	p    *Proxy
	opts *OCIOptions
	// tokens are the upstream's bearer tokens by repository; resolved
	// what a tag or an index resolves to, kept a short while.
	mu       sync.Mutex
	tokens   map[string]ociToken
	resolved map[string]ociResolved
	// pins are the digests pinned under reports of tags (oci_pins.go).
	pins map[string]ociPinned
}

type ociToken struct {
	token string
	until time.Time
}

type ociResolved struct {
	digests []string
	until   time.Time
}

// Bounds of the OCI proxy's memory.
const (
	maxOCITokens   = 10000
	maxOCIResolved = 10000
	resolvedFor    = time.Minute
)

// newOCI is the image registry of p, with opts.
func newOCI(p *Proxy, opts *OCIOptions) *ociProxy {
	return &ociProxy{p: p, opts: opts, tokens: map[string]ociToken{}, resolved: map[string]ociResolved{}, pins: map[string]ociPinned{}}
}

// MountOCI adds the image registry's routes to e, its requests below /v2
// through g (the server's group, its authentication, budgets and
// fail-closed start around them: Basic with the token as the password, as
// docker login and skopeo --creds send it). Nothing when the image
// registry is off.
func (p *Proxy) MountOCI(e *echo.Echo, g *echo.Group) {
	if p.oci == nil {
		return
	}
	o := p.oci
	g.GET("", o.serve)
	g.HEAD("", o.serve)
	g.GET("/*", o.serve)
	g.HEAD("/*", o.serve)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		e.Add(m, "/v2/*", func(c *echo.Context) error {
			return &Error{Status: http.StatusMethodNotAllowed, Message: "The firewall's registry is read-only: push to the upstream registry"}
		})
	}
}

// OCIHeaders: every answer says it is a distribution registry.
func OCIHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		c.Response().Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		return next(c)
	}
}

// serve answers one request below /v2/.
func (o *ociProxy) serve(c *echo.Context) error {
	tail := strings.TrimPrefix(strings.TrimPrefix(c.Request().URL.EscapedPath(), "/v2"), "/")
	req, ok, err := oci.Parse(tail)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("%q is not a registry path the firewall serves", tail)
	}
	if req.Kind != oci.Base {
		up, _ := url.Parse(o.opts.Upstream)
		req.Client = req.Name
		req.Name, req.Upstream = oci.Names(req.Name, up.Host)
	}
	switch req.Kind {
	case oci.Base:
		return c.JSONBlob(http.StatusOK, []byte("{}"))
	case oci.Blob:
		return o.blob(c, req)
	case oci.Tags:
		return o.tags(c, req)
	}
	return o.manifest(c, req)
}

// reported is what verified reports say of a repository, matched by its
// path whatever registry host they name.
func (o *ociProxy) reported(ctx context.Context, name string) (oci.Reported, error) {
	keys := o.p.host.Index.ImageKeys(name)
	if len(keys) == 0 {
		return oci.Reported{}, nil
	}
	threats, err := o.p.host.Index.Matches(ctx, keys, "")
	if err != nil {
		return oci.Reported{}, err
	}
	return oci.ReportedOf(threats), nil
}

// do sends a request upstream for repository name, answering its bearer
// challenge with a token from its token service (kept until it expires).
func (o *ociProxy) do(ctx context.Context, method, path, name string, header http.Header) (*http.Response, error) {
	ctx = cache.WithOrigins(ctx, o.opts.Origins)
	send := func(token string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(o.opts.Upstream, "/")+"/v2/"+path, nil)
		if err != nil {
			return nil, err
		}
		for k, vs := range header {
			req.Header[k] = vs
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := o.opts.Client.Do(req)
		if err != nil {
			return nil, o.p.unreachable(firewall.FirewallOCI, err)
		}
		return res, nil
	}
	res, err := send(o.token(name))
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		return res, err
	}
	ch, ok := oci.ParseChallenge(res.Header.Get("WWW-Authenticate"))
	if !ok {
		return res, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	res.Body.Close()
	tok, err := o.fetchToken(ctx, ch, name)
	if err != nil {
		return nil, err
	}
	return send(tok)
}

// token is a kept token for name's repository ("" when none is).
func (o *ociProxy) token(name string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t, ok := o.tokens[name]; ok && time.Now().Before(t.until) {
		return t.token
	}
	return ""
}

// fetchToken asks the upstream's token service for a pull token.
func (o *ociProxy) fetchToken(ctx context.Context, ch oci.Challenge, name string) (string, error) {
	if !o.opts.Origins.Allows(ch.Realm) {
		return "", &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf(
			"The OCI upstream's token service %s is not a host the firewall fetches from: add it to firewall.oci.file_hosts", ch.Realm)}
	}
	q := url.Values{"scope": {"repository:" + name + ":pull"}}
	if ch.Service != "" {
		q.Set("service", ch.Service)
	}
	sep := "?"
	if strings.Contains(ch.Realm, "?") {
		sep = "&"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ch.Realm+sep+q.Encode(), nil)
	if err != nil {
		return "", &Error{Status: http.StatusBadGateway, Message: "The OCI upstream's token service is not a URL: " + err.Error()}
	}
	res, err := o.opts.Client.Do(req)
	if err != nil {
		return "", o.p.unreachable(firewall.FirewallOCI, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxToken))
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err != nil || res.StatusCode != http.StatusOK || json.Unmarshal(body, &t) != nil || t.Token+t.AccessToken == "" {
		return "", &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The OCI upstream's token service %s gave no token (status %d)", ch.Realm, res.StatusCode)}
	}
	tok := t.Token
	if tok == "" {
		tok = t.AccessToken
	}
	life := time.Duration(max(t.ExpiresIn, 60)) * time.Second
	o.mu.Lock()
	if len(o.tokens) >= maxOCITokens {
		clear(o.tokens)
	}
	o.tokens[name] = ociToken{token: tok, until: time.Now().Add(life - 10*time.Second)}
	o.mu.Unlock()
	return tok, nil
}

// manifest answers a manifest: refused when a report blocks it, else as
// the upstream sent it.
func (o *ociProxy) manifest(c *echo.Context, req oci.Request) error {
	ctx := c.Request().Context()
	rep, err := o.reported(ctx, req.Name)
	if err != nil {
		return err
	}
	if rep.Any() {
		ts, err := o.blocking(ctx, req, "", rep)
		if err != nil {
			return err
		}
		if len(ts) > 0 && o.refused(c, req, ts) {
			return o.deny(c, req, ts)
		}
	}
	body, digest, contentType, res, err := o.fetchManifest(ctx, req, req.Reference, c.Request().Header.Values("Accept"))
	if err != nil {
		return err
	}
	if res != nil {
		return passUpstream(c, res)
	}
	if rep.Any() {
		ts, err := o.blocking(ctx, req, digest, rep)
		if err != nil {
			return err
		}
		if len(ts) > 0 && o.refused(c, req, ts) {
			return o.deny(c, req, ts)
		}
	}
	h := c.Response().Header()
	h.Set("Docker-Content-Digest", digest)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Content-Type", contentType)
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	if _, err = c.Response().Write(body); err != nil {
		return err
	}
	// The ledger: the image by what it was asked for, and by the digest
	// a tag resolved to.
	refs := []string{req.Reference}
	if digest != "" && digest != req.Reference {
		refs = append(refs, digest)
	}
	return o.p.served(c, firewall.Verdict{Registry: firewall.FirewallOCI, Name: req.Name}, nil, refs...)
}

// refused applies the malicious rule's action to a reported image (a
// waiver lifts it): true when it is refused. Quarantine never applies to
// images.
func (o *ociProxy) refused(c *echo.Context, req oci.Request, ts []core.Threat) bool {
	action, b := o.p.gate.Image(req.Name, req.Reference, ts, o.p.asker(c))
	if action == firewall.ActionWarn {
		c.Response().Header().Add("X-Threatd-Warning", headerText(firewall.RuleMalicious+": "+b.Message()))
	}
	return action == firewall.ActionBlock
}

// deny is the 403 DENIED of a reported image.
func (o *ociProxy) deny(c *echo.Context, req oci.Request, ts []core.Threat) error {
	b := o.p.opts.Policy.Blocked(firewall.FirewallOCI, req.Name, req.Reference, ts)
	err := o.p.refuse(c, b, false)
	var e *Error
	if errors.As(err, &e) {
		delete(e.Fields, "details")
	}
	return err
}

// passUpstream passes an upstream answer other than 200 on, its body
// bounded.
func passUpstream(c *echo.Context, res *http.Response) error {
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	ct := res.Header.Get("Content-Type")
	if !strings.Contains(ct, "json") {
		ct = typeText
	}
	if c.Request().Method == http.MethodHead {
		return c.NoContent(res.StatusCode)
	}
	return c.Blob(res.StatusCode, ct, body)
}

// blob streams a blob from the upstream (and the storage it redirects
// to), never holding more than a buffer of it.
func (o *ociProxy) blob(c *echo.Context, req oci.Request) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), o.p.opts.DownloadTimeout)
	defer cancel()
	var header http.Header
	if r := c.Request().Header.Get("Range"); r != "" {
		header = http.Header{"Range": {r}}
	}
	res, err := o.do(ctx, c.Request().Method, req.Upstream+"/blobs/"+req.Reference, req.Upstream, header)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusPartialContent {
		return passUpstream(c, res)
	}
	h := c.Response().Header()
	for _, k := range []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "Docker-Content-Digest", "Etag"} {
		if v := res.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/octet-stream")
	}
	c.Response().WriteHeader(res.StatusCode)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	_, err = io.CopyBuffer(c.Response(), res.Body, *buf)
	return err
}

// copyBuffers are the buffers blobs are streamed through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
