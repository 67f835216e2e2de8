package api

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/threatd/threatd/core"
)

// route declares one endpoint under the base path.
type route struct {
	method  string
	path    string
	tier    core.Tier // minimum tier
	body    bool      // reads a request body (size-limited after auth)
	index   bool      // answered from the in-memory index: 503 while it loads
	handler echo.HandlerFunc
}

// routes declares every endpoint in one place.
func (s *Server) routes(e *echo.Echo) {
	e.GET("/healthz", s.healthz)
	e.GET("/livez", s.livez)
	e.GET("/readyz", s.readyz)
	e.GET(s.opts.BasePath+"/openapi.json", s.openAPIHandler())

	api := e.Group(s.opts.BasePath, s.authenticate, s.perTokenLimit)
	for _, r := range s.apiRoutes() {
		s.add(api, r)
	}
	for _, r := range s.opts.ExportRoutes {
		s.add(api, route{method: http.MethodGet, path: r.Path, tier: r.Tier, handler: s.exportHandler(r)})
	}
	s.taxiiRoutes(e)
	for _, r := range append(s.analysisRoutes(), s.exposureRoutes()...) {
		s.add(api, r)
	}
	if s.opts.Firewall != nil {
		for _, r := range s.firewallAdminRoutes() {
			s.add(api, r)
		}
		s.firewallRoutes(e)
	}
	if s.opts.Mount != nil {
		s.opts.Mount(e)
	}
}

// apiRoutes are the authenticated endpoints under the base path.
func (s *Server) apiRoutes() []route {
	return []route{
		{method: http.MethodGet, path: "/account", tier: core.TierFree, handler: s.account},
		{method: http.MethodPost, path: "/submit-threat-report", tier: core.TierFree, body: true, handler: s.submit},
		// The specification's overview names the same operation /submit-threat (docs/api/submit.md).
		{method: http.MethodPost, path: "/submit-threat", tier: core.TierFree, body: true, handler: s.submit},
		{method: http.MethodGet, path: "/check-malicious", tier: core.TierFree, index: true, handler: s.checkOne},
		{method: http.MethodPost, path: "/check-malicious", tier: core.TierFree, body: true, index: true, handler: s.checkBatch},
		{method: http.MethodGet, path: "/query-latest", tier: core.TierFree, handler: s.queryLatest},
		{method: http.MethodPut, path: "/modify-threat-report", tier: core.TierFree, body: true, handler: s.modify},
		{method: http.MethodGet, path: "/threat-feed", tier: core.TierPaid, handler: s.threatFeed},
		{method: http.MethodGet, path: "/query-by-username", tier: core.TierPaid, handler: s.queryByUsername},
		{method: http.MethodGet, path: "/threat-data", tier: core.TierPaid, handler: s.threatData},
		// OSV.dev's query API (docs/osv.md), answered like check-malicious.
		{method: http.MethodPost, path: "/osv/v1/query", tier: core.TierFree, body: true, index: true, handler: s.osvQuery},
		{method: http.MethodPost, path: "/osv/v1/querybatch", tier: core.TierFree, body: true, index: true, handler: s.osvQueryBatch},
		{method: http.MethodGet, path: "/osv/v1/vulns/:id", tier: core.TierFree, index: true, handler: s.osvVuln},
		// The CI gate (docs/ci.md): the body is bounded by scan.max_bytes, not max_body_bytes.
		{method: http.MethodPost, path: "/scan", tier: core.TierFree, index: true, handler: s.scanFile},
		// The MISP feed (docs/misp.md).
		{method: http.MethodGet, path: "/misp/manifest.json", tier: core.TierPaid, handler: s.mispManifest},
		{method: http.MethodGet, path: "/misp/hashes.csv", tier: core.TierPaid, handler: s.mispHashes},
		{method: http.MethodGet, path: "/misp/:event", tier: core.TierPaid, handler: s.mispEvent},
		{method: http.MethodGet, path: "/osv/ecosystems.txt", tier: core.TierPaid, handler: s.osvEcosystems},
		// The block lists (docs/blocklists.md).
		{method: http.MethodGet, path: "/blocklists/:format", tier: core.TierFree, handler: s.blocklist},
		{method: http.MethodGet, path: "/rules/suricata.rules", tier: core.TierFree, handler: s.suricataRules},
		// Community signals (docs/api/sightings.md).
		{method: http.MethodPost, path: "/sightings", tier: core.TierFree, body: true, index: true, handler: s.addSighting},
		{method: http.MethodGet, path: "/threats/:id/sightings", tier: core.TierFree, index: true, handler: s.listSightings},
		// Campaigns (docs/api/campaigns.md).
		{method: http.MethodPost, path: "/campaigns", tier: core.TierFree, body: true, handler: s.createCampaign},
		{method: http.MethodGet, path: "/campaigns", tier: core.TierFree, handler: s.listCampaigns},
		{method: http.MethodGet, path: "/campaigns/suggestions", tier: core.TierFree, handler: s.campaignSuggestions},
		{method: http.MethodGet, path: "/campaigns/:id", tier: core.TierFree, handler: s.getCampaign},
		{method: http.MethodPatch, path: "/campaigns/:id", tier: core.TierFree, body: true, handler: s.updateCampaign},
	}
}

