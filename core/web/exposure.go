package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/exposure"
)

// exposurePage is the administrators' exposure page (docs/exposure.md):
// every exposure, newest first, 100 a page, with its report.
func (s *Site) exposurePage(c *echo.Context) error {
	q := exposure.Query{Limit: 100}
	if after := c.QueryParam("after"); after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 1 {
			return s.errorPage(c, http.StatusBadRequest, "This page of exposures does not exist: start again from the first page.")
		}
		q.After = n
	}
	es, err := s.store.ListExposures(c.Request().Context(), q)
	if err != nil {
		return err
	}
	rows, err := s.exposureRows(c.Request().Context(), es)
	if err != nil {
		return err
	}
	next := ""
	if len(es) == q.Limit {
		next = strconv.FormatInt(es[len(es)-1].ID, 10)
	}
	return s.render(c, http.StatusOK, "exposure", map[string]any{"Title": "Exposure", "Rows": rows, "NextPage": next, "Paged": q.After > 0})
}

// exposureRow is an exposure with its report, for the pages.
type exposureRow struct {
	exposure.Exposure
	Threat core.Threat
	Known  bool
}

// exposureRows reads the reports of exposures, in one call per 100.
func (s *Site) exposureRows(ctx context.Context, es []exposure.Exposure) ([]exposureRow, error) {
	var ids []string
	seen := map[string]bool{}
	for _, e := range es {
		if !seen[e.ThreatID] {
			seen[e.ThreatID] = true
			ids = append(ids, e.ThreatID)
		}
	}
	byID := map[string]core.Threat{}
	for start := 0; start < len(ids); start += core.MaxGetThreats {
		ts, err := s.store.GetThreats(ctx, ids[start:min(start+core.MaxGetThreats, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			byID[t.ID] = t
		}
	}
	out := make([]exposureRow, len(es))
	for i, e := range es {
		t, ok := byID[e.ThreatID]
		out[i] = exposureRow{Exposure: e, Threat: t, Known: ok}
	}
	return out, nil
}

// ownExposures are the viewer's newest exposures, for the account page.
func (s *Site) ownExposures(ctx context.Context, email string) ([]exposureRow, error) {
	es, err := s.store.ListExposures(ctx, exposure.Query{User: email, Limit: 20})
	if err != nil {
		return nil, err
	}
	return s.exposureRows(ctx, es)
}
