// Package web is threatd's community web site (docs/web.md): sign-up and
// log-in, My submissions, Settings → API Tokens, the submit form, the review
// queue and the public threat pages. It is served by the same echo instance
// as the API (core/api mounts it), server-rendered with html/template, its
// templates and assets embedded. Handlers are thin, as in core/api: they read
// a form, call the use cases of core and render a page; the rules (limits,
// validation, the review state machine) are core's, so the site and the API
// cannot disagree.
package web

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/core/ratelimit"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Signup modes (web.signup).
const (
	SignupOpen   = "open"
	SignupClosed = "closed"
)

// Cookie names: the __Host- prefix makes the browser refuse them unless
// they are Secure, for path / and without a Domain (no sub-domain can set
// or read them).
const (
	sessionCookie = "__Host-threatd_session"
	csrfCookie    = "__Host-threatd_csrf"
	flashCookie   = "__Host-threatd_flash"
	csrfField     = "csrf_token"
)

// Options are the site's settings (configuration keys web.*).
type Options struct {
	// Suggestions keeps the campaign suggestions, shared with the API
	// (nil: the site keeps its own).
	Suggestions *community.Suggestions
	// Community says what the community says of reports (nil: nothing).
	Community core.Communities
	// Signup is SignupOpen (anyone may create an account) or SignupClosed
	// (accounts come from the CLI; threatd user set-password gives a
	// password).
	Signup string
	// SessionTTL is how long a log-in lasts.
	SessionTTL time.Duration
	// LoginAttempts bounds log-in attempts per account and LoginAttemptsIP
	// per client IP, in every LoginWindow.
	LoginAttempts   int
	LoginAttemptsIP int
	LoginWindow     time.Duration
	// BasePath is the API's base path, shown in the token page's example.
	BasePath string
	// LatestCount is how many latest verified threats the home page lists.
	LatestCount int
	// MaxBodyBytes bounds a form's body (server.max_body_bytes).
	MaxBodyBytes int64
	// FirewallBlocks are the registry firewall's latest refusals, listed
	// for administrators at /admin/firewall (nil: the firewall is off).
	FirewallBlocks *firewall.Recent
	// FirewallWaivers are the waivers in force (refreshed after a change
	// made on the page).
	FirewallWaivers *firewall.WaiverCache
	// WebhooksAllowPrivate is webhooks.allow_private, for subscriptions
	// added at /admin/webhooks.
	WebhooksAllowPrivate bool
}

// Site holds what the pages need.
type Site struct {
	opts Options
	// The public pages' reads, kept a while (pageCache): a leaderboard's
	// rows by period, profiles by public name (a source user's counts
	// sum a million reports), campaigns by id.
	boards   *pageCache[[]community.LeaderboardEntry]
	profiles *pageCache[[]community.Profile]
	camps    *pageCache[community.Campaign]
	// suggestions are the campaign suggestions (Options.Suggestions, or
	// the site's own).
	suggestions *community.Suggestions
	log         *slog.Logger
	store       port.Store
	accounts    *core.Accounts
	reports     *core.Reports
	index       *index.Index
	latest      *index.Latest
	// sync makes a change this daemon committed visible to its own index
	// and principal cache at once (index.Follower.Sync).
	sync     func(context.Context) error
	pages    map[string]*template.Template
	logins   ratelimit.Taker
	hashing  chan struct{} // bounds concurrent argon2id hashes (memory)
	csrfKey  []byte
	cop      *http.CrossOriginProtection
	markdown func(string) template.HTML
	counts   counts
}