// add registers r with its per-route chain: tier (403), then body limit (413).
func (s *Server) add(g *echo.Group, r route) {
	mw := []echo.MiddlewareFunc{requireTier(r.tier)}
	if r.tier == core.TierPaid {
		mw = append(mw, s.countPaid(r.path))
	}
	if r.body {
		mw = append(mw, middleware.BodyLimit(s.opts.MaxBodyBytes))
	}
	if r.index {
		mw = append(mw, s.requireIndex)
	}
	g.Add(r.method, r.path, r.handler, mw...)
}

// BuiltinExportRoutes are the exporter endpoints of the specification and
// docs/osv.md: an OSV all.zip per ecosystem, under its OSV name (and
// its registry name where that differs: /osv/PyPI/all.zip, /osv/pypi/all.zip).
var BuiltinExportRoutes = append([]ExportRoute{
	{Path: "/query-latest-stix", Exporter: "stix", Tier: core.TierPaid, Revocations: true},
	{Path: "/anomali-feed", Exporter: "anomali", Tier: core.TierPaid, Select: core.SelectWindow},
}, osvArchiveRoutes()...)

func osvArchiveRoutes() []ExportRoute {
	var out []ExportRoute
	for _, registry := range core.OSVRegistries {
		name := core.OSVEcosystems[registry]
		paths := []string{"/osv/" + name + "/all.zip"}
		if name != registry {
			paths = append(paths, "/osv/"+registry+"/all.zip")
		}
		for _, p := range paths {
			out = append(out, ExportRoute{Path: p, Exporter: "osv", Tier: core.TierPaid, Select: core.SelectAll, Fixed: map[string]string{"ecosystem": registry}})
			// modified_id.csv beside it, as OSV's bucket has.
			out = append(out, ExportRoute{Path: strings.TrimSuffix(p, "all.zip") + "modified_id.csv", Exporter: "osv", Tier: core.TierPaid, Select: core.SelectAll,
				Fixed: map[string]string{"ecosystem": registry, "format": core.OSVModifiedFormat}})
		}
	}
	return out
}

// RoutePaths lists the paths of the built-in API routes (to refuse an
// exporter route that would shadow one).
func RoutePaths() []string {
	var s Server
	var out []string
	for _, r := range s.apiRoutes() {
		out = append(out, r.path)
	}
	return out
}

// requireIndex answers 503 with Retry-After while the index of verified
// reports is still loading at start: a check answered from a partial index
// would call malicious packages clean.
func (s *Server) requireIndex(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if ready, loaded, total := s.index.Progress(); !ready {
			return &Error{Status: http.StatusServiceUnavailable,
				Message: fmt.Sprintf("threatd is starting: the index of verified reports is loading (%d of about %d read); try again shortly", loaded, total),
				Headers: map[string]string{"Retry-After": "1"}}
		}
		return next(c)
	}
}
