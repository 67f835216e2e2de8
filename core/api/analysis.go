package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/analysis"
)

// AnalysisQueue queues a version for analysis, again when it was analysed
// (POST /analysis).
type AnalysisQueue interface {
	Request(ctx context.Context, k analysis.Key, by string) error
}

func (s *Server) analysisRoutes() []route {
	return []route{
		{method: http.MethodPost, path: "/analysis", tier: core.TierFree, body: true, handler: requireRole(s.queueAnalysis, core.RoleReviewer, core.RoleAdmin)},
		{method: http.MethodGet, path: "/analysis", tier: core.TierFree, handler: s.getAnalysis},
	}
}

// AnalysisJSON is an analysis as GET /analysis shows it.
type AnalysisJSON struct {
	Purl       string             `json:"purl"`
	State      string             `json:"state"`
	Digest     string             `json:"digest"`
	Verdict    string             `json:"verdict"`
	Score      float64            `json:"score"`
	Reason     string             `json:"reason,omitempty"`
	Findings   []analysis.Finding `json:"findings"`
	AnalyzedAt string             `json:"analyzed_at"`
	Analyzers  []string           `json:"analyzers"`
	QueuedAt   string             `json:"queued_at"`
	// ReportID is the pending report a suspicious verdict made, with its
	// status.
	ReportID     string `json:"report_id,omitempty"`
	ReportStatus string `json:"report_status,omitempty"`
}

// ShowAnalysis is e as GET /analysis shows it.
func ShowAnalysis(e analysis.Entry) AnalysisJSON {
	out := AnalysisJSON{Purl: e.Key().Purl(), State: e.State, Digest: e.Digest, Verdict: e.Result.Verdict, Score: e.Result.Score,
		Reason: e.Result.Reason, Findings: e.Result.Findings, Analyzers: e.Result.Analyzers, QueuedAt: e.QueuedAt.UTC().Format(time.RFC3339),
		ReportID: e.ReportID, ReportStatus: e.ReportStatus}
	if out.Findings == nil {
		out.Findings = []analysis.Finding{}
	}
	if out.Analyzers == nil {
		out.Analyzers = []string{}
	}
	if !e.AnalyzedAt.IsZero() {
		out.AnalyzedAt = e.AnalyzedAt.UTC().Format(time.RFC3339)
	}
	return out
}

// analysisKey reads the purl of a request.
func analysisKey(purl string) (analysis.Key, error) {
	if purl == "" {
		return analysis.Key{}, core.Invalid("purl", "is required: the package URL of one version, such as pkg:npm/left-pad@1.3.0")
	}
	return analysis.KeyOfPurl(purl)
}

// queueAnalysis is POST /analysis {"purl"}: 202, the version queued (again).
func (s *Server) queueAnalysis(c *echo.Context) error {
	var in struct {
		Purl string `json:"purl"`
	}
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	k, err := analysisKey(in.Purl)
	if err != nil {
		return err
	}
	if s.opts.Analysis == nil {
		return &Error{Status: http.StatusServiceUnavailable, Message: "Package analysis is off on this server: it needs the registry firewall (firewall.enabled) and its analyzer plugins (analysis.analyzers)"}
	}
	who := principal(c).User
	if err := s.opts.Analysis.Request(c.Request().Context(), k, who.Email); err != nil {
		if errors.Is(err, core.ErrLimit) {
			return &Error{Status: http.StatusServiceUnavailable, Message: capitalise(err.Error())}
		}
		return err
	}
	s.log.Info("analysis requested", "purl", k.Purl(), "by", who.Email)
	return c.JSON(http.StatusAccepted, map[string]string{"purl": k.Purl(), "state": analysis.StateQueued})
}

// getAnalysis is GET /analysis?purl=: a version's analysis; 404 when it
// was never analysed.
func (s *Server) getAnalysis(c *echo.Context) error {
	qs := c.QueryParams()
	if err := onlyParams(qs, []string{"purl"}); err != nil {
		return err
	}
	k, err := analysisKey(qs.Get("purl"))
	if err != nil {
		return err
	}
	e, err := s.store.Analysis(c.Request().Context(), k)
	if errors.Is(err, core.ErrNotFound) {
		return notFound("%s was never analysed", k.Purl())
	}
	if err != nil {
		return err
	}
	if e.Result.Verdict == "" {
		return notFound("%s was never analysed: it is %s for analysis", k.Purl(), e.State)
	}
	return c.JSON(http.StatusOK, ShowAnalysis(e))
}
