package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
)

func (s *Server) exposureRoutes() []route {
	return []route{
		{method: http.MethodGet, path: "/exposure", tier: core.TierFree, handler: requireRole(s.listExposure, core.RoleAdmin)},
		{method: http.MethodGet, path: "/account/exposure", tier: core.TierFree, handler: s.accountExposure},
	}
}

// ShowExposure is e as the API shows it.
func ShowExposure(e exposure.Exposure) exposure.JSON { return exposure.Show(e) }

// exposureQuery reads threat_id, since, cursor and limit.
func (s *Server) exposureQuery(c *echo.Context, allowThreat bool) (exposure.Query, error) {
	qs := c.QueryParams()
	allowed := []string{"since", "cursor", "limit"}
	if allowThreat {
		allowed = append(allowed, "threat_id")
	}
	if err := onlyParams(qs, allowed); err != nil {
		return exposure.Query{}, err
	}
	var q exposure.Query
	var err error
	if q.Limit, err = pageLimit(qs.Get("limit"), exposure.MaxPage); err != nil {
		return q, err
	}
	if v := qs.Get("since"); v != "" {
		if q.Since, err = time.Parse(time.RFC3339, v); err != nil {
			return q, core.Invalid("since", "must be an RFC 3339 time such as 2026-11-25T00:00:00Z (got %q)", v)
		}
	}
	if v := qs.Get("cursor"); v != "" {
		if q.After, err = strconv.ParseInt(v, 10, 64); err != nil || q.After < 1 {
			return q, core.Invalid("cursor", "is not a cursor this endpoint gave (%q): use next_cursor as it is", v)
		}
	}
	if id := qs.Get("threat_id"); id != "" {
		if _, err := s.store.GetThreat(c.Request().Context(), id); errors.Is(err, core.ErrNotFound) {
			return q, notFound("No report %s", id)
		} else if err != nil {
			return q, err
		}
		q.ThreatID = id
	}
	return q, nil
}

// listExposure is GET /exposure (administrators): every exposure, newest
// first.
func (s *Server) listExposure(c *echo.Context) error {
	q, err := s.exposureQuery(c, true)
	if err != nil {
		return err
	}
	return s.exposurePage(c, q)
}

// accountExposure is GET /account/exposure: the caller's own.
func (s *Server) accountExposure(c *echo.Context) error {
	q, err := s.exposureQuery(c, false)
	if err != nil {
		return err
	}
	q.User = principal(c).User.Email
	return s.exposurePage(c, q)
}

func (s *Server) exposurePage(c *echo.Context, q exposure.Query) error {
	es, err := s.store.ListExposures(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := make([]exposure.JSON, len(es))
	for i, e := range es {
		out[i] = ShowExposure(e)
	}
	var next *string
	if len(es) == q.Limit {
		n := strconv.FormatInt(es[len(es)-1].ID, 10)
		next = &n
	}
	return c.JSON(http.StatusOK, map[string]any{"exposures": out, "count": len(out), "next_cursor": next})
}
