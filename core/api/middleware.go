package api

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/threatd/threatd/core"
)

// The middleware chain runs in the order of docs/api/README.md ("The order of checks"):
//
//	Pre  (before routing): request id, request log, panic recovery
//	Use  (after routing):  1 wrong method 405, 2 per-IP limit 429, unknown path 404
//	base-path group:       3 authentication 401, 4 per-token limit 429
//	per route:             5 tier 403, 6 body 413 (then handlers: 400s, 7 submit rules)
//
// echo runs Pre middleware before the router and Use middleware after it, so
// the 405 check can see which route (if any) matched before anything else runs.

const principalKey = "threatd.principal"

// principal returns the authenticated caller (set by authenticate).
func principal(c *echo.Context) core.Principal {
	if p, _ := c.Get(principalKey).(*core.Principal); p != nil {
		return *p
	}
	return core.Principal{}
}

// requestIDs gives each request an id of 32 hex digits: 16 drawn at
// start, then a counter. Unique per daemon, as echo's 32 random
// characters are, for a tenth of their cost (they were 2 % of the
// daemon's CPU under checks: docs/performance.md). An id only ties a
// response to its log line; a client may send its own (X-Request-Id).
func requestIDs() func() string {
	var prefix [8]byte
	_, _ = rand.Read(prefix[:])
	var n atomic.Uint64
	return func() string {
		var b [32]byte
		hex.Encode(b[:16], prefix[:])
		var c [8]byte
		binary.BigEndian.PutUint64(c[:], n.Add(1))
		hex.Encode(b[16:], c[:])
		return string(b[:])
	}
}

// methodGate answers 405 before anything else when the path exists under
// another method (OPTIONS and HEAD included).
func methodGate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if c.RouteInfo().Name == echo.MethodNotAllowedRouteName {
			if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
				c.Response().Header().Set(echo.HeaderAllow, strings.ReplaceAll(allow, "OPTIONS, ", ""))
			}
			return &Error{Status: http.StatusMethodNotAllowed, Message: msgMethodNotAllowed}
		}
		return next(c)
	}
}

// perIPLimit limits every request by client IP, before authentication:
// the firewall's by its own budget.
func (s *Server) perIPLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return s.ipLimit(s.firewallPath, next)
}

// ipLimit is the per-IP limit; firewall says which paths take the
// firewall's budget (firewall.per_ip_per_minute).
func (s *Server) ipLimit(firewall func(path string) bool, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		key, limit := c.RealIP(), s.opts.PerIPPerMinute
		if firewall(c.Request().URL.Path) {
			key, limit = "firewall:"+key, s.opts.Firewall.PerIPPerMinute
		}
		r := s.ipLimiter.Take(key, limit, 1)
		if !r.Allowed {
			return tooManyRequests("Rate limit exceeded for your IP address: try again later", r.ResetSeconds())
		}
		return next(c)
	}
}

// authenticate resolves the bearer token (header only, never the query string).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return s.authenticateWith(false)(next)
}

// authenticateWith resolves the token of the Authorization header: Bearer,
// or also HTTP Basic with the token as the password when basic is set (the
// TAXII server: many TIPs only do Basic).
func (s *Server) authenticateWith(basic bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			return s.authenticated(c, basic, next)
		}
	}
}

func (s *Server) authenticated(c *echo.Context, basic bool, next echo.HandlerFunc) error {
	// Answers under the base path are per caller: no cache keeps them.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if strings.TrimSpace(h) == "" {
		return &Error{Status: http.StatusUnauthorized, Message: msgAuthRequired}
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	switch {
	case ok && strings.EqualFold(scheme, "Bearer"):
	case ok && basic && strings.EqualFold(scheme, "Basic"):
		if token, ok = basicToken(token); !ok {
			return &Error{Status: http.StatusUnauthorized, Message: msgInvalidToken}
		}
	case !ok && basic:
		// The token alone, as cargo sends a registry's token
		// (credentials.toml) to a registry that says auth-required.
		token = scheme
	default:
		return &Error{Status: http.StatusUnauthorized, Message: msgInvalidToken}
	}
	p, err := s.principals.AuthenticateShared(c.Request().Context(), strings.TrimSpace(token))
	if err != nil {
		return err
	}
	c.Set(principalKey, p) // the cache's own: never changed
	if s.opts.TokenUse != nil {
		s.opts.TokenUse.Used(p.Token.ID)
	}
	return next(c)
}