// New builds the site. sync may be nil (changes then show within
// cache.freshness, like any other process's).
func New(ctx context.Context, opts Options, log *slog.Logger, store port.Store, reports *core.Reports, idx *index.Index, latest *index.Latest, sync func(context.Context) error) (*Site, error) {
	if opts.Signup == "" {
		opts.Signup = SignupOpen
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 7 * 24 * time.Hour
	}
	if opts.LoginWindow <= 0 {
		opts.LoginWindow = 15 * time.Minute
	}
	if opts.LoginAttempts <= 0 {
		opts.LoginAttempts = 10
	}
	if opts.LoginAttemptsIP <= 0 {
		opts.LoginAttemptsIP = 50
	}
	if opts.LatestCount <= 0 {
		opts.LatestCount = 20
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 256 << 10
	}
	if sync == nil {
		sync = func(context.Context) error { return nil }
	}
	// The CSRF key is shared by every daemon on the database, so a form
	// rendered by one daemon is accepted by another behind a load balancer.
	secret, err := store.Secret(ctx, "web-csrf")
	if err != nil {
		return nil, fmt.Errorf("web: the CSRF key: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Site{
		opts: opts, log: log, store: store,
		accounts: core.NewAccounts(store), reports: reports, index: idx, latest: latest, sync: sync,
		pages:       pages,
		logins:      ratelimit.New(opts.LoginWindow),
		hashing:     make(chan struct{}, 4),
		csrfKey:     []byte(secret),
		cop:         http.NewCrossOriginProtection(),
		markdown:    renderMarkdown,
		suggestions: cmp.Or(opts.Suggestions, &community.Suggestions{}),
		boards:      newPageCache[[]community.LeaderboardEntry](leaderboardTTL),
		profiles:    newPageCache[[]community.Profile](leaderboardTTL),
		camps:       newPageCache[community.Campaign](campaignTTL),
	}, nil
}

// Mount adds the site's routes to e (outside the API's base path).
func (s *Site) Mount(e *echo.Echo) {
	// Assets need no session: they are served before its storage read.
	static, _ := fs.Sub(staticFS, "static")
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServerFS(static))), s.headers)
	// Every form body is bounded like the API's (server.max_body_bytes).
	g := e.Group("", s.headers, s.session, middleware.BodyLimit(s.opts.MaxBodyBytes))
	g.GET("/", s.wrap(s.home))
	g.GET("/signup", s.wrap(s.signupForm))
	g.POST("/signup", s.wrap(s.signup), s.csrf)
	g.GET("/login", s.wrap(s.loginForm))
	g.POST("/login", s.wrap(s.login), s.csrf)
	g.POST("/logout", s.wrap(s.logout), s.csrf)
	g.GET("/threats", s.wrap(s.browse))
	g.GET("/threats/:id", s.wrap(s.threat))
	g.GET("/users/:name", s.wrap(s.profile))
	g.GET("/leaderboard", s.wrap(s.leaderboard))
	g.GET("/campaigns/:id", s.wrap(s.campaignPage))
	g.GET("/me/submissions", s.wrap(s.submissions), s.loggedIn)
	g.GET("/settings", func(c *echo.Context) error { return c.Redirect(http.StatusSeeOther, "/settings/account") }, s.loggedIn)
	g.GET("/settings/account", s.wrap(s.account), s.loggedIn)
	g.POST("/settings/account/name", s.wrap(s.rename), s.loggedIn, s.csrf)
	g.POST("/settings/account/password", s.wrap(s.changePassword), s.loggedIn, s.csrf)
	g.POST("/settings/account/sessions", s.wrap(s.endSessions), s.loggedIn, s.csrf)
	g.POST("/settings/account/delete", s.wrap(s.deleteAccount), s.loggedIn, s.csrf)
	g.GET("/settings/tokens", s.wrap(s.tokens), s.loggedIn)
	g.POST("/settings/tokens", s.wrap(s.generateToken), s.loggedIn, s.csrf)
	g.POST("/settings/tokens/:id/revoke", s.wrap(s.revokeToken), s.loggedIn, s.csrf)
	g.GET("/submit", s.wrap(s.submitForm), s.loggedIn)
	g.POST("/submit", s.wrap(s.submit), s.loggedIn, s.csrf)
	g.GET("/review", s.wrap(s.queue), s.reviewer)
	g.GET("/review/campaigns", s.wrap(s.reviewCampaigns), s.reviewer)
	g.POST("/review/campaigns", s.wrap(s.createCampaign), s.reviewer, s.csrf)
	g.POST("/review/campaigns/suggestions", s.wrap(s.findSuggestions), s.reviewer, s.csrf)
	g.POST("/review/campaigns/:id", s.wrap(s.changeCampaign), s.reviewer, s.csrf)
	g.GET("/admin/users", s.wrap(s.users), s.admin)
	g.POST("/admin/users/:action", s.wrap(s.setDisabled), s.admin, s.csrf)
	g.GET("/admin/firewall", s.wrap(s.firewallPage), s.admin)
	g.GET("/admin/exposure", s.wrap(s.exposurePage), s.admin)
	g.POST("/admin/firewall/waivers", s.wrap(s.addWaiver), s.admin, s.csrf)
	g.POST("/admin/firewall/waivers/:id/remove", s.wrap(s.removeWaiver), s.admin, s.csrf)
	g.GET("/admin/webhooks", s.wrap(s.webhooks), s.admin)
	g.POST("/admin/webhooks", s.wrap(s.addWebhook), s.admin, s.csrf)
	g.POST("/admin/webhooks/:id/remove", s.wrap(s.removeWebhook), s.admin, s.csrf)
	g.POST("/admin/webhooks/:id/enable", s.wrap(s.enableWebhook), s.admin, s.csrf)
	g.POST("/review/threats/:id", s.wrap(s.decide), s.reviewer, s.csrf)
	g.POST("/review/revisions/:id", s.wrap(s.decideRevision), s.reviewer, s.csrf)
}

