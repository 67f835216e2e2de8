// Package api is threatd's HTTPS JSON API on echo: the routes, the
// middleware chain of docs/api/README.md and the one error handler. Handlers are
// thin: decode, call a use case in core, encode.
package api

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/blocklist"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/feed"
	"github.com/threatd/threatd/core/firewall/proxy"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/misp"
	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/core/ratelimit"
	"github.com/threatd/threatd/core/scan"
	"github.com/threatd/threatd/core/taxii"
)

// Options are the API's settings, taken from the configuration.
type Options struct {
	BasePath          string
	MaxBodyBytes      int64
	TrustedProxies    []netip.Prefix
	PerIPPerMinute    int
	PerTokenPerMinute map[core.Tier]int
	Limits            core.Limits
	BatchMax          int
	// ScanMaxBytes bounds the file POST /scan reads (scan.max_bytes).
	ScanMaxBytes int64
	Feed         feed.Limits
	LatestCount  int
	// Limiter counts per-IP and per-token requests; nil = in memory, per
	// daemon (limits.store: memory).
	Limiter ratelimit.Taker
	// ExportRoutes are the endpoints served by exporter plugins.
	ExportRoutes []ExportRoute
	// StorageName names the storage plugin, for /healthz.
	StorageName string
	Version     string
	// AccessLog configures the per-request log line (log.access, log.access_sample).
	AccessLog AccessLog
	// Metrics counts requests by route and status (nil: not counted).
	Metrics *Metrics
	// TokenUse records when tokens were last used (nil: not recorded).
	TokenUse *core.TokenUse
	// Latest is the cache of latest selections, shared with the web site
	// (nil: the API makes its own).
	Latest *index.Latest
	// Seen counts the daemon's own sightings (scan findings; nil: none).
	Seen *community.Seen
	// Community is the daemon's copy of the community signals, added to
	// every record (nil: none, the base confidence).
	Community *community.View
	// Blocklists serves the block lists (docs/blocklists.md); nil: 503.
	Blocklists *blocklist.Service
	// Suggestions keeps the campaign suggestions, shared with the web
	// site (nil: the API keeps its own).
	Suggestions *community.Suggestions
	// Sightings adds people's sightings (POST /sightings); the daemon
	// starts it (nil: 503).
	Sightings *community.Sightings
	// Firewall configures the registry firewall (nil: not served).
	Firewall *proxy.Options
	// Analysis queues versions for package analysis (nil: off).
	Analysis AnalysisQueue
	// MISP serves the MISP feed under {base}/misp/ (nil: not served).
	MISP *misp.Service
	// Mount adds routes outside the base path (the web site, core/web) to
	// the API's echo instance, after the API's own: one listener, one TLS
	// configuration, the same per-IP limit.
	Mount func(e *echo.Echo)
	// NotFoundPage, when set, answers a request for an unknown path outside
	// the API (and outside /taxii2/) from a browser (Accept: text/html):
	// the web site's HTML 404. Everyone else gets the JSON 404.
	NotFoundPage func(c *echo.Context) error
}

// Server holds what the handlers need.
type Server struct {
	opts         Options
	log          *slog.Logger
	accounts     *core.Accounts
	reports      *core.Reports
	paid         *feed.Service
	selections   *core.Selections
	exporters    core.Exporters
	usage        *feed.Usage
	index        *index.Index
	principals   *index.Principals
	store        port.Store
	ipLimiter    ratelimit.Taker
	tokenLimiter ratelimit.Taker
	// suggestions are the last campaign suggestions.
	suggestions *community.Suggestions
	started     time.Time
	latest      *index.Latest
	taxii       *taxii.Service
}

// New builds the HTTP handler of the API. idx and principals are the hot
// read path, kept current by an index.Follower the caller runs.
func New(opts Options, log *slog.Logger, store port.Store, idx *index.Index, principals *index.Principals, usage *feed.Usage, exporters core.Exporters) http.Handler {
	s := &Server{
		opts:         opts,
		log:          log,
		accounts:     core.NewAccounts(store),
		reports:      core.NewReports(store, opts.Limits),
		paid:         feed.New(store, opts.Feed),
		selections:   core.NewSelections(store),
		taxii:        taxii.New(store, exporters, "threatd"),
		usage:        usage,
		exporters:    exporters,
		index:        idx,
		principals:   principals,
		store:        store,
		ipLimiter:    ratelimit.New(time.Minute),
		tokenLimiter: ratelimit.New(time.Minute),
		started:      time.Now(),
	}
	if s.opts.ScanMaxBytes <= 0 {
		s.opts.ScanMaxBytes = scan.DefaultMaxBytes
	}
	s.taxii.Community = opts.Community
	s.suggestions = opts.Suggestions
	if s.suggestions == nil {
		s.suggestions = &community.Suggestions{}
	}
	s.latest = opts.Latest
	if s.latest == nil {
		s.latest = index.NewLatest(idx, store)
	}
	if opts.Limiter != nil {
		s.ipLimiter, s.tokenLimiter = ratelimit.Prefixed(opts.Limiter, "ip:"), ratelimit.Prefixed(opts.Limiter, "token:")
	}
	return s.echo()
}

// notFoundPage is Options.NotFoundPage for the requests it is for: an
// unknown path (no route matched) outside the API, asked by a browser.
func (s *Server) notFoundPage(c *echo.Context) bool {
	if s.opts.NotFoundPage == nil || c.Request().Method != http.MethodGet {
		return false
	}
	if c.RouteInfo().Name != echo.NotFoundRouteName {
		return false // a route that answered 404 itself
	}
	path := c.Request().URL.Path
	base := s.opts.BasePath
	if path == base || strings.HasPrefix(path, base+"/") || path == taxiiPrefix || strings.HasPrefix(path, taxiiPrefix+"/") {
		return false
	}
	if !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/html") {
		return false
	}
	return s.opts.NotFoundPage(c) == nil
}

func (s *Server) echo() *echo.Echo {
	e := echo.NewWithConfig(echo.Config{
		Logger:           s.log,
		HTTPErrorHandler: errorHandler(s.log, s.opts.MaxBodyBytes, s.notFoundPage, s.firewallPath),
		IPExtractor:      ipExtractor(s.opts.TrustedProxies),
		// Unknown paths answer 404 after the per-IP limit, not via groups.
		NoGroupAutoRegister404Routes: true,
	})
	e.Pre(
		middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: requestIDs()}),
		requestLog(s.log, s.opts.AccessLog, s.opts.Metrics),
		middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true}),
		// nosniff on every response: a JSON error that quotes input must
		// never be sniffed as HTML.
		middleware.SecureWithConfig(middleware.SecureConfig{ContentTypeNosniff: "nosniff"}),
		headerLimit,
	)
	e.Use(methodGate, s.perIPLimit)
	s.routes(e)
	return e
}

// ipExtractor believes X-Forwarded-For only from the configured proxies.
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
