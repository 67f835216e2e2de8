package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// queryLatest is GET /query-latest: the most recent verified reports (by
// verification time), newest first, optionally filtered.
func (s *Server) queryLatest(c *echo.Context) error {
	qs := c.Request().URL.Query()
	if err := onlyParams(qs, []string{"report_type", "ecosystem", "severity_level"}); err != nil {
		return err
	}
	f := core.LatestFilter{Limit: s.opts.LatestCount}
	var err error
	if v := qs.Get("report_type"); v != "" {
		if f.ReportType, err = core.ParseReportType(v); err != nil {
			return err
		}
	}
	if v := qs.Get("ecosystem"); v != "" {
		if f.Registry, err = core.ParseRegistry("ecosystem", v); err != nil {
			return err
		}
	}
	if v := qs.Get("severity_level"); v != "" {
		if f.Severity, err = core.ParseSeverity(v); err != nil {
			return err
		}
	}
	threats, err := s.store.LatestVerified(c.Request().Context(), f)
	if err != nil {
		return err
	}
	viewer := principal(c)
	out := make([]record, len(threats))
	for i, t := range threats {
		out[i] = toRecord(t, viewer)
	}
	return c.JSON(http.StatusOK, map[string]any{"threats": out, "count": len(out)})
}
