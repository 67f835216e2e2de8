// Package cache is the registry firewall's cache of upstream
// registry answers: it fetches upstream documents and
// files through a shared on-disk HTTP cache bounded in bytes: a response is
// kept when its Cache-Control lets a shared cache keep it, served while it
// is fresh, revalidated with its ETag or Last-Modified when it is stale,
// and the least recently used responses are dropped past the bound.
package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/threatd/threatd/core/firewall"
)

// Response is an upstream answer, from the cache or from the network.
type Response struct {
	Status int
	Header http.Header
	// Body must be closed. For a response being stored, reading it to the
	// end stores it.
	Body io.ReadCloser
	// Hit says the body comes from the cache (fresh, or revalidated).
	Hit bool
	// Version identifies this body of this URL: it changes whenever a new
	// body is stored (for caches of what is derived from it).
	Version string
	tee     *teeBody
}

// Kept says whether the body is in the cache under Version: it came from
// it (Hit), or it was read to its end and stored there. What is derived
// from it may then be kept under Version too.
func (r *Response) Kept() bool {
	return r.Hit || (r.tee != nil && r.tee.stored)
}

// Cache is an on-disk cache of upstream responses.
type Cache struct {
	dir      string
	maxBytes int64
	client   *http.Client
	// entries are the stored responses, by key. An entry is never changed
	// once stored: a revalidation stores a new one.
	entries *LRU[*entry]
}

// entry is one stored response; its meta file holds this, its body file the body.
type entry struct {
	URL        string      `json:"url"`
	Accept     string      `json:"accept"`
	Header     http.Header `json:"header"`
	Size       int64       `json:"size"`
	Stored     time.Time   `json:"stored"`
	Expires    time.Time   `json:"expires"`
	Revalidate bool        `json:"revalidate"` // no-cache: revalidate on every use
	key        string
}

// storedHeaders are the upstream headers kept with a body.
var storedHeaders = []string{"Content-Type", "Etag", "Last-Modified", "Content-Encoding", "Cache-Control"}

// Open opens (creating) the cache in dir, holding at most maxBytes of
// bodies (0: nothing is stored; every request goes upstream). A body larger
// than a quarter of the bound is streamed and not kept.
func Open(dir string, maxBytes int64, client *http.Client) (*Cache, error) {
	c := &Cache{dir: dir, maxBytes: maxBytes, client: client, entries: NewLRU[*entry](maxBytes)}
	if maxBytes <= 0 {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("firewall cache %s: %w", dir, err)
	}
	// Load what an earlier run stored; drop what is incomplete.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".tmp"):
			return os.Remove(p)
		case strings.HasSuffix(p, ".meta"):
			var e entry
			b, rerr := os.ReadFile(p)
			key := strings.TrimSuffix(filepath.Base(p), ".meta")
			fi, serr := os.Stat(c.bodyPath(key))
			if rerr != nil || json.Unmarshal(b, &e) != nil || serr != nil || fi.Size() != e.Size {
				_ = os.Remove(p)
				_ = os.Remove(c.bodyPath(key))
				return nil
			}
			e.key = key
			c.removeFiles(c.entries.Add(key, &e, e.Size))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("firewall cache %s: %w", dir, err)
	}
	return c, nil
}

// Used returns the bytes of bodies stored.
func (c *Cache) Used() int64 { return c.entries.Used() }

func (c *Cache) keyOf(url, accept string) string {
	h := sha256.Sum256([]byte(accept + "\n" + url))
	return hex.EncodeToString(h[:])
}

func (c *Cache) bodyPath(key string) string { return filepath.Join(c.dir, key[:2], key+".body") }
func (c *Cache) metaPath(key string) string { return filepath.Join(c.dir, key[:2], key+".meta") }

// ErrUnreachable wraps a failure to get an answer from the upstream.
var ErrUnreachable = errors.New("the upstream registry did not answer")

