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
	// Select is the records the exporter gets: SelectLatest (default),
	// SelectWindow or SelectAll.
	Select string
	// PassParams hands query parameters the daemon does not know to the
	// exporter instead of refusing them (configured exporter_routes).
	PassParams bool
	// Revocations adds the reports withdrawn in the last 24 hours to the
	// latest verified ones, so that a STIX consumer revokes their objects.
	Revocations bool
}

// Selections of an export route (exporter_routes' select).
const (
	// SelectLatest is the query-latest selection: the 100 most recently
	// verified reports (report_type, ecosystem, severity_level).
	SelectLatest = "latest"
	// SelectWindow is every report that changed here in a rolling window of
	// at most 24 hours (since or hours, ecosystem), as it is now: verified,
	// revised, or withdrawn (rejected, for the exporter to revoke).
	SelectWindow = "window"
	// SelectAll is every verified report (optionally one ecosystem's),
	// streamed to the exporter in pages: no size cap.
	SelectAll = "all"
)

// allPage is how many reports a full export reads at a time.
const allPage = 500

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
		viewer := principal(c)
		record := func(t core.Threat) core.ExportRecord {
			if t.Details.ContactEmail != "" && !viewer.User.Role.CanReview() {
				t.Details.ContactEmail = "" // never exported to anyone but reviewers
			}
			return core.ExportRecord{Threat: t, IOCs: core.ExtractIOCs(t)}
		}
		req := core.ExportRequest{Endpoint: r.Path, Query: map[string]string{}, Service: "threatd"}
		for k := range qs {
			req.Query[k] = qs.Get(k)
		}
		var threats []core.Threat
		switch r.Select {
		case SelectWindow:
			threats, err = s.windowRecords(ctx, qs.Get("since"), qs.Get("hours"), qs.Get("ecosystem"), qs, r.PassParams)
		case SelectAll:
			req.Each, err = s.allRecords(ctx, qs, r.PassParams, record)
		default:
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
		if req.Each == nil {
			req.Records = make([]core.ExportRecord, len(threats))
			for i, t := range threats {
				req.Records[i] = record(t)
			}
		}
		if s.exporters == nil {
			return &Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("Exporter %q is not available", r.Exporter)}
		}
		w := &responseWriter{c: c}
		err = s.exporters.Export(ctx, r.Exporter, req, w)
		if err != nil && w.started {
			// The document is partly sent: the status cannot change any
			// more. Cut the connection so that the client sees an
			// incomplete response, never a truncated one that looks whole.
			s.log.Error("export failed after the document started; connection closed", "path", r.Path, "exporter", r.Exporter, "error", err.Error())
			panic(http.ErrAbortHandler)
		}
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
		return nil
	}
}

// responseWriter streams an exporter's document to the client as it comes.
type responseWriter struct {
	c       *echo.Context
	started bool
}

func (w *responseWriter) Start(ct string) error {
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.c.Response().Header().Set("Content-Type", ct)
	w.c.Response().WriteHeader(http.StatusOK)
	w.started = true
	return nil
}

func (w *responseWriter) Write(p []byte) (int, error) { return w.c.Response().Write(p) }

// allRecords checks an all-reports selection (ecosystem) and returns the
// stream of every verified report, oldest first, read allPage at a time.
func (s *Server) allRecords(ctx context.Context, qs map[string][]string, pass bool, record func(core.Threat) core.ExportRecord) (func(func(core.ExportRecord) error) error, error) {
	if err := onlyParams(qs, []string{"ecosystem"}); err != nil && !pass {
		return nil, err
	}
	registry := ""
	if v := qs["ecosystem"]; len(v) > 0 && v[0] != "" {
		var err error
		if registry, err = core.ParseRegistry("ecosystem", v[0]); err != nil {
			return nil, err
		}
	}
	return func(yield func(core.ExportRecord) error) error {
		q := core.ThreatQuery{Registry: registry, Limit: allPage}
		for {
			page, err := s.store.QueryThreats(ctx, q)
			if err != nil {
				return err
			}
			for _, t := range page {
				if err := yield(record(t)); err != nil {
					return err
				}
			}
			if len(page) < allPage {
				return nil
			}
			last := page[len(page)-1]
			q.AfterVerifiedAt, q.AfterID = *last.VerifiedAt, last.ID
		}
	}, nil
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
