package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// ExportRoute serves an endpoint with an exporter plugin.
type ExportRoute struct {
	Path     string
	Exporter string
	Tier     core.Tier
	// Window selects records by verification window (since/hours, the
	// Anomali feed) instead of the latest verified reports.
	Window bool
	// PassParams hands query parameters the daemon does not know to the
	// exporter instead of refusing them (configured exporter_routes).
	PassParams bool
	// Revocations adds the reports withdrawn in the last 24 hours to the
	// latest verified ones, so that a STIX consumer revokes their objects.
	Revocations bool
}

// maxWindowRecords caps a rolling-window export.
const maxWindowRecords = 10_000

// exportHandler selects records for r and renders them with its exporter.
func (s *Server) exportHandler(r ExportRoute) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ctx := c.Request().Context()
		qs, err := queryValues(c)
		if err != nil {
			return err
		}
		var threats []core.Threat
		if r.Window {
			threats, err = s.windowRecords(ctx, qs.Get("since"), qs.Get("hours"), qs.Get("ecosystem"), qs, r.PassParams)
		} else {
			threats, err = s.latestRecords(ctx, qs, r.PassParams)
			if err == nil && r.Revocations {
				var gone []core.Threat
				gone, err = s.withdrawals(ctx, qs.Get("ecosystem"))
				threats = append(threats[:len(threats):len(threats)], gone...)
			}
		}
		if err != nil {
			return err
		}
		req := core.ExportRequest{Endpoint: r.Path, Query: map[string]string{}, Service: "threatd", Records: make([]core.ExportRecord, len(threats))}
		for k := range qs {
			req.Query[k] = qs.Get(k)
		}
		for i, t := range threats {
			if t.Details.ContactEmail != "" && !principal(c).User.Role.CanReview() {
				t.Details.ContactEmail = "" // never exported to anyone but reviewers
			}
			req.Records[i] = core.ExportRecord{Threat: t, IOCs: core.ExtractIOCs(t)}
		}
		if s.exporters == nil {
			return &Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("Exporter %q is not available", r.Exporter)}
		}
		doc, err := s.exporters.Export(ctx, r.Exporter, req)
		switch {
		// The causes (plugin paths, process errors) go to the log only.
		case errors.Is(err, core.ErrExporterUnavailable):
			return &Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("Exporter %q is not available; try again later", r.Exporter),
				Headers: map[string]string{"Retry-After": "5"}, Cause: err}
		case errors.Is(err, core.ErrExporterTimeout):
			return &Error{Status: http.StatusGatewayTimeout, Message: fmt.Sprintf("Exporter %q is still starting; try again shortly", r.Exporter),
				Headers: map[string]string{"Retry-After": "5"}, Cause: err}
		case errors.Is(err, core.ErrExporterFailed):
			return &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("Exporter %q failed while producing the document; try again", r.Exporter),
				Cause: err}
		case err != nil:
			return err
		}
		ct := doc.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		return c.Blob(http.StatusOK, ct, doc.Body)
	}
}

// latestRecords is the query-latest selection with its filters.
func (s *Server) latestRecords(ctx context.Context, qs map[string][]string, pass bool) ([]core.Threat, error) {
	e, err := s.latestEntry(ctx, qs, pass)
	if err != nil {
		return nil, err
	}
	return e.threats, nil
}

// latestEntry is latestRecords with the cache entry (for its rendered body).
func (s *Server) latestEntry(ctx context.Context, qs map[string][]string, pass bool) (*latestEntry, error) {
	if err := onlyParams(qs, []string{"report_type", "ecosystem", "severity_level"}); err != nil && !pass {
		return nil, err
	}
	f := core.LatestFilter{Limit: s.opts.LatestCount}
	get := func(k string) string {
		if v := qs[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var err error
	if v := get("report_type"); v != "" {
		if f.ReportType, err = core.ParseReportType(v); err != nil {
			return nil, err
		}
	}
	if v := get("ecosystem"); v != "" {
		if f.Registry, err = core.ParseRegistry("ecosystem", v); err != nil {
			return nil, err
		}
	}
	if v := get("severity_level"); v != "" {
		if f.Severity, err = core.ParseSeverity(v); err != nil {
			return nil, err
		}
	}
	return s.latest.entry(ctx, f, s.index, s.store)
}

// maxRevocations caps the withdrawals added to a latest export.
const maxRevocations = 100

// withdrawals returns the reports withdrawn in the last 24 hours (at most
// maxRevocations, optionally one ecosystem's), as they are now.
func (s *Server) withdrawals(ctx context.Context, ecosystem string) ([]core.Threat, error) {
	registry := ""
	if ecosystem != "" {
		var err error
		if registry, err = core.ParseRegistry("ecosystem", ecosystem); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	items, err := s.store.Feed(ctx, core.FeedQuery{From: now.Add(-24 * time.Hour), To: now.Add(time.Second), Registry: registry,
		Kind: core.ChangeWithdrawn, Limit: maxRevocations})
	if err != nil {
		return nil, err
	}
	var out []core.Threat
	seen := map[string]bool{}
	for _, it := range items {
		if it.Threat.Status == core.StatusRejected && !seen[it.Threat.ID] {
			seen[it.Threat.ID] = true
			out = append(out, it.Threat)
		}
	}
	return out, nil
}

// windowRecords is the rolling window of the Anomali feed: since (RFC 3339,
// at most 24 h ago) or hours (1–24, default 24), optionally one ecosystem.
func (s *Server) windowRecords(ctx context.Context, since, hours, ecosystem string, qs map[string][]string, pass bool) ([]core.Threat, error) {
	if err := onlyParams(qs, []string{"since", "hours", "ecosystem"}); err != nil && !pass {
		return nil, err
	}
	now := time.Now().UTC()
	from := now.Add(-24 * time.Hour)
	switch {
	case since != "" && hours != "":
		return nil, core.Invalid("hours", "give either since or hours, not both")
	case since != "":
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return nil, core.Invalid("since", "must be an RFC 3339 timestamp")
		}
		if now.Sub(t) > 24*time.Hour || t.After(now) {
			return nil, core.Invalid("since", "must be within the last 24 hours")
		}
		from = t
	case hours != "":
		var h int
		if _, err := fmt.Sscanf(hours, "%d", &h); err != nil || fmt.Sprint(h) != strings.TrimSpace(hours) || h < 1 || h > 24 {
			return nil, core.Invalid("hours", "must be a whole number from 1 to 24")
		}
		from = now.Add(-time.Duration(h) * time.Hour)
	}
	registry := ""
	if ecosystem != "" {
		var err error
		if registry, err = core.ParseRegistry("ecosystem", ecosystem); err != nil {
			return nil, err
		}
	}
	// Every report that changed here in the window, once, as it is now: a
	// revised one with its new content (STIX: modified advanced), a
	// withdrawn one as revoked. Times are when the change happened here
	// (verified, imported, revised, withdrawn), not upstream publication
	// times.
	var out []core.Threat
	at := map[string]int{}
	q := core.FeedQuery{From: from, To: now.Add(time.Second), Registry: registry, Limit: 1000}
	for len(out) < maxWindowRecords {
		page, err := s.store.Feed(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page {
			if i, ok := at[it.Threat.ID]; ok {
				out[i] = it.Threat
				continue
			}
			at[it.Threat.ID] = len(out)
			out = append(out, it.Threat)
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1].Event
		q.AfterAt, q.AfterSeq = last.At, last.Seq
	}
	if len(out) > maxWindowRecords {
		out = out[:maxWindowRecords]
	}
	return out, nil
}
