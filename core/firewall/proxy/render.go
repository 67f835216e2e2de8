package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/threatd/threatd/core/firewall/cache"
)

// baseMark stands for the firewall's own URL in a rendering: a rewritten
// document is kept without the address the client used (which a client
// chooses, and which must not make every request a new rendering), and
// the address is written in where the mark is when the document is served.
// It is written the same way in JSON and HTML, and no upstream document
// can make the rewriters write it: they write links only from the base.
const baseMark = "https://threatd-firewall-base.invalid/.mark"

// Bounds of renderings: kept in memory up to memRendered bytes (each at
// most an eighth of it), larger ones on disk in the upstream cache; the
// documents being read and rewritten at once at most renderBudget bytes,
// so that a few huge package documents cannot take the daemon's memory
// (a rewrite holds about four times its document).
const (
	memRendered  = 64 << 20
	renderBudget = maxDocument
)

// rendered is a rewritten document, or an upstream answer other than 200
// to pass on (status != 200).
type rendered struct {
	status      int
	body        []byte // nil when the rendering is on disk under diskKey
	diskKey     string
	size        int64
	contentType string
	// marks are where baseMark is in body (in memory only): a request
	// writes the pieces around them, with its base, without searching.
	marks []int
	// expires is when a version it holds back is released (zero: never):
	// from then on it is rendered again.
	expires time.Time
	// warnings are the X-Threatd-Warning headers it is served with.
	warnings []string
}

// servedBodies are the buffers a rendering in memory is written from:
// its pieces and the request's base joined, then one write.
var servedBodies = sync.Pool{New: func() any { return new([]byte) }}

// escapeJSON writes s as the inside of a JSON string (encoding/json's
// escaping, as the rewriters write).
func escapeJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// escapeFor is how the base is written in a document of contentType.
func escapeFor(contentType string) func(string) string {
	// A URL of printable ASCII without any of these is written as it is
	// in JSON and in HTML alike (the common case: no escaping to do).
	plain := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if b := s[i]; b < 0x20 || b >= 0x7f || strings.IndexByte(`"\<>&'`, b) >= 0 {
				return false
			}
		}
		return true
	}
	if strings.Contains(contentType, "json") || strings.Contains(contentType, "html") {
		slow := escapeSlow(contentType)
		return func(s string) string {
			if plain(s) {
				return s
			}
			return slow(s)
		}
	}
	return func(s string) string { return s }
}

// escapeSlow escapes any base for contentType.
func escapeSlow(contentType string) func(string) string {
	switch {
	case strings.Contains(contentType, "json"):
		return escapeJSON
	case strings.Contains(contentType, "html"):
		return html.EscapeString
	}
	return func(s string) string { return s }
}

// renderings are the firewall's rewritten documents: kept by the upstream
// body they come from and the reports that decide them, each rendered by
// one request at a time (concurrent requests for it wait for that one),
// and only up to renderBudget bytes of documents at once.
type renderings struct {
	cache  *cache.Cache
	mem    *cache.LRU[rendered]
	flight singleflight.Group
	budget *semaphore.Weighted
	// onDisk are, by key, what the disk does not keep of the large
	// renderings kept there that hold versions back for a time or carry
	// warnings (diskMeta): kept under a disk key of their own, so that
	// after a restart, with this forgotten, they are made again.
	onDisk sync.Map
	// seed keys the renderings of upstream answers the upstream lets no
	// cache keep, by a hash of their bodies (unpredictable: nobody can
	// make two bodies share a rendering).
	seed maphash.Seed
}

func newRenderings(c *cache.Cache) *renderings {
	return &renderings{cache: c, mem: cache.NewLRU[rendered](memRendered), budget: semaphore.NewWeighted(renderBudget), seed: maphash.MakeSeed()}
}

// withBudget runs fn holding weight bytes of the rendering budget (the
// size of the document fn reads whole; -1 when unknown), waiting for it
// within ctx; a wait that ends with ctx is a 503.
func (r *renderings) withBudget(ctx context.Context, weight int64, fn func() error) error {
	if ctx.Value(renderingKey{}) != nil {
		// Within a rendering that holds budget already (a listing that
		// renders the documents it names): waiting could wait for itself.
		return fn()
	}
	if weight < 0 || weight > renderBudget {
		weight = renderBudget
	}
	weight = max(weight, 1)
	if err := r.budget.Acquire(ctx, weight); err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Cause: err, Headers: map[string]string{"Retry-After": "5"},
			Message: "The firewall is busy rewriting other large package documents; try again shortly"}
	}
	defer r.budget.Release(weight)
	return fn()
}