// perTokenLimit enforces the per-token per-minute limit of the caller's tier
// and sets the RateLimit-* headers on every response to a recognised token.
func (s *Server) perTokenLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := s.chargeToken(c, 1, ""); err != nil {
			return err
		}
		return next(c)
	}
}

// chargeToken counts cost requests against the caller's per-token limit and
// sets the RateLimit-* headers (a batch charges again for every further 100
// queries, with hint explaining it in the 429).
func (s *Server) chargeToken(c *echo.Context, cost int, hint string) error {
	p := principal(c)
	limit := s.opts.PerTokenPerMinute[p.User.Tier]
	return s.charge(c, p.Token.ID, limit, cost, func() string { return fmt.Sprintf("the limit is %d requests per minute%s", limit, hint) })
}

// charge counts cost requests against the budget key of limit per minute
// (0 = none), sets the RateLimit-* headers, and refuses with a 429 saying
// what the limit is past it (what is only written then: every request of
// the hot path passes here).
func (s *Server) charge(c *echo.Context, key string, limit, cost int, what func() string) error {
	r := s.tokenLimiter.Take(key, limit, cost)
	if limit > 0 {
		setRateLimitHeaders(c, r.Limit, r.Remaining, r.ResetSeconds())
	}
	if !r.Allowed {
		return tooManyRequests("Rate limit exceeded for this API token: "+what()+"; try again later", r.ResetSeconds())
	}
	return nil
}

// setRateLimitHeaders describes the caller's per-token budget.
func setRateLimitHeaders(c *echo.Context, limit, remaining, reset int) {
	h := c.Response().Header()
	h.Set("RateLimit-Limit", strconv.Itoa(limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(reset))
}

// requireTier refuses callers below the route's tier with 403.
func requireTier(t core.Tier) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if t == core.TierPaid && principal(c).User.Tier != core.TierPaid {
				return &Error{Status: http.StatusForbidden, Message: "This endpoint requires a paid subscription"}
			}
			return next(c)
		}
	}
}

// isAsset says whether path is a static asset of the web site.
func isAsset(path string) bool {
	return strings.HasPrefix(path, "/static/") || path == "/favicon.ico" || path == "/robots.txt"
}

// AccessLog configures the per-request log line.
type AccessLog struct {
	Off   bool
	Level slog.Level
	// Sample logs one of every Sample requests with status < 400 (0 or 1:
	// every request); failed requests are always logged.
	Sample int
}

// requestLog counts every request in metrics (when not nil) and logs one
// structured line per request: never the query string
// or headers, so that no token or secret reaches the log. At tens of
// thousands of checks a second the log would cost more than the checks:
// cfg can lower its level, sample successful requests, or turn it off.
func requestLog(log *slog.Logger, cfg AccessLog, metrics *Metrics) echo.MiddlewareFunc {
	var n atomic.Uint64
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:  true,
		LogLatency:   true,
		LogRoutePath: metrics != nil,
		LogMethod:    true,
		LogURIPath:   true,
		LogStatus:    true,
		LogRemoteIP:  true,
		LogRequestID: true,
		LogValuesFunc: func(c *echo.Context, v middleware.RequestLoggerValues) error {
			metrics.observe(v.Method, v.RoutePath, v.Status, v.Latency)
			lvl := cfg.Level
			switch {
			case v.Status >= 500:
				lvl = slog.LevelError
			case cfg.Off:
				return nil
			case v.Status < 400 && isAsset(v.URIPath):
				// The web site's stylesheet, scripts and icons: one page
				// view fetches several, and they say nothing an operator
				// needs (failures are still logged).
				return nil
			case v.Status < 400 && cfg.Sample > 1 && n.Add(1)%uint64(cfg.Sample) != 0:
				return nil
			}
			if !log.Enabled(context.Background(), lvl) {
				return nil
			}
			log.LogAttrs(context.Background(), lvl, "request",
				slog.String("method", v.Method),
				slog.String("path", v.URIPath),
				slog.Int("status", v.Status),
				slog.Float64("latency_ms", float64(v.Latency.Microseconds())/1000),
				slog.String("remote_ip", v.RemoteIP),
				slog.String("request_id", v.RequestID),
			)
			return nil
		},
	})
}
