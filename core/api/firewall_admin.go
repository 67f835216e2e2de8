package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// firewallAdminRoutes are the firewall's policy endpoints (docs/firewall.md):
// waivers (reviewer or admin), decisions (admin), held versions (reviewer
// or admin).
func (s *Server) firewallAdminRoutes() []route {
	return []route{
		{method: http.MethodPost, path: "/firewall/waivers", tier: core.TierFree, body: true, handler: requireRole(s.createWaiver, core.RoleReviewer, core.RoleAdmin)},
		{method: http.MethodGet, path: "/firewall/waivers", tier: core.TierFree, handler: requireRole(s.listWaivers, core.RoleReviewer, core.RoleAdmin)},
		{method: http.MethodDelete, path: "/firewall/waivers/:id", tier: core.TierFree, handler: requireRole(s.deleteWaiver, core.RoleReviewer, core.RoleAdmin)},
		{method: http.MethodGet, path: "/firewall/decisions", tier: core.TierFree, handler: requireRole(s.listDecisions, core.RoleAdmin)},
		{method: http.MethodGet, path: "/firewall/held", tier: core.TierFree, handler: requireRole(s.listHeld, core.RoleReviewer, core.RoleAdmin)},
	}
}

// requireRole refuses (403) a token whose user has none of roles.
func requireRole(next echo.HandlerFunc, roles ...core.Role) echo.HandlerFunc {
	return func(c *echo.Context) error {
		role := principal(c).User.Role
		for _, r := range roles {
			if role == r {
				return next(c)
			}
		}
		names := make([]string, len(roles))
		for i, r := range roles {
			names[i] = string(r)
		}
		return &Error{Status: http.StatusForbidden, Message: fmt.Sprintf("This endpoint needs a token of a user whose role is %s (yours is %s)", strings.Join(names, " or "), role)}
	}
}

func (s *Server) waivers() firewall.WaiverService {
	return firewall.WaiverService{Store: s.store, Cache: s.opts.Firewall.Waivers, ReviewerMax: s.opts.Firewall.ReviewerWaiverMax}
}

// createWaiver is POST /firewall/waivers.
func (s *Server) createWaiver(c *echo.Context) error {
	var in struct {
		Ecosystem string `json:"ecosystem"`
		Name      string `json:"name"`
		Version   string `json:"version"`
		Rule      string `json:"rule"`
		Reason    string `json:"reason"`
		For       string `json:"for"`
		Until     string `json:"until"`
	}
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	req := firewall.WaiverRequest{Ecosystem: in.Ecosystem, Name: in.Name, Version: in.Version, Rule: in.Rule, Reason: in.Reason, For: in.For}
	if in.Until != "" {
		t, err := time.Parse(time.RFC3339, in.Until)
		if err != nil {
			return core.Invalid("until", "must be an RFC 3339 time such as 2026-12-01T00:00:00Z (got %q)", in.Until)
		}
		req.Until = t
	}
	who := principal(c).User
	w, err := s.waivers().Waive(c.Request().Context(), req, who.Email, who.Role)
	if errors.Is(err, core.ErrLimit) {
		return &Error{Status: http.StatusConflict, Message: capitalise(err.Error())}
	}
	if err != nil {
		return err
	}
	s.log.Info("firewall waiver made", "waiver_id", w.ID, "by", w.CreatedBy, "ecosystem", w.Ecosystem, "package", w.Name, "version", w.Version, "rule", w.Rule, "until", w.Until)
	return c.JSON(http.StatusCreated, firewall.ShowWaiver(w))
}

// listWaivers is GET /firewall/waivers: the waivers in force.
func (s *Server) listWaivers(c *echo.Context) error {
	ws, err := s.waivers().InForce(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]firewall.WaiverJSON, len(ws))
	for i, w := range ws {
		out[i] = firewall.ShowWaiver(w)
	}
	return c.JSON(http.StatusOK, map[string]any{"waivers": out, "count": len(out)})
}

// deleteWaiver is DELETE /firewall/waivers/{id}.
func (s *Server) deleteWaiver(c *echo.Context) error {
	id := c.Param("id")
	err := s.waivers().Remove(c.Request().Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		return notFound("No waiver %s", id)
	}
	if err != nil {
		return err
	}
	s.log.Info("firewall waiver removed", "waiver_id", id, "by", principal(c).User.Email)
	return c.NoContent(http.StatusNoContent)
}

// pageLimit reads limit (default 100, at most max).
func pageLimit(raw string, max int) (int, error) { return pageLimitOr(raw, 100, max) }

// pageLimitOr reads limit (default def, at most max).
func pageLimitOr(raw string, def, max int) (int, error) {
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > max {
		return 0, core.Invalid("limit", "must be a whole number from 1 to %d (got %q)", max, raw)
	}
	return n, nil
}

// listDecisions is GET /firewall/decisions?since=&cursor=&limit=.
func (s *Server) listDecisions(c *echo.Context) error {
	qs := c.QueryParams()
	if err := onlyParams(qs, []string{"since", "cursor", "limit"}); err != nil {
		return err
	}
	q := firewall.FirewallDecisionQuery{}
	var err error
	if q.Limit, err = pageLimit(qs.Get("limit"), 1000); err != nil {
		return err
	}
	if v := qs.Get("since"); v != "" {
		if q.Since, err = time.Parse(time.RFC3339, v); err != nil {
			return core.Invalid("since", "must be an RFC 3339 time such as 2026-11-25T00:00:00Z (got %q)", v)
		}
	}
	raw, err := listCursor(qs, msgNotACursor, func(raw string) bool {
		n, err := strconv.ParseInt(strings.TrimPrefix(raw, "d:"), 10, 64)
		return err == nil && strings.HasPrefix(raw, "d:") && n >= 1
	})
	if err != nil {
		return err
	}
	if raw != "" {
		q.After, _ = strconv.ParseInt(strings.TrimPrefix(raw, "d:"), 10, 64)
	}
	page, err := s.store.ListDecisions(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := make([]firewall.DecisionJSON, len(page.Decisions))
	for i, d := range page.Decisions {
		out[i] = firewall.ShowDecision(d)
	}
	next := ""
	if page.More && len(page.Decisions) > 0 {
		next = encodeCursor(fmt.Sprintf("d:%d", page.Decisions[len(page.Decisions)-1].Seq))
	}
	return c.JSON(http.StatusOK, map[string]any{"decisions": out, "count": len(out), "next_cursor": nextCursor(next)})
}

// listHeld is GET /firewall/held?cursor=&limit=: the versions in
// quarantine now, the soonest released first.
func (s *Server) listHeld(c *echo.Context) error {
	qs := c.QueryParams()
	if err := onlyParams(qs, []string{"cursor", "limit"}); err != nil {
		return err
	}
	q := firewall.HeldQuery{Now: time.Now()}
	var err error
	if q.Limit, err = pageLimit(qs.Get("limit"), 1000); err != nil {
		return err
	}
	if q.After, err = listCursor(qs, msgNotACursor, nil); err != nil {
		return err
	}
	held, err := s.store.ListHeld(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := make([]firewall.HeldJSON, len(held))
	for i, h := range held {
		out[i] = firewall.ShowHeld(h)
	}
	next := ""
	if len(held) == q.Limit {
		next = encodeCursor(held[len(held)-1].Cursor())
	}
	return c.JSON(http.StatusOK, map[string]any{"held": out, "count": len(out), "next_cursor": nextCursor(next)})
}
