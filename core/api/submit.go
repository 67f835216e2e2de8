package api

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// submit is POST /submit-threat-report (and its alias /submit-threat).
func (s *Server) submit(c *echo.Context) error {
	var sub core.Submission
	if err := decodeJSON(c, &sub); err != nil {
		return err
	}
	t, err := s.reports.Submit(c.Request().Context(), principal(c), sub)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{
		"message":   "Threat report submitted successfully; it is pending review",
		"threat_id": t.ID,
		"status":    t.Status,
	})
}
