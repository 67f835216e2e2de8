package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
)

// ExportRoute serves an endpoint with an exporter plugin.
type ExportRoute struct {
	Path     string
	Exporter string
	Tier     core.Tier
	// Select is the records the exporter gets: core.SelectLatest (default),
	// core.SelectWindow or core.SelectAll.
	Select string
	// PassParams hands query parameters the daemon does not know to the
	// exporter instead of refusing them (configured exporter_routes).
	PassParams bool
	// Revocations adds the reports withdrawn in the last 24 hours to the
	// latest verified ones, so that a STIX consumer revokes their objects.
	Revocations bool
	// Fixed are parameters the path sets (e.g. the ecosystem of
	// /osv/npm/all.zip): the client cannot give them.
	Fixed map[string]string
}

// exportHandler selects records for r and renders them with its exporter.
func (s *Server) exportHandler(r ExportRoute) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ctx := c.Request().Context()
		qs, err := queryValues(c)
		if err != nil {
			return err
		}
		for k, v := range r.Fixed {
			if qs.Has(k) {
				return core.Invalid(k, "is set by the path %s", r.Path)
			}
			qs.Set(k, v)
		}
		viewer := principal(c)
		record := func(t core.Threat) core.ExportRecord {
			t = t.VisibleTo(viewer)
			return core.NewExportRecord(t, s.opts.Community.OfThreat(t))
		}
		req := core.ExportRequest{Endpoint: r.Path, Query: map[string]string{}, Service: "threatd"}
		for k := range qs {
			req.Query[k] = qs.Get(k)
		}
		var threats []core.Threat
		switch r.Select {
		case core.SelectWindow:
			if err = onlyParams(qs, []string{"since", "hours", "ecosystem"}); err == nil || r.PassParams {
				threats, err = s.selections.Window(ctx, qs.Get("since"), qs.Get("hours"), qs.Get("ecosystem"))
			}
		case core.SelectAll:
			allowed := []string{"ecosystem"}
			for k := range r.Fixed {
				allowed = append(allowed, k)
			}
			if err = onlyParams(qs, allowed); err == nil || r.PassParams {
				var each func(func(core.Threat) error) error
				if each, err = s.selections.All(ctx, qs.Get("ecosystem")); err == nil {
					req.Each = func(yield func(core.ExportRecord) error) error {
						return each(func(t core.Threat) error { return yield(record(t)) })
					}
				}
			}
		default:
			threats, err = s.latestRecords(ctx, qs, r.PassParams)
			if err == nil && r.Revocations {
				var gone []core.Threat
				gone, err = s.selections.Withdrawals(ctx, qs.Get("ecosystem"))
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
			return &core.ExporterError{Exporter: r.Exporter, Kind: core.ErrExporterUnavailable, Cause: errors.New("no exporters configured")}
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
		return err
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

// latestRecords is the query-latest selection with its filters.
func (s *Server) latestRecords(ctx context.Context, qs map[string][]string, pass bool) ([]core.Threat, error) {
	e, err := s.latestEntry(ctx, qs, pass)
	if err != nil {
		return nil, err
	}
	return e.Threats, nil
}

// latestEntry is latestRecords with the cache entry (for its rendered body).
func (s *Server) latestEntry(ctx context.Context, qs map[string][]string, pass bool) (*index.LatestEntry, error) {
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
	if f.Registry, err = core.ParseEcosystem(get("ecosystem")); err != nil {
		return nil, err
	}
	if v := get("severity_level"); v != "" {
		if f.Severity, err = core.ParseSeverity(v); err != nil {
			return nil, err
		}
	}
	return s.latest.Entry(ctx, f)
}
