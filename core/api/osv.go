package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// OSV.dev's query API (docs/osv.md): the verified package
// reports that affect a package (and version), as OSV records rendered by
// the OSV exporter, answered from the in-memory index like check-malicious.

// osvQuery is POST {base}/osv/v1/query: {"vulns": [...]}, or {} when none.
func (s *Server) osvQuery(c *echo.Context) error {
	var q core.OSVQuery
	if err := decodeJSON(c, &q); err != nil {
		return err
	}
	cq, err := q.Resolve("")
	if err != nil {
		return err
	}
	vulns, err := s.osvMatches(c.Request().Context(), cq)
	if err != nil {
		return err
	}
	if len(vulns) == 0 {
		return c.JSON(http.StatusOK, map[string]any{})
	}
	return c.JSON(http.StatusOK, map[string]any{"vulns": vulns})
}

// osvQueryBatch is POST {base}/osv/v1/querybatch: one result per query, in
// order, each {"vulns": [{"id", "modified"}]} or {} (OSV.dev's shape: the
// records themselves come from /osv/v1/vulns/{id}). A bad query fails the
// batch (400 naming it), as on OSV.dev. A record's modified is that of the
// record as the batch's reports make it (a record of several packages
// upstream: the latest of its parts).
func (s *Server) osvQueryBatch(c *echo.Context) error {
	var body struct {
		Queries []core.OSVQuery `json:"queries"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := s.chargeBatch(c, body.Queries == nil, len(body.Queries)); err != nil {
		return err
	}
	checks := make([]core.CheckQuery, len(body.Queries))
	for i, q := range body.Queries {
		var err error
		if checks[i], err = q.Resolve(fmt.Sprintf("queries[%d].", i)); err != nil {
			return err
		}
	}
	// The matches of every query, rendered in one exporter call.
	ctx := c.Request().Context()
	matched := make([][]core.Threat, len(checks))
	var all []core.Threat
	seen := map[string]bool{}
	for i, cq := range checks {
		threats, err := s.osvThreats(ctx, cq)
		if err != nil {
			return err
		}
		matched[i] = threats
		for _, t := range threats {
			if !seen[t.ID] {
				seen[t.ID] = true
				all = append(all, t)
			}
		}
	}
	vulns, err := s.osvRender(ctx, all)
	if err != nil {
		return err
	}
	modified := make(map[any]any, len(vulns))
	for _, v := range vulns {
		modified[v["id"]] = v["modified"]
	}
	results := make([]any, len(checks))
	for i, threats := range matched {
		var short []map[string]any
		listed := map[string]bool{}
		for _, t := range threats {
			id := core.OSVRecordOf(t)
			m, ok := modified[id]
			if !ok || listed[id] {
				continue // no OSV record (an ecosystem OSV lacks), or listed already
			}
			listed[id] = true
			short = append(short, map[string]any{"id": id, "modified": m})
		}
		if len(short) == 0 {
			results[i] = map[string]any{}
			continue
		}
		results[i] = map[string]any{"vulns": short}
	}
	return c.JSON(http.StatusOK, map[string]any{"results": results})
}

// osvVuln is GET {base}/osv/v1/vulns/{id}: one record, 404 when no
// verified report is published under it.
func (s *Server) osvVuln(c *echo.Context) error {
	id := c.Param("id")
	threatID, upstreamID := core.OSVRecordID(id)
	ctx := c.Request().Context()
	var threats []core.Threat
	switch {
	case threatID != "":
		u, err := uuid.Parse(threatID)
		if err != nil {
			break
		}
		t, err := s.index.Record(ctx, u)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return err
		}
		if err == nil && t.Status == core.StatusVerified && t.Source == "" {
			threats = append(threats, t)
		}
	case upstreamID != "" && len(upstreamID) <= 200:
		var err error
		if threats, err = s.store.QueryThreats(ctx, core.ThreatQuery{UpstreamID: upstreamID, Limit: core.MaxGetThreats}); err != nil {
			return err
		}
	}
	vulns, err := s.osvRender(ctx, threats)
	if err != nil {
		return err
	}
	for _, v := range vulns {
		if v["id"] == id {
			return c.JSON(http.StatusOK, v)
		}
	}
	return &Error{Status: http.StatusNotFound, Message: "No OSV record " + core.Shorten(id) + " is published here"}
}

// osvMatches renders the verified reports a check matches as OSV records.
func (s *Server) osvMatches(ctx context.Context, cq core.CheckQuery) ([]map[string]any, error) {
	threats, err := s.osvThreats(ctx, cq)
	if err != nil {
		return nil, err
	}
	return s.osvRender(ctx, threats)
}

// osvThreats returns the verified reports a check matches, most recently
// verified first.
func (s *Server) osvThreats(ctx context.Context, cq core.CheckQuery) ([]core.Threat, error) {
	keys, err := core.CheckKeys(cq)
	if err != nil {
		return nil, err
	}
	return s.index.Matches(ctx, keys, cq.Version)
}

// osvRender asks the OSV exporter for the records of threats.
func (s *Server) osvRender(ctx context.Context, threats []core.Threat) ([]map[string]any, error) {
	if len(threats) == 0 {
		return nil, nil
	}
	if s.exporters == nil {
		return nil, &core.ExporterError{Exporter: "osv", Kind: core.ErrExporterUnavailable, Cause: errors.New("no exporters configured")}
	}
	req := core.ExportRequest{Endpoint: "/osv/v1/", Query: map[string]string{"format": core.OSVRecordsFormat}, Service: "threatd"}
	for _, t := range threats {
		req.Records = append(req.Records, core.NewExportRecord(t, s.opts.Community.OfThreat(t)))
	}
	var buf core.BufferWriter
	if err := s.exporters.Export(ctx, "osv", req, &buf); err != nil {
		return nil, err
	}
	var doc struct {
		Vulns []map[string]any `json:"vulns"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		return nil, &core.ExporterError{Exporter: "osv", Kind: core.ErrExporterFailed, Cause: err}
	}
	return doc.Vulns, nil
}
