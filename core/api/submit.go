package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// submitRequest is the JSON body of the submit operation (spec §2.1).
// Pointers tell absent (or null) fields from empty ones.
type submitRequest struct {
	ReportType         *string         `json:"report_type"`
	ResourceIdentifier *string         `json:"resource_identifier"`
	ThreatDescription  *string         `json:"threat_description"`
	PackageName        *string         `json:"package_name"`
	Registry           *string         `json:"registry"`
	Publisher          *string         `json:"publisher"`
	PayloadDescription *string         `json:"payload_description"`
	SeverityLevel      *string         `json:"severity_level"`
	EvidenceReferences *string         `json:"evidence_references"`
	ContactEmail       *string         `json:"contact_email"`
	Tags               []string        `json:"tags"`
	VersionInfo        *string         `json:"version_info"`
	FirstSeen          *string         `json:"first_seen"`
	LastSeen           *string         `json:"last_seen"`
	OSVAdvisoryURL     *string         `json:"osv_advisory_url"`
	Contributors       []string        `json:"contributors"`
	DownloadCount      json.RawMessage `json:"download_count"`
}

// submission converts the request to the domain's input, checking the one
// field whose JSON type the decoder cannot: download_count must be an integer.
func (r submitRequest) submission() (core.Submission, error) {
	s := core.Submission{
		ReportType: r.ReportType, ResourceIdentifier: r.ResourceIdentifier, ThreatDescription: r.ThreatDescription,
		PackageName: r.PackageName, Registry: r.Registry, Publisher: r.Publisher, PayloadDescription: r.PayloadDescription,
		SeverityLevel: r.SeverityLevel, EvidenceReferences: r.EvidenceReferences, ContactEmail: r.ContactEmail,
		Tags: r.Tags, VersionInfo: r.VersionInfo, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen,
		OSVAdvisoryURL: r.OSVAdvisoryURL, Contributors: r.Contributors,
	}
	raw := bytes.TrimSpace(r.DownloadCount)
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			if f, ferr := strconv.ParseFloat(string(raw), 64); ferr == nil && f < 0 {
				return s, core.Invalid("download_count", "must not be negative")
			}
			return s, core.Invalid("download_count", "must be a whole number, got %s", truncate(string(raw), 40))
		}
		s.DownloadCount = &n
	}
	return s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// submit is POST /submit-threat-report (and its alias /submit-threat).
func (s *Server) submit(c *echo.Context) error {
	var req submitRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	sub, err := req.submission()
	if err != nil {
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