// renderFunc rewrites an upstream document; base is where links point
// (baseMark while rendering).
type renderFunc func(ctx context.Context, body []byte, contentType, base string) (rendering, error)

// rendering is what a renderFunc makes.
type rendering struct {
	body        []byte
	contentType string
	expires     time.Time
	warnings    []string
}

// document answers an upstream document rewritten by render: fetched and
// rewritten once however many requests ask for it at once, kept while the
// upstream body and the verdict stay the same, and served with the
// firewall's address as the client reached it.
//
// decidedBy identifies what decides the rendering besides the document:
// the reports' fingerprint and the waivers of the package.
func (p *Proxy) document(c *echo.Context, registry, rawURL, accept, decidedBy string, render renderFunc) error {
	key := strings.Join([]string{registry, rawURL, accept, decidedBy}, "\x00")
	// The common case: the upstream's answer is fresh in the cache and its
	// rendering is kept: served at once, without the shared work (no
	// goroutine, no file opened).
	if version, ok := p.opts.Cache.Peek(rawURL, accept); ok {
		if d, ok := p.renders.mem.Get(key + "\x00" + version); ok && (d.expires.IsZero() || time.Now().Before(d.expires)) {
			return p.serveRendered(c, registry, d)
		}
	}
	// The work outlives the request that started it (others may wait for
	// it), within the upstream timeout.
	ch := p.renders.flight.DoChan(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), p.opts.UpstreamTimeout)
		defer cancel()
		return p.render(ctx, registry, key, rawURL, accept, render)
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-c.Request().Context().Done():
		return c.Request().Context().Err()
	}
	if res.Err != nil {
		return res.Err
	}
	return p.serveRendered(c, registry, res.Val.(rendered))
}

// render fetches and rewrites one document (document's shared work). A
// rendering is kept by the upstream body it comes from: its version in
// the upstream cache, or, for a body the upstream lets no cache keep, a
// hash of it (the body is fetched whole again, the rewrite is not redone).
// Small renderings are kept in memory, large ones on disk, those that
// hold versions back until the first hold ends.
func (p *Proxy) render(ctx context.Context, registry, key, rawURL, accept string, render renderFunc) (rendered, error) {
	res, err := p.fetch(ctx, registry, rawURL, accept)
	if err != nil {
		return rendered{}, err
	}
	if res.Status != http.StatusOK {
		defer res.Body.Close()
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		if err != nil {
			return rendered{}, p.unreachable(registry, err)
		}
		ct := typeText
		if strings.Contains(res.Header.Get("Content-Type"), "json") {
			ct = typeJSON
		}
		return rendered{status: res.Status, body: b, size: int64(len(b)), contentType: ct}, nil
	}
	if res.Kept() {
		if d, ok := p.renders.kept(key + "\x00" + res.Version); ok {
			_ = res.Body.Close()
			return d, nil
		}
	}
	var out rendering
	var d rendered
	found, keep := false, false
	vkey := key + "\x00" + res.Version
	err = p.renders.withBudget(ctx, contentLength(res), func() error {
		body, err := p.readDocument(registry, res)
		if err != nil {
			return err
		}
		// Read whole, the body is in the upstream cache if it may be.
		if keep = res.Kept(); !keep {
			// Not kept upstream: the rendering is kept by its body.
			vkey, keep = key+"\x00body:"+strconv.FormatUint(maphash.Bytes(p.renders.seed, body), 36)+":"+strconv.Itoa(len(body)), true
			if d, found = p.renders.kept(vkey); found {
				return nil
			}
		}
		if out, err = render(context.WithValue(ctx, renderingKey{}, true), body, res.Header.Get("Content-Type"), baseMark); err != nil {
			var e *Error
			if errors.As(err, &e) {
				return err
			}
			return p.unreadable(registry, err)
		}
		return nil
	})
	if err != nil {
		_ = res.Body.Close()
		return rendered{}, err
	}
	if found {
		return d, nil
	}
	if p.host.Rendered != nil {
		p.host.Rendered(registry)
	}
	d = rendered{status: http.StatusOK, body: out.body, size: int64(len(out.body)), contentType: out.contentType,
		marks: marksIn(out.body), expires: out.expires, warnings: out.warnings}
	if keep {
		p.renders.keep(vkey, d)
	}
	return d, nil
}

