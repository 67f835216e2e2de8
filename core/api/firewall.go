package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/oci"
	"github.com/threatd/threatd/core/firewall/proxy"
)

// firewallRoutes mounts the registry firewall (core/firewall/proxy)
// under {base}/firewall, within the API's authentication, the firewall's
// token budget and the index's fail-closed start; and builds the image
// registry's own server when it is on.
func (s *Server) firewallRoutes(e *echo.Echo) {
	p := proxy.New(*s.opts.Firewall, proxy.Host{
		BasePath: s.opts.BasePath,
		Log:      s.log,
		Who:      func(c *echo.Context) string { return principal(c).User.Email },
		Token:    func(c *echo.Context) string { return principal(c).Token.ID },
		Record:   func(c *echo.Context, t core.Threat) any { return s.toRecord(t, principal(c)) },
		Charge:   s.chargeFirewall,
		Blocked:  s.opts.Metrics.firewallBlocked,
		Rendered: s.opts.Metrics.firewallRendered,
		Index:    s.index,
		Pins:     s.store,
	})
	p.Mount(e.Group(s.opts.BasePath+"/firewall", s.authenticateWith(true), s.firewallTokenLimit, s.requireIndex))
	if s.opts.Firewall.OCI != nil {
		s.opts.Firewall.OCI.Handler = s.ociEcho(p)
	}
}

// firewallPath says whether a request is for the firewall (its own per-IP budget).
func (s *Server) firewallPath(path string) bool {
	return s.opts.Firewall != nil && strings.HasPrefix(path, s.opts.BasePath+"/firewall/")
}

// firewallTokenLimit is the per-token limit of firewall requests
// (firewall.per_token_per_minute), with the RateLimit-* headers.
func (s *Server) firewallTokenLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if err := s.chargeFirewall(c, 1, ""); err != nil {
			return err
		}
		return next(c)
	}
}

// chargeFirewall counts cost requests against the token's firewall budget.
func (s *Server) chargeFirewall(c *echo.Context, cost int, hint string) error {
	limit := s.opts.Firewall.PerTokenPerMinute
	return s.charge(c, "firewall:"+principal(c).Token.ID, limit, cost, func() string {
		return fmt.Sprintf("the firewall allows %d requests per minute%s", limit, hint)
	})
}

// ociEcho is the OCI registry's own server: /v2/ with the firewall's
// authentication (Basic with the token as the password, as docker login
// and skopeo --creds send it), budgets and fail-closed start.
func (s *Server) ociEcho(p *proxy.Proxy) *echo.Echo {
	e := echo.NewWithConfig(echo.Config{
		Logger:                       s.log,
		HTTPErrorHandler:             ociErrorHandler(s.log),
		IPExtractor:                  ipExtractor(s.opts.TrustedProxies),
		NoGroupAutoRegister404Routes: true,
	})
	e.Pre(
		middleware.RequestID(),
		requestLog(s.log, s.opts.AccessLog, s.opts.Metrics),
		middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true}),
		headerLimit,
	)
	e.Use(proxy.Headers, proxy.OCIHeaders, s.ociIPLimit)
	p.MountOCI(e, e.Group("/v2", s.authenticateWith(true), s.firewallTokenLimit, s.requireIndex))
	return e
}

// ociIPLimit is the per-IP limit of the firewall (firewall.per_ip_per_minute):
// every path of the image registry is the firewall's.
func (s *Server) ociIPLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return s.ipLimit(func(string) bool { return true }, next)
}

// ociErrorHandler writes errors in the distribution spec's shape
// ({"errors": [{"code", "message", "detail"}]}); a 401 carries the Basic
// challenge docker and skopeo answer with credentials.
func ociErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(c *echo.Context, err error) {
		if r, _ := echo.UnwrapResponse(c.Response()); r != nil && r.Committed {
			return
		}
		var u *firewall.Unjudgeable
		if errors.As(err, &u) {
			err = &Error{Status: http.StatusBadRequest, Message: u.Error()}
		}
		e := toHTTPError(err, 0)
		if e.Status >= 500 {
			log.Error("request failed", "status", e.Status, "error", err.Error(), "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		}
		for k, v := range e.Headers {
			c.Response().Header().Set(k, v)
		}
		code := map[int]string{http.StatusUnauthorized: "UNAUTHORIZED", http.StatusForbidden: "DENIED", http.StatusNotFound: "NAME_UNKNOWN",
			http.StatusBadRequest: "NAME_INVALID", http.StatusTooManyRequests: "TOOMANYREQUESTS", http.StatusMethodNotAllowed: "UNSUPPORTED"}[e.Status]
		if code == "" {
			code = "UNAVAILABLE"
			if e.Status < 500 {
				code = "UNSUPPORTED"
			}
		}
		if e.Status == http.StatusUnauthorized {
			c.Response().Header().Set("WWW-Authenticate", `Basic realm="threatd"`)
		}
		var detail any
		if ids, ok := e.Fields["threat_ids"]; ok {
			detail = map[string]any{"threat_ids": ids, "rule": e.Fields["rule"]}
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(e.Status)
			return
		}
		_ = c.Blob(e.Status, "application/json", oci.ErrorBody(code, e.Message, detail))
	}
}
