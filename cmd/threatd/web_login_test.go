package main_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
)

// sessionOf returns the browser's session cookie ("" when it has none).
func sessionOf(t *testing.T, b *browser) string {
	for _, c := range b.client.Jar.Cookies(mustURL(t, b.d.base)) {
		if c.Name == "__Host-threatd_session" {
			return c.Value
		}
	}
	return ""
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestWebLoginThrottleHoldsUnderConcurrency: 60 concurrent wrong passwords
// for one account (limit 10) get 10 checks and 50 refusals: each attempt is
// reserved before the password is hashed (all 60 were hashed, because a
// failure was counted only after its hash). A successful log-in does not
// use up an attempt.
func TestWebLoginThrottleHoldsUnderConcurrency(t *testing.T) {
	in := newInstance(t, "web:\n  login_attempts: 10\n  login_attempts_per_ip: 100\n")
	in.user("carl@example.com")
	in.mustCLIStdin("carl's long password\n", "user", "set-password", "--email", "carl@example.com")
	d := in.serve()
	apitest.ClearOfWindowEdge(t, 15*time.Minute, time.Minute)

	// A success first: it gives its attempt back.
	ok := in.browser(d)
	ok.get("/login")
	ok.post("/login", url.Values{"email": {"carl@example.com"}, "password": {"carl's long password"}}).expect(t, 200, "My submissions")

	const n = 60
	reqs := make([]*http.Request, n)
	clients := make([]*http.Client, n)
	for i := range n {
		b := in.browser(d)
		b.get("/login")
		form := url.Values{"email": {"carl@example.com"}, "password": {fmt.Sprintf("wrong password %d", i)},
			"csrf_token": {csrfInput.FindStringSubmatch(b.last)[1]}}
		req, _ := http.NewRequest("POST", d.base+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		reqs[i], clients[i] = req, b.client
	}
	codes := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := clients[i].Do(reqs[i])
			if err != nil {
				codes[i] = -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[401] != 10 || count[429] != n-10 {
		t.Fatalf("60 concurrent wrong passwords (limit 10): %v, want 10 × 401 and 50 × 429", count)
	}
	late := in.browser(d)
	late.get("/login")
	late.post("/login", url.Values{"email": {"carl@example.com"}, "password": {"carl's long password"}}).expect(t, 429, "Too many log-in attempts")
}

// TestWebLoginRedirectStaysOnSite: the page a log-in goes to next is a path
// of this site as a browser reads it. Location "/\t/evil.example/" is
// https://evil.example/ to a browser (the URL parser drops tabs and
// newlines, and reads "\" as "/").
func TestWebLoginRedirectStaysOnSite(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet)
	in.user("dora@example.com")
	in.mustCLIStdin("dora's long password\n", "user", "set-password", "--email", "dora@example.com")
	d := in.serve()
	for next, want := range map[string]string{
		"/\t/evil.example/":     "/me/submissions",
		"/\n/evil.example/":     "/me/submissions",
		"\t//evil.example/":     "/me/submissions",
		"/\\evil.example/":      "/me/submissions",
		"//evil.example/":       "/me/submissions",
		"https://evil.example/": "/me/submissions",
		"/\r\n/evil.example":    "/me/submissions",
		"/%09/evil.example/":    "/%09/evil.example/", // a path on this site, as sent
		"/review?after=1":       "/review?after=1",
		"/threats/x#frag":       "/threats/x#frag",
		"/settings/tokens":      "/settings/tokens",
		"/\x01evil":             "/me/submissions",
		"javascript:alert(1)":   "/me/submissions",
	} {
		b := in.browser(d)
		b.get("/login?next=" + url.QueryEscape(next))
		resp := b.postUnfollowed("/login", url.Values{"email": {"dora@example.com"}, "password": {"dora's long password"}, "next": {next}})
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || loc != want {
			t.Errorf("next %q: %d Location %q, want %q", next, resp.StatusCode, loc, want)
		}
		// As a browser resolves it: on this site.
		if u, err := mustURL(t, d.base).Parse(loc); err != nil || u.Host != mustURL(t, d.base).Host {
			t.Errorf("next %q: Location %q resolves to %v", next, loc, u)
		}
	}
}