// serveRendered writes a rendering with the firewall's address in place
// of baseMark (no body to a HEAD).
func (p *Proxy) serveRendered(c *echo.Context, registry string, d rendered) error {
	if d.status != http.StatusOK {
		c.Response().Header().Set("Content-Type", d.contentType)
		if c.Request().Method == http.MethodHead {
			return c.NoContent(d.status)
		}
		return c.Blob(d.status, d.contentType, d.body)
	}
	base := escapeFor(d.contentType)(p.base(c, registry))
	h := c.Response().Header()
	for _, w := range d.warnings {
		h.Add("X-Threatd-Warning", headerText(w))
	}
	h.Set("Content-Type", d.contentType)
	if d.body != nil {
		// In memory: the pieces between the marks and the base, joined
		// in a pooled buffer and written at once (one write: large TLS
		// records, no per-piece overhead).
		size := d.size + int64(len(d.marks))*int64(len(base)-len(baseMark))
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		c.Response().WriteHeader(http.StatusOK)
		if c.Request().Method == http.MethodHead {
			return nil
		}
		if size > memRendered/8 {
			// A document too large to keep in memory (served once, to
			// the requests that waited for its rendering): its pieces
			// through a 64 KiB buffer, not a copy of it.
			w := bufio.NewWriterSize(c.Response(), 64<<10)
			from := 0
			for _, at := range d.marks {
				_, _ = w.Write(d.body[from:at])
				_, _ = w.WriteString(base)
				from = at + len(baseMark)
			}
			_, _ = w.Write(d.body[from:])
			return w.Flush()
		}
		bp := servedBodies.Get().(*[]byte)
		defer servedBodies.Put(bp)
		out, from := (*bp)[:0], 0
		for _, at := range d.marks {
			out = append(append(out, d.body[from:at]...), base...)
			from = at + len(baseMark)
		}
		out = append(out, d.body[from:]...)
		*bp = out
		_, err := c.Response().Write(out)
		return err
	}
	f, ok := p.opts.Cache.OpenDerived(d.diskKey)
	if !ok {
		return &Error{Status: http.StatusServiceUnavailable, Headers: map[string]string{"Retry-After": "1"},
			Message: "The firewall's copy of this document was just dropped from its cache; try again"}
	}
	defer f.Close()
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	w := bufio.NewWriterSize(c.Response(), 64<<10)
	if err := replaceStream(w, f, baseMark, base); err != nil {
		return err
	}
	return w.Flush()
}

// replaceStream copies src to w with every old replaced by new, reading
// 256 KiB at a time (an old that spans two reads is found).
func replaceStream(w io.Writer, src io.Reader, old, new string) error {
	buf := make([]byte, 256<<10)
	carry := 0
	for {
		n, err := io.ReadFull(src, buf[carry:])
		n += carry
		end := err != nil
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		chunk := buf[:n]
		// Keep back what could be the start of old, unless at the end.
		safe := n
		if !end {
			safe = max(0, n-(len(old)-1))
		}
		for {
			i := bytes.Index(chunk[:safe], []byte(old))
			if i < 0 {
				break
			}
			if _, err := w.Write(chunk[:i]); err != nil {
				return err
			}
			if _, err := io.WriteString(w, new); err != nil {
				return err
			}
			chunk, safe = chunk[i+len(old):], safe-i-len(old)
		}
		if end {
			_, err := w.Write(chunk)
			return err
		}
		if _, err := w.Write(chunk[:safe]); err != nil {
			return err
		}
		carry = copy(buf, chunk[safe:])
	}
}

// contentLength is an upstream answer's Content-Length, -1 when unknown.
func contentLength(res *cache.Response) int64 {
	n, err := strconv.ParseInt(res.Header.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// marksIn gives where baseMark is in body, in order.
func marksIn(body []byte) []int {
	var at []int
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(baseMark))
		if j < 0 {
			return at
		}
		at = append(at, i+j)
		i += j + len(baseMark)
	}
}