// NotFoundPage is the HTML 404 a browser gets for an unknown address
// outside the API (core/api calls it from its error handler, which decides
// when: routing, and so 405 and the API's JSON 404, stay the API's).
func (s *Site) NotFoundPage(c *echo.Context) error {
	return s.headers(s.session(func(c *echo.Context) error {
		return s.errorPage(c, http.StatusNotFound, "There is no page at this address. Search the threat database from the home page, or browse the verified threats.")
	}))(c)
}

// headers sets the security headers of every page: a Content-Security-Policy
// without inline script or style, no framing, no referrer across origins.
func (s *Site) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if c.Request().TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// wrap renders an error a handler returns as an HTML page (the API's error
// handler answers JSON).
func (s *Site) wrap(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := h(c); err != nil {
			return s.fail(c, err)
		}
		return nil
	}
}

// fail renders an unexpected error; its details go to the log only.
func (s *Site) fail(c *echo.Context, err error) error {
	var nf *core.NotFoundError
	if errors.As(err, &nf) {
		return s.errorPage(c, http.StatusNotFound, "Not found.")
	}
	s.log.Error("web: request failed", "path", c.Request().URL.Path, "error", err.Error())
	return s.errorPage(c, http.StatusServiceUnavailable, "Something went wrong on our side (the storage may be restarting). Try again in a moment.")
}

func (s *Site) errorPage(c *echo.Context, status int, msg string) error {
	return s.render(c, status, "error", map[string]any{"Title": http.StatusText(status), "Message": msg})
}

// render executes a page with the common data: the viewer, the CSRF token.
func (s *Site) render(c *echo.Context, status int, page string, data map[string]any) error {
	t, ok := s.pages[page]
	if !ok {
		return fmt.Errorf("web: no page %q", page)
	}
	if data == nil {
		data = map[string]any{}
	}
	v := viewerOf(c)
	data["Viewer"] = v
	data["CSRF"] = s.csrfToken(c)
	data["Signup"] = s.opts.Signup == SignupOpen
	if f, ok := s.takeFlash(c); ok {
		data["Flash"] = f
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", data); err != nil {
		s.log.Error("web: rendering failed", "page", page, "error", err.Error())
		return c.String(http.StatusInternalServerError, "rendering failed")
	}
	h := c.Response().Header()
	if v.LoggedIn {
		h.Set(echo.HeaderCacheControl, "no-store")
	}
	return c.HTMLBlob(status, []byte(b.String()))
}
