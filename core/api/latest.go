package api

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

// queryLatest is GET /query-latest: the most recent verified reports (by
// verification time), newest first, optionally filtered.
func (s *Server) queryLatest(c *echo.Context) error {
	threats, err := s.latestRecords(c.Request().Context(), c.Request().URL.Query(), false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"threats": records(threats, principal(c)), "count": len(threats)})
}