// Get answers GET url with Accept accept ("" = none): from the cache while
// fresh, else from the upstream (revalidating what is stored). A network
// failure is an error wrapping ErrUnreachable.
//
// url may be a POST request string (PostRequest): its answer is kept by
// the URL and the body, while fresh, and never revalidated.
func (c *Cache) Get(ctx context.Context, url, accept string) (*Response, error) {
	key := c.keyOf(url, accept)
	now := time.Now()
	e, _ := c.entries.Get(key)
	if e != nil && !e.Revalidate && now.Before(e.Expires) {
		if r, err := c.open(e); err == nil {
			return r, nil
		}
		c.drop(key)
		e = nil
	}
	target, body, post := SplitRequest(url)
	method, reader := http.MethodGet, io.Reader(nil)
	if post {
		method, reader, e = http.MethodPost, bytes.NewReader(body), nil
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if post {
		req.Header.Set("Content-Type", "application/json")
	}
	if e != nil {
		if et := e.Header.Get("Etag"); et != "" {
			req.Header.Set("If-None-Match", et)
		}
		if lm := e.Header.Get("Last-Modified"); lm != "" {
			req.Header.Set("If-Modified-Since", lm)
		}
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	if e != nil && res.StatusCode == http.StatusNotModified {
		_ = res.Body.Close()
		c.refresh(e, res.Header, now)
		if r, err := c.open(e); err == nil {
			return r, nil
		}
		c.drop(key)
		return c.Get(ctx, url, accept)
	}
	out := &Response{Status: res.StatusCode, Header: res.Header, Body: res.Body,
		Version: strconv.FormatInt(now.UnixNano(), 36)}
	if res.StatusCode != http.StatusOK || c.maxBytes <= 0 {
		return out, nil
	}
	expires, revalidate, ok := freshness(res.Header, now)
	if !ok || (res.ContentLength > c.maxBytes/4) {
		return out, nil
	}
	ne := &entry{URL: url, Accept: accept, Header: http.Header{}, Stored: now, Expires: expires, Revalidate: revalidate, key: key}
	for _, h := range storedHeaders {
		if v := res.Header.Get(h); v != "" {
			ne.Header.Set(h, v)
		}
	}
	if (post || ne.Header.Get("Etag") == "" && ne.Header.Get("Last-Modified") == "") && !now.Before(expires) {
		return out, nil // nothing to reuse it by
	}
	if err := os.MkdirAll(filepath.Dir(c.bodyPath(key)), 0o700); err != nil {
		return out, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.bodyPath(key)), key+"-*.tmp")
	if err != nil {
		return out, nil
	}
	out.tee = &teeBody{c: c, src: res.Body, tmp: tmp, e: ne, want: res.ContentLength}
	out.Body = out.tee
	return out, nil
}

// PostRequest is the request string of a POST of a JSON body to url
// (firewall.PostRequest): Get sends it, and keeps its answer by both.
func PostRequest(url string, body []byte) string { return firewall.PostRequest(url, body) }

// SplitRequest reads a request string: the URL, and for a POST its body.
func SplitRequest(s string) (url string, body []byte, post bool) { return firewall.SplitRequest(s) }

// Peek returns the version of a fresh stored answer to url (as Get's
// Response.Version), without opening it; ok is false when Get would ask
// the upstream. A caller that keeps what it made of that answer by its
// version serves it without touching the disk.
func (c *Cache) Peek(url, accept string) (version string, ok bool) {
	e, _ := c.entries.Get(c.keyOf(url, accept))
	if e == nil || e.Revalidate || !time.Now().Before(e.Expires) {
		return "", false
	}
	return strconv.FormatInt(e.Stored.UnixNano(), 36), true
}

// open answers from a stored entry.
func (c *Cache) open(e *entry) (*Response, error) {
	f, err := os.Open(c.bodyPath(e.key))
	if err != nil {
		return nil, err
	}
	h := e.Header.Clone()
	h.Set("Content-Length", strconv.FormatInt(e.Size, 10))
	return &Response{Status: http.StatusOK, Header: h, Body: f, Hit: true,
		Version: strconv.FormatInt(e.Stored.UnixNano(), 36)}, nil
}

// refresh records a 304: the stored body is fresh again, under the
// validators and freshness the upstream sent with it.
func (c *Cache) refresh(e *entry, h http.Header, now time.Time) {
	ne := *e
	ne.Header = e.Header.Clone()
	for _, k := range []string{"Cache-Control", "Expires", "Etag", "Last-Modified", "Date", "Age"} {
		if v := h.Get(k); v != "" {
			ne.Header.Set(k, v)
		}
	}
	ne.Expires, ne.Revalidate, _ = freshness(ne.Header, now)
	ne.Header.Del("Date")
	ne.Header.Del("Age")
	c.writeMeta(&ne)
	c.removeFiles(c.entries.Add(ne.key, &ne, ne.Size))
}

func (c *Cache) writeMeta(e *entry) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	tmp := c.metaPath(e.key) + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, c.metaPath(e.key))
	}
}

// commit stores a body read to its end and reports whether it did.
func (c *Cache) commit(e *entry, tmp string, size int64) bool {
	e.Size = size
	if err := os.Rename(tmp, c.bodyPath(e.key)); err != nil {
		_ = os.Remove(tmp)
		return false
	}
	c.writeMeta(e)
	c.removeFiles(c.entries.Add(e.key, e, size))
	return true
}

