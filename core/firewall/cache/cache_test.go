package cache

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCache(t *testing.T) {
	var hits, notModified atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/fresh":
			w.Header().Set("Cache-Control", "public, max-age=60")
		case "/etag":
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("ETag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				notModified.Add(1)
				w.WriteHeader(http.StatusNotModified)
				return
			}
		case "/nostore":
			w.Header().Set("Cache-Control", "no-store")
		case "/missing":
			http.NotFound(w, r)
			return
		default:
			w.Header().Set("Cache-Control", "max-age=60")
		}
		fmt.Fprintf(w, "body of %s %s", r.URL.Path, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	dir := t.TempDir()
	c, err := Open(dir, 8000, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := func(p string) (*Response, string) {
		t.Helper()
		r, err := c.Get(ctx, srv.URL+p, "")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		_ = r.Body.Close()
		return r, string(b)
	}
	r1, b1 := get("/fresh")
	r2, b2 := get("/fresh")
	if hits.Load() != 1 || r1.Hit || !r2.Hit || b1 != b2 || r1.Version != r2.Version {
		t.Fatalf("a fresh response is served from the cache: %d upstream requests, hit %v/%v", hits.Load(), r1.Hit, r2.Hit)
	}
	get("/etag")
	r, b := get("/etag")
	if notModified.Load() != 1 || !r.Hit || !strings.HasPrefix(b, "body of /etag") {
		t.Fatalf("no-cache with an ETag is revalidated: %d 304s, hit %v", notModified.Load(), r.Hit)
	}
	before := hits.Load()
	get("/nostore")
	get("/nostore")
	if hits.Load() != before+2 {
		t.Fatal("no-store is never kept")
	}
	if r, _ := get("/missing"); r.Status != 404 || r.Hit {
		t.Fatalf("a 404 passes through: %d", r.Status)
	}
	// Past the bound the least recently used go.
	for i := range 20 {
		get(fmt.Sprintf("/file%d", i))
	}
	if u := c.Used(); u > 8000 || u == 0 {
		t.Fatalf("cache holds %d bytes, bound 8000", u)
	}
	// A body read partly is not stored.
	res, _ := c.Get(ctx, srv.URL+"/partial", "")
	_, _ = io.ReadFull(res.Body, make([]byte, 10))
	_ = res.Body.Close()
	if r, _ := get("/partial"); r.Hit {
		t.Fatal("a body read in part was stored")
	}
	// What is stored survives a restart.
	used := c.Used()
	c2, err := Open(dir, 8000, srv.Client())
	if err != nil || c2.Used() != used {
		t.Fatalf("reopened: %d bytes, want %d (%v)", c2.Used(), used, err)
	}
	// An upstream that does not answer.
	srv.Close()
	if _, err := c2.Get(ctx, srv.URL+"/never", ""); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("unreachable: %v", err)
	}
}
