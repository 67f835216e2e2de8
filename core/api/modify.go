package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// modifyRequest is the body of PUT /modify-threat-report: the report's id
// plus the submit fields to change and evidence_references_add.
type modifyRequest struct {
	ThreatID *string `json:"threat_id"`
	core.Patch
}

// modify is PUT /modify-threat-report.
func (s *Server) modify(c *echo.Context) error {
	var req modifyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.ThreatID == nil || strings.TrimSpace(*req.ThreatID) == "" {
		return core.Invalid("threat_id", "is required")
	}
	t, rev, err := s.reports.Modify(c.Request().Context(), principal(c), strings.TrimSpace(*req.ThreatID), req.Patch)
	if err != nil {
		return err
	}
	msg := "Threat report updated"
	if rev.State == core.RevisionPending {
		msg = "Change submitted as revision " + strconv.Itoa(rev.Number) + "; it is pending review and the published report is unchanged until a reviewer approves it"
	}
	return c.JSON(http.StatusOK, map[string]any{
		"message":   msg,
		"threat_id": t.ID,
		"status":    t.Status,
		"revision":  rev.Number,
	})
}