// drop forgets a stored response.
func (c *Cache) drop(key string) {
	c.entries.Remove(key)
	c.removeFiles([]*entry{{key: key}})
}

// removeFiles deletes the files of entries dropped from the cache.
func (c *Cache) removeFiles(dropped []*entry) {
	for _, e := range dropped {
		_ = os.Remove(c.metaPath(e.key))
		_ = os.Remove(c.bodyPath(e.key))
	}
}

// teeBody streams an upstream body to its reader and into a temporary
// file, stored when the body has been read whole.
type teeBody struct {
	c    *Cache
	src  io.ReadCloser
	tmp  *os.File
	e    *entry
	want int64
	n    int64
	bad  bool
	done bool
	// stored is set once the body is in the cache.
	stored bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	if n > 0 && !t.bad {
		if _, werr := t.tmp.Write(p[:n]); werr != nil {
			t.bad = true
		}
		t.n += int64(n)
		if t.n > t.c.maxBytes/4 {
			t.bad = true
		}
	}
	if err == io.EOF && !t.bad && !t.done && (t.want < 0 || t.want == t.n) {
		t.done = true
		name := t.tmp.Name()
		if t.tmp.Close() == nil {
			t.stored = t.c.commit(t.e, name, t.n)
		} else {
			_ = os.Remove(name)
		}
		t.tmp = nil
	}
	return n, err
}

func (t *teeBody) Close() error {
	if t.tmp != nil {
		name := t.tmp.Name()
		_ = t.tmp.Close()
		_ = os.Remove(name)
		t.tmp = nil
	}
	return t.src.Close()
}

// freshness computes until when a response may be served without asking
// the upstream (RFC 9111 for a shared cache: s-maxage, then max-age, then
// Expires, less Age), whether it must be revalidated on every use
// (no-cache), and whether a shared cache may store it at all (not
// no-store, not private).
func freshness(h http.Header, now time.Time) (expires time.Time, revalidate, storable bool) {
	var maxAge, sMaxAge = -1, -1
	for _, d := range strings.Split(strings.ToLower(h.Get("Cache-Control")), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		val = strings.Trim(val, `"`)
		switch name {
		case "no-store", "private":
			return time.Time{}, false, false
		case "no-cache":
			revalidate = true
		case "max-age":
			if n, err := strconv.Atoi(val); err == nil {
				maxAge = n
			}
		case "s-maxage":
			if n, err := strconv.Atoi(val); err == nil {
				sMaxAge = n
			}
		}
	}
	age := 0
	if a, err := strconv.Atoi(h.Get("Age")); err == nil && a > 0 {
		age = a
	}
	switch {
	case sMaxAge >= 0:
		expires = now.Add(time.Duration(sMaxAge-age) * time.Second)
	case maxAge >= 0:
		expires = now.Add(time.Duration(maxAge-age) * time.Second)
	case h.Get("Expires") != "":
		if t, err := http.ParseTime(h.Get("Expires")); err == nil {
			date := now
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				date = d
			}
			expires = now.Add(t.Sub(date))
		}
	}
	return expires, revalidate, true
}

// PutDerived stores body, derived from upstream answers (a rewritten
// document), under key in the same bounded space as the answers: kept
// while it fits, dropped least recently used first. It reports whether
// the body was kept (never one larger than a quarter of the bound).
func (c *Cache) PutDerived(key, contentType string, body []byte) bool {
	if c.maxBytes <= 0 || int64(len(body)) > c.maxBytes/4 {
		return false
	}
	k := c.keyOf(key, "\x00derived")
	e := &entry{URL: key, Accept: "\x00derived", Header: http.Header{"Content-Type": {contentType}}, Stored: time.Now(), key: k}
	if err := os.MkdirAll(filepath.Dir(c.bodyPath(k)), 0o700); err != nil {
		return false
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.bodyPath(k)), k+"-*.tmp")
	if err != nil {
		return false
	}
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		_ = os.Remove(tmp.Name())
		return false
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return false
	}
	return c.commit(e, tmp.Name(), int64(len(body)))
}

// Derived is a body PutDerived stored, open for reading.
type Derived struct {
	*os.File
	Size        int64
	ContentType string
}

// OpenDerived opens what PutDerived stored under key.
func (c *Cache) OpenDerived(key string) (Derived, bool) {
	if c.maxBytes <= 0 {
		return Derived{}, false
	}
	k := c.keyOf(key, "\x00derived")
	e, ok := c.entries.Get(k)
	if !ok {
		return Derived{}, false
	}
	f, err := os.Open(c.bodyPath(k))
	if err != nil {
		c.drop(k)
		return Derived{}, false
	}
	return Derived{File: f, Size: e.Size, ContentType: e.Header.Get("Content-Type")}, true
}
