package api

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

// queryLatest is GET /query-latest: the most recent verified reports (by
// verification time), newest first, optionally filtered.
func (s *Server) queryLatest(c *echo.Context) error {
	qs, err := queryValues(c)
	if err != nil {
		return err
	}
	e, err := s.latestEntry(c.Request().Context(), qs, false)
	if err != nil {
		return err
	}
	viewer := principal(c)
	if seesContacts(e.Threats, viewer) {
		return c.JSON(http.StatusOK, s.latestBody(e.Threats, viewer))
	}
	body, err := e.Rendered(s.opts.Community.Generation(), s.publicLatestBody)
	if err != nil {
		return err
	}
	return c.JSONBlob(http.StatusOK, body)
}
